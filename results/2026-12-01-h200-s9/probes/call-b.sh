#!/usr/bin/env bash
# session 9, call 2: main with the integer QK on by default: split sweep at batch 8/32/64 (INT4 64 x 8K question),
# the whole GPU suite, then ablate/accuracy smoke runs for their gpu_uuid column
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > $OUT/build.log 2>&1; tail -1 $OUT/build.log; echo "built t=$SECONDS"
timeout 200 python scripts/split_sweep.py $OUT/sweep --batch 8 --batch 32 --batch 64 --context 8192 --context 32768 > $OUT/sweep.log 2>&1; echo "sweep rc=$? t=$SECONDS"; grep "best" $OUT/sweep.log
timeout 250 python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests > $OUT/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -6 $OUT/gpu_tests.log
timeout 40 foscar ablate --smoke --out /tmp/abl > $OUT/ablate.log 2>&1; echo "ablate rc=$?"; python -c "import pandas as pd; d=pd.read_csv('/tmp/abl/results.csv'); print(len(d), d.gpu_uuid.unique(), d.status.value_counts().to_dict())"
timeout 30 foscar accuracy --smoke --out /tmp/acc > $OUT/accuracy.log 2>&1; echo "accuracy rc=$?"; python -c "import pandas as pd; d=pd.read_csv('/tmp/acc/results.csv'); print(len(d), d.gpu_uuid.unique())"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
echo "t=$SECONDS"
