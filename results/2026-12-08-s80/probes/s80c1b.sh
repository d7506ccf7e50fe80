#!/usr/bin/env bash
# Session 80: s80c1.sh and s80c2.sh in one call, for a session whose device requests were refused five times (631 s
# of its 1800 s). At most LIMIT (default 540) s; any GPU. Expectations as in the two scripts' headers:
#   1. the page check's GPU test (18 cases): all pass;
#   2. its cost (bench.ab_rounds off / check on five paged points, rounds off check check off, cut to leave ~250 s):
#      check / off 1.01-1.04 at the large points, up to 1.10 at 1 x 8K;
#   3. the GPU suite (default build, -n 4) with the time left: every test that runs passes.
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/pc
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_PAGE_CHECK=1"
timeout $(( $(left) - 300 )) python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py -k page_check > $W/tests.log 2>&1
echo "T: page check rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
unset FOSCAR_NVCC_DEFINES
python -m bench.ab_rounds $W/ab --variant "off:FOSCAR_ONLY_HEAD_DIM=128" \
  --variant "check:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_PAGE_CHECK=1" --order "off check check off" \
  --point 2x8x32768:paged --point 2x64x8192:paged --point 4x8x32768:paged \
  --point 2x8x32768:paged:fp8 --point 2x1x8192:paged \
  --limit-s $(( $(left) - 250 )) --round-s 30 > $W/ab.log 2>&1
echo "A: rc=$? left=$(left)"; tail -20 $W/ab.log; cp $W/ab.log $OUT/ab.txt
probe_build
timeout $(( $(left) - 15 )) python -m pytest -v -m gpu -n 4 --durations=40 tests/ 2>&1 | python -u -c \
  'import sys, time; t = time.time(); [print(f"{time.time() - t:7.1f} {l}", end="", flush=True) for l in sys.stdin]' \
  > $W/suite.log
echo "G: rc=${PIPESTATUS[0]} left=$(left)"; tail -2 $W/suite.log; grep -c "PASSED" $W/suite.log
grep -E "(FAILED|ERROR) " $W/suite.log | head -20; cp $W/suite.log $OUT/suite.txt
probe_end s80c1b
