#!/usr/bin/env bash
# Copied unchanged from results/2026-12-07-s71/probes/next-s72c2.sh at the start of session 72.
# Prepared in session 71 for the next session's call 2: the part call 1 did not run, PART=status or PART=wide in the
# run's command (status.sh in results/2026-12-07-s69/probes/: the README's Status bench with issue 12's INT2 points,
# its expectations in its header;
# session 71's merge rule and session 70's floors change no plan at its 8 KV heads, NOTES §115-§116. wide.sh next to
# this file: what session 71 left untimed, its expectations in its header). Copy it into the session's probes folder
# and commit before the run. At most LIMIT (default 560) s. Returns gpu.csv, commit.txt, s72c2.tgz and the part's
# files (status: issue12-table.txt, bench-results.csv, bench-meta.json, bench-summary.json; wide: tests.txt,
# ab_wide.txt, ab_short.txt, ab_d256.txt).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
P69=results/2026-12-07-s69/probes
PART="${PART:?set PART=status or PART=wide: the part that call 1 did not run (its output says which it ran)}"
echo "part: $PART"
if [ $PART = status ]; then . $P69/status.sh; else . results/2026-12-07-s71/probes/wide.sh; fi
probe_end s72c2
