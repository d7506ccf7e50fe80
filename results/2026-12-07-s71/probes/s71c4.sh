#!/usr/bin/env bash
# Session 71 call 4: the merge kernel where the in-kernel merge's last CTA would cover its gqa x head_dim partials in
# more than one pass (FOSCAR_MERGE_ONE_PASS, the default now; bench/NOTES.md §116; call 3 timed FOSCAR_MERGE=kernel
# against the in-kernel merge at the Llama-3.1-70B TP8 shape's small points: k / f 0.78-0.96 at batch 1-2 and 8,
# 1.006 at 4 x 8K). T: its GPU test and the fused-merge / ragged tests it touches. R: rounds new old old new (old:
# FOSCAR_MERGE_ONE_PASS=0), the batches call 3 left out. Expected new / old (written before the run), INT2 unless said:
#   h8-1 (gqa 8, 1 KV head): 1 x 8K 0.78-0.86 (call 3: 0.80); 16 x 8K (16 chunks each) 0.93-1.02; 32 x 8K (8 each)
#     0.95-1.03; 64 x 8K (4 each) 0.97-1.03; 16 x 32K 0.97-1.02; 32 x 32K 0.98-1.02; 8 x 32K 0.95-1.02;
#     INT4 16 x 8K 0.95-1.02; paged 16 x 8K 0.93-1.02;
#   h64-8 (gqa 8 at 8 KV heads, head_dim 128): 1 x 8K (16 chunks) 0.85-0.95; 8 x 8K (4 each) 0.93-1.02;
#     1 x 32K (32 chunks) 0.85-0.95;
#   h24-4 (gqa 6): 1 x 8K 0.85-0.95;
#   controls, gqa 4 (Qwen3-8B shape, the same plans): 1 x 8K, 8 x 8K 0.98-1.02.
# L: then, if time is left, the Llama-3.1-70B TP8 bench (session 70's call 4 command) against session 70's
#   (bench-llama-3.1-70b-tp8-a3b67f98, another H100): INT2 1 x 8K 1.50x -> 1.75-1.95x, uniform geomean INT2 3.79x ->
#   3.85-4.05x, INT4 2.71x -> 2.72-2.85x; rows past 8K at batch >= 8 within 0.95-1.03 (GPU to GPU +-3-6%, §115).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s71
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout 150 python -m pytest -q -m gpu -n 3 tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py tests/test_plan.py \
  -k "one_pass or agree or one_shot or captured or ragged_lengths or 16k or long_chunk_floor or host_mirror" \
  > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
python -m bench.ab_rounds $W/ab --variant "new:" --variant "old:" --run-env old:FOSCAR_MERGE_ONE_PASS=0 \
  --order "new old old new" \
  --point 2x1x8192:h8-1 --point 2x16x8192:h8-1 --point 2x32x8192:h8-1 --point 2x64x8192:h8-1 \
  --point 2x8x32768:h8-1 --point 2x16x32768:h8-1 --point 2x32x32768:h8-1 --point 4x16x8192:h8-1 \
  --point 2x16x8192:paged:h8-1 --point 2x1x8192:h64-8 --point 2x8x8192:h64-8 --point 2x1x32768:h64-8 \
  --point 2x1x8192:h24-4 --point 2x1x8192 --point 2x8x8192 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 20 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -40 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
if [ "$(left)" -gt 200 ]; then
  ARCH=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && ARCH=h200
  timeout $(( $(left) - 15 )) foscar bench --arch $ARCH --model llama-3.1-70b-tp8 --operand bf16 \
    --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc \
    --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/lb \
    --format quiet > $W/bench-llama.log 2>&1
  echo "L: bench rc=$? left=$(left)"; tail -3 $W/bench-llama.log
  cp $W/lb/results.csv $OUT/bench-results.csv; cp $W/lb/meta.json $OUT/bench-meta.json
  cp $W/lb/summary.json $OUT/bench-summary.json
fi
probe_end s71c4
