#!/usr/bin/env bash
# Session 59, call 2 (an H100 or an H200). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 560) s.
# A: chunks of one 256-token iteration (this commit's default, kMinChunk 256) against the schedule before
#    (FOSCAR_MIN_CHUNK=512: kernel and plans), rounds old new new old old new, head_dim-128 builds. Points: Llama-3.1-70B
#    TP8 (8 query heads over 1 KV head) batch 2 / 4 / 8 x 8K, 8 x 4K, 8 lognormal in 8K; Qwen3-8B (32 over 8) 2 x 4K and
#    8 x 1K, whose plans change too; INT2 8 x 32K, whose plan does not (control).
#    Expected (written before, from session 57's split sweep on an H100, NOTES §101: 32 chunks of 256 against the
#    plan's 16 of 512): new / old INT2 2 x 8K 0.75-0.83, 4 x 8K 0.79-0.87, INT4 2 x 8K 0.78-0.86, 4 x 8K 0.83-0.91;
#    INT2 8 x 8K 0.93-0.99, INT4 8 x 8K 0.97-1.02; 8 x 4K 0.90-1.00 and lognormal 0.90-1.02 (not measured before);
#    Qwen 2 x 4K 0.88-1.03 (NOTES §54: batch 1 x 4K at 8 KV heads, 16 chunks of 256 took 0.90 of 8 of 512) and
#    8 x 1K 0.93-1.05; control 0.995-1.005 with the same output bits. max_rel_err <= 2e-3 everywhere.
# T: the GPU suite without its two compile tests, on the default (full) build, built beside A's builds.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s59c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=8 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
 echo "rc=$?" >> $W/build.log) &
BPID=$!
python -m bench.ab_rounds $W/ab --variant "old:$HD,FOSCAR_MIN_CHUNK=512" --variant "new:$HD" \
  --order "old new new old old new" --point 2x2x8192:h8-1 --point 4x2x8192:h8-1 --point 2x4x8192:h8-1 \
  --point 4x4x8192:h8-1 --point 2x8x8192:h8-1 --point 4x8x8192:h8-1 --point 2x8x4096:h8-1 \
  --point 2x8x8192:lognormal:h8-1 --point 2x2x4096 --point 4x2x4096 --point 2x8x1024 --point 2x8x32768 \
  --limit-s $(( $(left) - 290 )) --round-s 18 > $W/ab_rounds.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -45 $W/ab_rounds.log
wait $BPID; echo "full build left=$(left): $(tail -2 $W/build.log | tr '\n' ' ')"
timeout $(( $(left) - 12 )) python -m pytest -m gpu -n 4 -q -rfE --tb=line -p no:cacheprovider tests \
  -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head -20
probe_end s59c2
