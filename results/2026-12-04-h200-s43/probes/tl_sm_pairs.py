"""Session 43: per-SM reading of call 1's timeline records (bench.timeline --save): loop times of the CTAs that
share an SM, and of the SMs that hold one CTA. python tl_sm_pairs.py DIR (DIR/timeline-POINT.npy, from call1/c1.tgz)."""
import sys

import numpy as np

from bench.timeline import FIELDS

for p in ["2x8x32768", "2x32x8192", "2x8x131072"]:
    r = np.load(f"{sys.argv[1]}/timeline-{p}.npy").astype(np.int64)
    d = {f: r[:, i] for i, f in enumerate(FIELDS)}
    idx = np.argsort(d["gt_entry"])[:256]  # call 0's 256 CTAs
    sm = d["meta"][idx] & 0xFF
    rate = (d["clk_exit"][idx] - d["clk_entry"][idx]).sum() / (d["gt_exit"][idx] - d["gt_entry"][idx]).sum()
    loop = (d["clk_loop_end"][idx] - d["clk_loop"][idx]) / rate / 1e3  # us
    cnt = np.bincount(sm, minlength=132)
    pairs = [s for s in range(132) if cnt[s] == 2]
    mean = np.array([loop[sm == s].mean() for s in pairs])
    diff = np.array([abs(np.diff(loop[sm == s]))[0] for s in pairs])
    one = np.isin(sm, np.where(cnt == 1)[0])
    print(f"{p}: {len(pairs)} SMs with 2 CTAs, {one.sum()} with 1; loop us: one-CTA SMs {loop[one].min():.1f}-"
          f"{loop[one].max():.1f}; two-CTA SMs' mean p0/p50/p100 {np.percentile(mean, [0, 50, 100]).round(1)}; "
          f"|difference| of an SM's two CTAs p50/p90/p100 {np.percentile(diff, [50, 90, 100]).round(1)}")
