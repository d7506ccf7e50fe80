"""Session 16 probe (one process): plans of one chunk per sequence (new: one fixed split, no merge launch)
against the old plan (length-aware target = batch, merge kernel launched), timed as `foscar bench` times
(CUDA-graph replay over rotating copies, time_fn medians), in the order old, new, old, new; and batch-1
split counts (auto / 16 / 32). Every plan's output checked against the workload's fp64 reference rows first.
    python .ab/probe.py OUT_CSV"""
import sys, time
import pandas as pd
import torch
import foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

dev = torch.device("cuda")
rows, t_start = [], time.time()
out_csv = sys.argv[1]


def timed(w, cache, plan_fn, tag, point, paged):
    plan = plan_fn(cache)
    out = plan.run(w.q, cache)
    err = max_rel_err(out, w.reference, w.rows)
    def make(q, c):
        p = plan_fn(c)
        return lambda: p.run(q, c)
    prep = Prepared(fn=make(w.q, cache), output=lambda: None, bytes=w.cache.bytes_read() + w.io_bytes(),
                    replica=lambda: make(w.q.clone(), clone_cache(cache)))
    t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
    rows.append(dict(point=point, paged=paged, variant=tag, median_us=round(t.median_us, 3), p20=round(t.p20_us, 3),
                     p80=round(t.p80_us, 3), err=err, merge=getattr(plan, "merge_launched", None),
                     num_splits=plan.num_splits, slots=plan._o_part.shape[0]))
    print(rows[-1], f"t={time.time() - t_start:.0f}", flush=True)
    pd.DataFrame(rows).to_csv(out_csv, index=False)


def new_plan(c):
    return foscar.plan_decode(c, 32, backend="cuda")


def old_plan(c):  # the plan of d7f7d8d at these points: length-aware, target = batch, merge kernel launched
    p = foscar.plan_decode(c, 32, backend="cuda")
    b = c.batch_size
    assert p._o_part.shape[0] == b and p._schedule == (1, 1), p._schedule
    p._schedule, p.merge_launched, p.num_splits = (0, b), True, None
    return p


def fixed(n):
    return lambda c: foscar.plan_decode(c, 32, backend="cuda", num_splits=n)


for bits in (2, 4):
    for batch, ctx in ((1, 16), (8, 16), (64, 16), (32, 8192), (32, 32768)):
        w = build_workload(Point(batch, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
        for paged in (False, True):
            cache = foscar.paginate(w.cache, 16) if paged else w.cache
            for tag in ("old", "new", "old", "new"):
                timed(w, cache, old_plan if tag == "old" else new_plan, tag, f"int{bits} {batch}x{ctx}", paged)
        del w; torch.cuda.empty_cache()
for bits in (2, 4):
    for ctx in (32768, 131072):
        w = build_workload(Point(1, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
        for tag, fn in (("auto", new_plan), ("s16", fixed(16)), ("s32", fixed(32)), ("auto", new_plan), ("s16", fixed(16)),
                        ("s32", fixed(32))):
            timed(w, w.cache, fn, tag, f"int{bits} 1x{ctx}", False)
        del w; torch.cuda.empty_cache()
df = pd.DataFrame(rows)
pd.set_option("display.width", 250)
print(df.groupby(["point", "paged", "variant"]).median_us.agg(["min", "max", "count"]).round(2).to_string())
