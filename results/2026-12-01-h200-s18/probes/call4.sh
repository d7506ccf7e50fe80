#!/usr/bin/env bash
# session 18, call 4 (one H200), main 6c12d9b, head_dim-128 build: ncu stall reasons of the decode kernel with the
# caches NOT flushed (--cache-control none; call 2 flushed them) at INT2 1 x 16, 1 x 8K, 1 x 32K: do the instruction-
# cache (no_instruction) and constant-cache (imc_miss) stalls of call 2 remain when the code is warm, as in the bench?
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
for cc in none all; do
NCU="ncu --clock-control none --cache-control $cc --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1 --section WarpStateStats --section SpeedOfLight --section InstructionStats --warp-sampling-interval 0 --import-source no"
for pt in "2 1 16" "2 1 8192" "2 1 32768"; do
  tag=$cc-$(echo $pt | tr ' ' '-')
  timeout 40 $NCU -o /tmp/o/ncu-$tag python .ab/ncu_probe.py auto $pt > /tmp/o/ncu-$tag.log 2>&1; echo "ncu $tag rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-$tag.ncu-rep --page raw --csv > /tmp/o/ncu-$tag-raw.csv 2>/dev/null; rm -f /tmp/o/ncu-$tag.ncu-rep
done; done
python - <<'PY'
import glob, pandas as pd
res = {}
for f in sorted(glob.glob("/tmp/o/ncu-*-raw.csv")):
    d = pd.read_csv(f); row = d.iloc[1]
    r = {c.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""): float(str(row[c]).replace(",", ""))
         for c in d.columns if "issue_stalled" in c and c.endswith("per_issue_active.ratio")}
    r["_duration"] = row["gpu__time_duration.sum"]
    res[f.split("ncu-")[1][:-8]] = r
df = pd.DataFrame(res); print(df.loc[df.max(axis=1).sort_values(ascending=False).index].head(14).to_string())
PY
tar -czf $OUT/c4.tgz -C /tmp/o .
