#!/usr/bin/env bash
# Session 73 call 2: on an H200 session 69's status.sh (issue 12's H200 bench, its expectations in its header; the
# default plans now cut short batches by the lengths, §118, which changes no point of the preset's uniform grid), on an
# H100 short2.sh next to this file (expectations in its header). At most LIMIT (default 560) s. Returns gpu.csv,
# commit.txt, s73c2.tgz and the part's files.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
probe_build
PART=short; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && PART=status
echo "part: $PART"
if [ $PART = status ]; then . results/2026-12-07-s69/probes/status.sh; else . results/2026-12-07-s73/probes/short2.sh; fi
probe_end s73c2
