#!/usr/bin/env bash
# Session 57, call 2 (an H200 or an H100): every split count at the Llama-3.1-70B tensor-parallel-8 shape (8 query
# heads, 1 KV head), where call 1's bench found INT2 1 x 32K 0.92x FlashInfer BF16 (20.7 us against 19.0) and 1 x 128K
# 23.9 us: at one KV head the plan's batch-1 rule (one chunk an SM, 128 chunks) and the fit (about two programs an SM,
# 64-256 chunks at batch 2-4) give a sequence more than 32 chunks, which the in-kernel merge takes in 8-16-chunk rounds
# of L2 loads by the sequence's last CTA. The fit was measured at 8 KV heads only (bench/NOTES.md §14, §54).
# Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 560) s.
# Expected (written before): at batch 1 the best count 16-32 (1 x 32K 8-12 us, 1 x 128K 15-21 us), at batch 2-4 at
# most 32, auto (the plan today) 20-60% slower than the best where it gives more than 32 chunks, within ~5% where at
# most 32; every output checked (max_rel_err <= 1e-2).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s57c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 20 )) python scripts/split_sweep.py $W/sweep --num-qo-heads 8 --num-kv-heads 1 --min-tokens 256 \
  --bits 2 --bits 4 --batch 1 --batch 2 --batch 4 --batch 8 --context 8192 --context 32768 --context 131072 \
  --splits 8 --splits 16 --splits 24 --splits 32 --splits 48 --splits 64 --splits 128 > $W/sweep.log 2>&1
echo "sweep rc=$? left=$(left)"; tail -26 $W/sweep.log
probe_end s57c2
