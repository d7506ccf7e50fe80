"""Session 47: what a balanced schedule (stream-K-like: CTAs crossing (sequence, KV head) boundaries, or dynamic
stealing) could win at issue 12's one-wave points, read from session 43's timeline records (call 1,
results/2026-12-04-h200-s43/probes/call1/c1.tgz, the profiling build of b2d47b7; python tl_balance.py DIR with
DIR/timeline-POINT.npy). No GPU: arithmetic on measured records.

Per point, over call 0's working CTAs: the costs a CTA pays outside its loop (entry -> work found -> loop start ->
first sub-tile landed; loop end -> exit), the loop's spread, and the call's end against its CTAs' median exit.
Then the balance's win and a crossing's cost:
- win: the most loaded SM's bytes (two 8K-token CTAs) against an even share (tokens / 132 SMs), at the pair's rate;
- cost: a CTA that takes a second segment pays that segment's prologue, first wait and epilogue again.
"""
import sys

import numpy as np

from bench.timeline import FIELDS

SMS = 132
for p, ctas in [("2x8x32768", 256), ("2x32x8192", 256), ("2x64x8192", 512)]:
    r = np.load(f"{sys.argv[1]}/timeline-{p}.npy").astype(np.int64)
    d = {f: r[:, i] for i, f in enumerate(FIELDS)}
    idx = np.argsort(d["gt_entry"])[: 1024 if ctas == 512 else ctas]  # call 0 (64 x 8K: its empty slots too)
    idx = idx[d["clk_loop"][idx] > 0]  # working CTAs
    ghz = (d["clk_exit"][idx] - d["clk_entry"][idx]).sum() / (d["gt_exit"][idx] - d["gt_entry"][idx]).sum()

    def us(a, b):
        return (d[b][idx] - d[a][idx]) / ghz / 1e3

    pro, wait0, loop, epi = us("clk_found", "clk_loop"), us("clk_loop", "clk_first"), us("clk_first", "clk_loop_end"), \
        us("clk_loop_end", "clk_exit")
    t0 = d["gt_entry"][idx].min()
    ex = (d["gt_exit"][idx] - t0) / 1e3
    med = np.median
    per_sm = np.ceil(len(idx) / SMS)  # CTAs on the most loaded SM
    even = len(idx) / SMS
    win = med(loop) * (per_sm - even) / 2  # two CTAs an SM stream side by side: (per_sm - even) CTA-loops over 2
    cross = med(pro) + med(wait0) + med(epi)
    print(f"{p}: {len(idx)} working CTAs, SM clock {ghz:.3f} GHz")
    print(f"  outside the loop, median us: to the loop {med(pro):.2f}, first sub-tile {med(wait0):.2f}, "
          f"epilogue {med(epi):.2f} (a second segment would pay ~{cross:.2f})")
    print(f"  loop us p10/p50/p90 {np.percentile(loop, [10, 50, 90]).round(2)}; exits us p0/p50/p100 "
          f"{np.percentile(ex, [0, 50, 100]).round(2)} (last - median {ex.max() - med(ex):.2f})")
    print(f"  even share: {even:.2f} CTAs an SM against {per_sm:.0f}: the balance wins ~{win:.2f} us of "
          f"{ex.max():.1f} ({100 * win / ex.max():.1f}%) before its costs; crossing costs ~{cross:.2f} us a CTA")

# Is an SM's speed a property of the SM (its place in the GPU: a schedule could then give slow SMs less), or of the
# call? The mean loop of each SM's two CTAs, correlated across two calls of one point and across points (the SMs that
# hold two CTAs in both; the one-CTA SMs left out, as they stream faster a CTA).
def pair_means(p, call):
    r = np.load(f"{sys.argv[1]}/timeline-{p}.npy").astype(np.int64)
    d = {f: r[:, i] for i, f in enumerate(FIELDS)}
    idx = np.argsort(d["gt_entry"])[256 * call: 256 * (call + 1)]
    idx = idx[d["clk_loop"][idx] > 0]
    sm = d["meta"][idx] & 0xFF
    cnt = np.bincount(sm, minlength=SMS)
    ghz = (d["clk_exit"][idx] - d["clk_entry"][idx]).sum() / (d["gt_exit"][idx] - d["gt_entry"][idx]).sum()
    loop = (d["clk_loop_end"][idx] - d["clk_first"][idx]) / ghz / 1e3
    return np.array([loop[sm == s].mean() if cnt[s] == 2 else np.nan for s in range(SMS)])


def corr(a, b):
    ok = ~np.isnan(a) & ~np.isnan(b)
    return np.corrcoef(a[ok], b[ok])[0, 1], int(ok.sum())


for p in ["2x8x32768", "2x32x8192"]:
    print(f"{p}: per-SM pair-mean loop, call 0 against call 1: r = %.2f over %d SMs" % corr(pair_means(p, 0), pair_means(p, 1)))
for p, q in [("2x8x32768", "2x32x8192"), ("2x8x32768", "2x8x131072"), ("2x32x8192", "2x8x131072")]:
    print(f"{p} against {q} (call 0 each): r = %.2f over %d SMs" % corr(pair_means(p, 0), pair_means(q, 0)))
