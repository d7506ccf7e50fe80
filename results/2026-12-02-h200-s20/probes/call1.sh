#!/usr/bin/env bash
# session 20, call 1 (one H200): branch cluster-merge; the default build; GPU tests of the cluster merge and the suite; probe_cl.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -3 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 120 python -m pytest -q -x -rfEx -p no:cacheprovider tests/test_cluster_merge_gpu.py > /tmp/o/t_cluster.log 2>&1; echo "cluster tests rc=$? t=$SECONDS"; tail -5 /tmp/o/t_cluster.log
if grep -q ' passed' /tmp/o/t_cluster.log && ! grep -q 'failed' /tmp/o/t_cluster.log; then
  timeout $((360 - SECONDS)) python .ab/probe_cl.py /tmp/o/cl.csv > /tmp/o/cl.log 2>&1; echo "probe rc=$? t=$SECONDS"; tail -16 /tmp/o/cl.log
fi
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -15 /tmp/o/suite.log
tar -czf $OUT/c1.tgz -C /tmp/o .
