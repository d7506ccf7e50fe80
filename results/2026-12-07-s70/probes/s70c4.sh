#!/usr/bin/env bash
# Session 70 call 4, at the commit that makes 512 the long chunks' floor (splits.LONG_CHUNK_TOKENS; 4096 before):
# the README's Status command at the Llama-3.1-70B TP8 shape (8 query heads over 1 KV head), then the ragged and
# merge GPU tests at the new default.
# Written before the run, against session 69's bench (bench-llama-3.1-70b-tp8-ead9d3ee, another H100) and calls 1-3
# (k05 / old): INT2 1 x 128K 20.1 -> 10.5-11.5 us (1.85x -> 3.2-3.6x), 1 x 32K 9.9 -> 7.6-8.1 us; INT4 1 x 128K 21.0 ->
# 13.2-14.0, 1 x 32K 10.3 -> 7.9-8.5; one-long 8 x 128K INT2 20 -> 12.5-13.5 us; every point at batch >= 8 of the
# uniform grid within 0.97-1.03 of session 69 (same plans); uniform geomean INT2 3.57x -> 3.75-3.95x, INT4 2.58x ->
# 2.68-2.80x; ragged geomean up (one-long 8 x 128K, lognormal batch 1 and 8). Tests: all pass.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s70
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
ARCH=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && ARCH=h200
timeout $(( $(left) > 200 ? $(left) - 170 : 30 )) foscar bench --arch $ARCH --model llama-3.1-70b-tp8 --operand bf16 \
  --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc \
  --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/lb \
  --format quiet > $W/bench-llama.log 2>&1
echo "L: bench rc=$? left=$(left)"; tail -3 $W/bench-llama.log
cp $W/lb/results.csv $OUT/bench-results.csv; cp $W/lb/meta.json $OUT/bench-meta.json
cp $W/lb/summary.json $OUT/bench-summary.json
timeout $(( $(left) > 60 ? $(left) - 20 : 30 )) python -m pytest -q -m gpu -n 4 tests/test_ragged_gpu.py \
  tests/test_fused_merge_gpu.py > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
probe_end s70c4
