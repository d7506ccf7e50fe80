#!/usr/bin/env bash
# Session 68, call 2 (session 67's s67c3.sh, which never ran, less issue 12's bench: s68c1.sh runs it on an H200).
# At most LIMIT (default 420) s. Run from the repository root through scripts/gpu_offline.sh
# (carry .offline). Returns gpu.csv, commit.txt, the tables and s68c2.tgz (every bench folder and log): 8 files at most.
#   Q (any GPU): FOSCAR against FlashInfer BF16 at 512K at the default shape, Qwen3-8B (32 query heads over 8 KV heads),
#      INT2 / INT4 BF16 operands, kernels foscar-cuda, flashinfer-fa2-tc, flashinfer-xqa; batch 1 and 8 uniform, and
#      one 512K among seven 4K. Expected (written before the run, H100, ceiling ~3.16 TB/s): FlashInfer 1 x 512K
#      (2.15 GB of BF16 cache) 720-800 us, 8 x 512K 5.7-6.3 ms, one-long 750-850 us; FOSCAR INT2 1 x 512K ~116 us
#      (session 66's A/B at 32/8 heads) -> 6.0-6.6x; INT4 1 x 512K 195-215 us -> 3.4-3.8x; 8 x 512K INT2 880-960 us
#      -> 6.0-6.6x, INT4 1.55-1.70 ms -> 3.5-3.8x; one-long INT2 120-135 us -> 5.5-6.5x.
#   L (time allowing): the Llama-3.1-70B TP8 shape (8 query heads over 1 KV head) at 1 and 8 x 512K on a paged cache
#      (foscar-cuda-paged, 16-token pages, shuffled) and against FlashInfer's FP8 e4m3 cache (flashinfer-fa2-tc-fp8,
#      flashinfer-xqa-fp8). Expected: FOSCAR paged INT2 1 x 512K 23-26 us, 8 x 512K 122-135 us (call 1's contiguous
#      22.5 / 119.0 plus the page table); FlashInfer FP8 1 x 512K 52-65 us, 8 x 512K 360-420 us, so INT2 against
#      FlashInfer's FP8 cache 2.3-2.9x at 1 x 512K and 2.8-3.4x at 8 x 512K.
#   On an H200 (added in session 68, before any run; ceiling ~4.8 TB/s): every time 0.62-0.75 of the H100's above,
#      and FOSCAR's INT2 speed-ups 0.85-1.0 of them (INT2 reads a smaller share of the H200's ceiling: issue 12).
LIMIT="${LIMIT:-420}"
. scripts/probe_preamble.sh /tmp/s68c2
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
arch=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && arch=h200
bench() {  # name, seconds, then foscar bench's arguments
  local name=$1 s=$2; shift 2
  [ $(left) -lt $((s / 2)) ] && { echo "$name: skipped, left=$(left)"; return; }
  timeout $s foscar bench --arch $arch --operand bf16 --grid sweep --context 524288 --out $W/bench-$name \
    --format quiet "$@" > $W/bench-$name.log 2>&1
  echo "$name: rc=$? left=$(left)"; tail -2 $W/bench-$name.log
}
bench q-uniform 120 --bits 2 --bits 4 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa \
  --batch 1 --batch 8
bench q-one-long 60 --bits 2 --bits 4 --kernel foscar-cuda --kernel flashinfer-fa2-tc --kernel flashinfer-xqa \
  --batch 8 --workload one-long --short-len 4096
bench l-paged-fp8 90 --model llama-3.1-70b-tp8 --bits 2 --bits 4 --kernel foscar-cuda --kernel foscar-cuda-paged \
  --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --batch 1 --batch 8
python - <<'PY' 2>&1 | tee $OUT/bench-512k-table.txt
import glob
import pandas as pd
for f in sorted(glob.glob("/tmp/s68c2/bench-*/results.csv")):
    d = pd.read_csv(f)
    print(f"== {f}")
    cols = ["workload", "kernel", "num_qo_heads", "num_kv_heads", "batch", "bits", "median_us", "tbps", "sol_fraction",
            "baseline_kernel", "speedup_vs_flashinfer_bf16", "baseline_fp8_kernel", "speedup_vs_flashinfer_fp8",
            "max_rel_err", "checked_rows", "sm_clock_during_mhz", "clock_note", "status", "error"]
    print(d[[c for c in cols if c in d]].round(4).to_string(index=False))
PY
probe_end s68c2
