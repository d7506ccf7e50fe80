#!/usr/bin/env bash
# session 16, call 4 (one H200): the epilogue in 4-channel steps (NOTES §48). (1) two builds in parallel: the new
# kernel, all instances (for the GPU tests), and the base kernel (.ab/base_csrc = HEAD's csrc before the change),
# head_dim 128 only; (2) .ab/probe_ep.py base, new, base, new (outputs kept: base and new must be bit-identical);
# (3) the GPU tests of the kernel until the device time runs out.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=12 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1) &
(FOSCAR_CSRC=.ab/base_csrc FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build0.log 2>&1) &
wait; echo "builds t=$SECONDS"; tail -1 /tmp/o/build.log; tail -1 /tmp/o/build0.log
for r in 1 2; do
  FOSCAR_CSRC=.ab/base_csrc FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 60 python .ab/probe_ep.py base$r $OUT/ep-base$r.csv > /tmp/o/ep-base$r.log 2>&1; echo "base$r rc=$? t=$SECONDS"
  timeout 60 python .ab/probe_ep.py new$r $OUT/ep-new$r.csv > /tmp/o/ep-new$r.log 2>&1; echo "new$r rc=$? t=$SECONDS"
done
python - <<'PY'
import glob, pandas as pd, torch
pd.set_option("display.width", 200)
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob(__import__("os").environ["OUT"] + "/ep-*.csv"))])
t = d.pivot_table(index=["bits", "batch", "context", "paged"], columns="tag", values="median_us")
t["new/base"] = ((t.new1 + t.new2) / (t.base1 + t.base2)).round(3)
print(t.to_string()); print("max err", d.groupby("tag").err.max().to_dict())
for f in sorted(glob.glob("/tmp/ep/new1-*.pt")):
    a, b = torch.load(f), torch.load(f.replace("new1", "base1"))
    print(f.split("/")[-1], "bit-identical" if torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) else "DIFFERENT")
PY
tar -czf $OUT/c4a.tgz -C /tmp/o build.log build0.log $(cd /tmp/o && ls ep-*.log)
timeout $((400 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py --ignore=tests/test_hf.py tests/test_decode_cuda.py tests/test_ragged_gpu.py tests/test_paged.py tests/test_channel_k.py tests/test_bad_inputs.py tests/test_merge_slots.py > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -5 /tmp/o/gpu_tests.log
tar -czf $OUT/c4b.tgz -C /tmp/o gpu_tests.log
