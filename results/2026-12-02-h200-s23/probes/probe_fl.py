"""Session 23, call 3: the merge deriving its chunk ranges from the lengths (l, FOSCAR_MERGE_FROM_LENGTHS=1, read
when each plan is made) against the same merge reading the decode kernel's chunk table (t, =0), in one process,
interleaved (l first in rounds 0 and 2, t first in round 1), three rounds; every plan checked against the fp64
reference first, l's output compared bit for bit with t's. python .ab/probe_fl.py OUT_CSV"""
import importlib.util, os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import merge_triton

def load(name):
    spec = importlib.util.spec_from_file_location(name, sys.path[0] + f"/{name}.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod.merge_slots
V = ("l", "t")
out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 8, 8192, WorkloadSpec(), 0), (4, 8, 8192, WorkloadSpec(), 0), (2, 8, 32768, WorkloadSpec(), 0),
     (4, 8, 32768, WorkloadSpec(), 0), (2, 8, 131072, WorkloadSpec(name="one-long"), 0),
     (4, 8, 131072, WorkloadSpec(name="one-long"), 0), (2, 8, 32768, WorkloadSpec(name="lognormal"), 0),
     (2, 8, 4096, WorkloadSpec(name="capacity", capacity=131072), 0), (2, 64, 32768, WorkloadSpec(name="lognormal"), 0),
     (4, 64, 8192, WorkloadSpec(), 0), (4, 64, 32768, WorkloadSpec(), 0), (2, 8, 8192, WorkloadSpec(), 1),
     (2, 8, 131072, WorkloadSpec(name="one-long"), 1)]
for bits, batch, ctx, ws, paged in P:
    cap = ws.capacity or ctx
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=ws.at(ctx, cap))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = foscar.paginate(w.cache, page_size=16, shuffle=True, generator=torch.Generator().manual_seed(0)) if paged else w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    outs = {}
    for rnd in range(3):
        for name in (V if rnd != 1 else V[::-1]):
            os.environ["FOSCAR_MERGE_FROM_LENGTHS"] = "1" if name == "l" else "0"

            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            assert plan.merge_from_lengths == (name == "l") and plan.merge_launched
            out = plan.run(w.q, cache).clone()
            torch.cuda.synchronize()
            outs[name] = out
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, batch=batch, context=ctx, workload=ws.name, paged=paged, m=name, rnd=rnd,
                             median_us=round(t.median_us, 3), err=err, same=bool(torch.equal(outs["l"], out)) if "l" in outs else None))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    os.environ["FOSCAR_MERGE_FROM_LENGTHS"] = "1"
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
p = d.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
p["l/t"] = p["l"] / p["t"]
print(p.round(3).to_string())
print("max err", d.err.max(), "all same", d.same.dropna().all())
