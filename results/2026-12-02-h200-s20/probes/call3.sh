#!/usr/bin/env bash
# session 20, call 3 (one H200): the cluster merge held to 1 CTA per SM (FOSCAR_CLUSTER_SMEM=120000 build); probe_cl.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES=FOSCAR_CLUSTER_SMEM=120000
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout $((300 - SECONDS)) python .ab/probe_cl.py /tmp/o/cl1.csv > /tmp/o/cl1.log 2>&1; echo "probe_cl rc=$? t=$SECONDS"; tail -12 /tmp/o/cl1.log
timeout 60 python -m pytest -m gpu -q -x -p no:cacheprovider tests/test_cluster_merge_gpu.py -k "batch_of_one and 8192" > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -2 /tmp/o/t.log
tar -czf $OUT/c3.tgz -C /tmp/o .
