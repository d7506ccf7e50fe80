#!/usr/bin/env bash
# Session 75 call 1 (prepared in session 74 as next-s75c1.sh). On an H200: session 69's status.sh (issue 12's H200
# bench, expectations in its header; no H200 has come since session 56). On an H100: the GPU tests that session 74's
# one call did not run on the default as it now stands (FOSCAR_KEEP_SHORT=0, session 73's rule; bench/NOTES.md §119):
# the short-token cases first (1024 + 63 x 512 in 4K: 65 -> 130 CTAs; 1024 + 130 x 200 in 8K: 132 -> 134; 600 + 129
# x 257 in 8K: 131 either way), then the whole GPU suite, file group by file group, at 2 workers where session 74's 4
# ran one test out of memory (test_the_32_chunk_floor_is_the_host_mirror[False-130]). Expected: all pass. Copy it into
# the session's probes folder and commit before the run. At most LIMIT (default 560) s.
LIMIT="${LIMIT:-560}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s75c1
else
  . scripts/probe_preamble.sh /tmp/s75c1
  probe_build
  timeout $(( $(left) - 10 )) python -m pytest -q -m gpu tests/test_ragged_gpu.py -k "short_tokens or chunk_cap" \
    > $W/short.log 2>&1
  echo "S: rc=$? left=$(left)"; tail -3 $W/short.log
  for group in "tests/test_decode_cuda.py" "tests/test_merge_slots.py tests/test_ragged_gpu.py" \
               "tests/test_channel_k.py tests/test_decode_triton.py" "tests/test_paged.py tests/test_plan.py"; do
    if [ "$(left)" -gt 45 ]; then
      timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 2 $group >> $W/tests_rest.log 2>&1
      echo "T: $group rc=$? left=$(left)"; tail -1 $W/tests_rest.log
    fi
  done
  cat $W/short.log $W/tests_rest.log > $OUT/tests.txt
  probe_end s75c1
fi
