#!/usr/bin/env bash
# Session 66, s66c4.sh trimmed (after two GPU tests) to the ~250 s of device time left (LIMIT default 170): no H200 branch; FOSCAR against
# FlashInfer's fa2-tc BF16 kernel alone (FlashInfer's fastest BF16 kernel at 1 and 8 x 128K at this shape in session
# 58's run, results/2026-12-06-s58), at 1 and 8 x 512K, uniform lengths, at the Llama-3.1-70B TP8 shape (8 query heads
# over 1 KV head), INT2 and INT4 BF16 operands. Expectations as s66c4.sh's (written before the run): FlashInfer
# 1 x 512K ~90-110 us, 8 x 512K ~700-850 us; FOSCAR INT2 1 x 512K ~22.5 us -> 4.0-4.9x, INT4 ~32 us -> 2.8-3.4x;
# 8 x 512K INT2 ~120-140 us -> 5.0-6.5x, INT4 ~220-250 us -> 3.0-3.6x.
LIMIT="${LIMIT:-170}"
. scripts/probe_preamble.sh /tmp/s66c5
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
# first the two GPU tests edited after the review (not run before): the new BF16 merge-kernel test, the ragged one
timeout 70 python -m pytest -q -m gpu -n 4 tests/test_fused_merge_gpu.py::test_bf16_past_32_chunks_without_the_levels_takes_the_merge_kernel \
  "tests/test_ragged_gpu.py::test_long_sequences_past_batch_one_take_chunks_of_at_least_4096" > $W/tests.log 2>&1
echo "tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
timeout $(( $(left) - 10 )) foscar bench --arch h100 --model llama-3.1-70b-tp8 --bits 2 --bits 4 --operand bf16 \
  --kernel foscar-cuda --kernel flashinfer-fa2-tc --grid sweep --batch 1 --batch 8 --context 524288 \
  --out $W/bench --format quiet > $W/bench.log 2>&1
echo "bench rc=$? left=$(left)"; tail -3 $W/bench.log; cp $W/bench.log $OUT/bench.log
cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null; cp $W/bench/meta.json $OUT/bench-meta.json 2>/dev/null
python - <<'PY' 2>&1 | tee $OUT/bench-512k-table.txt
import pandas as pd
d = pd.read_csv("/tmp/s66c5/bench/results.csv")
print(d[["kernel", "batch", "context", "bits", "median_us", "tbps", "sol_fraction", "max_rel_err", "status"]].to_string())
PY
probe_end s66c5
