#!/usr/bin/env bash
# session 33, call 4 (one H200): FOSCAR_EARLY_QUERY, the integer QK's query loaded before find_work on the fixed path.
# "o" HEAD built with FOSCAR_EARLY_QUERY=0, "q" HEAD; head_dim-128 builds, python -m bench.ab rounds o q q o; the
# timeline of "q"; then the ragged and plan GPU tests on "q" (head_dim 128 only).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D=FOSCAR_ONLY_HEAD_DIM=128
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="$D" MAX_JOBS=6 python -c "$B" > /tmp/o/build_q.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0" MAX_JOBS=5 python -c "$B" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" MAX_JOBS=5 python -c "$B" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 2x8x16:paged --point 2x1x8192 --point 2x64x8192"
for m in o q q o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then export FOSCAR_NVCC_DEFINES="$D FOSCAR_EARLY_QUERY=0"; else export FOSCAR_NVCC_DEFINES="$D"; fi
  timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-q-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
FOSCAR_NVCC_DEFINES="$D FOSCAR_TIMELINE=1" timeout 40 python -m bench.timeline --point 1x16 --point 8x16 > /tmp/o/tl-q.log 2>&1; echo "tl rc=$? t=$SECONDS"
grep -v "^ *[2-7] " /tmp/o/tl-q.log | tail -12; cp /tmp/o/tl-q.log $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
FOSCAR_NVCC_DEFINES="$D" timeout 75 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_plan.py tests/test_ragged_gpu.py -k "not many_sequences" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/
