"""Session 16: batch-1 split counts (auto = the plan's, 16, 32), INT2 and INT4 at 128K (and INT2 32K again), as .ab/probe.py."""
import sys, time
import pandas as pd, torch, foscar
sys.argv = [sys.argv[0], sys.argv[1]]
exec(open(".ab/probe.py").read().split("for bits in (2, 4):")[0])  # the helpers of probe.py
for bits, ctx in ((2, 131072), (2, 32768), (4, 131072)):
    w = build_workload(Point(1, ctx, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=1 << 20)
    for tag, fn in (("auto", new_plan), ("s16", fixed(16)), ("s32", fixed(32))) * 2:
        timed(w, w.cache, fn, tag, f"int{bits} 1x{ctx}", False)
    del w; torch.cuda.empty_cache()
print(pd.DataFrame(rows).groupby(["point", "variant"]).median_us.agg(["min", "max"]).round(2).to_string())
