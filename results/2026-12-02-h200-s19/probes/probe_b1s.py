"""Session 19: batch-1 split counts on the fixed path (plan_decode(num_splits=n)) against the plan's own ("auto"),
INT2 / INT4, 4K-128K, contiguous (and paged 8K), two rounds; every plan checked against the fp64 reference first,
timed as foscar bench times. python .ab/probe_b1s.py OUT_CSV"""
import dataclasses, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 4096, False), (2, 8192, False), (2, 8192, True), (2, 16384, False), (2, 32768, False), (2, 131072, False),
     (4, 4096, False), (4, 8192, False), (4, 16384, False), (4, 32768, False)]
for bits, ctx, paged in P:
    w = build_workload(Point(1, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    nbytes = sum(getattr(cache, f.name).nbytes for f in dataclasses.fields(cache)
                 if isinstance(getattr(cache, f.name), torch.Tensor))
    counts = [n for n in (8, 16, 32, 64) if ctx // n >= 256 and (ctx < 131072 or n >= 16)]
    for rnd in range(2):
        for n in [None] + counts:
            def make(q, c, n=n):
                p = foscar.plan_decode(c, 32, backend="cuda", num_splits=n) if n else foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache)
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes,
                            replica=lambda n=n: make(w.q.clone(), clone_cache(cache), n)[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(rnd=rnd, bits=bits, context=ctx, paged=paged, splits=n or f"auto{plan._o_part.shape[0]}",
                             median_us=round(t.median_us, 3), err=err))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache; torch.cuda.empty_cache()
d = pd.DataFrame(rows)
d["splits"] = d.splits.astype(str)
pd.set_option("display.width", 200)
print(d.pivot_table(index=["bits", "context", "paged"], columns="splits", values="median_us", aggfunc="mean").round(2).to_string())
print("max err", d.err.max())
