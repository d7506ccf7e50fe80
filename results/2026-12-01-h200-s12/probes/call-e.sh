#!/usr/bin/env bash
# session 12, call E (one H200): ncu --set full of the paged INT2 G=128 8 x 32K decode (pages of 16, shuffled),
# main's kernel sources against the s12c branch's (rows one sub-tile ahead), both head_dim 128 builds: why is the
# paged loop 9-11% slower with 12% fewer instructions?
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_CSRC=$PWD/.ab/main_csrc FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=8 python -c "$B" > /tmp/o/build-main.log 2>&1) &
FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 MAX_JOBS=8 python -c "$B" > /tmp/o/build-new.log 2>&1; wait
tail -1 /tmp/o/build-main.log; tail -1 /tmp/o/build-new.log; echo "built t=$SECONDS"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1 --set full --import-source no"
for v in main new; do
  if [ $v = main ]; then export FOSCAR_CSRC=$PWD/.ab/main_csrc; else unset FOSCAR_CSRC; fi
  FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128 timeout 100 $NCU -o /tmp/o/ncu-$v python .ab/ncu_paged.py 2 8 32768 > /tmp/o/ncu-$v.log 2>&1; echo "ncu $v rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-$v.ncu-rep --page details --csv > /tmp/o/ncu-$v-details.csv 2>/dev/null
  ncu -i /tmp/o/ncu-$v.ncu-rep --page raw --csv > /tmp/o/ncu-$v-raw.csv 2>/dev/null
  ncu -i /tmp/o/ncu-$v.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-$v-sass.csv 2>/dev/null
done
unset FOSCAR_CSRC
rm -f /tmp/o/*.ncu-rep
grep -h "Duration\|Warp Cycles Per Issued\|Executed Instructions \|DRAM Throughput" /tmp/o/ncu-main-details.csv /tmp/o/ncu-new-details.csv | cut -c1-200
tar -czf $OUT/e.tgz -C /tmp/o .
echo "t=$SECONDS"
