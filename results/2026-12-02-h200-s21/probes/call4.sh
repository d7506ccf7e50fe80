#!/usr/bin/env bash
# session 21, call 4 (one H200), on 4a86448: the binding's rank / dtype checks first; the default build, the bad-call
# script (three refused calls), the GPU suite.
mkdir -p /tmp/o; export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
python .ab/badcall.py > /tmp/o/bad.log 2>&1; echo "bad call exit $?" >> /tmp/o/bad.log; cat /tmp/o/bad.log
timeout $((440 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -4 /tmp/o/suite.log
cp /tmp/o/suite.log /tmp/o/bad.log $OUT/
