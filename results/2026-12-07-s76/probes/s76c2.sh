#!/usr/bin/env bash
# Session 76 call 2. On an H200: session 69's status.sh (issue 12's bench; expectations in its header). On any other
# GPU: an A/B of the wave fit (FOSCAR_WAVE_FIT=1, bench/NOTES.md §121), then the GPU tests of its schedule.
#   A: bench.ab_rounds, rounds off wave wave off; both builds head_dim 128 only (FOSCAR_ONLY_HEAD_DIM=128, a third of
#      the nvcc time: this session's refusals left little device time); off: the default build; wave: FOSCAR_WAVE_FIT=1,
#      whose find_work grows the length-aware chunks until one CTA an SM holds them where the default's chunks make
#      more CTAs than SMs but at most twice as many and the grown chunk is at most 1.7x as long. INT2 G=128 head_dim
#      128.
#      CTAs (host mirror, 132 SMs) default -> wave, chunk tokens default -> wave:
#        h8-1 lognormal 8 in 512K: 165 -> 129, 4352 -> 5632;  8 in 256K: 156 -> 129, 2304 -> 2816;
#        h8-1 lognormal 8 in 128K: 140 -> 118, 1280 -> 1536;  INT4 lognormal 8 in 512K: 165 -> 129, 4352 -> 5632;
#        h8-1 one-long 16 x 128K (short 4096): 163 -> 119, 1280 -> 1792;  one-long 32 x 512K: 159 -> 129, 4096 -> 5376;
#        h8-1 one-long 32 x 8K: 197 -> 131, 768 -> 1280;
#        h16-2 lognormal 4 in 512K: 148 -> 126 (2 KV heads), 4352 -> 5120;  h16-2 lognormal 8 in 256K: 168 -> 132;
#        controls (same plan): h8-1 uniform 8 x 32K (256 CTAs, 1024 -> 1024), Qwen3-8B lognormal 8 in 128K (256).
#      Expected, written before the run: the SMs that run two chunks (4352 + 4352 tokens at 8 x 512K) set the time
#      where the default's CTAs pass one wave; two CTAs on one SM streamed no faster together than one CTA over both
#      chunks (§108: two programs an SM 7-17% slower than one of twice the chunk), so the loop's time should follow the
#      most tokens an SM: 5632 / 8704 = 0.65 at 8 x 512K. With the fixed costs (launch, find_work, merge, ~4-6 us) wave
#      / off 0.70-0.85 at the 256K-512K points, 0.80-0.95 at 128K and one-long 16 x 128K (the long sequence's 1280 ->
#      1792-token chunks: 0.85-1.0), 0.85-1.05 at one-long 32 x 8K (short; the extra general-path pass in find_work,
#      ~0.3 us, may eat it); controls 0.98-1.02 (the one-pass path's extra check only). max_rel_err unchanged
#      (<= 2e-3), no NaN.
#   T: the wave build's GPU test of its schedule against the host mirror with wave_slots and the fp64 reference, the
#      new test_a_wave_fit_build_schedule_is_the_host_mirror (8 cases, head_dim 128), expected all pass; then with the
#      time left the rest of test_ragged_gpu.py's head_dim-128 cases on the wave build, for what a default flip would
#      change: expected to fail only where a test asserts a default plan's CTA count at 132 SMs that the wave fit
#      changes (e.g. the long-chunk room's 121 chunks among 8 sequences).
#      (The default build's code is unchanged: its decode_mode_bf16.cu SASS is identical to HEAD's from the same path.)
LIMIT="${LIMIT:-540}"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  . scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
  probe_build
  echo "part: status"
  . results/2026-12-07-s69/probes/status.sh
  probe_end s76c2
else
  . scripts/probe_preamble.sh /tmp/s76c2
  python -m bench.ab_rounds $W/ab --variant "off:FOSCAR_ONLY_HEAD_DIM=128" \
    --variant "wave:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_WAVE_FIT=1" \
    --order "off wave wave off" \
    --point 2x8x524288:lognormal:h8-1 --point 2x8x262144:lognormal:h8-1 --point 2x8x131072:lognormal:h8-1 \
    --point 4x8x524288:lognormal:h8-1 --point 2x16x131072:one-long:h8-1 --point 2x32x524288:one-long:h8-1 \
    --point 2x32x8192:one-long:h8-1 --point 2x4x524288:lognormal:h16-2 --point 2x8x262144:lognormal:h16-2 \
    --point 2x8x32768:uniform:h8-1 --point 2x8x131072:lognormal \
    --limit-s $(( $(left) * 6 / 10 )) --round-s 35 > $W/ab.log 2>&1
  echo "A: rc=$? left=$(left)"; tail -24 $W/ab.log; cp $W/ab.log $OUT/ab.txt
  export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_WAVE_FIT=1"
  timeout $(( $(left) - 20 )) python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py -k wave_fit \
    > $W/tests.log 2>&1
  echo "T: wave rc=$? left=$(left)"; tail -1 $W/tests.log
  if [ "$(left)" -gt 40 ]; then
    timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py \
      -k "not wave_fit and not kernel_schedule_is_the_host_mirror" >> $W/tests.log 2>&1
    echo "T: wave rest rc=$? left=$(left)"; tail -1 $W/tests.log
  fi
  cp $W/tests.log $OUT/tests.txt
  probe_end s76c2
fi
