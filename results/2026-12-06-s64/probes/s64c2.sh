#!/usr/bin/env bash
# Session 64, call 2 (on call 1's warm H100; the command as it ran, through scripts/gpu_offline.sh run bash -c '...').
# Expectations (written before): the full GPU suite passes; p2 / new (FOSCAR_LONG_CHUNK_PROGRAMS=2 with the two-level
# merge) 0.93-1.00 at INT2 1 x 256K, INT4 2 x 512K paged, INT2 2 x 512K at 16 query heads over 2 KV heads, INT2
# 2 x 192K. (The suite ran past its 260 s and was cut at 62%; call 3 ran it whole.)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv
timeout 260 python -m pytest -m gpu -n 4 -q -p no:cacheprovider -rfE --tb=short tests > $OUT/pytest_full.txt 2>&1
echo pytest rc=$?; tail -6 $OUT/pytest_full.txt
python -m bench.ab_rounds /tmp/ab2 --variant "new:" --variant "p2:" --run-env p2:FOSCAR_LONG_CHUNK_PROGRAMS=2 \
  --order "new p2 p2 new" --point 2x1x262144:h8-1 --point 4x2x524288:paged:h8-1 --point 2x2x524288:h16-2 \
  --point 2x2x196608:h8-1 --limit-s 150 --round-s 10 > $OUT/ab2.txt 2>&1
echo ab rc=$?; tail -22 $OUT/ab2.txt
