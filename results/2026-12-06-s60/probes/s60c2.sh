#!/usr/bin/env bash
# Session 60, call 2 (an H100 or an H200). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 575) s. Session 59 left three things untimed or unrun; this call does them, and
# measures this commit's plan change (AL).
# A1: INT4 with channel-wise K on the two-mma integer PV (FOSCAR_IMMA_PV_INT4=2, the default since session 59) against
#    its BF16 PV (=1), head_dim-128 builds, rounds old new new old, where §104 did not time it: group sizes 32
#    and 64, a ragged (lognormal) batch, batch 1. Points: 4x8x32768:c32:g32, 4x8x32768:c64:g64, 4x64x8192:c32:g32,
#    4x8x32768:lognormal:c32, 4x1x32768:c64:g64, and token-wise 4x8x32768:lognormal (control: not touched by the knob).
#    Expected (written before): new / old 0.97-1.03 at every channel-wise point (G=32: 202 -> 240 registers, two CTAs
#    an SM either way; G=64: 4-12 bytes of spill), max_rel_err at the channel-wise points ~1.5-2.5e-3 with new and
#    3-7e-3 with old; the control 0.99-1.01 with the same output bits.
# A2: short chunks (§103) at the Qwen3-8B shape (32 query heads over 8 KV heads) where the plan changes and only 2 x 2K
#    was timed: old (FOSCAR_SHORT_CHUNKS=0) / new on the default head_dim-128 build, rounds old new new old old new
#    (after T, in what is left, if anything).
#    Points: 2x2x1024, 2x3x1024, 2x4x1024, 4x2x1024 (8 / 12 / 16 / 8 chunks of 256 where the plans before took 4 / 6
#    / 8 / 4 of 512), and 2x2x4096:lognormal (its uniform plan unchanged; the least chunk now 256).
#    Expected (written before): new / old 0.85-0.98 at the four uniform points (2 x 2K measured 0.90 / 0.94); the
#    lognormal point 0.95-1.02.
# S: the split counts above 32 at batch 1 over one KV head (8 query heads: Llama-3.1-70B at tensor parallel 8), where
#    the plan caps a sequence at 32 chunks (§101) and the cache is longer than §101's 128K: scripts/split_sweep.py at
#    INT2 1 x 256K and 512K, counts 32 48 64 96 128, on A1's head_dim-128 default build (the rule that this commit
#    adds: at batch 1, up to one program an SM in chunks of at least 4096 at the capacity, 64 and 128 here).
#    Expected (written before, from §101's 1 x 128K row: ~0.85 us an iteration of 256 tokens, a merge of 64 chunks ~6
#    us above 32's, of 128 ~8 us above 64's): INT2 1 x 256K 64 best, 20-28% less
#    time than 32 (32: 30-36 us); 1 x 512K 128 best, 40-50% less than 32 (32: 55-65 us). Every output checked
#    (max_rel_err <= 1e-2).
# AL: this commit's plan (FOSCAR_LONG_CHUNKS=1, the default) against the plans before (=0), on A1's default build,
#    rounds old new new old: 8 query heads over 1 KV head at 1 x 128K (control: 32 chunks either way), INT2 1 x 256K
#    (64 chunks against 32), INT2 / INT4 1 x 512K (128 against 32), INT2 1 x 512K lognormal (one length drawn in a
#    512K cache: the kernel's floor, at most 32 chunks below 128K tokens), and 16 query heads over 2 KV heads at INT2
#    1 x 512K (64 against 32).
#    Expected (written before): new / old 0.99-1.01 at 1 x 128K with the same output bits; 0.72-0.80 at 1 x 256K;
#    0.50-0.65 at 1 x 512K (INT2 and INT4); 2 KV heads 0.6-0.8; the lognormal point (54529 tokens: 31 chunks of 1792
#    either way, 107 without the kernel's floor) 0.99-1.01 with the same output bits;
#    max_rel_err as before (<= 2e-3 INT2, <= 7e-3 INT4 at gqa 8).
# T: the GPU suite without its two compile tests, on the default (full) build: session 59 never ran it whole on the
#    INT4 channel-wise default. Expected: all pass (431 in session 59's call 3, before that default).
LIMIT="${LIMIT:-575}"
. scripts/probe_preamble.sh /tmp/s60c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=8 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
 echo "rc=$?" >> $W/build.log) &
BPID=$!
python -m bench.ab_rounds $W/ab1 --variant "old:$HD,FOSCAR_IMMA_PV_INT4=1" --variant "new:$HD" \
  --order "old new new old" --point 4x8x32768:c32:g32 --point 4x8x32768:c64:g64 --point 4x64x8192:c32:g32 \
  --point 4x8x32768:lognormal:c32 --point 4x1x32768:c64:g64 --point 4x8x32768:lognormal \
  --limit-s $(( $(left) - 440 )) --round-s 14 > $W/ab1_rounds.log 2>&1
echo "A1: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab1_rounds.log
FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 360 )) python scripts/split_sweep.py $W/sweep --num-qo-heads 8 \
  --num-kv-heads 1 --min-tokens 256 --bits 2 --batch 1 --context 262144 --context 524288 \
  --splits 32 --splits 48 --splits 64 --splits 96 --splits 128 > $W/sweep.log 2>&1
echo "S: sweep rc=$? left=$(left)"; tail -8 $W/sweep.log
python -m bench.ab_rounds $W/abl --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
  --order "old new new old" --point 2x1x131072:h8-1 --point 2x1x262144:h8-1 --point 2x1x524288:h8-1 \
  --point 4x1x524288:h8-1 --point 2x1x524288:lognormal:h8-1 --point 2x1x524288:h16-2 \
  --limit-s $(( $(left) - 300 )) --round-s 10 > $W/abl_rounds.log 2>&1
echo "AL: ab_rounds rc=$? left=$(left)"; tail -30 $W/abl_rounds.log
wait $BPID; echo "full build left=$(left): $(tail -2 $W/build.log | tr '\n' ' ')"
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfE --tb=line -p no:cacheprovider tests \
  -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head -20
python -m bench.ab_rounds $W/ab2 --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_SHORT_CHUNKS=0 \
  --order "old new new old old new" --point 2x2x1024 --point 2x3x1024 --point 2x4x1024 --point 4x2x1024 \
  --point 2x2x4096:lognormal --limit-s $(( $(left) - 5 )) --round-s 10 > $W/ab2_rounds.log 2>&1
echo "A2: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab2_rounds.log
probe_end s60c2
