#!/usr/bin/env bash
# Session 73's call 1: session 72's next-s73c1.sh, copied unchanged.
# Prepared in session 72 for the next session's call 1: on an H200 session 69's status.sh (issue 12's H200 bench, its
# expectations in its header), on an H100 short_tokens.sh next to this file (FOSCAR_SHORT_TOKENS=1's first GPU run:
# its test, an A/B, the Llama shape's timeline, the ragged and fused-merge GPU files; expectations in its header). It
# prints the part it ran. Copy it into the session's probes folder and commit before the run. At most LIMIT (default
# 560) s. Returns gpu.csv, commit.txt, s73c1.tgz and the part's files (status: issue12-table.txt, bench-results.csv,
# bench-meta.json, bench-summary.json; short: tests_short.txt, ab_short_tokens.txt, timeline.txt, tests.txt).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
probe_build
PART=short; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && PART=status
echo "part: $PART"
if [ $PART = status ]; then . results/2026-12-07-s69/probes/status.sh; else . results/2026-12-07-s72/probes/short_tokens.sh; fi
probe_end s73c1
