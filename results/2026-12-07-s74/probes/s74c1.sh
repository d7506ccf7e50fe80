#!/usr/bin/env bash
# Session 74 call 1: session 73's next-s74c1.sh (prepared, never run) with one addition on an H100: the two
# test_ragged_gpu.py short-token cases session 73 added (1024 + 63 x 512 in 4K; 1024 + 130 x 200 in 8K) have never
# run on a GPU, so `-k short_tokens` runs right after the A/B. On an H200: session 69's status.sh (issue 12's bench,
# expectations in its header). On an H100: s73c3.sh's A/B of one sequence past 512 among short ones (expectations,
# written before any run, in s73c3.sh's header: on / off 1.15-1.30, 1.10-1.30, 1.05-1.25, 0.95-1.10, 0.95-1.10),
# then the short-token GPU tests, then the GPU files group by group with the time left. At most LIMIT (560) s.
LIMIT="${LIMIT:-560}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s74c1
else
  . scripts/probe_preamble.sh /tmp/s74c1
  probe_build
  python -m bench.ab_rounds $W/ab --variant "off:" --variant "on:" --run-env off:FOSCAR_SHORT_TOKENS=0 \
    --order "off on on off" --point 2x64x1024:one-long:h8-1:cap4096:s512 --point 2x32x1024:one-long:h8-1:cap4096:s512 \
    --point 2x32x2048:one-long:h8-1:cap4096:s512 --point 2x8x4096:one-long:h8-1:cap131072:s512 \
    --point 2x16x8192:one-long:h8-1:cap131072:s512 --limit-s 120 --round-s 15 > $W/ab_one_long.log 2>&1
  echo "A: rc=$? left=$(left)"; tail -14 $W/ab_one_long.log; cp $W/ab_one_long.log $OUT/ab_one_long.txt
  timeout $(( $(left) - 10 )) python -m pytest -q -m gpu tests/test_ragged_gpu.py -k short_tokens > $W/short.log 2>&1
  echo "S: rc=$? left=$(left)"; tail -3 $W/short.log
  for group in "tests/test_paged.py tests/test_merge_slots.py tests/test_plan.py tests/test_bad_inputs.py" \
               "tests/test_decode_cuda.py" "tests/test_channel_k.py tests/test_decode_triton.py"; do
    if [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 4 $group >> $W/tests_rest.log 2>&1
      echo "T: $group rc=$? left=$(left)"; tail -1 $W/tests_rest.log
    fi
  done
  cat $W/short.log $W/tests_rest.log > $OUT/tests.txt
  probe_end s74c1
fi
