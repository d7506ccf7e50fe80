#!/usr/bin/env bash
# Session 71: copied from results/2026-12-07-s70/probes/next-s71c2.sh unchanged (below).
# Prepared in session 70 for the next session's call 2: on an H200 `short16k.sh`, on an H100 `status.sh` (status.sh in
# results/2026-12-07-s69/probes/: the README's Status bench with issue 12's INT2 points, its expectations in its header;
# the floors of session 70 change no plan at its 8 KV heads, NOTES §115. short16k.sh next to this file: the floor of
# 256 in caches of at most 16K, its expectations in its header). Copy it into the session's probes folder and commit
# before the run. At most LIMIT (default 560) s. Returns gpu.csv, commit.txt, s71c2.tgz and the part's files (status:
# issue12-table.txt, bench-results.csv, bench-meta.json, bench-summary.json; short16k: tests.txt, ab_rounds.txt).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
P=results/2026-12-07-s69/probes
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then . results/2026-12-07-s70/probes/short16k.sh; else . $P/status.sh; fi
probe_end s71c2
