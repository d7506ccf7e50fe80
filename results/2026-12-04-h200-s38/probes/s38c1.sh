#!/usr/bin/env bash
# session 38, call 1 (one H200): INT2 D=128 G=32 paged built without the in-kernel merge (fused_merge_in; its plans
# take the merge kernel). A/B "d" (ea65ceb from .ab/base, the fused merge in every instance; head_dim-128 build)
# against "n" (this tree, default build of every head_dim); then the whole GPU suite on "n"; then, with the time
# left, split counts at INT2's one-wave points (issue 12).
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__, d.FUSED_MERGE_BUILT)'
(MAX_JOBS=10 python -c "$B" > /tmp/o/build_n.log 2>&1) &
(cd .ab/base && FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" MAX_JOBS=6 python -c "$B" > /tmp/o/build_d.log 2>&1) &
wait; echo "built left=$(left): $(tail -1 /tmp/o/build_n.log) | $(tail -1 /tmp/o/build_d.log)"
python -c 'from foscar.kernels import decode_cuda as d; print("fused_merge_in G32 paged", d.fused_merge_in(2,128,32,"bf16",True,False), "G128 paged", d.fused_merge_in(2,128,128,"bf16",True,False))'
P="--point 2x1x32768:paged:g32 --point 2x8x32768:paged:g32 --point 2x64x32768:paged:g32 --point 2x8x32768:g32 --point 2x8x32768:paged"
for m in d n n d; do
  [ $(left) -lt 330 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  if [ $m = d ]; then
    (cd .ab/base && FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1)
  else
    timeout 60 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P > /tmp/o/ab-$m-$r.log 2>&1
  fi
  echo "probe $m $r rc=$? left=$(left)"
done
python -m bench.ab table /tmp/o/ab-d-*.csv /tmp/o/ab-n-*.csv --base d | tee /tmp/o/ab-table.txt; cp /tmp/o/ab-table.txt $OUT/
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $(( $(left) - 75 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider --durations=15 tests/ > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; grep -E '^(FAILED|ERROR)' /tmp/o/tests.log | head -30; tail -8 /tmp/o/tests.log; gzip -c /tmp/o/tests.log > $OUT/tests.log.gz
if [ $(left) -gt 45 ]; then
  timeout $(( $(left) - 10 )) python scripts/split_sweep.py /tmp/o/sweep --bits 2 --batch 8 --context 32768 --splits 4 --splits 6 --splits 8 > /tmp/o/sweep.log 2>&1; echo "sweep rc=$? left=$(left)"; tail -15 /tmp/o/sweep.log
fi
tar -czf $OUT/c1.tgz -C /tmp/o .
