#!/usr/bin/env bash
# session 21, call 2 (one H200), on main b6b2c57: why a failed TORCH_CHECK in the binding segfaults (call 1's
# test_the_binding_raises_on_a_bad_argument_and_never_crashes: exit -11). (1) cuda-gdb's backtrace of the bad call;
# (2) a minimal extension with a failing check, built -std=c++17 (as foscar's binding) and -std=c++20 (torch's own
# flag), with and without a CUDAGuard alive at the throw.
mkdir -p /tmp/o; export PYTHONPATH=$PWD:$PYTHONPATH
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
g++ --version | head -1; python -c "import torch; print(torch.__version__, torch.version.cuda)"; which cuda-gdb
(for v in "c17 -O3 -std=c++17" "c17g -O3 -std=c++17 -DGUARD_FIRST" "c20g -O3 -std=c++20 -DGUARD_FIRST" "dflt -DGUARD_FIRST"; do
   set -- $v; n=$1; shift; (python .ab/exc/run.py exc_$n "$@" > /tmp/o/exc_$n.log 2>&1; echo "exit $?" >> /tmp/o/exc_$n.log) &
 done; wait) &
P=$!
MAX_JOBS=12 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
python .ab/badcall.py > /tmp/o/bad.log 2>&1; echo "bad call exit $?" >> /tmp/o/bad.log; cat /tmp/o/bad.log | tail -5
timeout 200 cuda-gdb -batch -ex "set pagination off" -ex run -ex bt -ex "info sharedlibrary" --args python .ab/badcall.py > /tmp/o/gdb.log 2>&1; echo "gdb rc=$? t=$SECONDS"
grep -n -A40 'SIGSEGV\|signal' /tmp/o/gdb.log | head -70
wait $P; for f in /tmp/o/exc_*.log; do echo "== $f"; tail -3 $f; done
tar -czf $OUT/c2.tgz -C /tmp/o .
