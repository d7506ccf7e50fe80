"""Session 27: the L2 prefetch hint on the small-page copies (LABEL build) against main's kernel, one process per build
and round; paged decode by page size and order, the contiguous cache beside; every plan checked against the fp64
reference first; timed as `foscar bench` times. python .ab/probe_pf.py LABEL ROUND OUT_CSV"""
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
U = WorkloadSpec()
C = (0, False)
P = [(2, 32, 32768, [C, (16, True), (4, True), (2, True), (1, True), (1, False)]),
     (2, 8, 32768, [C, (16, True), (1, True)]),
     (2, 8, 8192, [(16, True), (1, True)]),
     (4, 32, 32768, [C, (16, True), (4, True), (1, True), (1, False)]),
     (2, 64, 131072, [(16, True), (1, True)])]
for bits, batch, ctx, V in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=U.at(ctx, ctx))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    for ps, shuffle in V:
        cache = foscar.paginate(w.cache, page_size=ps, shuffle=shuffle, generator=torch.Generator().manual_seed(0)) if ps else w.cache

        def make(q, c):
            p = foscar.plan_decode(c, 32, backend="cuda")
            return lambda: p.run(q, c), p
        fn, plan = make(w.q, cache)
        out = plan.run(w.q, cache)
        torch.cuda.synchronize()
        err = max_rel_err(out, w.reference, w.rows)
        prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
        t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
        rows.append(dict(bits=bits, batch=batch, context=ctx, page_size=ps, shuffle=shuffle, m=label, rnd=rnd,
                         median_us=round(t.median_us, 3), err=err,
                         sha=hashlib.sha1(out.float().cpu().numpy().tobytes()).hexdigest()[:12], nan=bool(torch.isnan(out).any())))
        print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
        pd.DataFrame(rows).to_csv(out_csv, index=False)
        if ps:
            del cache
        torch.cuda.empty_cache()
    del w
    torch.cuda.empty_cache()
