#!/usr/bin/env bash
# Session 71 call 6, in the last ~430 s of device time: the Llama-3.1-70B TP8 bench (session 70's call 4 command) with
# the merge kernel's final rule (decode_cuda.merge_kernel_preferred: gqa x head_dim >= 1024 and batch x num_kv_heads
# <= 16; call 4's bench ran the first rule, the merge kernel at every gqa of 5 or more). Expected against call 4's
# bench (written before the run; another H100 likely): INT2 32 x 8K 14.34 -> 13.9-14.2 us (the in-kernel merge back,
# call 4's A/B 1.027); every other row within 0.97-1.03 (same plans; GPU to GPU up to +-6% at paged batch 32-64,
# §115); uniform geomean INT2 3.86-3.94x, INT4 2.73-2.79x; INT2 1 x 8K 1.80-1.86x. Then the fused-merge GPU tests if
# time is left.
LIMIT="${LIMIT:-270}"
. scripts/probe_preamble.sh /tmp/s71
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
timeout $(( $(left) - 12 )) foscar bench --arch h100 --model llama-3.1-70b-tp8 --operand bf16 \
  --kernel foscar-cuda --kernel foscar-cuda-paged --kernel flashinfer-fa2 --kernel flashinfer-fa2-tc \
  --kernel flashinfer-xqa --kernel flashinfer-fa2-tc-fp8 --kernel flashinfer-xqa-fp8 --read-floor --out $W/lb \
  --format quiet > $W/bench-llama.log 2>&1
echo "L: bench rc=$? left=$(left)"; tail -3 $W/bench-llama.log
cp $W/lb/results.csv $OUT/bench-results.csv; cp $W/lb/meta.json $OUT/bench-meta.json
cp $W/lb/summary.json $OUT/bench-summary.json
if [ "$(left)" -gt 30 ]; then
  timeout $(( $(left) - 8 )) python -m pytest -q -m gpu -n 3 tests/test_fused_merge_gpu.py -k "ragged or wide or nan" \
    > $W/tests.log 2>&1
  echo "T: tests rc=$? left=$(left)"; tail -3 $W/tests.log; cp $W/tests.log $OUT/tests.txt
fi
probe_end s71c6
