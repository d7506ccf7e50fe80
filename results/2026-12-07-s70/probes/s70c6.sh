#!/usr/bin/env bash
# Session 70 call 6, in the last ~250 s of device time: the GPU tests of the two plan rules made defaults after
# call 5 (the floor of 256 in caches of at most 16K; ceil(capacity / floor) long chunks; NOTES §115), then, if time is
# left, a short A/B of each against its setting off at the points where short16k.sh expects the most (its header has
# the expectations, written before any run: new / off 1 x 16K 0.66-0.76; new / floor 1 x 16000 0.66-0.80, 1 x 20000
# 0.80-0.92).
LIMIT="${LIMIT:-165}"
. scripts/probe_preamble.sh /tmp/s70
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) > 70 ? $(left) - 50 : 20 )) python -m pytest -q -m gpu -n 4 tests/test_ragged_gpu.py \
  -k "16k or 32_chunk_floor" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
if [ "$(left)" -gt 40 ]; then
  python -m bench.ab_rounds $W/ab --variant "new:" --variant "off:" --variant "floor:" \
    --run-env off:FOSCAR_LONG_CHUNK_SHORT=0 --run-env floor:FOSCAR_LONG_CHUNK_CEIL=0 --order "new off floor floor off new" \
    --point 2x1x16384:h8-1 --point 2x1x16000:h8-1 --point 2x1x20000:h8-1 \
    --limit-s $(( $(left) - 12 )) --round-s 4 > $W/ab.log 2>&1
  echo "R: ab_rounds rc=$? left=$(left)"; tail -12 $W/ab.log; cp $W/ab.log $OUT/ab_rounds.txt
fi
probe_end s70c6
