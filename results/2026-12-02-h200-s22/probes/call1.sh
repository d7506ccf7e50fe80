#!/usr/bin/env bash
# session 22, call 1 (one H200), on main: the HBM probe's variants, INT4's split counts at the batch 32/64 points,
# then the GPU suite (0198971's bad-call loop and split rank/dtype checks not yet run on a GPU).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
python .ab/probe_hbm.py > /tmp/o/hbm.csv 2> /tmp/o/hbm.err; echo "hbm rc=$? t=$SECONDS"; cat /tmp/o/hbm.csv; tail -3 /tmp/o/hbm.err
cp /tmp/o/hbm.csv /tmp/o/hbm.err $OUT/
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 120 python scripts/split_sweep.py /tmp/o/ss --bits 4 --batch 32 --batch 64 --context 8192 --context 32768 --splits 1 --splits 2 --splits 3 --splits 4 --splits 6 > /tmp/o/ss.log 2>&1; echo "ss rc=$? t=$SECONDS"; cat /tmp/o/ss.log | tail -8
cp /tmp/o/ss/split_sweep.csv $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((580 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -6 /tmp/o/suite.log
cp /tmp/o/suite.log $OUT/suite.log
