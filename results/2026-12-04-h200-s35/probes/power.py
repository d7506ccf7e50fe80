"""Sustained decodes of one point with wall-clock stamps, to join with an nvidia-smi trace (clocks, power).

python .ab/power.py OUT.csv SECONDS SPEC...   (SPEC: BITSxBATCHxCONTEXT, uniform, contiguous)
Per point: 3 s idle, then back-to-back plan.run calls for SECONDS, timed in batches of calls with CUDA events;
rows: spec, t_start (unix s), t_end, calls, us_per_call.
"""
import sys, time
import pandas as pd
import torch
import foscar
from bench.ab import NUM_QO_HEADS, ProbePoint, build_point

out, secs, specs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
dev = torch.device("cuda")
rows = []
for spec in specs:
    bits, batch, ctx = map(int, spec.split("x"))
    w, cache, nbytes = build_point(ProbePoint(bits, batch, ctx, "uniform", False), dev)
    plan = foscar.plan_decode(cache, NUM_QO_HEADS, backend="cuda")
    q = w.q
    plan.run(q, cache); torch.cuda.synchronize()
    t0 = time.perf_counter(); plan.run(q, cache); torch.cuda.synchronize()
    n = max(1, int(0.05 / max(time.perf_counter() - t0, 1e-6)))  # ~50 ms a batch
    time.sleep(3.0)
    end = time.time() + secs
    while time.time() < end:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = time.time()
        a.record()
        for _ in range(n):
            plan.run(q, cache)
        b.record(); b.synchronize()
        rows.append(dict(spec=spec, bytes=nbytes, t_start=ts, t_end=time.time(), calls=n,
                         us_per_call=a.elapsed_time(b) * 1e3 / n))
    print(spec, n, "calls a batch;", f"first {rows[-len(rows)]['us_per_call'] if rows else 0}", flush=True)
    del w, cache, plan
    torch.cuda.empty_cache()
    pd.DataFrame(rows).to_csv(out, index=False)
