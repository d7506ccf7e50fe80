"""Session 20: the cluster merge at batch 1. Fixed-path plans (plan_decode(num_splits=n)) with FOSCAR_MERGE_CLUSTER
1 (c<n>) and 0 (k<n>, the merge kernel), and the plan's own (auto), INT2 / INT4, 4K-128K, contiguous and paged 8K;
every plan checked against the fp64 reference first, timed as foscar bench times, two rounds. python .ab/probe_cl.py OUT_CSV"""
import dataclasses, os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 8192, False), (4, 8192, False), (2, 8192, True), (4, 8192, True), (2, 32768, False), (4, 32768, False),
     (2, 131072, False), (4, 131072, False)]
for bits, ctx, paged in P:
    w = build_workload(Point(1, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    nbytes = sum(getattr(cache, f.name).nbytes for f in dataclasses.fields(cache)
                 if isinstance(getattr(cache, f.name), torch.Tensor))
    cfgs = [("auto", None, "1"), ("k16", 16, "0"), ("c16", 16, "1")]
    if ctx >= 8192:
        cfgs += [("k32", 32, "0")]
    if ctx <= 32768:
        cfgs += [("c8", 8, "1")]
    for rnd in range(2):
        for name, n, cl in cfgs:
            os.environ["FOSCAR_MERGE_CLUSTER"] = cl
            def make(q, c, n=n):
                p = foscar.plan_decode(c, 32, backend="cuda", num_splits=n) if n else foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache)
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes,
                            replica=lambda n=n: make(w.q.clone(), clone_cache(cache), n)[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(rnd=rnd, bits=bits, context=ctx, paged=paged, cfg=name, merge=plan.merge,
                             splits=plan.num_splits, median_us=round(t.median_us, 3), err=err))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    os.environ["FOSCAR_MERGE_CLUSTER"] = "1"
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache; torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
print(d.pivot_table(index=["bits", "context", "paged"], columns="cfg", values="median_us", aggfunc="mean").round(2).to_string())
print("max err", d.err.max())
