#!/usr/bin/env bash
# Prepared in session 80 (not run: no machine came), for a later call. At most LIMIT (default 540) s. Any GPU.
#   On an H200 first (if one comes): issue 12's Status bench (results/2026-12-07-s69/probes/status.sh, its expectation
#   in its header; session 76 measured 5 of 8 large INT2 points at >= 85% of the ceiling, NOTES §121), then the suite.
#   The GPU suite with the default build at -n 4 (session 79 ran it at -n 8: 126 of 131 failures were CUDA out of
#   memory, NOTES §124), each line stamped with the seconds since it started. Expected (written before): every test
#   passes, among them the three that failed for other reasons in session 79 and were fixed without a GPU run since
#   (the typer bug in test_cli_run_on_gpu / test_eval_model_on_gpu, and the page-table clamp test's own reference).
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
probe_build
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "part: status"; . results/2026-12-07-s69/probes/status.sh
fi
timeout $(( $(left) - 15 )) python -m pytest -v -m gpu -n 4 --durations=40 tests/ 2>&1 | python -u -c \
  'import sys, time; t = time.time(); [print(f"{time.time() - t:7.1f} {l}", end="", flush=True) for l in sys.stdin]' \
  > $W/suite.log
echo "G: rc=${PIPESTATUS[0]} left=$(left)"; tail -2 $W/suite.log; grep -c "PASSED" $W/suite.log
grep -E "(FAILED|ERROR) " $W/suite.log | head -20; grep -A42 "slowest" $W/suite.log; cp $W/suite.log $OUT/suite.txt
probe_end s81c2
