#!/usr/bin/env bash
# session 28, call 3 (one H200): the working tree's kernel with FOSCAR_LATE_ISSUE 1 ("n", the default: INT2 steps issue
# at their end, the prologue fills both stages), 2 ("a": INT4 too) and 0 ("q": HEAD's loop, the query's loads first),
# and the kernel before session 28 ("o": .ab/b28_csrc); one process per build and round (n a q o o q a n); the timeline
# of "n" (.ab/tln_csrc); then the GPU suite on "n" (the default build, all head dims).
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
(MAX_JOBS=7 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_full.log 2>&1) &
export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
(MAX_JOBS=3 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_n.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_LATE_ISSUE=2" MAX_JOBS=2 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_a.log 2>&1) &
(FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_LATE_ISSUE=0" MAX_JOBS=2 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_q.log 2>&1) &
(FOSCAR_CSRC=$PWD/.ab/b28_csrc MAX_JOBS=2 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_o.log 2>&1) &
(FOSCAR_CSRC=$PWD/.ab/tln_csrc MAX_JOBS=2 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build_tl.log 2>&1) &
wait; echo "built t=$SECONDS"
for f in /tmp/o/build_*.log; do echo "$f: $(tail -1 $f)"; done
for m in n a q o o q a n; do
  if [ -e /tmp/o/ab-$m-0.csv ]; then r=1; else r=0; fi
  unset FOSCAR_CSRC; export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
  case $m in a) export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_LATE_ISSUE=2";; q) export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_LATE_ISSUE=0";; o) export FOSCAR_CSRC=$PWD/.ab/b28_csrc;; esac
  timeout 80 python .ab/probe_ab.py $m $r /tmp/o/ab-$m-$r.csv > /tmp/o/ab-$m-$r.log 2>&1; echo "probe $m $r rc=$? t=$SECONDS"
done
unset FOSCAR_CSRC; export FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128"
python - <<'PY' | tee /tmp/o/ab-table.txt
import glob, pandas as pd
d = pd.concat([pd.read_csv(f) for f in glob.glob("/tmp/o/ab-*.csv")])
k = ["bits", "batch", "context", "workload", "paged"]
p = d.pivot_table(index=k, columns=["m", "rnd"], values="median_us", aggfunc="mean")
q = d.pivot_table(index=k, columns="m", values="median_us", aggfunc="mean")
p["n/q"] = q["n"] / q["q"]; p["a/q"] = q["a"] / q["q"]; p["q/o"] = q["q"] / q["o"]; p["n/o"] = q["n"] / q["o"]
pd.set_option("display.width", 250)
print(p.round(3).to_string())
s = d.groupby(k).sha.nunique()
print("points whose outputs differ between builds/rounds:", int((s > 1).sum()), "of", len(s))
print(d.groupby("m").err.max().to_dict(), "nan", d.nan.any())
PY
timeout 60 env FOSCAR_CSRC=$PWD/.ab/tln_csrc python .ab/probe_tl.py /tmp/o/tl tl > /tmp/o/tl.log 2>&1; echo "tl rc=$? t=$SECONDS"
unset FOSCAR_NVCC_DEFINES
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $OUT/gpu.csv 2>&1
timeout $((590 - SECONDS)) python -m pytest -m gpu -n 4 -q -rfEx -p no:cacheprovider tests/ --ignore=tests/test_fused_merge_gpu.py > /tmp/o/gpu_suite.log 2>&1; echo "suite rc=$? t=$SECONDS"; tail -6 /tmp/o/gpu_suite.log
tar -czf $OUT/c3.tgz -C /tmp/o .
