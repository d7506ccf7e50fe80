#!/usr/bin/env bash
# Session 77 call 2. At most LIMIT (default 540) s.
#   On an H200: issue 12's bench again (session 69's status.sh, the README's Status command), a second H200 run of
#   the current kernels beside session 76's (bench-74c6649: INT2 5.01x, 5 of 8 large points at 85%); then the whole
#   GPU suite (-n 4) with the time left: the suite has passed on H100s only since session 73's default (§120, §121).
#   Expected (written before): INT2 4.9-5.15x, INT4 3.18-3.28x, FP8-cache 3.9-4.05x; every FOSCAR series within 1.5%
#   of session 76's; large INT2 points at 85%: 4-6 of 8 (8 x 32K 78-82%, 32 x 8K 81-85%, 64 x 8K 82-86%);
#   max_rel_err <= 1.8e-3; the GPU suite: all that run pass.
#   On an H100: the whole GPU suite only.
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
probe_build
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
fi
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 4 tests/ > $W/suite.log 2>&1
  echo "G: rc=$? left=$(left)"; tail -3 $W/suite.log
  grep -E "^(FAILED|ERROR)" $W/suite.log | head -20
  cp $W/suite.log $OUT/suite.txt
fi
probe_end s77c2
