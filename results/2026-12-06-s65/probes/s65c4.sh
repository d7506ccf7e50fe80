#!/usr/bin/env bash
# Session 65, call 4 (the last ~240 s of device time; at most LIMIT, default 150 s): the merge's GPU tests on the
# commit with splits.may_take_more_than_32_chunks (after calls 1-2). Expected: all pass (70).
LIMIT="${LIMIT:-150}"
. scripts/probe_preamble.sh /tmp/s65c4
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 5 )) python -m pytest -m gpu -n 4 -q -rfE --tb=short -p no:cacheprovider \
  tests/test_fused_merge_gpu.py > $OUT/pytest.txt 2>&1
echo "pytest rc=$? left=$(left)"; tail -5 $OUT/pytest.txt
probe_end s65c4
