"""``foscar compare`` of two ablation runs: times, judged as for bench runs.

Rows are matched on :data:`MATCH_KEYS` (axis, setting, bits, point, shape, backend). Each
matched row's median time gets :func:`bench.compare.verdict` (``slower``, ``faster``,
``noisy``, ``same``, with the p20..p80 spreads), and each series
(``<axis>/<setting>/int<bits>``) the verdict of its geometric mean, as in
:func:`bench.compare.compare_runs`. The result has the same fields as a bench comparison
(plus ``kind``), so :func:`bench.compare.render`, ``to_json`` and ``exit_code`` take it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench import SCHEMA_VERSION
from bench.cells import cell, is_finite, match_key
from bench.ablate_report import AblationRun
from bench.compare import VERDICT_ORDER, overall_verdict, verdict
from bench.kinds import ABLATE
from bench.results import geomean
from bench.rundir import point_label

MATCH_KEYS = ["axis", "setting", "bits", "batch", "context", "num_qo_heads", "num_kv_heads", "head_dim", "backend"]


def _keyed(df: pd.DataFrame) -> dict[tuple, dict[str, Any]]:
    return {match_key(r, MATCH_KEYS): r for r in df.to_dict("records")}


def _timed(r: dict[str, Any] | None) -> bool:
    return r is not None and r.get("status") == "ok" and is_finite(r.get("median_us")) and float(r["median_us"]) > 0


def _identity(r: dict[str, Any]) -> dict[str, Any]:
    ident = {k: cell(r[k]) for k in MATCH_KEYS}
    ident.update(series=f"{r['axis']}/{r['setting']}/int{int(r['bits'])}", kernel=f"{r['axis']}/{r['setting']}",
                 operand=None, cache_bits=int(r["bits"]), point=point_label(r["batch"], r["context"]))  # fmt: skip
    return ident


def _run_info(run: AblationRun) -> dict[str, Any]:
    gpu = run.meta.get("gpu")
    git = run.meta.get("git") or {}
    return {
        "path": str(run.path),
        "label": run.path.resolve().name,
        "gpu": (gpu or {}).get("name") if isinstance(gpu, dict) else ("CPU (Triton interpreter)" if gpu is None else gpu),
        "commit": (git.get("commit") or "not recorded") + (" (dirty)" if git.get("dirty") else ""),
        "date": run.meta.get("date"),
        "timing_mode": "interpreter" if run.meta.get("triton_interpreter") else "cuda_graph",
    }


def compare_ablations(base: AblationRun, new: AblationRun, threshold: float = 0.05) -> dict[str, Any]:
    """Compare ``new`` against ``base``: a JSON-ready dict with the fields of
    :func:`bench.compare.compare_runs` (``rows``, ``geomeans``, ``unmatched``, ``verdict``,
    ``regression``, ``counts``, ``notes``) and ``kind: "ablate"``."""
    b, n = _keyed(base.df), _keyed(new.df)
    rows, unmatched = [], []
    for key in sorted(set(b) | set(n), key=lambda k: tuple(str(v) for v in k)):
        rb, rn = b.get(key), n.get(key)
        ident = _identity(rb if rb is not None else rn)
        if not (_timed(rb) and _timed(rn)):
            why = [f"{'not in' if r is None else r['status'] + ' in'} {side}" for side, r in (("base", rb), ("new", rn))
                   if not _timed(r)]  # fmt: skip
            unmatched.append({**ident, "base_status": rb and rb["status"], "new_status": rn and rn["status"],
                              "reason": "; ".join(why), "one_sided": _timed(rb) != _timed(rn)})  # fmt: skip
            continue
        bt = tuple(float(rb[c]) if is_finite(rb[c]) else math.nan for c in ("median_us", "p20_us", "p80_us"))
        nt = tuple(float(rn[c]) if is_finite(rn[c]) else math.nan for c in ("median_us", "p20_us", "p80_us"))
        rows.append({**ident, "base_median_us": bt[0], "base_p20_us": bt[1], "base_p80_us": bt[2],
                     "new_median_us": nt[0], "new_p20_us": nt[1], "new_p80_us": nt[2], "ratio": nt[0] / bt[0],
                     "verdict": verdict(bt, nt, threshold), "clock_note": None})  # fmt: skip
    geomeans = []
    for series in sorted({r["series"] for r in rows}):
        mine = [r for r in rows if r["series"] == series]
        gm = {side: tuple(_gm_rel(mine, side, q) for q in ("median_us", "p20_us", "p80_us")) for side in ("base", "new")}
        geomeans.append({"series": series, "kernel": mine[0]["kernel"], "bits": mine[0]["bits"], "operand": None,
                         "num_points": len(mine), "ratio": gm["new"][0], "base_p20_rel": gm["base"][1],
                         "base_p80_rel": gm["base"][2], "new_p20_rel": gm["new"][1], "new_p80_rel": gm["new"][2],
                         "verdict": verdict(gm["base"], gm["new"], threshold)})  # fmt: skip
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICT_ORDER}
    gcounts = {v: sum(g["verdict"] == v for g in geomeans) for v in VERDICT_ORDER}
    info = {"base": _run_info(base), "new": _run_info(new)}
    notes = []
    if info["base"]["gpu"] != info["new"]["gpu"]:
        notes.append(f"different GPUs: base {info['base']['gpu']}, new {info['new']['gpu']}")
    if "interpreter" in (info["base"]["timing_mode"], info["new"]["timing_mode"]):
        notes.append("interpreter timing: not a performance number")
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": ABLATE,
        **info,
        "threshold": threshold,
        "verdict": overall_verdict(VERDICT_ORDER, [counts, gcounts], bool(rows)),
        "regression": bool(counts["slower"] or gcounts["slower"]),
        "counts": {"rows": counts, "geomeans": gcounts, "unmatched": len(unmatched)},
        "geomeans": geomeans,
        "rows": rows,
        "unmatched": unmatched,
        "notes": notes,
    }


def _gm_rel(rows: list[dict[str, Any]], side: str, q: str) -> float:
    vals = [r[f"{side}_{q}"] / r["base_median_us"] for r in rows]
    return geomean(vals) if all(is_finite(v) and v > 0 for v in vals) else math.nan
