#!/usr/bin/env bash
# session 13, call D (one H200): why one-iteration splits lost at 1 x 8K and why 16 splits beat 32 at 1 x 32K
# (NOTES §40): ncu --set full of the decode kernel and the split merge of one plan.run, fixed split counts.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
mkdir -p /tmp/o/ncu
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "build rc=$? t=$SECONDS"
for cfg in "fixed16 2 1 8192" "fixed32 2 1 8192" "fixed16 4 1 32768" "fixed32 4 1 32768"; do
  set -- $cfg; tag="$1-int$2-$3x$4"
  timeout 100 ncu --clock-control none --kernel-name regex:"folded_decode|merge" --launch-skip 6 --launch-count 2 --set full --import-source no -o /tmp/o/ncu/$tag python .ab/ncu_probe.py $cfg > /tmp/o/ncu/$tag.log 2>&1; echo "$tag rc=$? t=$SECONDS"
  ncu --import /tmp/o/ncu/$tag.ncu-rep --page details --csv > /tmp/o/ncu/$tag-details.csv 2>/dev/null
  python - /tmp/o/ncu/$tag-details.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = ("Duration", "Elapsed Cycles", "Achieved Occupancy", "Executed Ipc Active", "Registers Per Thread", "Grid Size", "Waves Per SM", "DRAM Throughput")
for r in rows:
    if r.get("Metric Name") in want:
        print(r["Kernel Name"][:40], r["Metric Name"], r["Metric Value"], r.get("Metric Unit", ""))
PY
done
tar -czf $OUT/d.tgz -C /tmp/o ncu build.log
echo "t=$SECONDS"
