"""Session 19: redux + query split A/B. One process per build (chosen by PYTHONPATH).
Times plans as `foscar bench` does (CUDA-graph replay over rotating copies, time_fn medians) after checking each
against the workload's fp64 reference rows; saves outputs to /tmp/w/TAG-*.pt (bit-identity of builds).
   python .ab/probe_p.py TAG OUT_CSV [set]"""
import dataclasses, os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

tag, out_csv = sys.argv[1], sys.argv[2]
which = sys.argv[3] if len(sys.argv) > 3 else "small"
dev = torch.device("cuda")
os.makedirs("/tmp/w", exist_ok=True)
rows, t0 = [], time.time()
LOGN = WorkloadSpec(name="lognormal", seed=0)
ONE_LONG = WorkloadSpec(name="one-long", capacity=131072, short_len=4096)
P = []  # (bits, batch, ctx, paged, workload)
if which == "small":
    for bits in (2, 4):
        P += [(bits, 1, 16, False, None), (bits, 8, 16, False, None), (bits, 64, 16, False, None),
              (bits, 8, 1000, False, None), (bits, 8, 32768, False, LOGN), (bits, 64, 32768, False, LOGN),
              (bits, 1, 8192, False, None), (bits, 8, 8192, False, None)]
    P += [(2, 1, 16, True, None), (2, 8, 32768, True, LOGN), (2, 8, 131072, False, ONE_LONG), (2, 1, 32768, False, None)]
elif which == "large":
    P = [(2, 64, 32768, False, None), (2, 8, 131072, False, None), (2, 64, 8192, False, None),
         (2, 64, 32768, True, None), (4, 64, 32768, False, None), (4, 8, 131072, False, None), (4, 64, 8192, False, None),
         (4, 1, 32768, False, None), (4, 8, 4096, False, None), (4, 64, 32768, True, None)]
for bits, batch, ctx, paged, wl in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=wl) if wl else Point(batch, ctx, bits, 128, 32, 8, 128, 16)
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    out, lse = plan.run(w.q, cache, return_lse=True)
    wn = wl.name if wl else "uniform"
    torch.save((out.cpu(), lse.cpu()), f"/tmp/w/{tag}-{bits}-{batch}-{ctx}-{int(paged)}-{wn}.pt")
    err = max_rel_err(out, w.reference, w.rows)

    def make(q, c):
        p = foscar.plan_decode(c, 32, backend="cuda")
        return lambda: p.run(q, c)

    nbytes = sum(getattr(cache, f.name).nbytes for f in dataclasses.fields(cache)
                 if isinstance(getattr(cache, f.name), torch.Tensor))
    prep = Prepared(fn=make(w.q, cache), output=lambda: None, bytes=nbytes,
                    replica=lambda: make(w.q.clone(), clone_cache(cache)))
    t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
    rows.append(dict(tag=tag, bits=bits, batch=batch, context=ctx, paged=paged, wl=wn,
                     slots=plan._o_part.shape[0], median_us=round(t.median_us, 3), p20=round(t.p20_us, 3),
                     p80=round(t.p80_us, 3), err=err, merge=plan.merge_launched))
    print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache, plan, prep; torch.cuda.empty_cache()
