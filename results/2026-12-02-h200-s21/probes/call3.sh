#!/usr/bin/env bash
# session 21, call 3 (one H200): the binding's checks through vsnprintf (no TORCH_CHECK; call 2 found the SIGSEGV in
# TORCH_CHECK's ostream formatting of an integer). The default build, the bad-call script, the GPU suite.
mkdir -p /tmp/o; export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
echo "CXX=$CXX"; /opt/gcc/bin/g++ --version | head -1; ls -la /opt/gcc/lib64/libstdc++.so* 2>&1 | head -3; python -c "import torch; print(torch.__version__, torch.version.cuda, torch._C._GLIBCXX_USE_CXX11_ABI)"
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.extension().__file__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
SO=$(tail -1 /tmp/o/build.log | awk '{print $2}'); nm -DC --defined-only "$SO" | grep -c 'basic_ostream' ; nm -C "$SO" | grep '_M_insert<long>' | head -3
python .ab/badcall.py > /tmp/o/bad.log 2>&1; echo "bad call exit $?" >> /tmp/o/bad.log; cat /tmp/o/bad.log
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py tests > /tmp/o/suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -8 /tmp/o/suite.log
cp /tmp/o/suite.log /tmp/o/bad.log $OUT/
