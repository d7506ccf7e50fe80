"""Session 48: at issue 12's one-wave points two CTAs share an SM, and the lower-indexed one (dispatched first) streams
faster. What would chunks skewed by slot (more tokens for the first-dispatched CTA) buy? Per SM with two co-resident
CTAs: the joint phase's token rate, the younger's lone tail, and the end if both had ended together."""
import sys
import numpy as np
from tl_calls import calls
D = sys.argv[1] if len(sys.argv) > 1 else "/tmp/s48/tl/tl"
for p in ["2x8x32768", "2x32x8192", "2x8x131072"]:
    for call, d in enumerate(calls(D, p)):
        t0 = d["gt_entry"].min()
        # times in us from the call's first entry, by the global timer for entry and the SM clock inside
        ent = (d["gt_entry"] - t0) / 1e3
        first = ent + (d["clk_first"] - d["clk_entry"]) / d["ghz"] / 1e3
        lend = ent + (d["clk_loop_end"] - d["clk_entry"]) / d["ghz"] / 1e3
        tok = (d["tokens"] >> 32) - (d["tokens"] & 0xFFFFFFFF)
        meta = d["meta"]; sm = meta & 0xFF; cta = (meta >> 8) & 0xFFFF
        cnt = np.bincount(sm, minlength=132)
        lone = cnt[sm] == 1
        lone_rate = np.median(tok[lone] / (lend[lone] - first[lone])) if lone.any() else np.nan
        cur, bal, gain = [], [], []
        for s in range(132):
            w = np.where(sm == s)[0]
            if len(w) != 2:
                if len(w) == 1: cur.append(lend[w[0]]); bal.append(lend[w[0]])
                continue
            i, j = (w if cta[w[0]] < cta[w[1]] else w[::-1])  # i older (lower index)
            a, b = sorted([lend[i], lend[j]])
            k = j if lend[j] >= lend[i] else i  # the one that ends last
            joint_tokens = tok.sum() if False else tok[i] + tok[j] - (b - a) * lone_rate  # tokens done while both ran
            start = max(first[i], first[j])
            rate = joint_tokens / (a - start)
            end_bal = start + (tok[i] + tok[j]) / rate
            cur.append(b); bal.append(end_bal); gain.append(b - end_bal)
        cur, bal = np.array(cur), np.array(bal)
        print(f"{p} call {call}: lone rate {lone_rate:.0f} tok/us; pair SMs' last loop end: median {np.median(cur):.2f}, "
              f"max {cur.max():.2f} us; balanced: median {np.median(bal):.2f}, max {bal.max():.2f}; "
              f"per-SM gain median {np.median(gain):.2f} us; the call's loop end {cur.max() - bal.max():+.2f} us")
