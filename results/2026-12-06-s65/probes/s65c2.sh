#!/usr/bin/env bash
# Session 65, call 2 (for the machine call 1 leaves warm; at most LIMIT, default 440 s): the whole GPU suite on this
# main. The last whole run was session 64's call 3 on f330af8; since then the C entry's struct, the FUSED_MERGE=0
# build fix, splits._chunks_at and test_two_levels_at_other_head_dims landed, each run on the CPU only.
# Expected: every test passes (460: session 64's 459 and the head_dim 64 / 256 test).
LIMIT="${LIMIT:-440}"
. scripts/probe_preamble.sh /tmp/s65c2
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 10 )) python -m pytest -m gpu -n 4 -q -p no:cacheprovider -rfE --tb=short --durations=15 tests \
  > $OUT/pytest_full.txt 2>&1
echo "pytest rc=$? left=$(left)"; tail -30 $OUT/pytest_full.txt
probe_end s65c2
