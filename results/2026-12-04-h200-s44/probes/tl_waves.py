"""Session 44 (no GPU): session 43 call 1's timeline records read by waves. For each point: the profiling call's span
against the session-42 bench's median of the default build, and at INT2 64 x 32K the two waves of 32K-token CTAs
(entry before / after 10 us), how many CTAs of the second wave each SM took and how long they ran, and each SM's
streaming rate in the first wave against 8 x 128K's (two 32K-token CTAs an SM).
python tl_waves.py DIR BENCH_CSV (DIR/timeline-POINT.npy from ../2026-12-04-h200-s43/probes/call1/c1.tgz; BENCH_CSV
../2026-12-04-h200-s42/bench-bf3777b/results.csv); run from the repository root (imports bench.timeline)."""
import collections
import sys

import numpy as np
import pandas as pd

from bench.timeline import calls_in, split_calls

TOKEN_BYTES = 80  # INT2 head_dim 128 G=128 token-wise: 32 B of K codes, 32 of V codes, 4 fp32 scales and offsets
bench = pd.read_csv(sys.argv[2])
bench = bench[(bench.kernel == "foscar-cuda") & (bench.bits == 2) & (bench.workload == "uniform")]
print("point      calls  span of each call (us)        bench median (us)  span / bench")
for p in ["2x8x32768", "2x32x8192", "2x8x131072", "2x64x8192", "2x64x32768"]:
    r = np.load(f"{sys.argv[1]}/timeline-{p}.npy").astype(np.int64)
    n = calls_in(r)
    spans = [(c[:, 1].max() - c[:, 0].min()) / 1e3 for c in split_calls(r, n)]
    _, b, ctx = map(int, p.split("x"))
    med = float(bench[(bench.batch == b) & (bench.context == ctx)].median_us.iloc[0])
    print(f"{p:11s} {n:4d}  {' '.join(f'{s:7.1f}' for s in spans):28s}  {med:10.1f}         "
          f"{' '.join(f'{s / med:5.2f}' for s in spans)}")

r = np.load(f"{sys.argv[1]}/timeline-2x64x32768.npy").astype(np.int64)
iters = (r[:, 8] >> 40) & 0xFFFF
w = r[iters > 0]
sm = w[:, 8] & 0xFF
t0 = r[:, 0].min()
ent, ex = (w[:, 0] - t0) / 1e3, (w[:, 1] - t0) / 1e3
dur = ex - ent
first, second = ent < 10, ent >= 10
print(f"\nINT2 64 x 32K: {len(w)} working CTAs of {int((w[0, 9] >> 32) - (w[0, 9] & 0xFFFFFFFF))} tokens; "
      f"first wave {first.sum()} ({collections.Counter(collections.Counter(sm[first]).values())} CTAs an SM: SMs), "
      f"ends {np.percentile(ex[first], [0, 50, 100]).round(1)} us")
depth = collections.Counter(sm[second])
print(f"second wave {second.sum()} CTAs, entering {np.percentile(ent[second], [0, 50, 100]).round(1)} us, on "
      f"{len(depth)} SMs; {132 - len(depth)} SMs idle after their first wave")
for k in sorted(set(depth.values())):
    s = [x for x, v in depth.items() if v == k]
    m = np.isin(sm, s) & second
    print(f"  {len(s):3d} SMs took {k}: their CTAs ran {np.percentile(dur[m], [0, 50, 100]).round(1)} us, last exit "
          f"{ex[m].max():.1f} us; their first wave ended {np.percentile(ex[np.isin(sm, s) & first], [50]).round(1)} us")
nb = 32768 * TOKEN_BYTES
rate3 = np.array([3 * nb / (ex[(sm == s) & first].max() - ent[(sm == s) & first].min()) / 1e3
                  for s in np.unique(sm[first])])  # GB/s an SM
r2 = np.load(f"{sys.argv[1]}/timeline-2x8x131072.npy").astype(np.int64)
w2 = r2[((r2[:, 8] >> 40) & 0xFFFF) > 0]
sm2 = w2[:, 8] & 0xFF
two = [s for s in np.unique(sm2) if (sm2 == s).sum() == 2]
rate2 = np.array([2 * nb / (w2[sm2 == s, 1].max() - w2[sm2 == s, 0].min()) for s in two])
lone = np.isin(sm, [x for x, v in depth.items() if v == 1]) & second
print(f"streaming rate an SM, GB/s (p10/p50/p90): 64 x 32K first wave, 3 CTAs {np.percentile(rate3, [10, 50, 90]).round(1)}; "
      f"8 x 128K, 2 CTAs {np.percentile(rate2, [10, 50, 90]).round(1)}; 64 x 32K second wave, a lone CTA "
      f"{np.percentile(nb / dur[lone] / 1e3, [10, 50, 90]).round(1)}")
