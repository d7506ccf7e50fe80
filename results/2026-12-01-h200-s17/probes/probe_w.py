"""Session 17: wide CTAs (FOSCAR_CTA_WARPS) and query-once. One process per build (chosen at import).
Times plans as `foscar bench` does (CUDA-graph replay over rotating copies, time_fn medians) after checking each
against the workload's fp64 reference rows; saves the warps-4 outputs to /tmp/w/TAG-*.pt (bit-identity of builds).
   python .ab/probe_w.py TAG OUT_CSV WARPS[,WARPS..] [small]"""
import os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

tag, out_csv, variants = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
small = len(sys.argv) > 4 and sys.argv[4] == "small"
large = len(sys.argv) > 4 and sys.argv[4] == "large"
dev = torch.device("cuda")
os.makedirs("/tmp/w", exist_ok=True)
rows, t0 = [], time.time()
ONE_LONG = WorkloadSpec(name="one-long", capacity=131072, short_len=4096)
P = []  # (bits, batch, ctx, paged, workload, extra variants: "WsN" = W warps, num_splits N)
for bits in (2, 4):
    P += [(bits, 1, 16, False, None, ()), (bits, 8, 16, False, None, ()), (bits, 1, 8192, False, None, ("12s8",)),
          (bits, 8, 8192, False, None, ("12s2",)), (bits, 1, 32768, False, None, ("12s8",))]
    if not small:
        P += [(bits, 1, 131072, False, None, ("12s16",)), (bits, 8, 4096, False, None, ("12s2",)),
              (bits, 8, 32768, False, None, ("12s2",)), (bits, 32, 8192, False, None, ()),
              (bits, 8, 131072, False, ONE_LONG, ())]
if not small:
    P += [(2, 1, 8192, True, None, ()), (2, 8, 8192, True, None, ("12s2",)), (2, 64, 32768, False, None, ())]
if large:  # INT2's large points (compute-bound: where a loop change shows), INT4 64 x 32K as a control
    P = [(2, 64, 32768, False, None, ()), (2, 32, 32768, False, None, ()), (2, 8, 131072, False, None, ()),
         (4, 64, 32768, False, None, ()), (2, 64, 32768, False, None, ())]
    if os.environ.get("PROBE_SET") == "b":  # call 5: the same GPU again, new first; no INT4 (call 4 ran out of memory there)
        P = [(2, 64, 32768, False, None, ()), (2, 64, 8192, False, None, ()), (2, 32, 32768, False, None, ()),
             (2, 64, 32768, False, None, ())]
for bits, batch, ctx, paged, wl, extra in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=wl) if wl else Point(batch, ctx, bits, 128, 32, 8, 128, 16)
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 20)
    cache = foscar.paginate(w.cache, 16) if paged else w.cache
    for v in variants + ([] if variants == ["4"] else list(extra)):
        wv, _, ns = v.partition("s")
        os.environ["FOSCAR_CTA_WARPS"] = wv
        ns = int(ns) if ns else None
        plan = foscar.plan_decode(cache, 32, backend="cuda", num_splits=ns)
        out, lse = plan.run(w.q, cache, return_lse=True)
        if v == "4":
            torch.save((out.cpu(), lse.cpu()), f"/tmp/w/{tag}-{bits}-{batch}-{ctx}-{int(paged)}-{wl is not None}.pt")
        err = max_rel_err(out, w.reference, w.rows)

        def make(q, c):
            p = foscar.plan_decode(c, 32, backend="cuda", num_splits=ns)
            return lambda: p.run(q, c)

        prep = Prepared(fn=make(w.q, cache), output=lambda: None, bytes=0,
                        replica=lambda: make(w.q.clone(), clone_cache(cache)))
        t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
        rows.append(dict(tag=tag, warps=v, plan_warps=getattr(plan, "cta_warps", 4), bits=bits, batch=batch, context=ctx,
                         paged=paged, wl="one-long" if wl else "uniform", slots=plan._o_part.shape[0],
                         median_us=round(t.median_us, 3), p20=round(t.p20_us, 3), p80=round(t.p80_us, 3), err=err,
                         merge=plan.merge_launched))
        print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
        pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache, plan; torch.cuda.empty_cache()
