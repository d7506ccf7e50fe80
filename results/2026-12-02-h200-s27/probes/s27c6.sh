#!/usr/bin/env bash
# session 27, call 6 (one H200): page order, FOSCAR's paged kernel and FlashInfer on the same order (new
# --page-order): page 16 shuffled / in-order (INT2 points), page 1 shuffled / in-order (INT2 and INT4),
# batch 8 / 32 x 8K / 32K.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
G="--operand bf16 --grid sweep --format quiet --batch 8 --batch 32 --context 8192 --context 32768 --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc"
for run in "16 shuffled" "16 in-order" "1 shuffled" "1 in-order"; do
  set -- $run; ps=$1; po=$2
  extra="--bits 2 --bits 4"; [ $ps = 16 ] && extra="--bits 2 --kernel flashinfer-xqa"
  t0=$SECONDS; timeout 70 foscar bench --arch h200 $G $extra --page-size $ps --page-order $po --out /tmp/o/ps$ps-$po > /tmp/o/ps$ps-$po.log 2>&1; echo "ps$ps $po rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
python - <<'PY' | tee /tmp/o/order-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f).assign(run=f.split("/")[-2]) for f in glob.glob("/tmp/o/ps*/results.csv")])
d = d[d.status == "ok"]
pd.set_option("display.width", 250)
print(d.pivot_table(index=["batch", "context", "cache_bits"], columns=["kernel", "run"], values="median_us", aggfunc="first").round(1).T.to_string())
f = d[d.kernel == "foscar-cuda-paged"]
print(f.pivot_table(index=["cache_bits", "batch", "context"], columns="run", values="speedup_vs_flashinfer_bf16").round(3).to_string())
PY
tar -czf $OUT/c6.tgz -C /tmp/o .
