#!/usr/bin/env bash
# Session 79, call 1: results/2026-12-07-s78/probes/next-s79c1.sh as prepared in session 78 (itself session 77's
# next-s78c1.sh with two additions: the GPU tests of session 78's input checks (code tensors off 16 bytes take the
# Triton kernel) before the rotate build's test, and each line of the suite's log stamped with the seconds since it
# started), unchanged below this header.
# At most LIMIT (default 540) s. Any GPU (H200 or H100; the question is the same on both).
#   Issue 12, a question no session asked (bench/NOTES.md §122): do the one-wave INT2 points lose bandwidth to address
#   alignment? In the bench's contiguous cache every (sequence, KV head) plane of the K codes is 1 MiB (8 x 32K) or
#   256 KiB (32 x 8K, 64 x 8K) and every chunk 256 KiB, so all CTAs of a wave start at addresses congruent modulo
#   256 KiB and stream in near-lockstep (partition or bank camping, if the GPU's address hash lets them collide); a
#   plain read spreads its programs over consecutive blocks. Two probes of it in one bench.ab_rounds:
#   - layout: the same lengths in a cache allocated for 64-256 more tokens (`:capN`; splits.schedule gives these three
#     points the same plan and schedule at either capacity, checked on the CPU), which shifts each plane by 2-8 KiB
#     modulo 256 KiB and changes nothing else; compared within each build (cap-table.txt);
#   - kernel: the FOSCAR_TILE_ROTATE=1 build, whose contiguous token-wise warps with only full sub-tiles take them from
#     a start rotated per CTA ((it + 13 cta) mod iters; 6-10 more loop instructions, 1%); rot / off in ab-table.txt.
#   Expected (written before): if alignment costs, cap / base <= 0.97 at INT2 8 x 32K, 32 x 8K and 64 x 8K in the off
#   build, and rot / off <= 0.97 there (and cap / base ~1.00 in the rot build); INT4 less. If not: every ratio within
#   0.985-1.015 (rot / off up to 1.01 from its instructions). Outputs: max_rel_err ~1.7e-3 in both builds (rot's
#   outputs differ in bits: the tiles' order changes the sums).
#   Then the alignment GPU tests (6 cases; expected pass), the rotate build's GPU test (9 cases against the fp64
#   reference; expected pass), then on an H100 the GPU suite (-n 8, -v) with the time left; on an H200 the Status
#   bench if >= 300 s are left (not likely).
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
python -m bench.ab_rounds $W/ab --variant "off:FOSCAR_ONLY_HEAD_DIM=128" \
  --variant "rot:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_TILE_ROTATE=1" --order "off rot rot off" \
  --point 2x8x32768 --point 2x8x32768:cap33024 --point 2x32x8192 --point 2x32x8192:cap8448 \
  --point 2x64x8192 --point 2x64x8192:cap8448 --point 4x8x32768 --point 4x8x32768:cap33024 \
  --point 2x8x131072 --point 2x1x32768 \
  --limit-s $(( $(left) - 200 )) --round-s 45 > $W/ab.log 2>&1
echo "A: rc=$? left=$(left)"; tail -30 $W/ab.log; cp $W/ab.log $OUT/ab.txt
python - <<'PY' 2>&1 | tee $OUT/cap-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob("/tmp/s69/ab/ab-*.csv"))])
d = d[d.error.isna()] if "error" in d else d
d["cap"] = d.capacity.fillna(d.context).astype(int)
t = d.pivot_table(index=["bits", "batch", "context", "cap"], columns="m", values="median_us", aggfunc="mean")
for m in list(t.columns):
    base = t[m].groupby(level=["bits", "batch", "context"]).transform(
        lambda s: s[s.index.get_level_values("cap") == s.index.get_level_values("context")].iloc[0]
    if (s.index.get_level_values("cap") == s.index.get_level_values("context")).any() else float("nan"))
    t[f"{m} cap/base"] = (t[m] / base).round(4)
print(t.round(3).to_string())
print(d.groupby(["m", "bits", "batch", "context", "cap"]).err.max().to_string())
PY
# head_dim 128 only (every case is): the off variant's build, already compiled by ab_rounds, not a full default one
FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128" timeout $(( $(left) - 60 )) python -m pytest -q -m gpu \
  tests/test_decode_cuda.py -k "off_16_byte" > $W/align.log 2>&1
echo "T: alignment rc=$? left=$(left)"; tail -1 $W/align.log; cp $W/align.log $OUT/align.txt
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TILE_ROTATE=1"
timeout $(( $(left) - 20 )) python -m pytest -q -m gpu -n 2 tests/test_ragged_gpu.py -k tile_rotate > $W/tests.log 2>&1
echo "T: rotate rc=$? left=$(left)"; tail -1 $W/tests.log
unset FOSCAR_NVCC_DEFINES
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  if [ "$(left)" -gt 300 ]; then probe_build; echo "part: status"; . results/2026-12-07-s69/probes/status.sh; fi
elif [ "$(left)" -gt 90 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -v -m gpu -n 8 --durations=40 tests/ 2>&1 | python -u -c \
    'import sys, time; t = time.time(); [print(f"{time.time() - t:7.1f} {l}", end="", flush=True) for l in sys.stdin]' \
    > $W/suite.log
  echo "G: rc=${PIPESTATUS[0]} left=$(left)"; tail -2 $W/suite.log; grep -c "PASSED" $W/suite.log
  grep -E "(FAILED|ERROR) " $W/suite.log | head -20; grep -A42 "slowest" $W/suite.log; cp $W/suite.log $OUT/suite.txt
fi
cp $W/tests.log $OUT/tests.txt
probe_end s79c1
