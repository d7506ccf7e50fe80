#!/usr/bin/env bash
# Session 73 call 2 on an H100 (sourced by s73c2.sh after probe_preamble.sh and the build): the short-batch rule as it
# now stands (bench/NOTES.md §118: chunks of 256 from the lengths only where the batch's longest sequence is past the
# plan's min_chunk; FOSCAR_SHORT_TOKENS on by default).
#   T: test_ragged_gpu -k short_tokens (64 x 512 in a 4K cache added: 64 CTAs either way).
#   A: rounds off on on off, off = FOSCAR_SHORT_TOKENS=0, on = the default; INT2 G=128 head_dim 128 unless said.
#      Expected on / off (written before the run):
#      call 1's six cut points the same as in call 1 within +-0.02 (8 x 4K in 128K 0.935, INT4 0.947, 16 x 2K 0.914,
#      32 x 1K 0.901, h16-2 4 x 4K in 64K 0.944, paged 0.938);
#      64 x 512 and 128 x 257 in 4K: the same plans as off (identical outputs), 0.98-1.02;
#      controls (Qwen3-8B 8 x 4K in 128K; h8-1 lognormal 8 x 32K; h8-1 8 x 4K in 4K) 0.98-1.02;
#      new, ragged batches under the bound (host mirror's CTAs off -> on, sequences merged off -> on):
#        h8-1 lognormal 64 x 1K in 128K (71 -> 88, 7 -> 15) 0.88-1.00; lognormal 32 x 2K (41 -> 63, 7 -> 18)
#        0.85-0.98; lognormal 16 x 4K (33 -> 56, 8 -> 13) 0.85-0.97; lognormal 32 x 1K (34 -> 41, 2 -> 7; its
#        longest 686: one iteration either way, more merges) 0.97-1.08, may lose;
#        Qwen3-8B (8 KV heads, bound 4096 tokens) 4 x 1K in 128K (64 -> 128) 0.88-0.98, 2 x 2K in 128K (64 -> 128)
#        0.88-0.98.
#   L: the Llama-3.1-70B TP8 bench (session 71 call 6's command). Against session 71's (another H100): the "capacity"
#      point 8 x 4K in 128K INT2 8.51 -> 7.8-8.1 us, INT4 8.95 -> 8.3-8.7 (the host mirror: the only point whose plan
#      changes); every other row within 0.94-1.06 (GPU to GPU); uniform geomean INT2 3.80-3.95x, INT4 2.68-2.80x.
#   T2: the ragged and fused-merge GPU files with the time left.
timeout $(( $(left) > 300 ? 120 : 60 )) python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py -k short_tokens \
  > $W/tests_short.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests_short.log; cp $W/tests_short.log $OUT/tests_short.txt
python -m bench.ab_rounds $W/ab --variant "off:" --variant "on:" --run-env off:FOSCAR_SHORT_TOKENS=0 \
  --order "off on on off" --point 2x8x4096:h8-1:cap131072 --point 4x8x4096:h8-1:cap131072 \
  --point 2x16x2048:h8-1:cap131072 --point 2x32x1024:h8-1:cap131072 --point 2x4x4096:h16-2:cap65536 \
  --point 2x8x4096:h8-1:cap131072:paged --point 2x8x4096:cap131072 --point 2x8x32768:lognormal:h8-1 \
  --point 2x8x4096:h8-1 --point 2x64x512:h8-1:cap4096 --point 2x128x257:h8-1:cap4096 \
  --point 2x64x1024:lognormal:h8-1:cap131072 --point 2x32x2048:lognormal:h8-1:cap131072 \
  --point 2x16x4096:lognormal:h8-1:cap131072 --point 2x32x1024:lognormal:h8-1:cap131072 \
  --point 2x4x1024:cap131072 --point 2x2x2048:cap131072 \
  --limit-s 200 --round-s 15 > $W/ab_short_tokens.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -22 $W/ab_short_tokens.log; cp $W/ab_short_tokens.log $OUT/ab_short_tokens.txt
if [ "$(left)" -gt 200 ]; then
  timeout $(( $(left) - 30 )) foscar bench --arch h100 --model llama-3.1-70b-tp8 --operand bf16 \
    --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc \
    --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/lb \
    --format quiet > $W/bench-llama.log 2>&1
  echo "L: bench rc=$? left=$(left)"; tail -3 $W/bench-llama.log
  cp $W/lb/results.csv $OUT/bench-results.csv; cp $W/lb/meta.json $OUT/bench-meta.json
  cp $W/lb/summary.json $OUT/bench-summary.json
fi
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -q -m gpu -n 3 tests/test_ragged_gpu.py tests/test_fused_merge_gpu.py \
    > $W/tests.log 2>&1
  echo "T2: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
fi
