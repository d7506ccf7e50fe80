#!/usr/bin/env bash
# session 43, call 4 (one H200): ncu raw metrics (stall reasons, pipes) of INT2 8 x 32K at 4 and 6 chunks, INT4 at 4.
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 4 --launch-count 1 --set full --import-source no"
for a in "2 8 32768 4" "2 8 32768 6" "4 8 32768 4"; do
  set -- $a; n=$1-$2-$3-$4
  FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 120 $NCU -o /tmp/o/ncu-$n python .ab/ncu_split.py $1 $2 $3 $4 > /tmp/o/ncu-$n.log 2>&1; echo "ncu $n rc=$? left=$(left)"
  ncu -i /tmp/o/ncu-$n.ncu-rep --page raw --csv > /tmp/o/raw-$n.csv 2>/dev/null
done
python - <<'PY'
import pandas as pd
cols = {}
for n in ["2-8-32768-4", "2-8-32768-6", "4-8-32768-4"]:
    d = pd.read_csv(f"/tmp/o/raw-{n}.csv", low_memory=False)
    cols[n] = d.iloc[1] if d.iloc[0].astype(str).str.contains("ns|cycle|%|inst", regex=True).any() else d.iloc[0]
    cols[n] = d.iloc[-1]
m = pd.DataFrame(cols)
keep = m.index.str.contains("stall|pipe|inst_executed|warps_active|throughput|issue|dispatch|mio|lsu|tex|shared|bank", case=False, regex=True)
m[keep].to_csv("/tmp/o/ncu-metrics.csv")
print(len(m), keep.sum())
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
gzip -c /tmp/o/ncu-metrics.csv > $OUT/ncu-metrics.csv.gz; tar -czf $OUT/raw.tgz -C /tmp/o raw-2-8-32768-4.csv raw-2-8-32768-6.csv raw-4-8-32768-4.csv
