#!/usr/bin/env bash
# Prepare and use an offline GPU machine for FOSCAR (DESIGN §7).
#
#   On a connected machine, in the repo root:
#     bash scripts/gpu_offline.sh fetch
#       downloads the wheels the GPU side needs beyond PyTorch and Triton
#       (flashinfer-python 0.6.13 + apache-tvm-ffi 0.1.x, cp312 manylinux x86_64)
#       into $FOSCAR_OFFLINE_DIR/wheels (default .offline/wheels, git-ignored), and
#       records the git commit (git-commit, git-dirty, git-files.sha256) so that a
#       copy without .git still names its commit. Run it again after committing.
#   Copy the repo (with .offline/) to the GPU machine, then one line runs anything there:
#     bash scripts/gpu_offline.sh run foscar bench --arch h100 --bits 2
#       installs the wheels without network into $FOSCAR_OFFLINE_DIR/site, restores
#       the compiled caches (FlashInfer JIT, Triton, torch extensions) from
#       $FOSCAR_OFFLINE_DIR/cache/*.tar.gz, runs the command with the project on
#       PYTHONPATH and `foscar` on PATH, then saves the caches to $FOSCAR_CACHE_OUT
#       (default $FOSCAR_OFFLINE_DIR/cache) so the next run skips the compiles.
#       It exports FOSCAR_GIT_COMMIT/FOSCAR_GIT_DIRTY for the run's meta.json: from
#       git when the copy has .git, else from what `fetch` recorded (dirty when it
#       was dirty then or a tracked file changed since).
#
# FOSCAR_GIT_FROM_FETCH=1 makes `run` trust what `fetch` recorded even where the copy
# has a .git of its own (a copy tool that ships a stale .git snapshot with a newer tree).
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
  record_git
  if own_git; then  # what a copy to the GPU machine carries (some copy tools cap it, e.g. at 64 MiB)
    local tree off
    tree=$(cd "$ROOT" && git ls-files -z | { xargs -0 stat -c %s 2>/dev/null || true; } | awk '{s += $1} END {printf "%.1f", s / 1048576}')
    off=$(du -sk "$OFF" | awk '{printf "%.1f", $1 / 1024}')
    echo "to copy: tracked files $tree MiB + $OFF $off MiB" >&2
  fi
}

own_git() {  # git answers for $ROOT itself (not for a repository that merely contains the copy), with a commit
  [ "$(git -C "$ROOT" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$ROOT" && pwd -P)" ] &&
    git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1
}

git_dirty() {  # 1 when the tree differs from HEAD outside results/ (as bench/manifest.py counts it), else 0
  if [ -n "$(git -C "$ROOT" status --porcelain -- . ':(exclude)results')" ]; then echo 1; else echo 0; fi
}

record_git() {  # the commit, its dirty flag and the tracked files' checksums, for `run` on a copy without .git
  if ! own_git; then
    echo "gpu_offline.sh: $ROOT is not a git checkout; no commit recorded" >&2
    rm -f "$OFF/git-commit" "$OFF/git-dirty" "$OFF/git-files.sha256"
    return 0
  fi
  git -C "$ROOT" rev-parse HEAD > "$OFF/git-commit"
  git_dirty > "$OFF/git-dirty"
  (cd "$ROOT" && git ls-files -z -- . ':(exclude)results' | { xargs -0 sha256sum 2>/dev/null || true; }) > "$OFF/git-files.sha256"
  echo "recorded commit $(cat "$OFF/git-commit") (dirty=$(cat "$OFF/git-dirty")) -> $OFF/git-commit" >&2
}

export_git() {  # FOSCAR_GIT_COMMIT/FOSCAR_GIT_DIRTY for the manifest
  if own_git && [ -z "${FOSCAR_GIT_FROM_FETCH:-}" ]; then
    FOSCAR_GIT_COMMIT="$(git -C "$ROOT" rev-parse HEAD)"
    FOSCAR_GIT_DIRTY="$(git_dirty)"
  elif [ -s "$OFF/git-commit" ]; then
    FOSCAR_GIT_COMMIT="$(cat "$OFF/git-commit")"
    FOSCAR_GIT_DIRTY="$(cat "$OFF/git-dirty" 2>/dev/null || true)"
    if [ "$FOSCAR_GIT_DIRTY" = 0 ] && command -v sha256sum >/dev/null && [ -f "$OFF/git-files.sha256" ]; then
      (cd "$ROOT" && sha256sum --quiet --status -c "$OFF/git-files.sha256") || FOSCAR_GIT_DIRTY=1
    elif [ "$FOSCAR_GIT_DIRTY" = 0 ]; then
      FOSCAR_GIT_DIRTY=""  # cannot tell whether the copy changed since `fetch`
    fi
  else
    echo "gpu_offline.sh: no git and no $OFF/git-commit (run 'fetch' in a checkout); meta.json will have no commit" >&2
    return 0
  fi
  export FOSCAR_GIT_COMMIT FOSCAR_GIT_DIRTY
  echo "git commit $FOSCAR_GIT_COMMIT (dirty=${FOSCAR_GIT_DIRTY:-unknown})" >&2
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
  export_git
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
  *) sed -n '2,28p' "$0"; exit 2 ;;
esac
