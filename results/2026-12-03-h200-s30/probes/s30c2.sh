#!/usr/bin/env bash
# session 30, call 2 (one H200): the padded epilogue rows ("p", this commit) against the kernel before ("o",
# .ab/o_csrc), head_dim-128 builds, one process per build and round (p o o p); the timeline of "p" at 1 x 16, 1 x 8K,
# 8 x 32K; then on the default build of this commit: the bench (s6 kernel subset), the fixed cost (16-token sequences),
# and the GPU suite in what is left.
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
(MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_full.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_p.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D" FOSCAR_CSRC=$PWD/.ab/o_csrc MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=2 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_tp.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
for m in p o o p; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  export FOSCAR_NVCC_DEFINES="$D"; unset FOSCAR_CSRC; [ $m = o ] && export FOSCAR_CSRC=$PWD/.ab/o_csrc
  timeout 100 python .ab/probe_ep.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_CSRC
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f, dtype={"m": str}) for f in glob.glob("/tmp/o/ab-*.csv")])
k = ["bits", "batch", "context", "workload", "paged"]
p = d.pivot_table(index=k, columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=k, columns="m", values="median_us", aggfunc="mean")
p[("p/o", "")] = q["p"] / q["o"]
pd.set_option("display.width", 250)
print(p.round(3).to_string())
s = d.groupby(k).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 40 python -m bench.timeline --point 1x16 --point 1x8192 --point 8x32768 > /tmp/o/tl-p.log 2>&1; echo "tl rc=$? t=$SECONDS"
unset FOSCAR_NVCC_DEFINES
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt /tmp/o/tl-p.log $OUT/
tar -czf $OUT/c2a.tgz -C /tmp/o .
t0=$SECONDS; timeout 200 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
grep -i "HBM ceiling" /tmp/o/bench.log; grep -A8 -i "geometric" /tmp/o/bench.log | head -24
t0=$SECONDS; timeout 40 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --bits 2 --bits 4 --batch 1 --batch 8 --batch 64 --context 16 --grid sweep --format quiet --out /tmp/o/ctx16 > /tmp/o/ctx16.log 2>&1; echo "ctx16 rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2b.tgz -C /tmp/o bench bench.log ctx16 ctx16.log
timeout $((588 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_tests.log
cp /tmp/o/gpu_tests.log $OUT/
