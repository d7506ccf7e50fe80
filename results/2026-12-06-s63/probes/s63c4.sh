#!/usr/bin/env bash
# Session 63, call 4 (s63c3.sh cut to fit 300 s; its expectations stand, written before): the in-kernel merge in two levels (merge_tree, NOTES §108) where a sequence takes more than 32
# chunks. Call 1 found two programs an SM for long chunks 7-17% slower; one reading: one CTA merges all of a
# sequence's chunks after the loop, 16 chunks a round, each round an L2 round trip (at gqa 8 its 128 threads take two
# float4 of the 8 x 128 block each: 128 chunks are 16 dependent rounds, 512 KB). NOTES §101's 1 x 32K at one KV head
# took 20.5 us in 128 chunks of 256 against 9.6 in 32 of 1K. At most LIMIT (default 480) s. A default build, then
#   T: the fused-merge GPU tests (the two-level merge's new ones among them) and the ragged long-sequence tests
#      (a selection, for time);
#   M: old = FOSCAR_MERGE_TREE=0 (one merging CTA), new = the default (two levels), mk = FOSCAR_MERGE=kernel (the
#      merge kernel); 8 query heads over 1 KV head. Expected (written before): new / old INT2 1 x 512K (128 chunks)
#      0.75-0.90, 1 x 256K (64) 0.85-0.95, 1 x 192K (48) 0.90-0.97, 2 x 512K (64 a sequence) contiguous and paged
#      0.88-0.96, INT4 2 x 512K paged 0.92-0.98, one 512K among seven 4K 0.88-0.97; max_rel_err <= 2e-3 in every
#      variant. mk / old: information (a lower bound on what a faster merge wins, minus a launch). p2 =
#      FOSCAR_LONG_CHUNK_PROGRAMS=2 with the two levels: if the one-CTA merge was what made it 7-17% slower in call 1,
#      p2 / new 0.85-1.00 at the 2 x 512K points (elsewhere no change: 1 x 512K keeps 128 chunks).
#   B (an H200 only, in what is left): issue 12's INT2 bench, as s63c1.sh's H200 branch.
LIMIT="${LIMIT:-300}"
. scripts/probe_preamble.sh /tmp/s63c4  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 130 )) python -m pytest -m gpu -n 4 -q -rfE --tb=short -p no:cacheprovider \
  tests/test_fused_merge_gpu.py tests/test_ragged_gpu.py -k "two_levels or in_a_group or long" > $W/pytest.txt 2>&1
echo "T: pytest rc=$? left=$(left)"; tail -15 $W/pytest.txt; cp $W/pytest.txt $OUT/pytest.txt
python -m bench.ab_rounds $W/ab --variant "old:" --variant "new:" --variant "p2:" \
  --run-env old:FOSCAR_MERGE_TREE=0 --run-env p2:FOSCAR_LONG_CHUNK_PROGRAMS=2 \
  --order "old new p2 p2 new old" --point 2x1x524288:h8-1 --point 2x1x262144:h8-1 \
  --point 2x2x524288:h8-1 --point 2x2x524288:paged:h8-1 --point 4x2x524288:paged:h8-1 \
  --point 2x8x524288:one-long:h8-1 --limit-s $(( $(left) - 10 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "M: ab_rounds rc=$? left=$(left)"; tail -30 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && [ $(left) -gt 60 ]; then
  timeout $(( $(left) - 10 )) foscar bench --arch h200 --bits 2 --operand bf16 --kernel foscar-cuda --grid sweep \
    --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 --context 131072 --read-floor --out $W/bench \
    --format quiet > $W/bench.log 2>&1
  echo "B: bench rc=$? left=$(left)"; tail -3 $W/bench.log
  cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null; cp $W/bench/meta.json $OUT/bench-meta.json 2>/dev/null
fi
probe_end s63c4
