#!/usr/bin/env bash
# session 40, call 6: the read floor's GPU test after the review's changes, and scripts/read_floor.py on one size.
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
timeout 150 python -m pytest -m gpu -q -rfEx -p no:cacheprovider tests/test_bench_gpu.py -k read_floor > $OUT/test.log 2>&1; echo "test rc=$?"; tail -3 $OUT/test.log
timeout 60 python scripts/read_floor.py /tmp/rf 167903232 1000003 > $OUT/floor.log 2>&1; echo "floor rc=$?"; tail -4 $OUT/floor.log
