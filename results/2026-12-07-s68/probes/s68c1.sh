#!/usr/bin/env bash
# Session 68, call 1 (prepared in session 67 as next-s68c1.sh). At most LIMIT (default 480) s. Run from the
# repository root through scripts/gpu_offline.sh (carry .offline). Writes at most 7 files to $OUT (the runner returns
# 8): gpu.csv, commit.txt, ab_rounds.txt, s68c1.tgz (every log and timeline), and on an H200 the bench's three.
#   On an H200, B: issue 12's INT2 bench (s66c1.sh's part B, expectations there, written in session 60).
#   T (any GPU): the GPU test of FOSCAR_LONG_CHUNK_ROOM (new in session 67, never run on a GPU) and the ragged
#      long-sequence tests.
#   R: FOSCAR_LONG_CHUNK_ROOM=1 (room) against the default (old), rounds old room room old. Why (NOTES §112): one
#      512K among seven 4K at one KV head takes 128 + 7 = 135 working CTAs on 132 SMs, so three SMs run two chunks;
#      the call took 29.0 us against 22.5 us for the 512K sequence alone (INT2, an H100). With the room the long
#      sequence takes 121 chunks of 4352 (128 CTAs, one an SM). Expected, room / old (written in session 67, before any
#      run; 8 query heads over 1 KV head unless said): INT2 one-long 8 x 512K 0.80-0.88 (~29.0 -> ~24 us: 22.5 x
#      4352/4096 plus the short ones); INT4 one-long 0.88-0.96 (36.7 -> ~34); INT2 one-long 6 x 512K (133 -> 126 CTAs)
#      0.80-0.90; INT2 one-long 8 x 512K paged 0.80-0.90; INT2 one-long 4 x 512K at 16 query heads over 2 KV heads
#      (134 -> 132 CTAs) 0.80-0.92; INT2 8 x 512K lognormal 1.00-1.07 (its long chunk 4352 too: 175 -> 165 CTAs,
#      both past 132, so 33 SMs run two chunks of 4352 where 43 ran two of 4096; the room is no help there, NOTES
#      §112). Controls, the same plan
#      in both (A/A, the same output bits): INT2 one-long 5 x 512K (128 + 4 CTAs) and INT2 8 x 512K uniform,
#      0.98-1.02. max_rel_err the same to two figures, no NaN.
#   Then, time allowing, the timeline at INT2 one-long 8 x 512K in both settings (`1-CTA SMs` and `sm_tail` should
#      show the three two-CTA SMs under old and none under room).
LIMIT="${LIMIT:-480}"
. scripts/probe_preamble.sh /tmp/s68c1
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then  # issue 12's bench, as s66c1.sh's
  sed -n '/^if nvidia-smi/,/^fi$/p' results/2026-12-07-s66/probes/s66c1.sh | sed '1d;$d' \
    | sed 's#/tmp/s66c1#/tmp/s68c1#g' > $W/b.sh
  . $W/b.sh
fi
timeout 90 python -m pytest -q -m gpu -n 4 \
  tests/test_ragged_gpu.py::test_long_chunk_room_gives_one_long_sequence_among_seven_fewer_chunks \
  "tests/test_ragged_gpu.py::test_long_sequences_past_batch_one_take_chunks_of_at_least_4096" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log  # (the log is in the tarball)
python -m bench.ab_rounds $W/ab --variant "old:" --variant "room:" --run-env room:FOSCAR_LONG_CHUNK_ROOM=1 \
  --order "old room room old" --point 2x8x524288:one-long:h8-1 --point 4x8x524288:one-long:h8-1 \
  --point 2x6x524288:one-long:h8-1 --point 2x8x524288:one-long:paged:h8-1 --point 2x4x524288:one-long:h16-2 \
  --point 2x8x524288:lognormal:h8-1 --point 2x5x524288:one-long:h8-1 --point 2x8x524288:h8-1 \
  --limit-s $(( $(left) > 150 ? $(left) - 90 : 60 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
for room in 0 1; do
  [ $(left) -lt 45 ] && break
  FOSCAR_LONG_CHUNK_ROOM=$room timeout $(( $(left) - 15 )) python -m bench.timeline \
    --point 2x8x524288:one-long:h8-1 > $W/timeline-room$room.txt 2>&1
  echo "timeline room=$room rc=$? left=$(left)"; tail -12 $W/timeline-room$room.txt
done
probe_end s68c1
