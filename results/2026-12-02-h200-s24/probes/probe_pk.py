"""Session 24, call 1: the integer PV with packed columns (FOSCAR_PV_PACK=1, "k") against the two-mma form ("0", "u"),
INT2, in one process, interleaved (order reversed in round 1), three rounds; then the merge's rows at batches 16 and 32
(FOSCAR_MERGE_ROWS auto = 4 rows, "ra", against 1, "r1"), which no session measured. Every plan checked against the
fp64 reference first; every output compared with the first variant's (bit for bit where expected).
python .ab/probe_pk.py OUT_CSV"""
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
PK = {"k": {"FOSCAR_PV_PACK": "1"}, "u": {"FOSCAR_PV_PACK": "0"}}
RW = {"ra": {"FOSCAR_MERGE_ROWS": "auto"}, "r1": {"FOSCAR_MERGE_ROWS": "1"}}
U, LN = WorkloadSpec(), WorkloadSpec(name="lognormal")
P = [(2, 1, 16, U, 0, PK), (2, 8, 16, U, 0, PK), (2, 1, 8192, U, 0, PK), (2, 8, 8192, U, 0, PK),
     (2, 64, 32768, U, 0, PK), (2, 8, 131072, U, 0, PK), (2, 64, 8192, U, 0, PK), (2, 32, 32768, U, 0, PK),
     (2, 1, 32768, U, 0, PK), (2, 8, 131072, WorkloadSpec(name="one-long"), 0, PK), (2, 64, 32768, LN, 0, PK),
     (2, 64, 32768, U, 1, PK), (2, 8, 32768, LN, 0, PK),
     (2, 16, 32768, LN, 0, RW), (4, 16, 32768, LN, 0, RW), (2, 32, 32768, LN, 0, RW), (4, 32, 32768, LN, 0, RW),
     (2, 16, 8192, U, 0, RW), (2, 64, 131072, U, 0, PK)]
if len(sys.argv) > 2 and sys.argv[2] == "int4":  # call 2: INT4 on the packed integer PV against its BF16 PV
    P = [(4, 1, 16, U, 0, PK), (4, 8, 16, U, 0, PK), (4, 1, 8192, U, 0, PK), (4, 8, 8192, U, 0, PK), (4, 1, 32768, U, 0, PK),
         (4, 64, 8192, U, 0, PK), (4, 8, 32768, U, 0, PK), (4, 32, 32768, U, 0, PK), (4, 8, 131072, U, 0, PK),
         (4, 64, 32768, U, 0, PK), (4, 8, 131072, WorkloadSpec(name="one-long"), 0, PK), (4, 8, 32768, LN, 0, PK),
         (4, 64, 32768, LN, 0, PK), (4, 64, 8192, U, 1, PK), (4, 8, 4096, WorkloadSpec(name="capacity", capacity=131072), 1, PK),
         (4, 64, 131072, U, 0, PK)]
for bits, batch, ctx, ws, paged, V in P:
    cap = ws.capacity or ctx
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=ws.at(ctx, cap))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = foscar.paginate(w.cache, page_size=16, shuffle=True, generator=torch.Generator().manual_seed(0)) if paged else w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    names = list(V)
    outs = {}
    for rnd in range(3):
        for name in (names if rnd != 1 else names[::-1]):
            os.environ.update(V[name])

            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache).clone()
            torch.cuda.synchronize()
            outs[name] = out
            err = max_rel_err(out, w.reference, w.rows)
            first = outs[names[0]] if names[0] in outs else None
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, batch=batch, context=ctx, workload=ws.name, paged=paged, m=name, rnd=rnd,
                             median_us=round(t.median_us, 3), err=err, rows=plan.merge_rows, merge=plan.merge_launched,
                             same=None if first is None else bool(torch.equal(first, out)),
                             maxdiff=None if first is None else float((first.float() - out.float()).abs().max())))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    for v in V.values():
        for k in v:
            os.environ.pop(k, None)
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
for a, b in (("k", "u"), ("ra", "r1")):
    s = d[d.m.isin([a, b])]
    p = s.pivot_table(index=["bits", "batch", "context", "workload", "paged"], columns="m", values="median_us", aggfunc="mean")
    p[f"{a}/{b}"] = p[a] / p[b]
    print(p.round(3).to_string())
print("max err", d.groupby("m").err.max().to_dict(), "same", d.groupby("m").same.all().to_dict(), "maxdiff", d.groupby("m").maxdiff.max().to_dict())
