#!/usr/bin/env bash
# session 43, call 3 (one H200): ncu of INT2 8 x 32K at 4 and 6 chunks a sequence and INT4 8 x 32K at 4 (default build).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=15 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 4 --launch-count 1 --set full --import-source no"
for a in "2 8 32768 4" "2 8 32768 6" "4 8 32768 4" "2 32 8192 1"; do
  set -- $a; n=$1-$2-$3-$4
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 120 $NCU -o /tmp/o/ncu-$n python .ab/ncu_split.py $1 $2 $3 $4 > /tmp/o/ncu-$n.log 2>&1; echo "ncu $n rc=$? wall=$((SECONDS - t0)) left=$(left)"; grep err /tmp/o/ncu-$n.log
  ncu -i /tmp/o/ncu-$n.ncu-rep --page details --csv > /tmp/o/det-$n.csv 2>/dev/null
  ncu -i /tmp/o/ncu-$n.ncu-rep --page raw --csv > /tmp/o/raw-$n.csv 2>/dev/null
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cd /tmp/o && gzip -k det-*.csv raw-*.csv && cp det-*.csv.gz raw-*.csv.gz ncu-*.log $OUT/
