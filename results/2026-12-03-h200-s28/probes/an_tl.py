"""Session 28: summarise the timeline records of probe_tl.py (tl-tl-BxC.npy): per call, per-phase medians [min..max] over
the working CTAs, in us (clock64 converted at the rate of globaltimer over the CTAs). python an_tl.py DIR"""
import numpy as np, sys, glob, re
d = sys.argv[1]
for f in sorted(glob.glob(f"{d}/tl-tl-*.npy"), key=lambda s: [int(x) for x in re.findall(r"(\d+)x(\d+)", s)[0]]):
    r = np.load(f).astype(np.int64)
    name = re.findall(r"tl-tl-(\S+)\.npy", f)[0]
    n = len(r)
    # split calls by gt gaps: sort by gt0
    o = np.argsort(r[:, 0], kind="stable"); r = r[o]
    meta = r[:, 8]; iters = (meta >> 40) & 0xFFFF
    work = iters > 0  # a working CTA (empty ones write no loop stamps; their slots hold an earlier point's)
    # clock rate: cycles per ns over working CTAs
    dur_ns = r[:, 1] - r[:, 0]; dur_cyc = r[:, 7] - r[:, 2]
    m = work & (dur_ns > 2000)
    ghz = np.median(dur_cyc[m] / dur_ns[m]) if m.any() else 1.98
    # call boundaries: gap in gt0 > 1 us after a CTA ended? use entry gaps > 500 ns where the previous records all ended
    starts = [0]
    for i in range(1, n):
        if r[i, 0] > r[:i, 1].max() and r[i, 0] - r[i - 1, 0] > 300:
            starts.append(i)
    starts.append(n)
    print(f"== {name}: {n} records, {len(starts)-1} calls, clock {ghz:.3f} GHz")
    for ci in range(min(len(starts) - 1, 3)):
        a, b = starts[ci], starts[ci + 1]
        q = r[a:b]; w = work[a:b]
        t0 = q[:, 0].min()
        span = (q[:, 1].max() - t0) / 1e3
        gap = (r[b, 0] - q[:, 1].max()) / 1e3 if b < n else float("nan")
        us = lambda c: c / ghz / 1e3
        fw = us(q[:, 3] - q[:, 2]); pro = us(q[w, 4] - q[w, 3]); first = us(q[w, 5] - q[w, 4]); loop = us(q[w, 6] - q[w, 4])
        epi = us(q[w, 7] - q[w, 6]); tot = us(q[w, 7] - q[w, 2])
        st = (q[:, 0] - t0) / 1e3; en = (q[w, 1] - t0) / 1e3
        it = iters[a:b][w]
        pct = lambda x: f"{np.median(x):6.2f} [{np.min(x):5.2f}..{np.max(x):6.2f}]"
        print(f" call {ci}: ctas {b-a} (working {w.sum()}, iters/warp med {np.median(it) if len(it) else 0}) span {span:.2f} us, gap to next {gap:.2f} us")
        print(f"   entry offset {pct(st)} | find_work {pct(fw)} | to loop {pct(pro)} | first wait {pct(first)} | loop {pct(loop)} | epilogue {pct(epi)} | CTA total {pct(tot)} | end offset {pct(en)}")
        sm = q[:, 8] & 0xFF
        print(f"   SMs used {len(np.unique(sm))}, CTAs/SM max {np.bincount(sm).max()}")
