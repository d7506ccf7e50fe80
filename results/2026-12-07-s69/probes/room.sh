#!/usr/bin/env bash
# Session 69: the room on by default, bounded (up to 17 sequences at one KV head, 9 at two: bench/NOTES.md §113);
# session 68's s68c6.sh, which found no machine (the expectations are in results/2026-12-07-s68/probes/next-s69c1.sh,
# written in session 68 before any run). Sourced by s69c1.sh / s69c2.sh after probe_preamble.sh.
#   T: the room's GPU test and the ragged long-sequence tests (now under the new default, the knob unset).
#   F: foscar bench at the Llama-3.1-70B TP8 shape, one 512K among seven 4K, INT2 / INT4, against FlashInfer BF16
#      (fa2-tc, xqa). Expected: FOSCAR INT2 24-25.5 us, INT4 34-35.5; FlashInfer fa2-tc 105-115 us; so INT2 4.2-4.7x,
#      INT4 3.0-3.3x.
#   R: the default (new) against FOSCAR_LONG_CHUNK_ROOM=0 (old), rounds old new new old. Expected new / old: INT2
#      one-long 8 x 512K 0.80-0.88; one-long 16 0.83-0.90; past the bound the same plan, 0.98-1.02: one-long 24 and 32,
#      and at 16 query heads over 2 KV heads one-long 16; h16-2 one-long 8 x 256K 0.82-0.90.
timeout 90 python -m pytest -q -m gpu -n 4 \
  tests/test_ragged_gpu.py::test_long_chunk_room_gives_one_long_sequence_among_seven_fewer_chunks \
  "tests/test_ragged_gpu.py::test_long_sequences_past_batch_one_take_chunks_of_at_least_4096" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log
arch=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && arch=h200
timeout 120 foscar bench --arch $arch --operand bf16 --grid sweep --context 524288 --model llama-3.1-70b-tp8 \
  --bits 2 --bits 4 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --batch 8 \
  --workload one-long --short-len 4096 --out $W/bench-one-long --format quiet > $W/bench-one-long.log 2>&1
echo "F: bench rc=$? left=$(left)"
python - <<'PY' 2>&1 | tee $OUT/bench-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s69/bench-one-long/results.csv")
cols = ["workload", "kernel", "num_qo_heads", "num_kv_heads", "batch", "bits", "median_us", "tbps", "sol_fraction",
        "baseline_kernel", "speedup_vs_flashinfer_bf16", "max_rel_err", "checked_rows", "sm_clock_during_mhz",
        "clock_note", "status", "error"]
print(d[[c for c in cols if c in d]].round(4).to_string(index=False))
PY
python -m bench.ab_rounds $W/ab --variant "old:" --variant "new:" --run-env old:FOSCAR_LONG_CHUNK_ROOM=0 \
  --order "old new new old" --point 2x8x524288:one-long:h8-1 --point 2x16x524288:one-long:h8-1 \
  --point 2x24x524288:one-long:h8-1 --point 2x32x524288:one-long:h8-1 --point 2x16x524288:one-long:h16-2 \
  --point 2x8x262144:one-long:h16-2 \
  --limit-s $(( $(left) > 120 ? $(left) - 25 : 60 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "R: ab_rounds rc=$? left=$(left)"; tail -26 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
