"""Session 48: the spread of session 43's one-wave loops: within an SM's pair (sd, r) against across SMs, and by sequence,
slot parity and SM id. python tl_var.py DIR (DIR/timeline-POINT.npy)."""
import sys
import numpy as np
from tl_calls import calls
D = sys.argv[1] if len(sys.argv) > 1 else "/tmp/s48/tl/tl"
for p in ["2x8x32768", "2x32x8192"]:
    for call, d in zip((0, 1), calls(D, p)):  # the first two calls
        loop = (d["clk_loop_end"] - d["clk_first"]) / d["ghz"] / 1e3
        meta = d["meta"]
        sm = meta & 0xFF; cta = (meta >> 8) & 0xFFFF; b = (meta >> 24) & 0xFFFF
        start = d["tokens"] & 0xFFFFFFFF
        cnt = np.bincount(sm, minlength=132)
        two = cnt[sm] == 2
        # within-SM pair correlation
        # each SM's pair as (the CTA launched first, the one launched second): by block index, not by position in the
        # records (session 48's first version took the records' order after a sort by entry stamps, whose ties made
        # its r and within-pair sd depend on the sort: -0.66 / 1.67 us or -0.63 / 1.59 at 8 x 32K's call 0)
        pairs = [w[np.argsort(cta[w])] for w in (np.where(sm == s)[0] for s in range(132) if cnt[s] == 2)]
        a = np.array([loop[i[0]] for i in pairs]); c = np.array([loop[i[1]] for i in pairs])
        r_pair = np.corrcoef(a, c)[0, 1]
        # variance explained by SM (pair mean) vs residual
        pm = (a + c) / 2
        print(f"{p} call {call}: {len(loop)} CTAs, loop mean {loop.mean():.2f} sd {loop.std():.2f}; 1-CTA SMs {np.sum(cnt==1)} loop {loop[cnt[sm]==1].mean():.2f}")
        print(f"   pair r={r_pair:.2f}; sd of pair mean {pm.std():.2f}, sd within pair {(a-c).std()/np.sqrt(2):.2f} "
              f"(second - first launched: mean {np.mean(c - a):+.2f})")
        # by batch index, by chunk start, by cta parity, by sm ranges
        for name, key in [("b", b), ("start", start), ("cta%2", cta % 2), ("sm<66", sm < 66), ("sm%2", sm % 2), ("cta//8%8 (head?)", (cta // 4) % 8)]:
            ks = np.unique(key)
            if len(ks) > 40: continue
            means = np.array([loop[(key == k) & two].mean() for k in ks])
            print(f"   by {name}: {np.round(means, 2)}")
        # rank correlation with entry time and with loop start time
        st = (d["gt_entry"] - d["gt_entry"].min()) / 1e3
        print(f"   r(loop, entry time)={np.corrcoef(loop, st)[0,1]:.2f}")
