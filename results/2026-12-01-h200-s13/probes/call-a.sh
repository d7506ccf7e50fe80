#!/usr/bin/env bash
# session 13, call A (one H200), on the pgsmem tree (page ids through a per-warp shared-memory ring, NOTES §38 on that branch)
# (1) A/B against main's kernel sources, head_dim 128 builds, contiguous rows as the drift control; (2) if paged INT2
# got faster (geomean new/base < 0.99), the full bench on this build;
# (3) the GPU tests of the kernel on this build (all 184 instances' compile against its snapshot among them).
K="--operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=6 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" >> /tmp/o/build.log) &
bpid=$!
export FOSCAR_AB_SECONDS=80
export FOSCAR_AB="base:FOSCAR_ONLY_HEAD_DIM=128@.ab/main_csrc new:FOSCAR_ONLY_HEAD_DIM=128"
OUT=/tmp/o/l timeout 200 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-paged.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,/^max_rel_err/p' /tmp/o/ab-paged.log | head -22
unset FOSCAR_AB
tar -czf $OUT/d1.tgz -C /tmp/o ab-paged.log l
go=$(python - <<'PY'
import math, pandas as pd
import tarfile
tf = tarfile.open("/tmp/o/l/ab.tgz")
def load(v):
    d = pd.read_csv(tf.extractfile(f"ab/{v}/results.csv"))
    d = d[(d.kernel == "foscar-cuda-paged") & (d.bits == 2)].set_index(["batch", "context"]).median_us
    return d
try:
    r = (load("new") / load("base")).dropna()
    print(1 if len(r) >= 3 and math.exp(sum(map(math.log, r)) / len(r)) < 0.99 else 0)
except Exception as e:
    print(0, e)
PY
)
echo "bench go=$go"
wait $bpid; tail -2 /tmp/o/build.log
if [ "$go" = 1 ]; then
  t0=$SECONDS; timeout 250 foscar bench --arch h200 $K --out /tmp/o/bench > /tmp/o/bench.log 2>&1; echo "bench rc=$? wall=$((SECONDS - t0)) s t=$SECONDS"
  grep -A8 "geomean\|Geomean" /tmp/o/bench.log | head -30
  nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
  tar -czf $OUT/d2.tgz -C /tmp/o bench bench.log
fi
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_paged.py tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_bad_inputs.py tests/test_channel_k.py tests/test_merge_slots.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/d3.tgz -C /tmp/o gpu_tests.log build.log
echo "t=$SECONDS"
