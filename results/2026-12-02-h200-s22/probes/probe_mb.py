"""Session 22: the merge's small round (sequences of at most the window's chunks, BLOCK_W slots) against the old one
(BLOCK_S slots for every sequence; merge_old.py beside it = `git show fc9c9ca:foscar/kernels/merge_triton.py`, merge_n1.py
= the previous commit's, NOTES §60), in one process, interleaved:
o = old, n = new. Uniform and ragged points; every plan's output checked against the fp64 reference first and old
against new compared bit for bit. python .ab/probe_mb.py OUT_CSV"""
import importlib.util, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import merge_triton

spec = importlib.util.spec_from_file_location("merge_old", sys.path[0] + "/merge_old.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
spec1 = importlib.util.spec_from_file_location("merge_n1", sys.path[0] + "/merge_n1.py")
n1 = importlib.util.module_from_spec(spec1); spec1.loader.exec_module(n1)
impl = {"o": lambda *a: old.merge_slots(*a[:9]), "n1": n1.merge_slots, "n": merge_triton.merge_slots}
out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(4, 64, 8192, WorkloadSpec()), (4, 64, 32768, WorkloadSpec()), (4, 8, 8192, WorkloadSpec()),
     (2, 8, 8192, WorkloadSpec()), (2, 64, 131072, WorkloadSpec()), (4, 8, 32768, WorkloadSpec()),
     (2, 8, 131072, WorkloadSpec(name="one-long")), (4, 8, 131072, WorkloadSpec(name="one-long")),
     (2, 64, 32768, WorkloadSpec(name="lognormal")), (2, 8, 32768, WorkloadSpec(name="lognormal")),
     (2, 8, 4096, WorkloadSpec(name="capacity", capacity=131072))]
for bits, batch, ctx, ws in P:
    cap = ws.capacity or ctx
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=ws.at(ctx, cap))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    outs = {}
    for rnd in range(3):
        for name in ("o", "n1", "n"):
            merge_triton.merge_slots = impl[name]

            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache).clone()
            torch.cuda.synchronize()
            outs[name] = out
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, batch=batch, context=ctx, workload=ws.name, m=name, rnd=rnd,
                             median_us=round(t.median_us, 3), err=err, same=bool(torch.equal(outs["o"], out)) if "o" in outs else None))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    merge_triton.merge_slots = impl["n"]
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
p = d.pivot_table(index=["bits", "batch", "context", "workload"], columns="m", values="median_us", aggfunc="mean")
p["n1/o"] = p["n1"] / p["o"]
p["n/o"] = p["n"] / p["o"]
print(p.round(3).to_string())
print("max err", d.err.max(), "all same", d[d.m == "n"].same.all())
