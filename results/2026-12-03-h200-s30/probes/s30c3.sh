#!/usr/bin/env bash
# session 30, call 3 (one H200): the timeline with its epilogue phase cut at 1 / 2 / 3 and uncut (0), NOTES §70
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
D="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1"
for c in 0 1 2 3; do
  (FOSCAR_NVCC_DEFINES="$D FOSCAR_TL_EPILOGUE_CUT=$c" MAX_JOBS=4 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_$c.log 2>&1) &
done
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
for c in 0 1 2 3; do
  FOSCAR_NVCC_DEFINES="$D FOSCAR_TL_EPILOGUE_CUT=$c" timeout 60 python -m bench.timeline --point 1x16 --point 1x8192 --point 8x32768 --point 64x16 > /tmp/o/tl-cut$c.log 2>&1; echo "tl $c rc=$? t=$SECONDS"
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/tl-cut*.log /tmp/o/build_*.log $OUT/
