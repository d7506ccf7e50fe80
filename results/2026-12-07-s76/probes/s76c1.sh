#!/usr/bin/env bash
# Session 76 call 1 (prepared in session 75 as next-s76c1.sh). On an H200: session 69's status.sh (issue 12's H200
# bench, expectations in its header; no H200 has come since session 56). On an H100: the GPU test files session 75's
# two calls did not reach or finish (its calls ran the short-token cases, test_decode_cuda.py, the merge-slot,
# ragged, channel-wise K, Triton, fused-merge, paged, plan and bad-input files), then the all-head-dims SASS test on
# the snapshot session 75 rewrote. First, test_bad_inputs.py whole (not only -m gpu: its `device` cases run on CUDA
# here), for the eight cases session 75 added after its calls. Expected: all pass. Copy it into the session's probes
# folder and commit before the run. At most LIMIT (default 560) s.
LIMIT="${LIMIT:-560}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s76c1
else
  . scripts/probe_preamble.sh /tmp/s76c1
  probe_build
  timeout $(( $(left) - 10 )) python -m pytest -q -n 2 tests/test_bad_inputs.py >> $W/tests.log 2>&1
  echo "B: rc=$? left=$(left)"; tail -1 $W/tests.log
  for group in "tests/test_append.py tests/test_hbm.py tests/test_clocks.py tests/test_timeline.py" \
               "tests/test_bench_gpu.py tests/test_bench_shard.py tests/test_bench_workloads.py" \
               "tests/test_accuracy_cli.py tests/test_hf.py" \
               "tests/test_decode_cuda.py -k all_head_dims"; do
    if [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 2 $group >> $W/tests.log 2>&1
      echo "T: $group rc=$? left=$(left)"; tail -1 $W/tests.log
    fi
  done
  cp $W/tests.log $OUT/tests.txt
  probe_end s76c1
fi
