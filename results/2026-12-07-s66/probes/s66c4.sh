#!/usr/bin/env bash
# Session 66, call 4 (the last device time). At most LIMIT (default 380) s. Run from the repository root through
# scripts/gpu_offline.sh (carry .offline).
#   On an H200: issue 12's INT2 bench (s66c1.sh's part B, expectations there, written in session 60).
#   Otherwise: FOSCAR against FlashInfer BF16 at 512K, which no run has recorded (the sweep presets stop at 128K), at
#   the Llama-3.1-70B TP8 shape (8 query heads over 1 KV head) with this commit's plans (the merge kernel past 32
#   chunks, NOTES §111): `foscar bench --model llama-3.1-70b-tp8`, INT2 and INT4 BF16 operands, kernels foscar-cuda,
#   flashinfer-fa2-tc and flashinfer-xqa (FlashInfer's fastest BF16 kernels at this shape in session 58's run; the
#   speed-up is against the faster of the two at each point). Expected (written before the run): FlashInfer
#   1 x 512K ~90-110 us (268 MB at 2.5-3.0 TB/s), 8 x 512K ~700-850 us; FOSCAR INT2 1 x 512K ~22.5 us (§111) ->
#   4.0-4.9x, INT4 ~32 us -> 2.8-3.4x; 8 x 512K INT2 ~120-140 us -> 5.0-6.5x, INT4 ~220-250 us -> 3.0-3.6x. Then one
#   512K sequence among seven of 4K (one-long): FlashInfer ~100-140 us, FOSCAR INT2 ~29 us -> 3.4-4.6x.
LIMIT="${LIMIT:-380}"
. scripts/probe_preamble.sh /tmp/s66c4
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then  # issue 12's bench, as s66c1.sh's
  sed -n '/^if nvidia-smi/,/^fi$/p' results/2026-12-07-s66/probes/s66c1.sh | sed '1d;$d' \
    | sed 's#/tmp/s66c1#/tmp/s66c4#g' > $W/b.sh
  . $W/b.sh
else
  for wl in uniform one-long; do
    batches="--batch 1 --batch 8"; [ $wl = one-long ] && batches="--batch 8 --short-len 4096"
    timeout $(( $(left) / 2 > 30 ? $(left) / 2 : 30 )) foscar bench --arch h100 --model llama-3.1-70b-tp8 --bits 2 \
      --bits 4 --operand bf16 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --grid sweep \
      $batches --context 524288 --workload $wl --out $W/bench-$wl --format quiet > $W/bench-$wl.log 2>&1
    echo "bench $wl rc=$? left=$(left)"; tail -3 $W/bench-$wl.log
    cp $W/bench-$wl/results.csv $OUT/bench-$wl-results.csv 2>/dev/null
    cp $W/bench-$wl/meta.json $OUT/bench-$wl-meta.json 2>/dev/null
  done
  python - <<'PY' 2>&1 | tee $OUT/bench-512k-table.txt
import glob
import pandas as pd
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob("/tmp/s66c4/bench-*/results.csv"))])
d = d[d.status == "ok"]
keys = ["workload", "batch", "context", "bits"]
fi = d[d.kernel.str.startswith("flashinfer")].groupby(["workload", "batch", "context"]).median_us.min()
fo = d[d.kernel == "foscar-cuda"].set_index(keys)
fo["flashinfer_best_us"] = [fi.get((w, b, c)) for w, b, c, _ in fo.index]
fo["speedup"] = fo.flashinfer_best_us / fo.median_us
print(d.pivot_table(index=keys, columns="kernel", values="median_us").round(2).to_string())
print(fo[["median_us", "flashinfer_best_us", "speedup", "tbps", "sol_fraction", "max_rel_err"]].round(3).to_string())
PY
fi
probe_end s66c4
