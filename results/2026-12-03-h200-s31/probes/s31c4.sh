#!/usr/bin/env bash
# session 31, call 4 (one H200): bench.ab after the review's fixes (the output's and the LSE's hash, the byte count of
# the bench's backend, the exit status), one round on a head_dim-128 build of HEAD (kernel unchanged since 1cca93f).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
export FOSCAR_NVCC_DEFINES=FOSCAR_ONLY_HEAD_DIM=128
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; echo "built t=$SECONDS"
timeout 150 python -m bench.ab run h 0 /tmp/o/ab-h-0.csv --point 2x1x16 --point 2x8x8192:paged --point 4x8x4096:lognormal --point 2x1x16:zipf > /tmp/o/ab.log 2>&1; echo "ab rc=$? t=$SECONDS (2 expected: the last point is refused)"
timeout 150 python -m bench.ab run h 0 /tmp/o/ab-h-0.csv --point 2x1x16 --point 2x8x8192:paged --point 4x8x4096:lognormal > /tmp/o/ab.log 2>&1; echo "ab rc=$? t=$SECONDS"
tail -3 /tmp/o/ab.log
python -m bench.ab table /tmp/o/ab-h-0.csv | tee /tmp/o/ab-table.txt
cp /tmp/o/ab-h-0.csv /tmp/o/ab-table.txt /tmp/o/ab.log /tmp/o/build.log $OUT/
