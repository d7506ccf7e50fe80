"""Session 44: each call of saved timeline records (bench.timeline --save, >= 3 calls a point since bench.timeline's
MIN_CALLS) read by waves: its span, the working CTAs that entered after the call's first working CTA exited (the later
waves), how many of those each SM took (SMs by that count) and the last exit. python tl_waves_calls.py DIR... (run from
the repository root: it imports bench.timeline)."""
import collections
import glob
import os
import sys

import numpy as np

from bench.timeline import calls_in, split_calls

for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "timeline-*.npy"))):
        r = np.load(f).astype(np.int64)
        print(f"{f}: {calls_in(r)} calls")
        prev_end = None
        for i, c in enumerate(split_calls(r, calls_in(r))):
            w = c[((c[:, 8] >> 40) & 0xFFFF) > 0]
            t0 = w[:, 0].min()
            late = w[w[:, 0] > w[:, 1].min()]
            depth = collections.Counter(collections.Counter((late[:, 8] & 0xFF).tolist()).values())
            # calls after the first: also from the previous call's last exit (their CTAs enter before it, with PDL)
            own = "" if prev_end is None else f" ({(c[:, 1].max() - prev_end) / 1e3:.1f} from the last call's end)"
            prev_end = c[:, 1].max()
            print(f"  call {i}: span {(c[:, 1].max() - c[:, 0].min()) / 1e3:7.1f} us{own}, {len(w)} working CTAs, "
                  f"{len(late)} later ({dict(sorted(depth.items()))} CTAs: SMs), first exit "
                  f"{(w[:, 1].min() - t0) / 1e3:.1f}, last {(w[:, 1].max() - t0) / 1e3:.1f} us")
