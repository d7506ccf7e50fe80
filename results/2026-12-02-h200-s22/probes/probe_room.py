"""Session 22: what the length-aware plan's room costs at uniform batches. Per point: auto (plan_work), noroom (the
same target, num_slots = target), fixed (n chunks a sequence on the fixed path, n = target / batch; table-free
merge), fixed_fw0 (the same with the chunk-table merge). Every plan checked against the fp64 reference first, timed as
foscar bench times (rotation by the bytes read), two rounds interleaved. python .ab/probe_room.py OUT_CSV"""
import os, sys, time
import pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import decode_cuda

out_csv = sys.argv[1]
dev = torch.device("cuda")
orig = decode_cuda.plan_work
sms = torch.cuda.get_device_properties(dev).multi_processor_count
rows, t0 = [], time.time()
P = [(4, 64, 8192), (4, 64, 32768), (4, 32, 8192), (4, 32, 32768), (4, 8, 8192),
     (2, 64, 8192), (2, 64, 32768), (2, 32, 8192), (2, 32, 32768), (2, 8, 8192)]
for bits, batch, ctx in P:
    pt = Point(batch, ctx, bits, 128, 32, 8, 128, 16, workload=WorkloadSpec().at(ctx, ctx))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = w.cache
    nbytes = pt.kv_tokens * 8 * (2 * 128 * bits // 8 + 16)
    slots, fixed, target = orig(batch, 8, ctx, sms, None, bits=bits)
    n = max(1, target // batch)
    plans = {"auto": (slots, fixed, target), "noroom": (target, 0, target) if fixed == 0 else None,
             "fixed": (batch * n, n, 1), "fixed_fw0": (batch * n, n, 1) if n >= 2 else None}
    plans = {k: v for k, v in plans.items() if v is not None}
    for rnd in range(2):
        for name, sched in plans.items():
            decode_cuda.plan_work = lambda *a, s=sched, **k: s
            os.environ["FOSCAR_MERGE_FIXED_WINDOW"] = "0" if name == "fixed_fw0" else "1"

            def make(q, c):
                p = foscar.plan_decode(c, 32, backend="cuda")
                return lambda: p.run(q, c), p
            fn, plan = make(w.q, cache)
            out = plan.run(w.q, cache)
            torch.cuda.synchronize()
            err = max_rel_err(out, w.reference, w.rows)
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
            rows.append(dict(bits=bits, batch=batch, context=ctx, plan=name, sched=str(sched), rnd=rnd,
                             fw=int(plan.merge_fixed_window), median_us=round(t.median_us, 3), err=err))
            print(rows[-1], f"t={time.time() - t0:.0f}", flush=True)
    decode_cuda.plan_work = orig
    os.environ.pop("FOSCAR_MERGE_FIXED_WINDOW", None)
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    del w, cache
    torch.cuda.empty_cache()
d = pd.DataFrame(rows)
pd.set_option("display.width", 200)
print(d.pivot_table(index=["bits", "batch", "context"], columns="plan", values="median_us", aggfunc="mean").round(2).to_string())
print("max err", d.err.max())
