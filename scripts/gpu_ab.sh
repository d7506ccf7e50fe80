#!/usr/bin/env bash
# A/B of CUDA kernel variants in one GPU session (bench/NOTES.md records what each bought).
#
#   FOSCAR_AB="base:@.offline/ab/base new: new-mb4:FOSCAR_MIN_BLOCKS=4" \
#   FOSCAR_CACHE_OUT=$OUT bash scripts/gpu_offline.sh run bash scripts/gpu_ab.sh \
#       --arch h200 --kernel foscar-cuda --bits 2 --bits 4 --batch 64 --context 32768
#
# FOSCAR_AB: variants, one word each, NAME:DEFINES[@CSRC] with DEFINES comma-separated -D
# knobs of the kernel header (FOSCAR_NVCC_DEFINES) and CSRC another source directory
# (FOSCAR_CSRC, e.g. an older commit's foscar/kernels/csrc). The first variant is the base.
# Steps: build every variant at once (MAX_JOBS shared), then `foscar bench "$@"` per
# variant into $OUT/ab/NAME, then a table of median us per point and variant (ratio to the
# base), last: one bench run each, in turn, so drift between them lands on the later variants (bench.ab_rounds
# alternates rounds such as "base new new base" and is the tool for a decision). Everything lands in $OUT/ab.tgz;
# builds of variants other than the plain
# one (no defines, no CSRC) are removed from the extension cache so it stays small.
# A source tree from before commit f28672a takes sequence lengths where the Python side now
# passes kv_last_page_len for paged caches: time only contiguous kernels against those
# (their paged rows would fail the reference check and be recorded as failed). A source tree whose C entry takes
# other arguments than this tree's foscar/kernels/decode_cuda.py passes (max_ctas_per_sm, pdl: NOTES §67, §73) fails
# to run at all; time such a tree with its own copy of the project (python -m bench.ab from its root).
set -uo pipefail

OUT="${OUT:?set OUT to the output folder}"
: "${FOSCAR_AB:?set FOSCAR_AB to the variants, e.g. 'base:@old/csrc new:'}"
mkdir -p "$OUT/ab"
read -r -a variants <<< "$FOSCAR_AB"
jobs_each=$(( $(nproc) / ${#variants[@]} )); [ "$jobs_each" -ge 1 ] || jobs_each=1

with_variant() {  # NAME:DEFINES[@CSRC] command...: run the command with that variant's environment
  local rest="${1#*:}"; shift
  local defines="${rest%%@*}" csrc=""
  if [ "$rest" != "$defines" ]; then
    csrc="$(cd "${rest#*@}" && pwd)" || { echo "gpu_ab.sh: no source directory ${rest#*@}" >&2; return 2; }
  fi
  ( export FOSCAR_NVCC_DEFINES="${defines//,/ }" FOSCAR_CSRC="$csrc"; "$@" )
}

echo "== build ${#variants[@]} variants (MAX_JOBS=$jobs_each each)"
start=$SECONDS
for v in "${variants[@]}"; do
  name="${v%%:*}"
  with_variant "$v" env MAX_JOBS="$jobs_each" python -c \
    "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > "$OUT/ab/build-$name.log" 2>&1 &
done
wait
echo "built in $((SECONDS - start)) s"
for v in "${variants[@]}"; do echo "${v%%:*}: $(tail -1 "$OUT/ab/build-${v%%:*}.log")"; done

for v in "${variants[@]}"; do
  name="${v%%:*}"
  echo "== bench $v"
  with_variant "$v" timeout "${FOSCAR_AB_SECONDS:-150}" foscar bench "$@" --out "$OUT/ab/$name" \
    > "$OUT/ab/bench-$name.log" 2>&1
  echo "rc=$? $(grep -c . "$OUT/ab/$name/results.csv" 2>/dev/null) lines"
done

# drop the variant builds from the extension cache (the plain build stays for the next run)
ext_dir="${TORCH_EXTENSIONS_DIR:-$HOME/.cache/torch_extensions}"
for v in "${variants[@]}"; do
  [ "${v#*:}" = "" ] && continue
  ext="$(tail -1 "$OUT/ab/build-${v%%:*}.log")"
  [ -n "$ext" ] && find "$ext_dir" -mindepth 2 -maxdepth 2 -type d -name "$ext" -exec rm -rf {} + 2>/dev/null
done

python - "$OUT/ab" "${variants[@]%%:*}" <<'EOF' | tee "$OUT/ab/table.md"
import sys
from pathlib import Path

import pandas as pd

root, names = Path(sys.argv[1]), sys.argv[2:]
frames = []
for name in names:
    f = root / name / "results.csv"
    if f.exists():
        d = pd.read_csv(f)
        d = d[d.status == "ok"]
        frames.append(d.assign(variant=name))
if not frames:
    sys.exit("no results")
d = pd.concat(frames)
# every column that tells a point apart (bench.results.POINT_KEYS: the workload, capacity and shape too), so that a
# uniform and a ragged point of one batch x context are not averaged into one cell
keys = ["kernel", "bits", "operand", "batch", "context", "workload", "capacity", "group_size", "num_qo_heads",
        "num_kv_heads", "head_dim", "page_size", "k_layout", "grid"]
keys = [k for k in keys if k in d]
t = d.pivot_table(index=keys, columns="variant", values="median_us").reindex(columns=[n for n in names if n in set(d.variant)])
base = t.columns[0]
if base != names[0]:
    print(f"note: the base variant {names[0]!r} has no results; ratios are against {base!r}")
for c in t.columns[1:]:
    t[f"{c}/{base}"] = t[c] / t[base]
err = d.pivot_table(index=keys, columns="variant", values="max_rel_err")
print(t.round(3).to_string())
print()
print("max_rel_err")
print(err.to_string(float_format="{:.2e}".format))
EOF
tar -czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$OUT/ab"
