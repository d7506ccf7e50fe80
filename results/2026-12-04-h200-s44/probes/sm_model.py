"""Session 44 (no GPU): session 42's bench (bench-bf3777b) of INT2 G=128 uniform points read as "the most loaded SM's
bytes at one streaming rate, plus a fixed cost": R, the rate an SM streams at, from the two longest points (many
waves, so the average load an SM); then each point's fixed cost = its median minus its most loaded SM's bytes / R, and
the fixed cost that 85% of the ceiling allows. python sm_model.py BENCH_CSV (bench-bf3777b/results.csv)."""
import math
import sys

import pandas as pd

SMS, TOKEN_BYTES = 132, 80  # H200; INT2 head_dim 128 G=128 token-wise: 32 + 32 B of codes, 4 fp32 scales and offsets
# (batch, context) -> (working CTAs, tokens a CTA): the plan's chunks (<= 32K tokens, bench/NOTES.md §87 and §88)
CTAS = {(8, 32768): (256, 8192), (32, 8192): (256, 8192), (8, 131072): (256, 32768), (32, 32768): (256, 32768),
        (64, 8192): (512, 8192), (64, 32768): (512, 32768), (32, 131072): (1024, 32768), (64, 131072): (2048, 32768)}
d = pd.read_csv(sys.argv[1])
d = d[(d.kernel == "foscar-cuda") & (d.bits == 2) & (d.workload == "uniform")].set_index(["batch", "context"])
rates = [CTAS[k][0] / SMS * CTAS[k][1] * TOKEN_BYTES / d.loc[k, "median_us"] / 1e3 for k in [(32, 131072), (64, 131072)]]
R = sum(rates) / len(rates)
print(f"R = {R:.1f} GB/s an SM ({', '.join(f'{r:.2f}' for r in rates)}), {R * SMS / 1e3:.2f} TB/s over {SMS} SMs")
print("point        CTAs x tokens  bench us (of ceiling)  most loaded SM's stream us  fixed us  85% allows fixed us")
for k, (n, t) in CTAS.items():
    m, sol = d.loc[k, "median_us"], d.loc[k, "sol_fraction"]
    stream = math.ceil(n / SMS) * t * TOKEN_BYTES / R / 1e3
    print(f"{k[0]:3d} x {k[1]:6d}  {n:5d} x {t:5d}  {m:8.1f} ({sol:.3f})  {stream:26.1f}  {m - stream:8.1f}  "
          f"{m * sol / 0.85 - stream:19.1f}")
