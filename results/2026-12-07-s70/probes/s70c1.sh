#!/usr/bin/env bash
# Session 70 call 1 (prepared in session 69): on an H200 `status.sh`, on an H100 `long-tokens.sh` (both in
# results/2026-12-07-s69/probes/; status.sh is the README's Status bench with issue 12's INT2 points, its expectations in
# its header; long-tokens.sh the long chunk's A/B). Copy it into the session's probes folder and commit before the run.
# At most LIMIT (default 560) s. Returns gpu.csv, commit.txt, s70c1.tgz and the part's files (status: issue12-table.txt,
# bench-results.csv, bench-meta.json, bench-summary.json; long-tokens: tests.txt, ab_rounds.txt): 7 at most.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
P=results/2026-12-07-s69/probes
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then . $P/status.sh; else . $P/long-tokens.sh; fi
probe_end s70c1
