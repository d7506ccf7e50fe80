#!/usr/bin/env bash
# session 12, call A (one H200): the A/B of FOSCAR_SHIFT_ON_FMA (NOTES §35): base, fma3 (PV+QK shifts on the FMA
# pipe), fma1 (PV only), base again, at the large points; then the GPU tests never run (the shift-on-FMA bit identity,
# the FP8 -O0 agreement on the shared script, the synthetic merge cases on CUDA); then ncu of INT2 64 x 32K with the
# knob at 3 if time is left.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
export FOSCAR_AB_SECONDS=80
export FOSCAR_AB="base: fma3:FOSCAR_SHIFT_ON_FMA=3,FOSCAR_ONLY_HEAD_DIM=128 fma1:FOSCAR_SHIFT_ON_FMA=1,FOSCAR_ONLY_HEAD_DIM=128 base2:"
OUT=/tmp/o/l timeout 420 bash scripts/gpu_ab.sh --arch h200 --kernel foscar-cuda --kernel foscar-cuda-paged --operand bf16 --bits 2 --bits 4 --batch 8 --batch 64 --context 32768 --context 131072 --grid sweep --format quiet > /tmp/o/ab-large.log 2>&1; echo "ab rc=$? t=$SECONDS"
sed -n '/^variant/,$p' /tmp/o/ab-large.log | head -40
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
tar -czf $OUT/a1.tgz -C /tmp/o ab-large.log l
timeout $((560 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/test_merge_slots.py tests/test_decode_cuda.py -k "shift_on_fma or fp8_same or synthetic" > /tmp/o/gpu_tests.log 2>&1; echo "tests rc=$? t=$SECONDS"; tail -4 /tmp/o/gpu_tests.log
tar -czf $OUT/a2.tgz -C /tmp/o gpu_tests.log
if [ $SECONDS -lt 500 ]; then
  NCU="ncu --clock-control none --kernel-name regex:folded_decode --launch-skip 3 --launch-count 1"
  FOSCAR_NVCC_DEFINES="FOSCAR_SHIFT_ON_FMA=3 FOSCAR_ONLY_HEAD_DIM=128" timeout $((585 - SECONDS)) $NCU --set full --import-source no -o /tmp/o/ncu-fma3 python .ab/ncu_probe.py auto 2 64 32768 > /tmp/o/ncu.log 2>&1; echo "ncu rc=$? t=$SECONDS"
  ncu -i /tmp/o/ncu-fma3.ncu-rep --page details --csv > /tmp/o/ncu-fma3-details.csv 2>/dev/null
  ncu -i /tmp/o/ncu-fma3.ncu-rep --page raw --csv > /tmp/o/ncu-fma3-raw.csv 2>/dev/null
  rm -f /tmp/o/*.ncu-rep; tar -czf $OUT/a3.tgz -C /tmp/o ncu.log ncu-fma3-details.csv ncu-fma3-raw.csv
fi
echo "t=$SECONDS"
