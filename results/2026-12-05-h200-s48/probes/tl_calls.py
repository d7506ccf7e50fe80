"""Session 48's timeline probes (tl_order, tl_skew, tl_var, tl_ramp): the working CTAs of each call of a point's saved
records (``python -m bench.timeline --save DIR``: DIR/timeline-POINT.npy), split into calls by bench.timeline's own
``split_calls`` / ``calls_in``. Run them from this directory with the repository on the path:
``PYTHONPATH=../../.. python tl_order.py DIR``."""
import numpy as np

from bench.timeline import FIELDS, calls_in, split_calls


def calls(directory, point):
    """Yield, per call in launch order, ``{field: int64 array over the call's working CTAs}`` (``clk_loop > 0``; fields
    as ``bench.timeline.FIELDS``; CTAs in entry order, ties in the order they took their records: tl_var's pairs take
    the first of an SM's two as ``a``) plus ``"ghz"``: the SM clock over those CTAs, clock64 cycles per global-timer
    ns. Nothing where the point has no records in ``directory``."""
    try:
        records = np.load(f"{directory}/timeline-{point}.npy").astype(np.int64)
    except FileNotFoundError:
        return
    for rec in split_calls(records, calls_in(records)):
        rec = rec[np.argsort(rec[:, FIELDS.index("gt_entry")], kind="stable")]
        work = rec[:, FIELDS.index("clk_loop")] > 0
        d = {f: rec[work, i] for i, f in enumerate(FIELDS)}
        d["ghz"] = (d["clk_exit"] - d["clk_entry"]).sum() / (d["gt_exit"] - d["gt_entry"]).sum()
        yield d
