#!/usr/bin/env bash
# Prepared in session 73 for the next session's call 1: on an H200 session 69's status.sh (issue 12's H200 bench, its
# expectations in its header; the default plans now cut short batches by the lengths, bench/NOTES.md §118, which
# changes no point of the preset's uniform grid), on an H100 s73c3.sh's parts (session 73 could not run it: no machine
# came in its last 20 minutes): the A/B of one sequence past 512 among short ones and the GPU files session 73's call 2
# did not run (expectations in s73c3.sh's header, written before any run). Copy it into the session's probes folder
# and commit before the run. At most LIMIT (default 560) s.
LIMIT="${LIMIT:-560}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s74c1
else
  echo "part: s73c3"
  . results/2026-12-07-s73/probes/s73c3.sh  # its own preamble, build and probe_end (s73c3.tgz)
fi
