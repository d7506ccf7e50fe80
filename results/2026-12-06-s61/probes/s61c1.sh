#!/usr/bin/env bash
# Session 61, call 1 (an H100 or an H200). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 590) s. (Its first form, the suite alone, was refused a machine at 15:36 and never
# ran; this form adds T and AB for session 61's long chunks past batch 1, bench/NOTES.md §106.)
# Default build (every head_dim), then
# T: the change's GPU tests: test_long_sequences_past_batch_one_take_chunks_of_at_least_4096 (INT2 / INT4 x the
#    in-kernel merge, the merge kernel's table, the ranges derived from the lengths) and session 60's batch-1 test.
#    Expected: all pass.
# AB: old (FOSCAR_LONG_CHUNKS=0: past batch 1 the same plans as session 60) / new (default), rounds old new new old,
#    8 query heads over 1 KV head (Llama-3.1-70B TP8) unless noted. Expected new / old (written before, from §105's
#    batch-1 ratios: 256K 0.78, 512K 0.60):
#      INT2 2 x 256K uniform (64 chunks a sequence instead of 32)      0.75-0.85
#      INT2 2 x 512K uniform (64 of 8K instead of 32 of 16K)           0.60-0.75
#      INT2 one 512K among seven 4K (128 chunks of 4K instead of 32)   0.55-0.70
#      INT4 the same                                                   0.60-0.75
#      INT2 8 lognormal in 512K                                        0.70-1.00
#      INT2 one 512K among seven 4K at 16 / 2 KV heads (64 of 8K)      0.65-0.80
#      controls, the same chunks: INT2 one 128K among seven 4K (cap 128K), and one 512K among seven 4K at the
#      Qwen3-8B shape (32 / 8 KV heads: long_chunk 0)                  0.98-1.02, outputs bit-identical
# S: the whole GPU suite, not run since session 59's call 3 (before INT4 channel-wise K on the integer PV became the
#    default and before session 60's long_chunk): `pytest -m gpu -n 4` without the two tests that build every knob /
#    head_dim again. Expected: all pass; 230-300 s.
# Each step's log is copied to $OUT as it ends, in case the lease ends the call.
LIMIT="${LIMIT:-590}"
. scripts/probe_preamble.sh /tmp/s61c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
cp $W/build.log $OUT/build.txt
timeout 120 python -m pytest -m gpu -n 4 -v -rfE --tb=short -p no:cacheprovider tests/test_ragged_gpu.py \
  -k "past_batch_one or long_sequence_alone" > $W/pytest-t.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest-t.log)"; grep -E 'PASSED|FAILED|ERROR' $W/pytest-t.log | head -20
cp $W/pytest-t.log $OUT/pytest-t.txt
python -m bench.ab_rounds $W/ab --variant "old:" --variant "new:" --run-env old:FOSCAR_LONG_CHUNKS=0 \
  --order "old new new old" --point 2x2x262144:h8-1 --point 2x2x524288:h8-1 --point 2x8x524288:one-long:h8-1 \
  --point 4x8x524288:one-long:h8-1 --point 2x8x524288:lognormal:h8-1 --point 2x8x524288:one-long:h16-2 \
  --point 2x8x131072:one-long:h8-1 --point 2x8x524288:one-long \
  --limit-s 150 --round-s 10 > $W/ab_rounds.log 2>&1
echo "AB: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log
cp $W/ab_rounds.log $OUT/ab_rounds.txt
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfE --tb=short -p no:cacheprovider tests \
  -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "S: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E 'FAILED|ERROR' $W/pytest.log | head -30
cp $W/pytest.log $OUT/pytest.txt
probe_end s61c1
