#!/usr/bin/env bash
# foscar bench over a SLURM cluster: one array task per shard, then one merge job.
# NOT RUN: no cluster was available where this was written; it uses only plain sbatch
# features (--array, --dependency=afterok, SLURM_ARRAY_TASK_ID/COUNT), but check the
# partition/account/GPU options against your site before relying on it.
#
# Submit (from the repo root, in the environment that has `foscar` installed):
#
#   SHARDS=8 bash scripts/slurm_bench.sh results/h200-cluster --arch h200 [more foscar bench args]
#
# That submits
#   1. an array job of $SHARDS tasks (one GPU each); task i runs
#        foscar bench <args> --shard i/$SHARDS --out RUN/shards/shard-i-of-$SHARDS
#      (an interrupted or failed task resumes when resubmitted: same --out, bench/resume.py);
#   2. a merge job that starts when every task succeeded:
#        foscar merge RUN/shards/shard-*-of-$SHARDS --out RUN
#      (it refuses shards of another config, commit or shard count, and missing shards).
#
# Variables: SHARDS (default 4), SBATCH_ARGS (extra sbatch options for both jobs, e.g.
# "--partition=gpu --account=me"), TIME (per task, default 01:00:00).
#
# Compile caches: every task compiles FOSCAR's CUDA extension, FlashInfer's JIT modules and
# the Triton kernels into caches on its node's local disk ($TMPDIR), so tasks on different
# nodes never build into one shared directory at the same time (a shared home directory
# would be written by all of them at once). It costs each task the first-use compile (about
# a minute); point the variables below at a warm cache to skip it.
set -euo pipefail

if [[ -n "${SLURM_ARRAY_TASK_ID:-}" ]]; then  # inside an array task: run one shard
  RUN="$1"; shift
  K="$SLURM_ARRAY_TASK_ID"; N="$SLURM_ARRAY_TASK_COUNT"
  CACHE="${TMPDIR:-/tmp}/foscar-cache-${SLURM_ARRAY_JOB_ID}-${K}"
  export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-$CACHE/torch_extensions}"
  export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-$CACHE/triton}"
  export FLASHINFER_WORKSPACE_BASE="${FLASHINFER_WORKSPACE_BASE:-$CACHE}"
  exec foscar bench "$@" --shard "$K/$N" --out "$RUN/shards/shard-$K-of-$N"
fi

RUN="${1:?usage: SHARDS=N bash scripts/slurm_bench.sh RUN_DIR [foscar bench args...]}"; shift
SHARDS="${SHARDS:-4}"
mkdir -p "$RUN/shards"
# shellcheck disable=SC2086
ARRAY_JOB=$(sbatch --parsable ${SBATCH_ARGS:-} --array="0-$((SHARDS - 1))" --gpus=1 --time="${TIME:-01:00:00}" \
  --job-name=foscar-bench --output="$RUN/shards/slurm-%A_%a.log" "$0" "$RUN" "$@")
SHARD_DIRS=()
for ((k = 0; k < SHARDS; k++)); do SHARD_DIRS+=("$RUN/shards/shard-$k-of-$SHARDS"); done
# shellcheck disable=SC2086
sbatch ${SBATCH_ARGS:-} --dependency="afterok:$ARRAY_JOB" --job-name=foscar-merge --time=00:10:00 \
  --output="$RUN/shards/merge.log" \
  --wrap="foscar merge $(printf '%q ' "${SHARD_DIRS[@]}")--out $(printf '%q' "$RUN")"
echo "submitted array job $ARRAY_JOB ($SHARDS shards) and its merge into $RUN"
