#!/usr/bin/env bash
# Prepared in session 77 for the next session's call 1 (not run). Copy it into the session's probes folder and commit
# before the run. At most LIMIT (default 540) s.
#   C: issue 12, a question no session asked (bench/NOTES.md §122): do the one-wave INT2 points lose bandwidth to
#      address alignment? In the bench's contiguous cache every (sequence, KV head) plane of the K codes is 1 MiB
#      (8 x 32K) or 256 KiB (32 x 8K, 64 x 8K) and every chunk 256 KiB, so all CTAs of a wave start at addresses
#      congruent modulo 256 KiB and stream in near-lockstep (partition or bank camping, if the GPU's address hash lets
#      them collide); a plain read spreads its programs over consecutive blocks. The same lengths in a cache allocated
#      for a few more tokens (`:capN`, the plan's schedule unchanged at these three points: splits.schedule checked
#      on the CPU) shift each plane by 2-16 KiB modulo 256 KiB and change nothing else. Expected (written before): if
#      alignment costs, cap / base <= 0.97 at INT2 8 x 32K, 32 x 8K and 64 x 8K, INT4 less; if not, every ratio within
#      0.985-1.015 (the same build, same points, rounds interleaved). Outputs are the same lengths' (max_rel_err ~1.7e-3
#      in both). A win would be a lead, not a change: the kernel would then start each CTA's tile loop at a rotated
#      tile (the layout stays the user's).
#   Then, on an H200: issue 12's bench again (session 69's status.sh; session 76: INT2 5.01x, 5 of 8 large points at
#   85%) with the time left. On an H100: the GPU suite with -n 8 (-v: which tests ran is in the log) with the time left
#   (session 77's -n 4 on a fresh H100 reached 331 of 519 in ~425 s).
LIMIT="${LIMIT:-540}"
. scripts/probe_preamble.sh /tmp/s69  # status.sh reads /tmp/s69/bench
P="--point 2x8x32768 --point 2x8x32768:cap33024 --point 2x8x32768:cap32832 --point 2x32x8192 --point 2x32x8192:cap8448
   --point 2x64x8192 --point 2x64x8192:cap8448 --point 4x8x32768 --point 4x8x32768:cap33024"
R=$(echo $P | tr ' ' '\n' | paste - - | tac | tr '\t\n' '  ')  # the same points in reverse order
mkdir -p $W/cap
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
timeout $(( $(left) - 20 )) python -m bench.ab run cap 1 $W/cap/r1.csv $P > $W/cap/r1.log 2>&1; echo "C1: rc=$? left=$(left)"
timeout $(( $(left) - 20 )) python -m bench.ab run cap 2 $W/cap/r2.csv $R > $W/cap/r2.log 2>&1; echo "C2: rc=$? left=$(left)"
timeout $(( $(left) - 20 )) python -m bench.ab run cap 3 $W/cap/r3.csv $P > $W/cap/r3.log 2>&1; echo "C3: rc=$? left=$(left)"
unset FOSCAR_NVCC_DEFINES
python - <<'PY' 2>&1 | tee $OUT/cap-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob("/tmp/s69/cap/r*.csv"))])
d = d[d.error.isna()] if "error" in d else d
d["cap"] = d.capacity.fillna(d.context).astype(int)
t = d.pivot_table(index=["bits", "batch", "context", "cap"], columns="rnd", values="median_us")
t["mean"] = t.mean(axis=1)
base = t["mean"].groupby(level=["bits", "batch", "context"]).transform(
    lambda s: s[s.index.get_level_values("cap") == s.index.get_level_values("context")].iloc[0])
t["cap/base"] = (t["mean"] / base).round(4)
print(t.round({**{c: 2 for c in t.columns if c != "cap/base"}, "cap/base": 4}).to_string())
print(d.groupby(["bits", "batch", "context", "cap"]).err.max().to_string())
PY
cp $W/cap/*.csv $OUT/ 2>/dev/null
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  if [ "$(left)" -gt 240 ]; then probe_build; echo "part: status"; . results/2026-12-07-s69/probes/status.sh; fi
elif [ "$(left)" -gt 90 ]; then
  timeout $(( $(left) - 15 )) python -m pytest -v -m gpu -n 8 tests/ > $W/suite.log 2>&1
  echo "G: rc=$? left=$(left)"; tail -2 $W/suite.log; grep -cE "PASSED" $W/suite.log
  grep -E "(FAILED|ERROR) " $W/suite.log | head -20; cp $W/suite.log $OUT/suite.txt
fi
probe_end s78c1
