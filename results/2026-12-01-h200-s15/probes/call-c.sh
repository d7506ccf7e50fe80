#!/usr/bin/env bash
# session 15, call C (one H200), on the branch with the integer PV on by default for INT2 (NOTES §46):
# (1) the full default build; (2) ncu (full set) of INT2 G=128 64 x 32K, as §31; (3) the GPU suite (but the
# fused-merge build's tests and the HF model runs), which call B's 170 s cut at 107 passed.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
timeout 120 $NCU --set full --import-source no -o /tmp/o/ncu-int2-64x32k python .ab/ncu_probe.py auto 2 64 32768 > /tmp/o/ncu.log 2>&1; echo "ncu rc=$? t=$SECONDS"
ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page details --csv > /tmp/o/ncu-int2-64x32k-details.csv 2>/dev/null
ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page raw --csv > /tmp/o/ncu-int2-64x32k-raw.csv 2>/dev/null
ncu -i /tmp/o/ncu-int2-64x32k.ncu-rep --page source --csv --print-source sass > /tmp/o/ncu-int2-64x32k-sass.csv 2>/dev/null
rm -f /tmp/o/*.ncu-rep
tar -czf $OUT/c0.tgz -C /tmp/o ncu.log build.log $(cd /tmp/o && ls ncu-*.csv)
timeout 330 python -m pytest -m gpu -n 6 -q -rfEx -p no:cacheprovider --ignore=tests/test_fused_merge_gpu.py --ignore=tests/test_hf.py tests > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/c1.tgz -C /tmp/o gpu_tests.log
echo "t=$SECONDS"
