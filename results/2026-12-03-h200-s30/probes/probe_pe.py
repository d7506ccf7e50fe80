"""Session 30, call 4: the Params fields read early (FOSCAR_PARAMS_EARLY=1) against =0 (LABEL), one process per build and round, the caller alternates them.
Every plan checked against the fp64 reference first; timed as `foscar bench` times.
python .ab/probe_ep.py LABEL ROUND OUT_CSV"""
import hashlib, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

label, rnd, out_csv = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dev = torch.device("cuda")
rows, t0 = [], time.time()
U, LN, OL = WorkloadSpec(), WorkloadSpec(name="lognormal"), WorkloadSpec(name="one-long")
P = [(2, 1, 16, U, 0), (2, 8, 16, U, 0), (2, 64, 16, U, 0), (2, 1, 8192, U, 0), (2, 1, 32768, U, 0),
     (2, 8, 8192, U, 0), (2, 8, 32768, U, 0), (4, 1, 8192, U, 0), (2, 8, 16, U, 1)]
for bits, batch, ctx, ws, paged in P:
    cap = ws.capacity or ctx
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=ws.at(ctx, cap))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = foscar.paginate(w.cache, page_size=16, shuffle=True, generator=torch.Generator().manual_seed(0)) if paged else w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)

    def make(q, c):
        p = foscar.plan_decode(c, 32, backend="cuda")
        return lambda: p.run(q, c), p
    fn, plan = make(w.q, cache)
    out = plan.run(w.q, cache)
    torch.cuda.synchronize()
    err = max_rel_err(out, w.reference, w.rows)
    prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
    t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
    rows.append(dict(bits=bits, batch=batch, context=ctx, workload=ws.name, paged=paged, m=label, rnd=rnd,
                     median_us=round(t.median_us, 3), err=err, sha=hashlib.sha1(out.float().cpu().numpy().tobytes()).hexdigest()[:12], nan=bool(torch.isnan(out).any())))
    print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
