#!/usr/bin/env bash
# session 34, call 4 (one H200): FOSCAR_ONE_WARP_EPILOGUE, a sequence of at most 64 tokens written from warp 0's
# registers. "z" HEAD built with FOSCAR_ONE_WARP_EPILOGUE=0, "w" HEAD; head_dim-128 builds, python -m bench.ab rounds
# z w w z; the timeline of "w"; then GPU tests of short sequences on "w" (head_dim 128 only).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=6 python -c "$B" > /tmp/o/build_w.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_ONE_WARP_EPILOGUE=0" MAX_JOBS=5 python -c "$B" > /tmp/o/build_z.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=5 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 4x8x16 --point 2x8x16:paged --point 2x1x8192 --point 2x8x8192 --point 2x8x32768 --point 2x64x8192 --point 2x8x32768:lognormal"
for m in z w w z; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = z ]; then export FOSCAR_NVCC_DEFINES="$D FOSCAR_ONE_WARP_EPILOGUE=0"; else export FOSCAR_NVCC_DEFINES="$D"; fi
  timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-z-*.csv /tmp/o/ab-w-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 40 python -m bench.timeline --point 1x16 --point 8x16 --point 64x16 > /tmp/o/tl-w.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[2-7] " /tmp/o/tl-w.log | tail -12; cp /tmp/o/tl-w.log $OUT/
export FOSCAR_NVCC_DEFINES="$D"
timeout $((330 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_ragged_gpu.py tests/test_bad_inputs.py tests/test_plan.py -k "not many_sequences and not host_mirror and not merge_programs" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -8 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/
