"""Session 48: where a one-wave call loses time against streaming its bytes at its own plateau rate. Per call: the
aggregate token rate r(t) of the CTAs in their loops (each CTA's tokens spread evenly over its loop), its plateau (the
median of r over the middle half of the call), and the time lost before r reaches 90% of the plateau (the ramp up:
launch, find_work, prologue, first sub-tile), while it runs at the plateau, and after it falls below 90% (the ramp down:
the last CTAs alone, then the epilogues). Lost time = time - tokens streamed in it / plateau. Over the timeline records
of session 48's call 2 (skew 0: the default build) and session 43's call 1. python tl_ramp.py DIR..."""
import sys
import numpy as np
from tl_calls import calls

for D in sys.argv[1:]:
    for p in ["2x8x32768", "2x32x8192", "2x8x131072"]:
        for call, d in enumerate(calls(D, p)):
            t0 = d["gt_entry"].min()
            ent = (d["gt_entry"] - t0) / 1e3
            a = ent + (d["clk_first"] - d["clk_entry"]) / d["ghz"] / 1e3  # loop start (first sub-tile landed)
            b = ent + (d["clk_loop_end"] - d["clk_entry"]) / d["ghz"] / 1e3
            ex = (d["gt_exit"] - t0) / 1e3
            tok = ((d["tokens"] >> 32) - (d["tokens"] & 0xFFFFFFFF)).astype(float)
            rate = tok / (b - a)
            dt = 0.05
            t = np.arange(0, ex.max() + dt, dt)
            rt = np.zeros_like(t)
            for ai, bi, ri in zip(a, b, rate):
                rt[(t >= ai) & (t < bi)] += ri
            span = ex.max()
            mid = (t > 0.25 * span) & (t < 0.75 * span)
            plateau = np.median(rt[mid])
            hi = np.where(rt >= 0.9 * plateau)[0]
            up, down = t[hi[0]], t[hi[-1]]
            def lost(lo, hi_):
                m = (t >= lo) & (t < hi_)
                return (hi_ - lo) - rt[m].sum() * dt / plateau
            active_at_down = int(((a <= down) & (b > down)).sum())
            print(f"{D.split('/')[-1]:>4} {p:>11} call {call}: span {span:6.2f} us = tokens/plateau {tok.sum() / plateau:6.2f} + lost "
                  f"{span - tok.sum() / plateau:5.2f} (ramp up to {up:5.2f}: {lost(0, up):4.2f}; plateau: {lost(up, down):5.2f}; "
                  f"ramp down from {down:6.2f}: {lost(down, span + dt):4.2f}, {active_at_down} CTAs in their loops at its start; "
                  f"last loop end -> last exit {ex.max() - b.max():4.2f})")
