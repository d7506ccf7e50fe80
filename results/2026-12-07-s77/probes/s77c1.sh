#!/usr/bin/env bash
# Session 77 call 1 (prepared in session 76 as next-s77c1.sh; run as written). At most LIMIT (default 540) s.
#   W: the FOSCAR_WAVE_FIT=1 build's GPU test, which session 76 had no device time left to run (bench/NOTES.md §121):
#      test_a_wave_fit_build_schedule_is_the_host_mirror, 8 cases (the kernel's chunk table against splits.schedule
#      with wave_slots, the fp64 reference; head_dim 128, so a head_dim-128 build). Expected: all pass.
#   K: test_knob_builds_compile (every build knob, FOSCAR_WAVE_FIT=1 among them since session 76, compiles to a cubin
#      other than its reference's; nvcc only, 16 cores). Expected: pass.
#   On an H200, first issue 12's bench again (session 69's status.sh; session 76 measured INT2 5.01x, 5 of 8 large
#   points at 85%: a second run on another H200 says how much of the gap is run-to-run spread), then W with the time
#   left. On an H100: W, K, then the merge-slot and ragged GPU files on the default build with the time left.
LIMIT="${LIMIT:-540}"
wave_test() {
  FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_WAVE_FIT=1" timeout $(( $(left) - 20 )) \
    python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py -k wave_fit >> $W/tests.log 2>&1
  echo "W: rc=$? left=$(left)"; tail -1 $W/tests.log
}
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  if [ "$(left)" -gt 120 ]; then wave_test; fi
else
  . scripts/probe_preamble.sh /tmp/s77c1
  wave_test
  timeout $(( $(left) - 20 )) python -m pytest -q -m gpu tests/test_decode_cuda.py -k knob_builds >> $W/tests.log 2>&1
  echo "K: rc=$? left=$(left)"; tail -1 $W/tests.log
  probe_build
  if [ "$(left)" -gt 45 ]; then
    timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 2 tests/test_merge_slots.py tests/test_ragged_gpu.py \
      >> $W/tests.log 2>&1
    echo "T: rc=$? left=$(left)"; tail -1 $W/tests.log
  fi
fi
[ -f $W/tests.log ] && cp $W/tests.log $OUT/tests.txt
probe_end s77c1
