#!/usr/bin/env bash
# session 16, call 2 (one H200), on cde2514: (1) the default build; (2) .ab/probe.py: one-chunk plans, new (one fixed
# split, no merge launch) against old (length-aware, merge launched), alternating, at 16-token sequences (batch 1/8/64)
# and 32 x 8K / 32 x 32K, contiguous and paged, INT2 and INT4; batch 1 at 32K / 128K: auto, 16 and 32 splits;
# (3) ncu of the 16-token decode kernel at batch 1 and 8 (where its ~3 us go).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 240 python .ab/probe.py $OUT/probe.csv > /tmp/o/probe.log 2>&1; echo "probe rc=$? t=$SECONDS"; tail -45 /tmp/o/probe.log
cp /tmp/o/probe.log /tmp/o/build.log $OUT/
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
for b in 1 8; do
  [ $SECONDS -lt 480 ] || break
  timeout 45 $NCU --set full --import-source no -o /tmp/o/ncu-ctx16-b$b python .ab/ncu_probe.py auto 2 $b 16 > /tmp/o/ncu-b$b.log 2>&1; echo "ncu b$b rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-ctx16-b$b.ncu-rep --page details --csv > $OUT/ncu-ctx16-b$b-details.csv 2>/dev/null
  ncu -i /tmp/o/ncu-ctx16-b$b.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-ctx16-b$b-sass.csv 2>/dev/null
  gzip -c /tmp/o/ncu-ctx16-b$b-sass.csv > $OUT/ncu-ctx16-b$b-sass.csv.gz; cp /tmp/o/ncu-b$b.log $OUT/
  rm -f /tmp/o/*.ncu-rep
done
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
echo "t=$SECONDS"
