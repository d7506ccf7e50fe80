"""Session 48: at the one-wave points, does an SM's lower-indexed CTA (dispatched first) finish its loop first?
§87 tested entry order (the global timer's stamps, often equal within an SM) and found no pattern; this tests the
CTA index. Over session 43's records (results/2026-12-04-h200-s43/probes/call1/c1.tgz)."""
import sys
import numpy as np
from tl_calls import calls
D = sys.argv[1] if len(sys.argv) > 1 else "/tmp/s48/tl/tl"
for p in ["2x8x32768", "2x32x8192", "2x8x131072"]:
    for call, d in enumerate(calls(D, p)):
        loop = (d["clk_loop_end"] - d["clk_first"]) / d["ghz"] / 1e3
        ent = d["gt_entry"]
        meta = d["meta"]; sm = meta & 0xFF; cta = (meta >> 8) & 0xFFFF
        hi_slower, diff, tie, ent_first = 0, [], 0, 0
        pairs = 0
        for s in range(132):
            w = np.where(sm == s)[0]
            if len(w) != 2: continue
            lo, hi = (w if cta[w[0]] < cta[w[1]] else w[::-1])
            pairs += 1
            hi_slower += loop[hi] > loop[lo]
            diff.append(loop[hi] - loop[lo])
            tie += ent[hi] == ent[lo]
            ent_first += ent[lo] < ent[hi]
        diff = np.array(diff)
        print(f"{p} call {call}: {pairs} SMs with two CTAs; the higher-indexed CTA's loop longer in {hi_slower} "
              f"({hi_slower / pairs:.0%}), by median {np.median(diff):+.2f} us (p10 {np.percentile(diff, 10):+.2f}, "
              f"p90 {np.percentile(diff, 90):+.2f}); entry stamps equal in {tie}, lower index entered first in {ent_first}; "
              f"CTA indices: lower {np.median([min(cta[np.where(sm == s)[0]]) for s in range(132) if (sm == s).sum() == 2]):.0f} "
              f"/ higher {np.median([max(cta[np.where(sm == s)[0]]) for s in range(132) if (sm == s).sum() == 2]):.0f} (median)")
