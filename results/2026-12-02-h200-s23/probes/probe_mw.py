"""Session 23: the merge kernel's warps and loop block, in one process, interleaved: o = this tree's merge_triton
(4 warps, rounds of up to 64 slots at head_dim 128), w8 = 8 warps, w8s32 = 8 warps and loop rounds of up to 32 slots,
s16 = 4 warps and loop rounds of up to 16 slots, r4 = 4 query heads a program where batch * heads >= 1024 (one table load for 4 rows; loop rounds of 8 slots) (copies of merge_triton.py beside this file, edited as their names
say). Uniform and ragged points; every plan's output checked against the fp64 reference first and each variant's
output compared bit for bit with o's. python .ab/probe_mw.py OUT_CSV"""
import importlib.util, sys, time
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
V = ("o", "w8", "w8s32", "s16", "r4")
impl = {"o": merge_triton.merge_slots, "w8": load("merge_w8"), "w8s32": load("merge_w8s32"), "s16": load("merge_s16"), "r4": load("merge_r4")}
out_csv = sys.argv[1]
dev = torch.device("cuda")
rows, t0 = [], time.time()
P = [(2, 1, 32768, WorkloadSpec()), (4, 1, 8192, WorkloadSpec()), (4, 64, 131072, WorkloadSpec()), (4, 64, 8192, WorkloadSpec()), (4, 64, 32768, WorkloadSpec()), (4, 8, 8192, WorkloadSpec()),
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
        for name in V:
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
    merge_triton.merge_slots = impl["o"]
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
p = d.pivot_table(index=["bits", "batch", "context", "workload"], columns="m", values="median_us", aggfunc="mean")
for v in V[1:]:
    p[f"{v}/o"] = p[v] / p["o"]
print(p.round(3).to_string())
print("max err", d.err.max(), "all same", d[d.m != "o"].same.all())
