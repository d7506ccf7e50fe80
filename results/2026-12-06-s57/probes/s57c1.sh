#!/usr/bin/env bash
# Session 57, call 1 (an H200 or an H100): the first bench of another attention shape than Qwen3-8B's. Every committed
# bench so far ran 32 query heads over 8 KV heads (gqa 4); Llama-3.1-70B served at tensor parallel 8 gives each GPU 8
# query heads over 1 KV head (gqa 8; configs/models/llama-3.1-70b-tp8.toml), where FOSCAR's kernel takes its gqa 5-8
# form (no token pairs, no packed PV; DESIGN §5.2) and a batch of b sequences is b (sequence, KV head) pairs, split
# across the SMs. The arch preset's whole grid (uniform and ragged), BF16 operands, FOSCAR contiguous and paged against
# FlashInfer BF16 (fa2, fa2-tc, XQA) and FP8 (fa2-tc, XQA), with read floors. Run from the repository root through
# scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 560) s.
# Expected (written before): every row checked (max_rel_err <= 2e-3); INT2 uniform geomean 3.0-4.5x FlashInfer BF16 at
# its best, INT4 2.2-3.0x (gqa 4: 5.00x / 3.22x on the H200); 1 x 8K 1.2-2.5x (a 0.66 MB INT2 cache: fixed costs);
# the large points (batch x context >= 256K, here 1/8 of the gqa-4 bytes) at 60-85% of the ceiling.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s57c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
ARCH=h200; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && ARCH=h100
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 25 )) foscar bench --arch $ARCH --model llama-3.1-70b-tp8 --operand bf16 --kernel foscar-cuda \
  --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa \
  --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/bench --format quiet \
  > $W/bench.log 2>&1
echo "bench rc=$? left=$(left)"; tail -5 $W/bench.log
probe_end s57c1
