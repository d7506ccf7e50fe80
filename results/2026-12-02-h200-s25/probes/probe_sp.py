"""Session 25: split counts at the INT2 points furthest below the ceiling (8 x 32K, 8 x 128K, 32 x 8K): the plan's own
against fixed counts (num_splits), two rounds. Every plan checked against the fp64 reference first.
python .ab/probe_sp.py OUT_CSV"""
import sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 8, 32768, (None, 4, 6, 8)), (2, 8, 131072, (None, 4, 6, 8)), (2, 32, 8192, (None, 1, 2)),
     (4, 8, 32768, (None, 4, 6))]
for bits, batch, ctx, counts in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=WorkloadSpec().at(ctx, ctx))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    for rnd in range(2):
        for n in (counts if rnd == 0 else counts[::-1]):
            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda", num_splits=n)
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, w.cache)
            out = plan.run(w.q, w.cache)
            torch.cuda.synchronize()
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(w.cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, batch=batch, context=ctx, n=str(n), rnd=rnd, median_us=round(t.median_us, 3),
                             err=err, grid=str(getattr(plan, "grid", ""))))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
            pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
print(d.pivot_table(index=["bits", "batch", "context"], columns="n", values="median_us").round(2).to_string())
