#!/usr/bin/env bash
# Session 68, call 7: s68c6.sh cut to fit the device time left (its bench against FlashInfer left out). At most LIMIT
# (default 200) s. Returns gpu.csv, commit.txt, ab_rounds.txt and s68c7.tgz.
#   T: the room's GPU test (now also with the knob unset) and the ragged long-sequence tests.
#   R: the default (new: the bounded room) against FOSCAR_LONG_CHUNK_ROOM=0 (old), rounds old new new old. Expected
#      new / old (written before the run, as in s68c6.sh): INT2 one-long 8 x 512K 0.80-0.88; one-long 16 0.83-0.90;
#      one-long 24, past the bound, the same plan 0.98-1.02; 16 query heads over 2 KV heads one-long 8 x 256K 0.82-0.90.
LIMIT="${LIMIT:-200}"
. scripts/probe_preamble.sh /tmp/s68c7
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout 60 python -m pytest -q -m gpu -n 4 \
  tests/test_ragged_gpu.py::test_long_chunk_room_gives_one_long_sequence_among_seven_fewer_chunks \
  "tests/test_ragged_gpu.py::test_long_sequences_past_batch_one_take_chunks_of_at_least_4096" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log
python -m bench.ab_rounds $W/ab --variant "old:" --variant "new:" --run-env old:FOSCAR_LONG_CHUNK_ROOM=0 \
  --order "old new new old" --point 2x8x524288:one-long:h8-1 --point 2x16x524288:one-long:h8-1 \
  --point 2x24x524288:one-long:h8-1 --point 2x8x262144:one-long:h16-2 \
  --limit-s $(( $(left) > 80 ? $(left) - 15 : 60 )) --round-s 8 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s68c7
