#!/usr/bin/env bash
# session 48, call 2 (one H200): the launch-order skew (FOSCAR_SKEW=1, NOTES §92). In session 43's timeline records
# an SM's higher-indexed CTA (launched second) had the longer loop on 98-100% of 124 SMs, by ~5.5% (2.0-2.7 us of ~41
# at 8K-token chunks, 9.4 of ~167 at 32K), and the SM then ran it alone. The skew launches every sequence's even chunks
# first and moves chunk/32 tokens (whole 256-token iterations) to them from the odd ones.
# Expected (written before; tl_skew.py's arithmetic on those records): INT2 8 x 32K -1.0..-1.5 us (-2..-3%), 8 x 128K
# -3..-4 us (-2%), 2 x 128K / 4 x 64K / 16 x 32K -1..-3%; INT4 the same fraction or less; 32 x 8K (a one-chunk plan,
# no skew) and 8 x 32K lognormal (chunks under 8K: no tokens move) level (+-0.5%). If the skew's points are level, the
# asymmetry is not what holds the tail (or the dispatch does not follow the block index); if they are slower, the
# SM pairing differs from the records'. max_rel_err unchanged (<= 2e-3).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
timeout 150 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_decode_cuda.py -k "skew or qwen3_8b_shape or ctas_per_sm or long_context or fixed_point_query" > /tmp/o/tests.log 2>&1; echo "tests rc=$? left=$(left)"; tail -3 /tmp/o/tests.log
P="--point 2x8x32768 --point 4x8x32768 --point 2x8x131072 --point 4x8x131072 --point 2x16x32768 --point 2x4x65536 --point 2x32x8192 --point 2x8x32768:lognormal"
for r in 0 1 2; do
  for lab in a b; do
    [ $(left) -lt 60 ] && { echo "stop: left=$(left)"; break 2; }
    sk=0; [ $lab = b ] && sk=1
    t0=$SECONDS; FOSCAR_SKEW=$sk timeout $(( $(left) - 30 )) python -m bench.ab run $lab $r /tmp/o/ab-$lab-$r.csv $P > /tmp/o/ab-$lab-$r.log 2>&1
    echo "probe $lab $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
  done
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> /tmp/o/smi.txt 2>&1
done
python -m bench.ab table /tmp/o/ab-*.csv --base a 2>&1 | tee /tmp/o/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
cp /tmp/o/tests.log /tmp/o/ab-table.txt $OUT/ 2>/dev/null
tar czf $OUT/c2.tgz -C /tmp/o --exclude='*.so' . 2>/dev/null; ls -la $OUT
