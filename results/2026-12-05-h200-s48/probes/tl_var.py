"""Session 48: the spread of session 43's one-wave loops: within an SM's pair (sd, r) against across SMs, and by sequence,
slot parity and SM id. python tl_var.py DIR (DIR/timeline-POINT.npy)."""
import sys
D = sys.argv[1] if len(sys.argv) > 1 else "/tmp/s48/tl/tl"
import numpy as np, sys
from bench.timeline import FIELDS
for p, n in [("2x8x32768", 256), ("2x32x8192", 256)]:
    r = np.load(f"{D}/timeline-{p}.npy").astype(np.int64)
    d = {f: r[:, i] for i, f in enumerate(FIELDS)}
    order = np.argsort(d["gt_entry"])
    for call in (0, 1):
        idx = order[n*call:n*(call+1)]
        idx = idx[d["clk_loop"][idx] > 0]
        ghz = (d["clk_exit"][idx] - d["clk_entry"][idx]).sum() / (d["gt_exit"][idx] - d["gt_entry"][idx]).sum()
        loop = (d["clk_loop_end"][idx] - d["clk_first"][idx]) / ghz / 1e3
        meta = d["meta"][idx]
        sm = meta & 0xFF; cta = (meta >> 8) & 0xFFFF; b = (meta >> 24) & 0xFFFF
        start = d["tokens"][idx] & 0xFFFFFFFF
        cnt = np.bincount(sm, minlength=132)
        two = cnt[sm] == 2
        # within-SM pair correlation
        pairs = [np.sort(np.where(sm == s)[0]) for s in range(132) if cnt[s] == 2]
        a = np.array([loop[i[0]] for i in pairs]); c = np.array([loop[i[1]] for i in pairs])
        r_pair = np.corrcoef(a, c)[0, 1]
        # variance explained by SM (pair mean) vs residual
        pm = (a + c) / 2
        print(f"{p} call {call}: {len(idx)} CTAs, loop mean {loop.mean():.2f} sd {loop.std():.2f}; 1-CTA SMs {np.sum(cnt==1)} loop {loop[cnt[sm]==1].mean():.2f}")
        print(f"   pair r={r_pair:.2f}; sd of pair mean {pm.std():.2f}, sd within pair {(a-c).std()/np.sqrt(2):.2f}")
        # by batch index, by chunk start, by cta parity, by sm ranges
        for name, key in [("b", b), ("start", start), ("cta%2", cta % 2), ("sm<66", sm < 66), ("sm%2", sm % 2), ("cta//8%8 (head?)", (cta // 4) % 8)]:
            ks = np.unique(key)
            if len(ks) > 40: continue
            means = np.array([loop[(key == k) & two].mean() for k in ks])
            print(f"   by {name}: {np.round(means, 2)}")
        # rank correlation with entry time and with loop start time
        st = (d["gt_entry"][idx] - d["gt_entry"][idx].min()) / 1e3
        print(f"   r(loop, entry time)={np.corrcoef(loop, st)[0,1]:.2f}")
