#!/usr/bin/env bash
# Session 54, call 1: the GPU suite on this main (last run whole in session 50, before sessions 51-53's harness
# changes: the clock sampler on the bench's sweep path among them), then the A/A of the clock sampler: bench.ab's rows
# with it ("s") and without it ("o", --no-sampler), rounds s o o s s o, one process a round, the same build.
# Expectation (written before the call): the sampler reads NVML every 20 ms from a second host thread while the
# timed CUDA-graph replays run; the GPU side does not depend on the host once a replay is launched, so o / s within
# +-1% at every point (the rounds' own spread, ~1-3% at the one-wave points in session 53) and outputs bit-identical.
# Run through scripts/gpu_offline.sh (carry .offline).
OUT="${OUT:?set OUT}"
START=$(date +%s)
LIMIT="${LIMIT:-560}"
left() { echo $((LIMIT - ($(date +%s) - START))); }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,power.draw \
  --format=csv > "$OUT/gpu.csv" 2>&1
git log -1 --format=%H > "$OUT/commit.txt" 2>/dev/null || echo "${FOSCAR_GIT_COMMIT:-?}" > "$OUT/commit.txt"
timeout $(( $(left) - 200 )) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests \
  > "$OUT/gpu_suite.txt" 2>&1 || true
echo "suite done at $(( $(date +%s) - START )) s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_suite.txt" | head -20; tail -2 "$OUT/gpu_suite.txt"
P="--point 2x8x32768 --point 2x32x8192 --point 2x64x8192 --point 2x8x131072 --point 4x8x32768 --point 2x1x8192"
r=0
for m in s o o s s o; do
  r=$((r + 1))
  if [ "$(left)" -lt 40 ]; then echo "skip round $r ($m): left=$(left)"; continue; fi
  flag=""; [ "$m" = o ] && flag="--no-sampler"
  timeout $(( $(left) - 10 )) python -m bench.ab run "$m" "$r" "$OUT/ab-$m-$r.csv" $P $flag > "$OUT/ab-$m-$r.log" 2>&1
  echo "round $r ($m) rc=$? at $(( $(date +%s) - START )) s"
done
python -m bench.ab table "$OUT"/ab-*.csv --base s > "$OUT/ab-table.txt" 2>&1; cat "$OUT/ab-table.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$OUT/gpu.csv" 2>&1
