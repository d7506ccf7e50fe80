#!/usr/bin/env bash
# session 43, call 5 (one H200): the six-stream cache against one buffer of 64-token blocks. "t": the default build
# over the standard cache; "i": FOSCAR_TILE_PROBE=1 over the block buffer (scripts/tile_layout_probe.py). Rounds t i i t.
# Then, if time is left, two CTAs an SM against the plan's three at the large two-wave points (bench/NOTES.md §87).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [i]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TILE_PROBE=1")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
for m in t i; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=8 python -c "$B" > /tmp/o/build_$m.log 2>&1) & done
wait; echo "built left=$(left): $(tail -qn1 /tmp/o/build_*.log | tr '\n' ' ')"
for m in t i i t; do
  [ $(left) -lt 50 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/tl-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 120 python scripts/tile_layout_probe.py $m $r /tmp/o/tl-$m-$r.csv > /tmp/o/tl-$m-$r.log 2>&1
  echo "probe $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"; tail -2 /tmp/o/tl-$m-$r.log
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python - <<'PY' | tee /tmp/o/tl-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob('/tmp/o/tl-*.csv'))])
t = d.pivot_table(index=['bits', 'batch', 'context'], columns=['m', 'rnd'], values='median_us')
print(t.round(2).to_string())
mm = d.groupby(['bits', 'batch', 'context', 'm']).median_us.mean().unstack()
mm['i/t'] = mm['i'] / mm['t']; print(mm.round(3).to_string())
print(d.groupby(['bits', 'batch', 'context', 'm']).agg(err=('err', 'max'), sha=('sha', lambda s: ','.join(sorted(set(s))))).to_string())
PY
# part 2: the default build, FOSCAR_MAX_CTAS_PER_SM auto ("a": 3 an SM at 512+ CTAs of 32K tokens) against 2 ("p")
P="--point 2x64x32768 --point 2x32x131072 --point 2x64x131072 --point 4x64x32768 --point 2x64x32768:paged"
for m in a p p a; do
  [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  x=auto; [ $m = p ] && x=2
  t0=$SECONDS; FOSCAR_MAX_CTAS_PER_SM=$x FOSCAR_NVCC_DEFINES="${D[t]}" timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  echo "ctas $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
python -m bench.ab table /tmp/o/ab-a-*.csv /tmp/o/ab-p-*.csv --base a | tee /tmp/o/ab-table.txt
cp /tmp/o/tl-table.txt /tmp/o/ab-table.txt /tmp/o/smi.txt $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
[ $(left) -gt 45 ] && { timeout $(( $(left) - 15 )) python -m pytest -m gpu -q -p no:cacheprovider tests/test_decode_cuda.py -k knob_builds_compile > /tmp/o/knobs.log 2>&1; echo "knob builds rc=$? left=$(left)"; tail -2 /tmp/o/knobs.log; }
tar -czf $OUT/c5.tgz -C /tmp/o --exclude='*.so' .
