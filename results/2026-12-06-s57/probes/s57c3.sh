#!/usr/bin/env bash
# Session 57, call 3 (an H100, as calls 1-2): at most 32 chunks a sequence (splits.MAX_CHUNKS_PER_SEQUENCE in the
# plans, kMaxSeqChunks / longest_chunk_floor in find_work's length-aware schedule, FOSCAR_SEQ_CHUNK_CAP=0 the schedule
# before). Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 560) s.
# 1. the GPU suite (pytest -m gpu -n 4); 2. call 1's bench again (Llama-3.1-70B TP8, 8 query heads over 1 KV head);
# 3. A/B of new / old (FOSCAR_SEQ_CHUNK_CAP=0) at the Qwen3-8B shape's points whose schedule the cap changes (one
# 128K sequence among 31 or 63 of 4K) and one it leaves (INT2 8 x 32K: only find_work's extra max).
# Expected (written before): every test passes. Bench (against call 1's rows, another H100): INT2 1 x 32K 20.7 ->
# 9.5-10.5 us (0.92x -> 1.8-2.0x FlashInfer), INT4 21.5 -> 10-11; 1 x 128K INT2 23.9 -> 19-20, INT4 26.6 -> 21-22;
# 1 x 8K and batch 8-64 within ~3% (their plans already had at most 32 chunks); the ragged one-long 8 x 128K (the long
# sequence 171 -> 32 chunks) INT2 30.7 -> 12-20 us; INT2 geomean 3.28x -> 3.4-3.6x. A/B: 8 x 32K new / old
# 0.99-1.01; the one-long 32 / 64 x 128K points, where the long sequence takes 32 chunks of 4096 instead of 64 of 2048
# or 86 of 1536 (and the grid half as many CTAs): 0.9-1.1, either way (unmeasured before).
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s57c3  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
ARCH=h200; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && ARCH=h100
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 330 )) python -m pytest -m gpu -n 4 -q -p no:cacheprovider tests > $W/pytest.log 2>&1
echo "pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head -20
timeout $(( $(left) - 140 )) foscar bench --arch $ARCH --model llama-3.1-70b-tp8 --operand bf16 --kernel foscar-cuda \
  --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa \
  --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/bench --format quiet \
  > $W/bench.log 2>&1
echo "bench rc=$? left=$(left)"; tail -3 $W/bench.log
HD="FOSCAR_ONLY_HEAD_DIM=128"
python -m bench.ab_rounds $W/ab --variant "new:$HD" --variant "old:$HD,FOSCAR_SEQ_CHUNK_CAP=0" --order "old new new old" \
  --point 2x8x32768 --point 2x32x131072:one-long --point 4x32x131072:one-long --point 2x64x131072:one-long \
  --point 4x64x131072:one-long --limit-s $(( $(left) - 15 )) --round-s 12 > $W/ab_rounds.log 2>&1
echo "A/B: ab_rounds rc=$? left=$(left)"; tail -14 $W/ab_rounds.log
probe_end s57c3
