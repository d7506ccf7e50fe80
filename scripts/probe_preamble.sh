# Sourced (not run) by a probe script for the GPU machine, at its top:
#
#   . scripts/probe_preamble.sh <work-folder>
#
# gives the script what every probe of results/*/probes/ wrote out by hand:
#   T0, LIMIT (default 560 s) and left(): the seconds left of LIMIT, counted from T0 (both may be set by the caller);
#   $OUT/gpu.csv: nvidia-smi's GPU, driver, clocks, temperature and power limits at the start (probe_end adds a line
#   of clocks, temperature and power at the end);
#   $OUT/commit.txt: the commit of the tree that runs: FOSCAR_GIT_COMMIT where scripts/gpu_offline.sh exported it
#   (the commit `fetch` recorded), else the checkout's HEAD, which on the GPU machine may be another commit;
#   W: the work folder, emptied and created (default /tmp/probe);
#   probe_build: builds (or loads) the default CUDA extension (16 nvcc jobs), its log in $W/build.log, and prints
#   "built rc=... left=...: <its last line>" (every probe script up to session 72 wrote this out by hand);
#   probe_end [tar name]: the end line of gpu.csv, then $OUT/<name>.tgz (default probe.tgz) of W without built
#   extensions (the runner returns at most 8 files).
# Never changes clocks, power or GPU modes; only reads them.
: "${T0:=$(date +%s)}"
LIMIT="${LIMIT:-560}"
OUT="${OUT:?set OUT}"
left() { echo $((LIMIT - ($(date +%s) - T0))); }
q=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit
nvidia-smi --query-gpu=$q,enforced.power.limit --format=csv > "$OUT/gpu.csv" 2>&1
echo "${FOSCAR_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > "$OUT/commit.txt"
W="${1:-/tmp/probe}"
rm -rf "$W"; mkdir -p "$W"
probe_build() {
  MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > "$W/build.log" 2>&1
  echo "built rc=$? left=$(left): $(tail -1 "$W/build.log")"
}
probe_end() {
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader \
    >> "$OUT/gpu.csv" 2>&1
  tar -czf "$OUT/${1:-probe}.tgz" -C "$W" --exclude='*.so' .
}
