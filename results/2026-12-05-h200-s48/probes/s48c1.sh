#!/usr/bin/env bash
# session 48, call 1 (one H100 SXM, the first FOSCAR bench on an H100; every earlier run is an H200's): the README's
# headline command with --arch h100 (its preset is the h200 one's grid: 476 rows, bf16 operands only -> 238), so that
# an H100 user's numbers have a stored run to compare with. Expected (written before): the H100's HBM3 ceiling ~3.0-3.1
# TB/s against the H200's 4.6-4.7, so every large point takes ~1.5x longer on both sides; FOSCAR's INT2 geomean against
# FlashInfer close to the H200's (4.9-5.0x) if both are memory-bound, lower (~4.3-4.7x) if INT2's loop is issue-bound
# at the H100's 1980 MHz boost / 700 W like the H200's; peak memory <= 64.8 GiB (dry run) of ~79.2 GiB.
# Then, with the time left, session 47's balance probe (132 SMs on the H100 SXM as on the H200).
: "${T0:=$(date +%s)}"
left() { echo $((${LIMIT:-570} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit,enforced.power.limit,memory.total --format=csv > $OUT/gpu.csv 2>&1
rm -rf /tmp/o; mkdir -p /tmp/o
python -c 'import torch; p=torch.cuda.get_device_properties(0); print(p.name, p.total_memory, p.multi_processor_count, torch.cuda.mem_get_info())' > /tmp/o/props.txt 2>&1
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > /tmp/o/build.log 2>&1; echo "built left=$(left): $(tail -1 /tmp/o/build.log)"
t0=$SECONDS
timeout $(( $(left) - 15 )) foscar bench --arch h100 --operand bf16 --kernel foscar-cuda --kernel foscar-cuda-paged \
  --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 \
  --kernel flashinfer-xqa-fp8 --read-floor --out /tmp/o/bench-h100 --format quiet > /tmp/o/bench.log 2>&1
echo "bench rc=$? wall=$((SECONDS - t0)) left=$(left)"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
P="--point 2x31x8192 --point 2x32x8192 --point 2x33x8192 --point 2x64x8192 --point 2x66x8192 --point 2x8x32768 --point 2x8x33792"
for r in 0 1; do
  [ $(left) -lt 80 ] && { echo "stop: left=$(left)"; break; }
  t0=$SECONDS; timeout $(( $(left) - 20 )) python -m bench.ab run a $r /tmp/o/ab-a-$r.csv $P > /tmp/o/ab-a-$r.log 2>&1
  echo "probe a $r rc=$? wall=$((SECONDS - t0)) left=$(left)"
done
ls /tmp/o/ab-a-*.csv >/dev/null 2>&1 && python -m bench.ab table /tmp/o/ab-a-*.csv > /tmp/o/ab-table.txt 2>&1
cp /tmp/o/bench-h100/results.csv /tmp/o/bench-h100/meta.json /tmp/o/bench-h100/summary.json $OUT/ 2>/dev/null
tar czf $OUT/rest.tgz -C /tmp/o . 2>/dev/null; cat /tmp/o/props.txt; tail -3 /tmp/o/bench.log; cat /tmp/o/ab-table.txt 2>/dev/null; ls -la $OUT
