#!/usr/bin/env bash
# Session 72 call 2 (replaces session 71's prepared next-s72c2.sh): on an H200 s69's status.sh (issue 12's H200 bench,
# its expectations in its header; call 1 got an H100, so that part is still the one wanted from an H200), on an H100
# d256.sh next to this file (head_dim 256 merge rule A/B and GPU tests, its expectations in its header). Prints the
# part it ran. At most LIMIT (default 560) s.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
PART=d256; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && PART=status
echo "part: $PART"
if [ $PART = status ]; then . results/2026-12-07-s69/probes/status.sh; else . results/2026-12-07-s72/probes/d256.sh; fi
probe_end s72c2
