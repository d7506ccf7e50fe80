#!/usr/bin/env bash
# session 24, call 4 (one H200): ncu of the INT2 G=128 decode kernel, packed integer PV (k) and two-mma (u), at 64 x 32K
# and 8 x 8K (k only): stall reasons, pipe use, issue (WarpStateStats, SchedulerStats, InstructionStats, SourceCounters); then the packed and merge GPU tests on the final code (knobs.py).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1 --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy --section InstructionStats --section SourceCounters --warp-sampling-interval 0 --import-source no"
for pt in "64 32768" "8 8192"; do
  for v in 1 0; do
    [ "$pt" = "8 8192" ] && [ $v = 0 ] && continue
    tag="pk$v-${pt// /-}"
    FOSCAR_PV_PACK=$v timeout 100 $NCU -o /tmp/o/ncu-$tag python .ab/ncu_probe.py auto 2 $pt > /tmp/o/ncu-$tag.log 2>&1; echo "ncu $tag rc=$? t=$SECONDS"
    ncu -i /tmp/o/ncu-$tag.ncu-rep --page raw --csv > /tmp/o/ncu-$tag-raw.csv 2>/dev/null
    ncu -i /tmp/o/ncu-$tag.ncu-rep --page details --csv > /tmp/o/ncu-$tag-details.csv 2>/dev/null
    ncu -i /tmp/o/ncu-$tag.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-$tag-sass.csv 2>/dev/null; gzip -f /tmp/o/ncu-$tag-sass.csv
    cp /tmp/o/ncu-$tag*.csv* /tmp/o/ncu-$tag.log $OUT/ 2>/dev/null
    [ $SECONDS -gt 330 ] && break 2
  done
done
timeout $((560 - SECONDS)) python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider tests/test_merge_slots.py tests/test_decode_cuda.py -k "packed or merge or slots" > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/t.log
cp /tmp/o/t.log $OUT/
