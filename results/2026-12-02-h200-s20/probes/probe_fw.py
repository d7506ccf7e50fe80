"""Session 20: fixed-path plans merged without the chunk table (FOSCAR_MERGE_FIXED_WINDOW 1, 'fw1') against the
table first ('fw0'), the same build, one process: batch 1 at 8K-128K (INT2 / INT4, contiguous, paged), short
lengths in a large cache, and an explicit num_splits at batch 8; every plan checked against the fp64 reference first
and the two outputs compared bit for bit; timed as foscar bench times (rotation by the bytes read), three rounds
alternating. python .ab/probe_fw.py OUT_CSV"""
import os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 1, 8192, False, None, WorkloadSpec()), (4, 1, 8192, False, None, WorkloadSpec()),
     (2, 1, 8192, True, None, WorkloadSpec()), (4, 1, 8192, True, None, WorkloadSpec()),
     (2, 1, 32768, False, None, WorkloadSpec()), (4, 1, 32768, False, None, WorkloadSpec()),
     (2, 1, 32768, True, None, WorkloadSpec()),
     (2, 1, 131072, False, None, WorkloadSpec()), (4, 1, 131072, False, None, WorkloadSpec()),
     (2, 1, 4096, False, None, WorkloadSpec(name="capacity", capacity=131072)),
     (2, 8, 8192, False, 4, WorkloadSpec())]
for bits, batch, ctx, paged, ns, spec in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=spec.at(ctx, ctx))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    outs = {}
    for rnd in range(3):
        for cfg in ("fw1", "fw0"):
            os.environ["FOSCAR_MERGE_FIXED_WINDOW"] = cfg[-1]
            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda", num_splits=ns)
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache).clone()
            outs[cfg] = out
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(rnd=rnd, bits=bits, batch=batch, context=ctx, capacity=pt.capacity, paged=paged, cfg=cfg,
                             fixed_window=plan.merge_fixed_window, splits=plan.num_splits,
                             median_us=round(t.median_us, 3), err=err))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
        rows[-1]["identical"] = rows[-2]["identical"] = bool(torch.equal(outs["fw1"], outs["fw0"]))
    os.environ["FOSCAR_MERGE_FIXED_WINDOW"] = "1"
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache; torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
t = d.pivot_table(index=["bits", "batch", "context", "capacity", "paged"], columns="cfg", values="median_us", aggfunc="mean")
t["ratio"] = t.fw1 / t.fw0
print(t.round(3).to_string())
print("max err", d.err.max(), "all identical", bool(d.identical.dropna().all()))
