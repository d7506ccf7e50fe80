#!/usr/bin/env bash
# session 27, call 1 (one H200): paged decode by page size (1, 16, 64): FOSCAR paged against FlashInfer over the same
# pages, batch 8 / 32 x 8K / 32K, INT2 and INT4; the contiguous FOSCAR kernel beside page 16.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
K="--operand bf16 --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa"
G="--bits 2 --bits 4 --batch 8 --batch 32 --context 8192 --context 32768 --grid sweep --format quiet"
for ps in 16 1 64; do
  extra=""; [ $ps = 16 ] && extra="--kernel foscar-cuda"
  t0=$SECONDS; timeout 160 foscar bench --arch h200 $K $extra $G --page-size $ps --out /tmp/o/ps$ps > /tmp/o/ps$ps.log 2>&1; echo "ps$ps rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
  grep -i "HBM ceiling" /tmp/o/ps$ps.log | head -2
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
python - <<'PY' | tee /tmp/o/ps-table.txt
import pandas as pd
rows = []
for ps in (16, 1, 64):
    try:
        d = pd.read_csv(f"/tmp/o/ps{ps}/results.csv")
    except Exception as e:
        print(ps, "no results", e); continue
    d["ps"] = ps
    rows.append(d)
d = pd.concat(rows)
cols = [c for c in ("median_us", "time_us", "us") if c in d.columns]
print(d.columns.tolist())
t = d.pivot_table(index=["bits", "batch", "context"], columns=["ps", "kernel"], values=cols[0], aggfunc="first")
pd.set_option("display.width", 250); pd.set_option("display.max_columns", 40)
print(t.round(1).to_string())
PY
tar -czf $OUT/c1.tgz -C /tmp/o .
