#!/usr/bin/env bash
# session 14, call D (one H200), on the final main (the merge without its early trigger, NOTES §45):
# (1) the full build; (2) the batch-1 / 8 FOSCAR rows at 8K (against call B's bench on 0584f75);
# (3) the GPU suite but the fused-merge build's tests and the Hugging Face model runs, in what time is left.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "full build rc=$? t=$SECONDS" | tee -a /tmp/o/build.log
timeout 40 foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged --bits 2 --bits 4 --batch 1 --batch 8 --context 8192 --grid sweep --format quiet --out /tmp/o/b18 > /tmp/o/b18.log 2>&1; echo "bench rc=$? t=$SECONDS"
python -c "import pandas as pd; d=pd.read_csv('/tmp/o/b18/results.csv'); print(d[['kernel','bits','batch','context','median_us','max_rel_err','status']].to_string())"
tar -czf $OUT/d1.tgz -C /tmp/o b18 b18.log build.log
left=$((500 - SECONDS))
timeout $left python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py --ignore=tests/test_hf.py tests > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/d2.tgz -C /tmp/o gpu_tests.log
echo "t=$SECONDS"
