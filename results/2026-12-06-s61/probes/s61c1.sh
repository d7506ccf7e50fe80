#!/usr/bin/env bash
# Session 61, call 1 (an H100 or an H200). Run from the repository root through scripts/gpu_offline.sh (carry
# .offline), at most LIMIT (default 560) s.
# S: the whole GPU suite, not run since session 59's call 3 (before INT4 channel-wise K on the integer PV became the
#    default and before session 60's long_chunk). Default build (every head_dim), then
#    `pytest -m gpu -n 4` without the two tests that build every knob / head_dim again.
#    Expected (written before): all pass; ~100 s build + 230-275 s tests.
# Each step's log is copied to $OUT as it ends, in case the lease ends the call.
LIMIT="${LIMIT:-560}"
. scripts/probe_preamble.sh /tmp/s61c1  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
cp $W/build.log $OUT/build.txt
timeout $(( $(left) - 15 )) python -m pytest -m gpu -n 4 -q -rfE --tb=short -p no:cacheprovider tests \
  -k "not test_knob_builds_compile and not all_head_dims" > $W/pytest.log 2>&1
echo "S: pytest rc=$? left=$(left): $(tail -1 $W/pytest.log)"; grep -E 'FAILED|ERROR' $W/pytest.log | head -30
cp $W/pytest.log $OUT/pytest.txt
probe_end s61c1
