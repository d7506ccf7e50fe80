#!/usr/bin/env bash
# (Ran as .ab/s49c1.sh in call 2 of results/2026-12-05-h100-s49, on an H100: no H200 was lent.)
# session 49, call 1 (one H200): (1) the stream probe (.ab/stream_probe.py, NOTES §93): a one-wave grid's pure read
# by cp.async (the decode's copies) against cp.async.bulk. Expected (written before): at 256 CTAs x 640 KiB (160 MiB),
# cp.async with no spin ~86-90% of the ceiling (session 40's Triton grid-256 read 86%); if bulk copies reach >= 92% at
# 2 CTAs an SM with a 1200-2000 cycle spin a stage where cp.async stays <= 88%, the copy mechanism holds the one-wave
# points and a bulk-copy kernel is the lead; if both are within ~2%, it is not. (2) session 48's queued order-only
# control (results/2026-12-05-h200-s48/probes/s49_order_only.sh; its prediction in its header). Before it ran, the
# same probe on an H100 (results/2026-12-05-h100-s49) put cp.async and bulk copies within 1% of each other everywhere.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
mkdir -p $OUT/sp
t0=$SECONDS; timeout 200 python .ab/stream_probe.py --quick > $OUT/sp/stream_probe.txt 2>&1; echo "stream probe rc=$? wall=$((SECONDS - t0)) left=$(left)"
tail -5 $OUT/sp/stream_probe.txt
bash results/2026-12-05-h200-s48/probes/s49_order_only.sh
