#!/usr/bin/env bash
# Session 62, call 2: session 61's s61c3.sh (s61c2.sh / s62c1.sh cut, LIMIT default 220), for what device time is left
# after refused requests.
# Its expectations stand (written before). A head_dim-128 build, T (the long-chunk GPU tests), then
# on an H200: B only, at batches 8 / 32 / 64 x contexts 8K / 32K (issue 12's short points 8 x 32K, 32 x 8K, 64 x 8K and
#   three more), FOSCAR's CUDA kernel only, with read floors;
# on an H100: P only (the long chunks on paged caches and at 192K), in as many rounds as fit.
LIMIT="${LIMIT:-220}"
. scripts/probe_preamble.sh /tmp/s62c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' \
  > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
FOSCAR_NVCC_DEFINES="$HD" timeout 60 python -m pytest -m gpu -n 4 -v -rfE --tb=short -p no:cacheprovider \
  tests/test_ragged_gpu.py -k "past_batch_one or long_sequence_alone" > $W/pytest-t.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest-t.log)"; grep -E 'FAILED|ERROR' $W/pytest-t.log | head -20
cp $W/pytest-t.log $OUT/pytest-t.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 8 )) foscar bench --arch h200 --bits 2 --operand bf16 \
    --kernel foscar-cuda --grid sweep --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 \
    --read-floor --out $W/bench --format quiet > $W/bench.log 2>&1
  echo "B: bench rc=$? left=$(left)"; tail -3 $W/bench.log
  cp $W/bench/results.csv $OUT/bench-results.csv 2>/dev/null; cp $W/bench.log $OUT/bench.txt
else
  python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
    --order "old new new old" --point 2x8x524288:one-long:paged:h8-1 --point 2x2x524288:paged:h8-1 \
    --point 4x2x524288:paged:h8-1 --point 2x1x196608:h8-1 --point 2x2x196608:h8-1 \
    --limit-s $(( $(left) - 8 )) --round-s 8 > $W/ab_rounds.log 2>&1
  echo "P: ab_rounds rc=$? left=$(left)"; tail -20 $W/ab_rounds.log
  cp $W/ab_rounds.log $OUT/ab_rounds.txt
fi
probe_end s62c2
