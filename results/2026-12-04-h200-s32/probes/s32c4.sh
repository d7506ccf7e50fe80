#!/usr/bin/env bash
# session 32, call 4 (one H200), on HEAD: the decode behind a kernel that does not trigger (python -m bench.ab
# --query-copy: a plain torch copy writes the query before every call), PDL off ("n", FOSCAR_PDL=0) against on
# ("p"), head_dim-128 build, rounds n p p n.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build_n.log 2>&1; echo "built t=$SECONDS $(tail -1 /tmp/o/build_n.log)"
P="--point 2x1x16 --point 2x8x16 --point 2x64x16 --point 4x1x16 --point 2x1x8192 --point 2x8x8192 --point 2x32x8192 --point 2x8x32768 --point 2x64x8192"
for m in n p p n; do
  r=0; while [ -e /tmp/o/ab-$m-$r.csv ]; do r=$((r + 1)); done
  unset FOSCAR_PDL; [ $m = n ] && export FOSCAR_PDL=0
  timeout 100 python -m bench.ab run $m $r /tmp/o/ab-$m-$r.csv $P --query-copy > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_PDL
python -m bench.ab table /tmp/o/ab-n-*.csv /tmp/o/ab-p-*.csv | tee /tmp/o/ab-table.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/c4.tgz -C /tmp/o .
