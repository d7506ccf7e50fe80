"""Session 28: per-CTA timeline of the INT2 decode (contiguous, folded BF16, G=128, Qwen3-8B shape) at the 16-token
decodes and the points below 85% of the ceiling. Every plan checked against the fp64 reference first; timed as
`foscar bench` times (CUDA-graph replay over rotating copies). python .ab/probe_tl.py OUT_PREFIX [tl]
tl: the build of .ab/tl_csrc (FOSCAR_CSRC): one replay of a one-round graph after the timing, its records saved."""
import sys, time
import numpy as np, pandas as pd, torch, foscar
from bench.backends import Prepared, clone_cache
from bench.lengths import WorkloadSpec
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err
from foscar.kernels import decode_cuda

out = sys.argv[1]
tl = len(sys.argv) > 2 and sys.argv[2] == "tl"
dev = torch.device("cuda")
ext = decode_cuda.extension()
U = WorkloadSpec()
PTS = [(1, 16), (8, 16), (64, 16), (1, 8192), (8, 32768), (32, 8192), (64, 8192), (8, 131072), (64, 32768)]
rows, t0 = [], time.time()
for batch, ctx in PTS:
    pt = Point(batch, ctx, 2, 128, 32, 8, 128, 16, workload=U.at(ctx, ctx))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    nbytes = pt.kv_tokens * 8 * (2 * 128 * 2 // 8 + 16)

    def make(q, c):
        p = foscar.plan_decode(c, 32, backend="cuda")
        return (lambda: p.run(q, c)), p

    fn, plan = make(w.q, w.cache)
    o = plan.run(w.q, w.cache)
    torch.cuda.synchronize()
    err = max_rel_err(o, w.reference, w.rows)
    prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(w.cache))[0])
    fns = rotation(prep, dev)
    t = time_fn(fns, "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
    row = dict(batch=batch, context=ctx, median_us=round(t.median_us, 3), p20=round(t.p20_us, 3), p80=round(t.p80_us, 3),
               err=err, nan=bool(torch.isnan(o).any()), calls=len(fns))
    # kernel-level times of one graph replay (torch profiler), then (tl) the per-CTA records of another
    calls = fns[: min(len(fns), 8)]
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in calls:
            f()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for f in calls:
            f()
    g.replay()
    torch.cuda.synchronize()
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            g.replay()
            torch.cuda.synchronize()
        ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
        ks = sorted(((e.time_range.start, e.time_range.end, e.name) for e in ev), key=lambda x: x[0])
        pd.DataFrame(ks, columns=["start_us", "end_us", "name"]).to_csv(f"{out}-prof-{batch}x{ctx}.csv", index=False)
        dec = [k for k in ks if "folded_decode" in k[2]]
        mer = [k for k in ks if "merge" in k[2]]
        row.update(prof_kernels=len(ks), dec_us=round(float(np.median([k[1] - k[0] for k in dec])), 3) if dec else None,
                   merge_us=round(float(np.median([k[1] - k[0] for k in mer])), 3) if mer else None,
                   span_per_call_us=round((ks[-1][1] - ks[0][0]) / len(calls), 3) if ks else None)
    except Exception as e:  # noqa: BLE001
        row.update(prof_error=str(e)[:200])
    if tl:
        ext.timeline_read(1)
        for _ in range(3):
            g.replay()
            torch.cuda.synchronize()
            r = ext.timeline_read(1).numpy()
        np.save(f"{out}-tl-{batch}x{ctx}.npy", r)
        row.update(tl_records=len(r), tl_calls=len(calls))
    del g
    rows.append(row)
    print(row, f"t={time.time() - t0:.0f}", flush=True)
    pd.DataFrame(rows).to_csv(f"{out}.csv", index=False)
    del w, fns, prep, fn, plan
    torch.cuda.empty_cache()
