#!/usr/bin/env bash
# session 22, call 2 (one H200): the new HBM probe (16 GiB) three times; what the length-aware plan's room costs at
# uniform batches (probe_room); the HBM tests and the CLI GPU test.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
python - <<'PY' > /tmp/o/hbm2.txt 2>&1
import time, torch
from bench.hbm import measure_hbm
dev = torch.device("cuda")
for nb in (16 << 30, 16 << 30, 1 << 30, 16 << 30):
    t = time.time(); r = measure_hbm(dev, nb); print(nb, {k: round(v, 4) for k, v in r.items()}, f"{time.time() - t:.1f} s", flush=True)
PY
echo "hbm t=$SECONDS"; cat /tmp/o/hbm2.txt; cp /tmp/o/hbm2.txt $OUT/
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 330 python .ab/probe_room.py /tmp/o/room.csv > /tmp/o/room.log 2>&1; echo "room rc=$? t=$SECONDS"; tail -16 /tmp/o/room.log
cp /tmp/o/room.csv /tmp/o/room.log $OUT/ 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((585 - SECONDS)) python -m pytest -m gpu -n 2 -q -rfEx -p no:cacheprovider tests/test_hbm.py tests/test_bench_gpu.py > /tmp/o/t.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/t.log
cp /tmp/o/t.log $OUT/
