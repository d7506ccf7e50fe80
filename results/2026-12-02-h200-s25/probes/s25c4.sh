#!/usr/bin/env bash
# session 25, call 4 (one H200): ncu of the INT2 G=128 decode kernel with the odd planes in place, at 64 x 32K and 8 x 32K:
# stall reasons, pipe use, issue (as session 24's call 4).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1 --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy --section InstructionStats --warp-sampling-interval 0 --import-source no"
for pt in "64 32768" "8 32768"; do
  tag="qh-${pt// /-}"
  timeout 100 $NCU -o /tmp/o/ncu-$tag python .ab/ncu_probe.py auto 2 $pt > /tmp/o/ncu-$tag.log 2>&1; echo "ncu $tag rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-$tag.ncu-rep --page raw --csv > /tmp/o/ncu-$tag-raw.csv 2>/dev/null
  ncu -i /tmp/o/ncu-$tag.ncu-rep --page details --csv > /tmp/o/ncu-$tag-details.csv 2>/dev/null
done
tar -czf $OUT/c4.tgz -C /tmp/o $(cd /tmp/o && ls ncu-*.csv ncu-*.log build.log)
