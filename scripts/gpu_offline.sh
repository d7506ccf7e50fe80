#!/usr/bin/env bash
# Prepare and use an offline GPU machine for FOSCAR (DESIGN §7).
#
#   On a connected machine, in the repo root:
#     bash scripts/gpu_offline.sh fetch
#       downloads the wheels the GPU side needs beyond PyTorch and Triton
#       (flashinfer-python 0.6.13 + apache-tvm-ffi 0.1.x, cp312 manylinux x86_64)
#       into $FOSCAR_OFFLINE_DIR/wheels (default .offline/wheels, git-ignored).
#   Copy the repo (with .offline/) to the GPU machine, then one line runs anything there:
#     bash scripts/gpu_offline.sh run foscar bench --arch h100 --bits 2
#       installs the wheels without network into $FOSCAR_OFFLINE_DIR/site, restores
#       the compiled caches (FlashInfer JIT, Triton, torch extensions) from
#       $FOSCAR_OFFLINE_DIR/cache/*.tar.gz, runs the command with the project on
#       PYTHONPATH and `foscar` on PATH, then saves the caches to $FOSCAR_CACHE_OUT
#       (default $FOSCAR_OFFLINE_DIR/cache) so the next run skips the compiles.
#
# Variables: FOSCAR_OFFLINE_DIR, FOSCAR_CACHE_OUT, FOSCAR_PYTHON (default python3),
# FOSCAR_WHEEL_PYTHON (default 3.12, the GPU machine's Python for `fetch`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OFF="${FOSCAR_OFFLINE_DIR:-$ROOT/.offline}"
PY="${FOSCAR_PYTHON:-python3}"
FLASHINFER_VERSION="0.6.13"

cache_dirs() {  # name  directory  (the caches worth carrying between runs)
  echo "flashinfer-jit ${FLASHINFER_CACHE_DIR:-$HOME/.cache/flashinfer}"
  echo "triton-cache ${TRITON_CACHE_DIR:-$HOME/.triton/cache}"
  echo "torch-extensions ${TORCH_EXTENSIONS_DIR:-$HOME/.cache/torch_extensions}"
}

fetch() {
  mkdir -p "$OFF/wheels"
  "$PY" -m pip download --no-deps --only-binary=:all: \
    --python-version "${FOSCAR_WHEEL_PYTHON:-3.12}" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 \
    -d "$OFF/wheels" "flashinfer-python==$FLASHINFER_VERSION" "apache-tvm-ffi>=0.1.6,<0.2"
  ls -la "$OFF/wheels"
}

run() {
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || { echo "gpu_offline.sh run: give a command, e.g. 'foscar bench --arch h100 --bits 2'" >&2; exit 2; }
  local site="$OFF/site"
  if ls "$OFF"/wheels/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$site" "$OFF"/wheels/*.whl
  else
    echo "gpu_offline.sh: no wheels in $OFF/wheels (run 'fetch' on a connected machine); FlashInfer rows will be skipped" >&2
  fi
  # `foscar` without installing the project: a wrapper over `python -m foscar_cli`
  mkdir -p "$site/bin"
  printf '#!/usr/bin/env bash\nexec %q -m foscar_cli "$@"\n' "$PY" > "$site/bin/foscar"
  chmod +x "$site/bin/foscar"
  export PYTHONPATH="$ROOT:$site${PYTHONPATH:+:$PYTHONPATH}"
  export PATH="$site/bin:$PATH"
  while read -r name dir; do
    if [ -f "$OFF/cache/$name.tar.gz" ]; then
      mkdir -p "$dir" && tar -xzf "$OFF/cache/$name.tar.gz" -C "$dir" && echo "restored $name -> $dir" >&2
    fi
  done < <(cache_dirs)
  local rc=0
  "$@" || rc=$?
  local out="${FOSCAR_CACHE_OUT:-$OFF/cache}"
  mkdir -p "$out"
  while read -r name dir; do
    if [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
      tar -czf "$out/$name.tar.gz" -C "$dir" . && echo "saved $name -> $out/$name.tar.gz" >&2
    fi
  done < <(cache_dirs)
  return $rc
}

case "${1:-}" in
  fetch) shift; fetch "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,22p' "$0"; exit 2 ;;
esac
