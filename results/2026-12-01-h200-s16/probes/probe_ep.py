"""Session 16, call 4: the epilogue's 4-channel steps (new) against the one-channel loop (base, FOSCAR_CSRC=.ab/base_csrc),
one process per build, the build chosen at import. Times plans as `foscar bench` does (CUDA-graph replay over rotating
copies, time_fn medians) after checking each against the workload's fp64 reference rows; saves every output and LSE
to /tmp/ep/TAG-*.pt for the bit-identity check.   python .ab/probe_ep.py TAG OUT_CSV"""
import os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

tag, out_csv = sys.argv[1], sys.argv[2]
dev = torch.device("cuda")
os.makedirs("/tmp/ep", exist_ok=True)
rows, t0 = [], time.time()
POINTS = [(2, 1, 16, False), (2, 8, 16, False), (2, 64, 16, False), (4, 1, 16, False), (4, 8, 16, False),
          (2, 1, 8192, False), (4, 1, 8192, False), (2, 1, 8192, True), (2, 8, 8192, False),
          (2, 1, 32768, False)]
for bits, batch, ctx, paged in POINTS:
    w = build_workload(Point(batch, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    out, lse = plan.run(w.q, cache, return_lse=True)
    torch.save((out.cpu(), lse.cpu()), f"/tmp/ep/{tag}-{bits}-{batch}-{ctx}-{int(paged)}.pt")
    err = max_rel_err(out, w.reference, w.rows)

    def make(q, c):
        p = foscar.plan_decode(c, 32, backend="cuda")
        return lambda: p.run(q, c)

    prep = Prepared(fn=make(w.q, cache), output=lambda: None, bytes=0, replica=lambda: make(w.q.clone(), clone_cache(cache)))
    t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
    rows.append(dict(tag=tag, bits=bits, batch=batch, context=ctx, paged=paged, median_us=round(t.median_us, 3),
                     p20=round(t.p20_us, 3), p80=round(t.p80_us, 3), err=err, merge=plan.merge_launched))
    print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    del w, cache, plan; torch.cuda.empty_cache()
    pd.DataFrame(rows).to_csv(out_csv, index=False)
