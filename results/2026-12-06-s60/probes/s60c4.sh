#!/usr/bin/env bash
# Session 60, call 4 (an H100 or an H200): s60c3.sh cut again to the ~570 s of device time left after ten refused
# requests. Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 280)
# s. One head_dim-128 build (FOSCAR_ONLY_HEAD_DIM=128: the same kernels as the default build at head_dim 128), then:
# AL: as s60c3.sh (its expectations, written before, unchanged): this commit's plan (FOSCAR_LONG_CHUNKS=1, the
#    default) against the plans before (=0), rounds old new new old, 8 query heads over 1 KV head at 1 x 128K
#    (control), INT2 1 x 256K, INT2 / INT4 1 x 512K, INT2 1 x 512K lognormal (54529 tokens: 31 chunks either way, the
#    kernel's floor), 16 over 2 KV heads at INT2 1 x 512K. Expected: new / old 0.99-1.01 with the same output bits at
#    1 x 128K and the lognormal point; 0.72-0.80 at 1 x 256K; 0.50-0.65 at 1 x 512K; 2 KV heads 0.6-0.8.
# T: the head_dim-128 GPU tests of this commit's change: the new fixed-path test (INT2 / INT4, 40000 / 200000 / 262144
#    tokens in a 256K cache: 32 / 49 / 64 chunks, a fixed num_splits=64, FOSCAR_LONG_CHUNKS=0), the binding's bad
#    arguments (long_chunk 300 refused), short chunks at one KV head. Expected: all pass.
LIMIT="${LIMIT:-280}"
. scripts/probe_preamble.sh /tmp/s60c4  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 \
  python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/abl --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
  --order "old new new old" --point 2x1x131072:h8-1 --point 2x1x262144:h8-1 --point 2x1x524288:h8-1 \
  --point 4x1x524288:h8-1 --point 2x1x524288:lognormal:h8-1 --point 2x1x524288:h16-2 \
  --limit-s $(( $(left) - 90 )) --round-s 10 > $W/abl_rounds.log 2>&1
echo "AL: ab_rounds rc=$? left=$(left)"; tail -30 $W/abl_rounds.log
FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 8 )) python -m pytest -m gpu -n 4 -v -rfE --tb=short \
  -p no:cacheprovider tests/test_ragged_gpu.py tests/test_decode_cuda.py \
  -k "long_sequence_alone or raises_on_a_bad_argument or short_chunks_at_one_kv_head" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E 'PASSED|FAILED|ERROR' $W/pytest.log | head -20
probe_end s60c4
