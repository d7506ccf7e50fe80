#!/usr/bin/env bash
# session 33, call 3 (one H200), on HEAD: where a 16-token decode's CTA waits. ncu (clocks not changed) with PC
# sampling at the default interval (two wrong option names were tried first; ncu names it --warp-sampling-interval)
# over one INT2 G=128 decode at batch 8 x 16 (64 CTAs) and batch 1 x 16, head_dim-128 build; the source page
# (per SASS instruction: samples by stall reason) as CSV.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
MAX_JOBS=12 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built t=$SECONDS $(tail -1 /tmp/o/build.log)"
which ncu; ncu --version | tail -1
for b in 8 1; do
  timeout 120 ncu --clock-control none --set full --import-source yes -k regex:folded_decode_kernel --launch-skip 4 --launch-count 1 --export /tmp/o/p${b}x16 python .ab/one_decode.py $b > /tmp/o/ncu_${b}.log 2>&1; echo "ncu $b rc=$? t=$SECONDS"; tail -3 /tmp/o/ncu_${b}.log
  ncu --import /tmp/o/p${b}x16.ncu-rep --page source --print-source sass --csv > $OUT/src_${b}x16.csv 2>/tmp/o/src_${b}.err; echo "src rc=$? $(wc -c < $OUT/src_${b}x16.csv)"; head -c 300 /tmp/o/src_${b}.err
  ncu --import /tmp/o/p${b}x16.ncu-rep --page details > $OUT/details_${b}x16.txt 2>&1
done
cp /tmp/o/*.log $OUT/
