"""Session 19: batch 1 on the kernel's fixed path (the new plan_work) against the length-aware plan of the same
slots (the old one, restored by wrapping decode_cuda.plan_work), one process, alternating; every plan checked
against the fp64 reference first; outputs saved for bit-identity. python .ab/probe_fix1.py OUT_CSV ROUNDS"""
import dataclasses, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import decode_cuda

out_csv, rounds = sys.argv[1], int(sys.argv[2])
dev = torch.device("cuda")
new_plan_work = decode_cuda.plan_work


def old_plan_work(*a, **k):  # the length-aware plan of the same slots for a batch of one (before s19)
    s, f, t = new_plan_work(*a, **k)
    return (s, 0, s) if a[0] == 1 and f > 1 else (s, f, t)


CAP = WorkloadSpec(name="capacity", capacity=131072)
P = [(2, 8192, False, None), (2, 8192, True, None), (2, 32768, False, None), (2, 131072, False, None),
     (4, 8192, False, None), (4, 32768, False, None), (4, 131072, False, None), (4, 32768, True, None),
     (2, 4096, False, CAP), (2, 8192, False, CAP), (4, 4096, False, CAP), (2, 1000, False, CAP)]
rows, t0 = [], time.time()
for bits, ctx, paged, wl in P:
    pt = Point(1, ctx, bits, 128, 32, 8, 128, 16, workload=wl) if wl else Point(1, ctx, bits, 128, 32, 8, 128, 16)
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    nbytes = sum(getattr(cache, f.name).nbytes for f in dataclasses.fields(cache)
                 if isinstance(getattr(cache, f.name), torch.Tensor))
    outs = {}
    for rnd in range(rounds):
        for side, fn in (("old", old_plan_work), ("new", new_plan_work)):
            decode_cuda.plan_work = fn
            plan = foscar.plan_decode(cache, 32, backend="cuda")
            out, lse = plan.run(w.q, cache, return_lse=True)
            outs[side] = (out.clone(), lse.clone())
            err = max_rel_err(out, w.reference, w.rows)

            def make(q, c, fn=fn):
                decode_cuda.plan_work = fn
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c)

            prep = Prepared(fn=make(w.q, cache), output=lambda: None, bytes=nbytes,
                            replica=lambda fn=fn: make(w.q.clone(), clone_cache(cache), fn))
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(side=side, rnd=rnd, bits=bits, context=ctx, paged=paged, wl=wl.name if wl else "uniform",
                             slots=plan._o_part.shape[0], fixed=getattr(plan, "fixed_splits", None),
                             median_us=round(t.median_us, 3), err=err,
                             same=None))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    same = torch.equal(outs["old"][0], outs["new"][0]) and torch.equal(outs["old"][1], outs["new"][1])
    for r in rows:
        if (r["bits"], r["context"], r["paged"], r["wl"]) == (bits, ctx, paged, wl.name if wl else "uniform"):
            r["same"] = same
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache, plan, prep; torch.cuda.empty_cache()
decode_cuda.plan_work = new_plan_work
d = pd.DataFrame(rows)
t = d.pivot_table(index=["bits", "context", "paged", "wl", "same"], columns="side", values="median_us", aggfunc="mean")
t["new/old"] = (t["new"] / t["old"]).round(3)
pd.set_option("display.width", 200)
print(t.to_string())
