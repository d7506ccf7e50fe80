#!/usr/bin/env bash
# session 36, call 1 (one H200): "o" HEAD's kernel (FOSCAR_LAZY_RESCALE=0, the default), "n" FOSCAR_LAZY_RESCALE=1 (the
# integer PV's running max kept within 8, the rescale in a warp-uniform branch); head_dim-128 builds of the same tree;
# python -m bench.ab rounds o n n o n o; sustained INT2 decodes with an nvidia-smi trace per build; the new GPU test
# and the packed-PV test on "n"; scripts/latency_floor.py's empty decode (issue 11's fixed cost) on "o".
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
DO="FOSCAR_ONLY_HEAD_DIM=128"; DN="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_LAZY_RESCALE=1"
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
(FOSCAR_NVCC_DEFINES="$DO" MAX_JOBS=8 python -c "$B" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_NVCC_DEFINES="$DN" MAX_JOBS=8 python -c "$B" > /tmp/o/build_n.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x32x32768 --point 2x64x32768 --point 2x8x131072 --point 4x32x32768 --point 4x64x8192 --point 2x1x8192 --point 2x1x16 --point 2x8x32768:lognormal --point 2x32x8192:paged"
for m in o n n o n o; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = o ]; then D="$DO"; else D="$DN"; fi
  FOSCAR_NVCC_DEFINES="$D" timeout 70 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "probe $m $r rc=$? t=$SECONDS"
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
tar -czf $OUT/c1.tgz -C /tmp/o .
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown --format=csv,noheader -lms 20 > /tmp/o/smi.csv 2>&1 &
SMI=$!
for m in o n; do
  if [ $m = o ]; then D="$DO"; else D="$DN"; fi
  FOSCAR_NVCC_DEFINES="$D" timeout 60 python .ab/power.py /tmp/o/power-$m.csv 8 2x64x131072 2x32x32768 > /tmp/o/power-$m.log 2>&1; echo "power $m rc=$? t=$SECONDS"
done
kill $SMI; cp /tmp/o/power-*.csv /tmp/o/smi.csv $OUT/ 2>/dev/null
python - <<'PY'
import pandas as pd
for m in "on":
    d = pd.read_csv(f"/tmp/o/power-{m}.csv")
    for spec, g in d.groupby("spec"):
        t0 = g.t_start.min(); late = g[g.t_start > t0 + 3]; early = g[g.t_start < t0 + 0.3]
        print(m, spec, "first 0.3 s", round(early.us_per_call.median(), 1), "after 3 s", round(late.us_per_call.median(), 1))
PY
tar -czf $OUT/c1.tgz -C /tmp/o .
FOSCAR_NVCC_DEFINES="$DN" timeout 150 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py -k "grow or packed_integer_pv" > /tmp/o/tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 /tmp/o/tests.log; cp /tmp/o/tests.log $OUT/
FOSCAR_NVCC_DEFINES="$DO" timeout $((585 - SECONDS)) python .ab/floor.py /tmp/o/floor > /tmp/o/floor.log 2>&1; echo "floor rc=$? t=$SECONDS"; tail -14 /tmp/o/floor.log; cp -r /tmp/o/floor /tmp/o/floor.log $OUT/ 2>/dev/null
