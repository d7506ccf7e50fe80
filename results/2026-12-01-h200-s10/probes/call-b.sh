#!/usr/bin/env bash
# session 10, call B: ncu of the small-point decode kernel (auto vs fixed split, same chunks), split sweep INT4 small batches
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
for m in auto fixed16; do
  timeout 90 $NCU --set full --import-source no -o /tmp/o/ncu-$m-2-1-8192 python .ab/ncu_probe.py $m 2 1 8192 > /tmp/o/ncu-$m.log 2>&1; echo "ncu $m rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-$m-2-1-8192.ncu-rep --page source --csv --print-source sass > /tmp/o/src-$m.csv 2>/dev/null
  ncu -i /tmp/o/ncu-$m-2-1-8192.ncu-rep --page details --csv > /tmp/o/det-$m.csv 2>/dev/null
  grep -i "\"Duration\"\|Elapsed Cycles\|Registers Per\|Achieved Occ" /tmp/o/det-$m.csv | head -5
done
for m in auto fixed4 fixed2; do
  timeout 60 $NCU --section SpeedOfLight -o /tmp/o/ncu-$m-4-8-4096 python .ab/ncu_probe.py $m 4 8 4096 > /tmp/o/ncu4-$m.log 2>&1
  ncu -i /tmp/o/ncu-$m-4-8-4096.ncu-rep --page details --csv 2>/dev/null | grep -i "\"Duration\"" | head -2
done
echo "ncu done t=$SECONDS"
timeout 150 python scripts/split_sweep.py /tmp/o/split --bits 4 --batch 8 --batch 1 --context 4096 --context 8192 --context 32768 --context 131072 > /tmp/o/split.log 2>&1; echo "split rc=$? t=$SECONDS"
cat /tmp/o/split.log | tail -8
python - <<'PY'
import pandas as pd
d = pd.read_csv("/tmp/o/split/split_sweep.csv")
print(d.columns.tolist())
c = [x for x in ("bits", "batch", "context", "num_splits", "median_us") if x in d]
print(d[c].pivot_table(index=["bits", "batch", "context"], columns="num_splits", values="median_us").round(1).to_string())
PY
tar -czf $OUT/b.tgz -C /tmp o
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
echo "t=$SECONDS"
