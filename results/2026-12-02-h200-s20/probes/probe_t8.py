"""Session 20: the length-aware chunk target at batch 8: target = 8 n chunks (slots as plan_work gives them),
INT4 n in 2,3,4,6,8 and INT2 n in 4,6,8, over uniform 8x4K, 8x8K, 8 lognormal (32K cache), one-long (128K cache);
every plan checked against the fp64 reference first, timed as foscar bench times (rotation by the bytes read), one
round, interleaved. python .ab/probe_t8.py OUT_CSV"""
import sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import decode_cuda, splits

out_csv = sys.argv[1]
dev = torch.device("cuda")
orig = decode_cuda.plan_work
rows, t0 = [], time.time()
W = [("u4K", 4096, WorkloadSpec()), ("u8K", 8192, WorkloadSpec()), ("logn", 32768, WorkloadSpec(name="lognormal")),
     ("onelong", 131072, WorkloadSpec(name="one-long"))]
for bits in (4, 2):
    for wname, ctx, spec in W:
        pt = Point(8, ctx, bits, 128, 32, 8, 128, 16, workload=spec.at(ctx, ctx))
        w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
        cache = w.cache
        nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
        for n in ([None, 2, 3, 4, 6, 8] if bits == 4 else [None, 4, 6, 8]):
            def pw(batch, nkv, cap, sms, num_splits=None, bits=None, n=n):
                if n is None:
                    return orig(batch, nkv, cap, sms, num_splits, bits=bits)
                target = batch * n
                room = target * nkv >= splits.RESIDENT_CTAS_PER_SM * sms
                return target + (batch if room else 0), 0, target
            decode_cuda.plan_work = pw
            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache)
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, workload=wname, n=n or f"auto{plan._schedule}", slots=plan._o_part.shape[0],
                             median_us=round(t.median_us, 3), err=err))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
        decode_cuda.plan_work = orig
        pd.DataFrame(rows).to_csv(out_csv, index=False)
        del w, cache; torch.cuda.empty_cache()
d = pd.DataFrame(rows)
d["n"] = d.n.astype(str)
pd.set_option("display.width", 200)
print(d.pivot_table(index=["bits", "workload"], columns="n", values="median_us", aggfunc="mean").round(2).to_string())
print("max err", d.err.max())
