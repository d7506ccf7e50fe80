#!/usr/bin/env bash
# session 10, call A: launch floor + fixed cost (merge kernel vs s6 fused merge), split sweep at small batches
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
( MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build.log 2>&1 ) &
( FOSCAR_MERGE=fused MAX_JOBS=8 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build-fused.log 2>&1 ) &
wait; tail -1 $OUT/build.log $OUT/build-fused.log; echo "built t=$SECONDS"
timeout 150 python scripts/latency_floor.py $OUT/lf-kernel > $OUT/lf-kernel.log 2>&1; echo "lf kernel rc=$? t=$SECONDS"
timeout 150 env FOSCAR_MERGE=fused python scripts/latency_floor.py $OUT/lf-fused > $OUT/lf-fused.log 2>&1; echo "lf fused rc=$? t=$SECONDS"
cat $OUT/lf-kernel.log | tail -16; tail -16 $OUT/lf-fused.log
timeout 120 python scripts/split_sweep.py $OUT/split --bits 4 --bits 2 --batch 8 --batch 1 --context 4096 --context 8192 --context 32768 > $OUT/split.log 2>&1; echo "split rc=$? t=$SECONDS"
grep -i "best\|auto" $OUT/split.log | tail -14
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
echo "t=$SECONDS"
