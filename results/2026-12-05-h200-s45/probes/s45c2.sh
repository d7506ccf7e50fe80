#!/usr/bin/env bash
# session 45, call 2 (one H200): the two-CTAs-an-SM rule extended to 32K-token chunks on a contiguous cache ("n", this
# tree) against the rule before ("o": .ab/ab_old_rule.py sets the bound back to 8192), rounds o n n o; then the GPU
# suite. Prediction: s45c2.note.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
MAX_JOBS=16 python -c "$B" > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
P="--point 2x64x32768 --point 4x64x32768 --point 2x64x32768:lognormal --point 4x64x32768:lognormal --point 2x64x16384 --point 4x64x16384 --point 2x64x32768:paged --point 2x32x32768"
for m in o n n o; do
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS
  if [ $m = o ]; then timeout 120 python .ab/ab_old_rule.py run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  else timeout 120 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1; fi
  echo "rule $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-o-*.csv /tmp/o/ab-n-*.csv --base o | tee /tmp/o/ab-table.txt
cp /tmp/o/ab-table.txt /tmp/o/smi.txt $OUT/ 2>/dev/null
[ $(left) -gt 120 ] && { timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests > /tmp/o/tests.log 2>&1; echo "gpu suite rc=$? left=$(left)"; tail -4 /tmp/o/tests.log; }
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' .
