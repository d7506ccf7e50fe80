#!/usr/bin/env bash
# Session 51: the in-kernel merge with its arrival ticket taken when the loop ends (FOSCAR_MERGE_TICKET=1, "k")
# against the default ("t"), head_dim-128 builds, rounds t k k t t k, after session 50's queued s51c1.sh in the same
# call (whose "t" build this reuses). Run from the repository root through scripts/gpu_offline.sh (carry .offline).
# Why: the last CTA of a split sequence today writes its partial, waits for its stores (the atom's release), takes the
# atom's round trip, then loads the partials. With the ticket taken at the loop's end (its round trip beside the
# CTA's own combine) the last CTA's wait after its partial is one acquire load (folded_decode_sm90.cuh, merge_chunks).
# Expected (written before): outputs bit-identical to "t" at every point (the merge's arithmetic and order are
# unchanged). k / t: INT2 1 x 8K and 1 x 32K (many chunks a sequence; the merge is on the call's critical path)
# 0.94-0.98; 1 x 128K 0.97-0.995; 8 x 32K and 8 x 128K (4 chunks) 0.985-1.00; one-long 8 x 128K 0.97-1.00;
# 32 x 8K (one chunk a sequence: no merge, a control) 0.995-1.005.
# As run (session 51, call 1): alone on an H100, building its own "t" (s51c1.sh did not run in that call).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-480} - ($(date +%s) - T0))); }
mkdir -p /tmp/o2
declare -A D=([t]="FOSCAR_ONLY_HEAD_DIM=128" [k]="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_MERGE_TICKET=1")
B='from foscar.kernels import decode_cuda as d; print(d.extension().__name__)'
t0=$SECONDS
for m in t k; do (FOSCAR_NVCC_DEFINES="${D[$m]}" MAX_JOBS=12 python -c "$B" > /tmp/o2/build_$m.log 2>&1) & done
wait; echo "built wall=$((SECONDS - t0)) left=$(left): $(tail -1 /tmp/o2/build_t.log) | $(tail -1 /tmp/o2/build_k.log)"
P="--point 2x1x8192 --point 2x1x32768 --point 2x1x131072 --point 2x8x32768 --point 2x8x131072"
P="$P --point 2x8x131072:one-long --point 2x32x8192"
for m in t k k t t k; do
  [ $(left) -lt 25 ] && { echo "stop: left=$(left)"; break; }
  r=0; while [ -e /tmp/o2/ab-$m-$r.csv ]; do r=$((r + 1)); done
  t0=$SECONDS; FOSCAR_NVCC_DEFINES="${D[$m]}" timeout $(( $(left) - 10 )) python -m bench.ab run $m $r /tmp/o2/ab-$m-$r.csv $P > /tmp/o2/ab-$m-$r.log 2>&1
  echo "ticket $m $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
python -m bench.ab table /tmp/o2/ab-t-*.csv /tmp/o2/ab-k-*.csv --base t 2>&1 | tee /tmp/o2/ab-table.txt; cp /tmp/o2/ab-table.txt $OUT/ticket-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c2.tgz -C /tmp/o2 --exclude='*.so' .
