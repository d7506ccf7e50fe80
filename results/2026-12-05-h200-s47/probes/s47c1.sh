#!/usr/bin/env bash
# session 47, call 1 (one H200): what a balanced grid (every SM two CTAs of equal work, the stream-K-like schedule of
# NOTES §87 / §90) would buy at issue 12's one-wave points, measured without writing the schedule. INT2 32 x 8K is 256
# CTAs of 8K tokens on 132 SMs (124 SMs hold two, 8 hold one); 33 x 8K is 264 CTAs, two on every SM, 3.1% more bytes.
# Likewise 64 x 8K (512 CTAs at 2 an SM) against 66 x 8K (528: 4 on every SM). Controls: 8 x 32K against 8 x 33K (the
# same 256 CTAs, 3.1% more tokens each: how time grows with bytes on a fixed grid); 31 x 8K (248 CTAs); INT4 32 / 33.
# Expected (written before): if the 8 half-loaded SMs cost the one-wave points ~3% (NOTES §87), t(33x8K) / t(32x8K)
# <= 1.012 and t(66x8K) / t(64x8K) <= 1.012 for INT2, while t(8x33K) / t(8x32K) ~ 1.02-1.03: then a balanced schedule
# has ~2-3% to win before its own costs (a second segment's prologue, epilogue and merge: ~1-2 us a CTA by §87's
# timeline, about what it would win at 32 x 8K: ~1.3 us). If t(33x8K) / t(32x8K) >= 1.025 (time grows with the bytes
# whatever the SMs' balance), the balance is worth < 1% and the lead is closed.
# Then the bench of the same 8K points (INT2 and INT4, FOSCAR contiguous, read floors) for % of the ceiling.
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
P="--point 2x31x8192 --point 2x32x8192 --point 2x33x8192 --point 2x64x8192 --point 2x66x8192 --point 2x8x32768 --point 2x8x33792 --point 4x32x8192 --point 4x33x8192"
for r in 0 1 2; do
  [ $(left) -lt 200 ] && { echo "stop: left=$(left)"; break; }
  t0=$SECONDS; timeout $(( $(left) - 150 )) python -m bench.ab run a $r /tmp/o/ab-a-$r.csv $P > /tmp/o/ab-a-$r.log 2>&1
  echo "probe a $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-a-*.csv | tee /tmp/o/ab-table.txt
t0=$SECONDS
timeout $(( $(left) - 10 )) foscar bench --arch h200 --operand bf16 --kernel foscar-cuda --bits 2 --bits 4 --group-size 128 \
  --batch 31 --batch 32 --batch 33 --batch 64 --batch 66 --context 8192 --read-floor \
  --out /tmp/o/bal --format quiet > /tmp/o/bal.log 2>&1
echo "bench rc=$? wall=$((SECONDS - t0)) left=$(left)"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp -r /tmp/o/bal $OUT/ 2>/dev/null; cp /tmp/o/*.log /tmp/o/*.csv /tmp/o/*.txt $OUT/ 2>/dev/null; ls $OUT
