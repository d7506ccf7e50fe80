#!/usr/bin/env bash
# One GPU-machine session as one command: build, check, time, short table last, every
# result under $OUT. Meant for a GPU machine reached through a copy of the tree (a
# remote runner with a time limit per command), inside scripts/gpu_offline.sh so that
# FlashInfer, the caches and the git commit come along:
#
#   FOSCAR_CACHE_OUT=$OUT bash scripts/gpu_offline.sh run bash scripts/gpu_session.sh [foscar bench args...]
#
# Steps, each bounded so that gpu_offline.sh can still save the caches before an outer
# time limit (10 minutes per command on the runner the committed runs used):
#   1. build the CUDA extension (its translation units in parallel)         -> $OUT/build.log
#   2. the GPU tests: pytest -m gpu $FOSCAR_TESTS (default: every test file),
#      at most $FOSCAR_TEST_SECONDS (default 240; 0 skips them)             -> $OUT/gpu_tests.log
#   3. foscar bench "$@" --out $OUT/run, at most $FOSCAR_BENCH_SECONDS (default 300;
#      no arguments skips it). A run directory at $FOSCAR_RESUME_DIR is copied to
#      $OUT/run first, so an interrupted sweep resumes (bench/resume.py)   -> $OUT/bench.log
#   4. $OUT/run.tgz: the run directory in one file (the runner returns at most
#      8 files, 2 folders deep).
set -uo pipefail

OUT="${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
export MAX_JOBS="${MAX_JOBS:-$(nproc)}"

GPU_QUERY=name,uuid,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw
nvidia-smi --query-gpu=$GPU_QUERY --format=csv > "$OUT/gpu.csv" 2>&1 || true

echo "== 1. build the CUDA extension (MAX_JOBS=$MAX_JOBS)"
start=$SECONDS
python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > "$OUT/build.log" 2>&1
echo "build rc=$? in $((SECONDS - start)) s" | tee -a "$OUT/build.log"
# keep only this build among the cached extension builds (the cache travels back, 16 MiB a file)
ext="$(tail -2 "$OUT/build.log" | head -1)"
ext_dir="${TORCH_EXTENSIONS_DIR:-$HOME/.cache/torch_extensions}"
if [ -n "$ext" ] && [ -d "$ext_dir" ]; then
  find "$ext_dir" -mindepth 2 -maxdepth 2 -type d -name 'foscar_sm90_*' ! -name "$ext" -exec rm -rf {} + 2>/dev/null || true
fi
tail -3 "$OUT/build.log"

if [ "${FOSCAR_TEST_SECONDS:-240}" != 0 ]; then
  echo "== 2. GPU tests: ${FOSCAR_TESTS:-tests}"
  # -rs too: the A/B builds' tests (wave fit, tile rotate) skip without FOSCAR_NVCC_DEFINES, and should say so
  # shellcheck disable=SC2086  # FOSCAR_TESTS is a list of paths / node ids
  timeout "${FOSCAR_TEST_SECONDS:-240}" python -m pytest -m gpu -q -rfExs ${FOSCAR_TESTS:-tests} \
    > "$OUT/gpu_tests.log" 2>&1
  rc=$?
  if [ "$rc" = 124 ]; then note=" (cut at ${FOSCAR_TEST_SECONDS:-240} s)"; else note=""; fi
  echo "pytest rc=$rc$note" | tee -a "$OUT/gpu_tests.log"
  grep -E "passed|failed|error" "$OUT/gpu_tests.log" | tail -25
fi

if [ $# -gt 0 ]; then
  echo "== 3. foscar bench $*"
  if [ -n "${FOSCAR_RESUME_DIR:-}" ] && [ -d "$FOSCAR_RESUME_DIR" ]; then
    mkdir -p "$OUT/run" && cp -r "$FOSCAR_RESUME_DIR"/. "$OUT/run/" && echo "resuming from $FOSCAR_RESUME_DIR"
  fi
  timeout "${FOSCAR_BENCH_SECONDS:-300}" foscar bench "$@" --out "$OUT/run" > "$OUT/bench.log" 2>&1
  rc=$?
  if [ "$rc" = 124 ]; then note=" (cut at ${FOSCAR_BENCH_SECONDS:-300} s; rerun with FOSCAR_RESUME_DIR to finish)"; else note=""; fi
  echo "bench rc=$rc$note" | tee -a "$OUT/bench.log"
  # clocks, temperature and power again after the sweep (sustained load slows the largest points, NOTES §14)
  nvidia-smi --query-gpu=$GPU_QUERY --format=csv,noheader >> "$OUT/gpu.csv" 2>&1 || true
  tar -czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$OUT/run"
  tail -40 "$OUT/bench.log"
fi
