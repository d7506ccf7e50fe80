#!/usr/bin/env bash
# Session 59, call 3 (an H100 or an H200). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 430) s.
# Call 2 (s59c2.sh) found chunks of 256 faster below one CTA an SM and slower past it (Qwen3-8B 2 x 4K 1.09, 8 x 1K
# 1.04, INT4 8 x 8K over 1 KV head 1.03). This commit keeps the fit's count past one CTA an SM and passes the least
# chunk at run time (Params::min_chunk, splits.plan_min_chunk: 256 where the chunk target fits one CTA an SM).
# A: old (FOSCAR_SHORT_CHUNKS=0: the plans before) / new (default), one head_dim-128 build, rounds old new new old. Expected (written before): the Llama-3.1-70B TP8 points whose schedule is call 2's "new" again within 2% of
#    call 2's ratios (INT2 2 x 8K 0.833, INT4 4 x 8K 0.895, INT2 8 lognormal in 8K 0.877);
#    the points whose plan no longer changes (INT4 8 x 8K over 1 KV head, Qwen 2 x 4K, INT2 8 x 32K) 0.99-1.01 with
#    the same output bits; Qwen 2 x 2K, which now takes 8 chunks of 256 (128 CTAs) where it took 4 of 512, 0.85-0.97.
# T: the GPU suite without its two compile tests, on the default (full) build, built beside A's build.
LIMIT="${LIMIT:-430}"
. scripts/probe_preamble.sh /tmp/s59c3  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=10 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
 echo "rc=$?" >> $W/build.log) &
BPID=$!
python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_SHORT_CHUNKS=0 \
  --order "old new new old" --point 2x2x8192:h8-1 --point 4x4x8192:h8-1 --point 2x8x8192:lognormal:h8-1 \
  --point 4x8x8192:h8-1 --point 2x2x4096 --point 2x2x2048 --point 4x2x2048 --point 2x8x32768 \
  --limit-s $(( $(left) - 280 )) --round-s 14 > $W/ab_rounds.log 2>&1
echo "A: ab_rounds rc=$? left=$(left)"; tail -42 $W/ab_rounds.log
wait $BPID; echo "full build left=$(left): $(tail -2 $W/build.log | tr '\n' ' ')"
timeout $(( $(left) - 12 )) python -m pytest -m gpu -n 4 -q -rfE --tb=line -p no:cacheprovider tests \
  -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head -20
probe_end s59c3
