#!/usr/bin/env bash
# Session 73 call 3 (the last ~550 s of device time): what the short-batch rule (bench/NOTES.md §118: chunks of 256
# from the lengths where the batch's tokens are at most 256 x SMs / KV heads and its longest sequence is past 512) does
# where one sequence past 512 sits among short ones, and the GPU files that call 2 did not run.
#   A: bench.ab_rounds, rounds off on on off (off: FOSCAR_SHORT_TOKENS=0, read when a plan is made), points
#      "one-long" with the short sequences at 512 tokens (bench.ab's :s512, added after this script was first written,
#      when it set bench.ab's WorkloadSpec's short_len by hand; the script had not run), INT2 G=128, 8 query heads over
#      1 KV head. Host mirror CTAs off -> on, sequences merged:
#      64: 1024 + 63 x 512 in 4K (65 -> 130, 1 -> 64); 32: 1024 + 31 x 512 in 4K (33 -> 66, 1 -> 32);
#      32: 2048 + 31 x 512 in 4K (35 -> 70, 1 -> 32); 8: 4096 + 7 x 512 in 128K (15 -> 30, 1 -> 8);
#      16: 8192 + 15 x 512 in 128K (31 -> 62, 1 -> 16).
#      Expected on / off (written before the run): 64 x: 1.15-1.30 (as 64 x 512's 1.30: every short sequence takes a
#      merge); 32 x 1024: 1.10-1.30; 32 x 2048: 1.05-1.25; 8 x 4096: 0.95-1.10; 16 x 8192: 0.95-1.10.
#   T: the GPU files that call 2 did not run (it ran the ragged and fused-merge ones, 278 passed), group by group,
#      with the time left.
LIMIT="${LIMIT:-440}"
. scripts/probe_preamble.sh /tmp/s73c3
probe_build
python -m bench.ab_rounds $W/ab --variant "off:" --variant "on:" --run-env off:FOSCAR_SHORT_TOKENS=0 \
  --order "off on on off" --point 2x64x1024:one-long:h8-1:cap4096:s512 --point 2x32x1024:one-long:h8-1:cap4096:s512 \
  --point 2x32x2048:one-long:h8-1:cap4096:s512 --point 2x8x4096:one-long:h8-1:cap131072:s512 \
  --point 2x16x8192:one-long:h8-1:cap131072:s512 --limit-s 120 --round-s 15 > $W/ab_one_long.log 2>&1
echo "A: rc=$? left=$(left)"; tail -14 $W/ab_one_long.log; cp $W/ab_one_long.log $OUT/ab_one_long.txt
# (edited before its first run, when the device time left fell to ~390 s: the files one group at a time, so that a
# group the time cuts short does not hide the others' results)
for group in "tests/test_paged.py tests/test_merge_slots.py tests/test_plan.py tests/test_bad_inputs.py" \
             "tests/test_decode_cuda.py" "tests/test_channel_k.py tests/test_decode_triton.py"; do
  if [ "$(left)" -gt 45 ]; then
    timeout $(( $(left) - 10 )) python -m pytest -q -m gpu -n 4 $group >> $W/tests_rest.log 2>&1
    echo "T: $group rc=$? left=$(left)"; tail -1 $W/tests_rest.log
  fi
done
cp $W/tests_rest.log $OUT/tests_rest.txt
probe_end s73c3
