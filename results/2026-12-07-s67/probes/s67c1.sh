#!/usr/bin/env bash
# Session 67, call 1 (from session 66's s66c4.sh / s66c5.sh, which did not run). At most LIMIT (default 500) s. Run
# from the repository root through scripts/gpu_offline.sh (carry .offline).
#   T: the two GPU tests edited after session 66's review (not run on a GPU yet): the BF16 merge-kernel test past 32
#      chunks and the ragged long-sequence test.
#   On an H200, B: issue 12's INT2 bench (s66c1.sh's part B, expectations there, written in session 60).
#   Otherwise, F: FOSCAR against FlashInfer BF16 at 512K, which no run has recorded (the sweep presets stop at 128K),
#      at the Llama-3.1-70B TP8 shape (8 query heads over 1 KV head), with this commit's plans (the merge kernel past
#      32 chunks, NOTES §111): `foscar bench --model llama-3.1-70b-tp8`, INT2 and INT4 BF16 operands, kernels
#      foscar-cuda, flashinfer-fa2-tc and flashinfer-xqa (FlashInfer's fastest BF16 kernels at this shape in session
#      58's run); the speed-up is against the faster of the two at each point. Expected (written in session 66, before
#      any run): FlashInfer 1 x 512K ~90-110 us (268 MB at 2.5-3.0 TB/s), 8 x 512K ~700-850 us; FOSCAR INT2 1 x 512K
#      ~22.5 us (§111) -> 4.0-4.9x, INT4 ~32 us -> 2.8-3.4x; 8 x 512K INT2 ~120-140 us -> 5.0-6.5x, INT4 ~220-250 us
#      -> 3.0-3.6x. One 512K sequence among seven of 4K (one-long): FlashInfer ~100-140 us, FOSCAR INT2 ~29 us ->
#      3.4-4.6x.
#   Then, P (any GPU, time allowing): long chunks over two programs an SM (FOSCAR_LONG_CHUNK_PROGRAMS=2, p2) against
#      the default (new), now that BF16 plans past 32 chunks take the merge kernel (§111; §109 timed p2 with the
#      in-kernel two levels: 0.976 / 0.959 at INT2 2 x 512K contiguous / paged, 1.022 at INT4 2 x 512K paged).
#      Rounds new p2 p2 new. Expected (written before the run): p2 / new 0.95-1.00 at INT2 2 x 512K contiguous and
#      paged (twice the chunks, each merged by the merge kernel's CTAs in parallel rather than in groups of 16),
#      0.98-1.03 at INT4 2 x 512K paged, 0.97-1.02 at INT2 2 x 512K at 16 query heads over 2 KV heads.
LIMIT="${LIMIT:-500}"
. scripts/probe_preamble.sh /tmp/s67c1
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout 80 python -m pytest -q -m gpu -n 4 \
  tests/test_fused_merge_gpu.py::test_bf16_past_32_chunks_without_the_levels_takes_the_merge_kernel \
  "tests/test_ragged_gpu.py::test_long_sequences_past_batch_one_take_chunks_of_at_least_4096" > $W/tests.log 2>&1
echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then  # issue 12's bench, as s66c1.sh's
  sed -n '/^if nvidia-smi/,/^fi$/p' results/2026-12-07-s66/probes/s66c1.sh | sed '1d;$d' \
    | sed 's#/tmp/s66c1#/tmp/s67c1#g' > $W/b.sh
  . $W/b.sh
else
  for wl in uniform one-long; do
    batches="--batch 1 --batch 8"; [ $wl = one-long ] && batches="--batch 8 --short-len 4096"
    timeout 110 foscar bench --arch h100 --model llama-3.1-70b-tp8 --bits 2 \
      --bits 4 --operand bf16 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --grid sweep \
      $batches --context 524288 --workload $wl --out $W/bench-$wl --format quiet > $W/bench-$wl.log 2>&1
    echo "F: bench $wl rc=$? left=$(left)"; tail -3 $W/bench-$wl.log
    cp $W/bench-$wl.log $OUT/bench-$wl.log
    cp $W/bench-$wl/results.csv $OUT/bench-$wl-results.csv 2>/dev/null
    cp $W/bench-$wl/meta.json $OUT/bench-$wl-meta.json 2>/dev/null
  done
  python - <<'PY' 2>&1 | tee $OUT/bench-512k-table.txt
import glob
import pandas as pd
d = pd.concat([pd.read_csv(f) for f in sorted(glob.glob("/tmp/s67c1/bench-*/results.csv"))])
print(d[["workload", "kernel", "batch", "context", "bits", "median_us", "status"]].to_string(index=False))
d = d[d.status == "ok"]
keys = ["workload", "batch", "context", "bits"]
fi = d[d.kernel.str.startswith("flashinfer")].groupby(["workload", "batch", "context"]).median_us.min()
fo = d[d.kernel == "foscar-cuda"].set_index(keys)
fo["flashinfer_best_us"] = [fi.get((w, b, c)) for w, b, c, _ in fo.index]
fo["speedup"] = fo.flashinfer_best_us / fo.median_us
print(fo[["median_us", "flashinfer_best_us", "speedup", "tbps", "sol_fraction", "max_rel_err"]].round(4).to_string())
PY
fi
if [ $(left) -gt 90 ]; then
  python -m bench.ab_rounds $W/ab --variant "new:" --variant "p2:" --run-env p2:FOSCAR_LONG_CHUNK_PROGRAMS=2 \
    --order "new p2 p2 new" --point 2x2x524288:h8-1 --point 2x2x524288:paged:h8-1 --point 4x2x524288:paged:h8-1 \
    --point 2x2x524288:h16-2 --limit-s $(( $(left) - 20 )) --round-s 10 > $W/ab_rounds.log 2>&1
  echo "P: ab_rounds rc=$? left=$(left)"; tail -25 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
fi
probe_end s67c1
