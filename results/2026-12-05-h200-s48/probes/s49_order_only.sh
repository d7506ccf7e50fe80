#!/usr/bin/env bash
# Queued for the next session (not run; ~4-5 min of device time on one H200): the control that session 48's skew A/B
# lacked (bench/NOTES.md §92). The skew changed two things at once: the launch order (every sequence's even chunks
# first) and the tokens (chunk/32 moved to the chunk launched first); together 0.5-1.9% slower. Three labels in one
# machine, three rounds each: a = equal chunks in slot order (FOSCAR_SKEW=0), b = the skew (FOSCAR_SKEW=1), c = the
# order alone (FOSCAR_SKEW=1 built with delta 0: a second build, its own source hash).
# Expected (written before): if c/a ~ b/a (1.005-1.02), the order is the cost and the moved tokens are level: the SM
# pairs' balance is worth nothing while HBM is busy. If c/a ~ 1.00, the moved tokens themselves hurt. If c/a > b/a, the
# moved tokens helped and a skew without the new order (tokens moved where the launch order already pairs CTAs) is
# worth building.
# Run from the repository root through scripts/gpu_offline.sh (carry .offline); it applies skew.patch to the device's
# copy of the tree itself: bash results/2026-12-05-h200-s48/probes/s49_order_only.sh
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
PATCH=results/2026-12-05-h200-s48/probes/skew.patch  # (the device's copy may have no .git: git apply works without one)
git apply $PATCH 2>/dev/null || patch -p1 --forward < $PATCH || { echo "skew.patch does not apply"; exit 1; }
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build-ab.log 2>&1; echo "built a/b left=$(left)"
P="--point 2x8x32768 --point 4x8x32768 --point 2x8x131072 --point 4x8x131072 --point 2x16x32768 --point 2x32x8192"
run() {  # label round skew
  t0=$SECONDS; FOSCAR_SKEW=$3 timeout $(( $(left) - 30 )) python -m bench.ab run $1 $2 /tmp/o/ab-$1-$2.csv $P > /tmp/o/ab-$1-$2.log 2>&1
  echo "probe $1 $2 rc=$? wall=$((SECONDS - t0)) left=$(left)"
}
for r in 0 1 2; do run a $r 0; run b $r 1; done
sed -i 's/const int delta = (chunk >> 5) & ~(kChunkAlign - 1);/const int delta = 0;/' foscar/kernels/csrc/folded_decode_sm90.cuh
grep -q 'const int delta = 0;' foscar/kernels/csrc/folded_decode_sm90.cuh || { echo "delta not zeroed"; exit 1; }
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build-c.log 2>&1; echo "built c left=$(left)"
for r in 0 1 2; do [ $(left) -lt 60 ] && break; run c $r 1; done
python -m bench.ab table /tmp/o/ab-*.csv --base a 2>&1 | tee /tmp/o/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/ab-table.txt $OUT/; tar czf $OUT/order.tgz -C /tmp/o --exclude='*.so' .
