#!/usr/bin/env bash
# Session 69, call 1: on an H200 `status.sh` (the README's Status bench, issue 12), on an H100 `room.sh`.
# At most LIMIT (default 560) s. Returns gpu.csv, commit.txt, s69c1.tgz and the part's files (status: issue12-table.txt,
# bench-results.csv, bench-meta.json, bench-summary.json; room: bench-table.txt, ab_rounds.txt): 7 at most.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
P=results/2026-12-07-s69/probes
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then . $P/status.sh; else . $P/room.sh; fi
probe_end s69c1
