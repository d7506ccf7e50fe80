#!/usr/bin/env bash
# Session 60, call 5 (an H100 or an H200): s60c4.sh cut to the ~370 s of device time left after twelve refused
# requests. Run from the repository root through scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 150)
# s. A head_dim-128 build, then T (s60c4.sh's tests: the change's fixed path, the binding's refusal of long_chunk
# 300, short chunks at one KV head; expected: all pass), then AL (s60c4.sh's A/B, its expectations unchanged, in as
# many rounds as fit). Each step's log is copied to $OUT as it ends, in case the lease ends the call.
LIMIT="${LIMIT:-150}"
. scripts/probe_preamble.sh /tmp/s60c5  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 \
  python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
FOSCAR_NVCC_DEFINES="$HD" timeout $(( $(left) - 50 )) python -m pytest -m gpu -n 4 -v -rfE --tb=short \
  -p no:cacheprovider tests/test_ragged_gpu.py tests/test_decode_cuda.py \
  -k "long_sequence_alone or raises_on_a_bad_argument or short_chunks_at_one_kv_head" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E 'PASSED|FAILED|ERROR' $W/pytest.log | head -20
cp $W/pytest.log $OUT/pytest.txt
python -m bench.ab_rounds $W/abl --variant "old:$HD" --variant "new:$HD" --run-env old:FOSCAR_LONG_CHUNKS=0 \
  --order "old new new old" --point 2x1x131072:h8-1 --point 2x1x262144:h8-1 --point 2x1x524288:h8-1 \
  --point 4x1x524288:h8-1 --point 2x1x524288:lognormal:h8-1 --point 2x1x524288:h16-2 \
  --limit-s $(( $(left) - 6 )) --round-s 8 > $W/abl_rounds.log 2>&1
echo "AL: ab_rounds rc=$? left=$(left)"; tail -30 $W/abl_rounds.log
cp $W/abl_rounds.log $OUT/abl_rounds.txt
probe_end s60c5
