#!/usr/bin/env bash
# Session 50, call 2. On an H200: session 49's queued s49h.sh first (the stream probe at the decode's depth beside the
# decode on one GPU; its prediction is in its header). Then, on either GPU, the whole GPU suite with 4 workers (the
# first complete run on an H100 if that is what comes; session 48's call 4 was cut at 406 tests).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-540} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
if grep -q H200 $OUT/gpu.csv; then
  mkdir -p /tmp/h; t0=$SECONDS
  OUT=/tmp/h timeout 240 bash results/2026-12-05-h100-s49/probes/s49h.sh > /tmp/h/s49h.log 2>&1
  echo "s49h rc=$? wall=$((SECONDS - t0)) left=$(left)"; tar -czf $OUT/h.tgz -C /tmp/h .; cat /tmp/h/ab-table.txt
fi
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $OUT/build.log 2>&1
echo "built left=$(left)"
t0=$SECONDS; timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -p no:cacheprovider tests > $OUT/gpu_tests.log 2>&1
echo "gpu suite rc=$? wall=$((SECONDS - t0)) left=$(left)"; tail -5 $OUT/gpu_tests.log
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
[ -e /tmp/h/sp/stream_probe.txt ] && cat /tmp/h/sp/stream_probe.txt
true
