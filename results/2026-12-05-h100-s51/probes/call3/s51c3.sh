#!/usr/bin/env bash
# Session 51, call 3 (on the warm H100 of call 2, GPU-33362258...): the command as it ran, as one line through
#   FOSCAR_CACHE_OUT=/tmp/cc bash scripts/gpu_offline.sh run bash -c '<the lines below>'
# written out here as a script after the run (bench/NOTES.md §95). "s": three cp.async stages; "u": three stages with
# FOSCAR_L2_ONLY=1 (every copy an L2 hit); "l", "t" as in s51c1.sh. No prediction was written before this call.
mkdir -p /tmp/o3
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [l]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_L2_ONLY=1" [s]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_STAGES=3" [u]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_L2_ONLY=1 FOSCAR_STAGES=3")
B="from foscar.kernels import decode_cuda as d; print(d.extension().__name__)"
for m in t l s u; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=4 python -c "$B" > /tmp/o3/build_$m.log 2>&1) & done; wait
P="--point 2x8x32768 --point 2x32x8192 --point 2x8x131072 --point 2x64x8192 --point 4x8x32768"
for m in t s u l l u s t; do
  r=0; while [ -e /tmp/o3/ab-$m-$r.csv ]; do r=$((r+1)); done
  FOSCAR_NVCC_DEFINES="${D[$m]}" timeout 60 python -m bench.ab run $m $r /tmp/o3/ab-$m-$r.csv $P > /tmp/o3/ab-$m-$r.log 2>&1
  echo "$m $r rc=$?"
done
python -m bench.ab table /tmp/o3/ab-*.csv --base t 2>&1 | tee $OUT/ab-table-stages.txt
tar -czf $OUT/c3.tgz -C /tmp/o3 --exclude="*.so" .
nvidia-smi --query-gpu=index,uuid,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.csv
