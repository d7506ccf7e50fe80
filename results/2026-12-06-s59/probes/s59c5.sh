#!/usr/bin/env bash
# Session 59, call 5 (an H100; about 120 s of device time were left). Run from the repository root through
# scripts/gpu_offline.sh (carry .offline), at most LIMIT (default 110) s.
# T: on the new default (FOSCAR_IMMA_PV_INT4=2: INT4 with channel-wise K on the two-mma integer PV, NOTES §104), a
#    head_dim-128 build, the GPU tests with channel-wise K outside tests/test_channel_k.py that fit the time:
#    test_ragged_gpu.py's every-tail test at channel-wise K (INT2 / INT4, three modes, contiguous and paged).
#    Expected (written before): all pass.
LIMIT="${LIMIT:-110}"
. scripts/probe_preamble.sh /tmp/s59c5  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 6 )) python -m pytest -m gpu -n 4 -q -rfE --tb=line -p no:cacheprovider tests/test_ragged_gpu.py \
  -k "every_tail and channel" > $W/pytest.log 2>&1
echo "T: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E '^(FAILED|ERROR)' $W/pytest.log | head -20
probe_end s59c5
