#!/usr/bin/env bash
# Session 60, call 3 (an H100 or an H200): s60c2.sh cut to what the session's device time left allows after eight
# refused requests (its A1 and A2 dropped). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 420) s. One full build (the default), then AL, T, S:
# T: the GPU tests of the decode's split-KV, merge, channel-wise K and binding (test_ragged_gpu, test_decode_cuda
#    without its two compile tests, test_fused_merge_gpu, test_channel_k, test_merge_slots; the whole suite no longer
#    fits), on this commit: the INT4 channel-wise default (session 59) and this commit's Params::long_chunk (the
#    binding's new argument and its refusal of 300, the fixed path's floor: the new test
#    test_a_long_sequence_alone_takes_more_than_32_chunks_of_at_least_4096). Expected: all pass.
# AL: this commit's plan (FOSCAR_LONG_CHUNKS=1, the default) against the plans before (=0), rounds old new new old: 8
#    query heads over 1 KV head at 1 x 128K (control: 32 chunks either way), INT2 1 x 256K (64 chunks against 32),
#    INT2 / INT4 1 x 512K (128 against 32), INT2 1 x 512K lognormal (one length of 54529 tokens in a 512K cache: 31
#    chunks of 1792 either way, 107 without the kernel's floor), and 16 query heads over 2 KV heads at INT2 1 x 512K
#    (64 against 32).
#    Expected (written before, from §101's 1 x 128K row: ~0.85 us an iteration of 256 tokens, a merge of 64 chunks ~6
#    us above 32's, of 128 ~8 us above 64's): new / old 0.99-1.01 at 1 x 128K and at the lognormal point with the same
#    output bits; 0.72-0.80 at 1 x 256K; 0.50-0.65 at 1 x 512K (INT2 and INT4); 2 KV heads 0.6-0.8; max_rel_err as
#    before (<= 2e-3 INT2, <= 7e-3 INT4 at gqa 8).
# S: scripts/split_sweep.py at INT2 1 x 256K and 512K over 1 KV head, counts 32 48 64 96 128, if time is left.
#    Expected: 64 best at 256K (20-28% less time than 32), 128 best at 512K (40-50% less than 32).
LIMIT="${LIMIT:-420}"
. scripts/probe_preamble.sh /tmp/s60c3  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "full build rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/abl --variant "old:" --variant "new:" --run-env old:FOSCAR_LONG_CHUNKS=0 \
  --order "old new new old" --point 2x1x131072:h8-1 --point 2x1x262144:h8-1 --point 2x1x524288:h8-1 \
  --point 4x1x524288:h8-1 --point 2x1x524288:lognormal:h8-1 --point 2x1x524288:h16-2 \
  --limit-s $(( $(left) - 230 )) --round-s 10 > $W/abl_rounds.log 2>&1
echo "AL: ab_rounds rc=$? left=$(left)"; tail -30 $W/abl_rounds.log
timeout $(( $(left) - 45 )) python -m pytest -m gpu -n 4 -v -rfE --tb=line -p no:cacheprovider \
  tests/test_ragged_gpu.py tests/test_channel_k.py tests/test_fused_merge_gpu.py tests/test_merge_slots.py \
  tests/test_decode_cuda.py -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -cE ' PASSED' $W/pytest.log
grep -E '(FAILED|ERROR)' $W/pytest.log | head -20; grep -E 'long_sequence_alone|raises_on_a_bad' $W/pytest.log
timeout $(( $(left) - 8 )) python scripts/split_sweep.py $W/sweep --num-qo-heads 8 --num-kv-heads 1 --min-tokens 256 \
  --bits 2 --batch 1 --context 262144 --context 524288 --splits 32 --splits 48 --splits 64 --splits 96 \
  --splits 128 > $W/sweep.log 2>&1
echo "S: sweep rc=$? left=$(left)"; tail -8 $W/sweep.log
probe_end s60c3
