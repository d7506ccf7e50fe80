#!/usr/bin/env bash
# session 20, call 2 (one H200): branch cluster-merge; the default build; the cluster-merge GPU tests; probe_cl; probe_t8.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 150 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_cluster_merge_gpu.py tests/test_merge_slots.py > /tmp/o/t_cluster.log 2>&1; echo "cluster tests rc=$? t=$SECONDS"; tail -4 /tmp/o/t_cluster.log
timeout $((380 - SECONDS)) python .ab/probe_cl.py /tmp/o/cl.csv > /tmp/o/cl.log 2>&1; echo "probe_cl rc=$? t=$SECONDS"; tail -12 /tmp/o/cl.log
timeout $((585 - SECONDS)) python .ab/probe_t8.py /tmp/o/t8.csv > /tmp/o/t8.log 2>&1; echo "probe_t8 rc=$? t=$SECONDS"; tail -12 /tmp/o/t8.log
tar -czf $OUT/c2.tgz -C /tmp/o .
