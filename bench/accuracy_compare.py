"""``foscar compare`` of two accuracy runs: did an error metric grow?

Rows are matched on :data:`MATCH_KEYS` (data, bits, group size, kernel, rotation, layout,
shape, seed). For each matched row measured in both runs (status ``ok`` or ``failed``)
and each metric of :data:`ERROR_METRICS` (larger is worse), with both values raised to
at least :data:`ERROR_FLOOR` (errors at fp64 rounding are not compared) and
``ratio = new / base``:

* ``worse``: ``ratio > 1 + threshold``; ``better``: ``1 / ratio > 1 + threshold``;
  ``same``: within the threshold. A row that passed in base and failed in new is
  ``worse`` whatever its ratios.

A row's verdict is its worst metric's; each (kernel, metric) gets the geometric mean of
its rows' ratios and the same verdict. The overall verdict is ``worse`` if any row or
mean is worse, else ``better`` if any is better, else ``same``; ``worse`` is a
regression (exit status 1).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from bench import SCHEMA_VERSION
from bench.cells import is_finite, match_key
from bench.compare import NOTHING_COMPARED, NOTHING_COMPARED_NOTE, overall_verdict, percent
from bench.kinds import ACCURACY
from bench.results import geomean

MATCH_KEYS = ["data", "bits", "group_size", "kernel", "rotation", "layout", "num_sink", "num_recent", "batch",
              "context", "num_qo_heads", "num_kv_heads", "head_dim", "seed"]  # fmt: skip
ERROR_METRICS = ("rel_l2_vs_bf16_max", "rel_l2_vs_deq_max", "attn_kl_mean")
ERROR_FLOOR = 1e-8
VERDICT_ORDER = ("worse", "better", "same")  # most to least alarming
VERDICT_STYLE = {"worse": "bold red", "better": "green", "same": "dim", NOTHING_COMPARED: "bold red"}
MEASURED = ("ok", "failed")


def error_verdict(base: float, new: float, threshold: float) -> tuple[float, str]:
    """``(ratio, verdict)`` of one error metric, larger is worse (see the module doc)."""
    ratio = max(new, ERROR_FLOOR) / max(base, ERROR_FLOOR)
    if ratio > 1 + threshold:
        return ratio, "worse"
    if 1 / ratio > 1 + threshold:
        return ratio, "better"
    return ratio, "same"


def _label(r: dict[str, Any]) -> str:
    return f"{r['data']} int{int(r['bits'])} G{int(r['group_size'])} {r['layout']} {r['rotation']}"


def compare_accuracy(base: pd.DataFrame, new: pd.DataFrame, base_info: dict[str, Any], new_info: dict[str, Any],
                     threshold: float = 0.05) -> dict[str, Any]:  # fmt: skip
    """Compare two accuracy runs' ``results.csv`` frames (:data:`bench.accuracy_grid.COLUMNS`).

    ``base_info`` / ``new_info``: what the output says about each run (``label``, ``path``,
    ``gpu``, ``commit``). Returns a JSON-ready dict: ``rows`` (per matched row: each
    metric's base, new, ratio; ``verdict``), ``metrics`` (per kernel and metric: geometric
    mean of the ratios, verdict), ``unmatched``, ``verdict``, ``regression``, ``counts``.
    """
    keyed = [{match_key(r, MATCH_KEYS): r for r in df.to_dict("records")} for df in (base, new)]
    rows, unmatched = [], []
    for key in sorted(set(keyed[0]) | set(keyed[1]), key=lambda k: tuple(str(v) for v in k)):
        rb, rn = keyed[0].get(key), keyed[1].get(key)
        ref = rb if rb is not None else rn
        ident = {"kernel": ref["kernel"], "config": _label(ref)}
        if rb is None or rn is None or rb["status"] not in MEASURED or rn["status"] not in MEASURED:
            why = [f"{'not in' if r is None else str(r['status']) + ' in'} {side}" for side, r in (("base", rb), ("new", rn))
                   if r is None or r["status"] not in MEASURED]  # fmt: skip
            measured = [r is not None and r["status"] in MEASURED for r in (rb, rn)]
            unmatched.append({**ident, "reason": "; ".join(why), "one_sided": measured[0] != measured[1]})
            continue
        row: dict[str, Any] = {**ident, "base_status": rb["status"], "new_status": rn["status"], "metrics": {}}
        verdicts = []
        for m in ERROR_METRICS:
            if not (is_finite(rb[m]) and is_finite(rn[m])):
                continue
            ratio, v = error_verdict(float(rb[m]), float(rn[m]), threshold)
            row["metrics"][m] = {"base": float(rb[m]), "new": float(rn[m]), "ratio": ratio, "verdict": v}
            verdicts.append(v)
        if rb["status"] == "ok" and rn["status"] == "failed":
            verdicts.append("worse")
        row["verdict"] = next((v for v in VERDICT_ORDER if v in verdicts), "same")
        rows.append(row)
    metrics = []
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        for m in ERROR_METRICS:
            ratios = [r["metrics"][m]["ratio"] for r in rows if r["kernel"] == kernel and m in r["metrics"]]
            if not ratios:
                continue
            gm = geomean(ratios)
            metrics.append({"kernel": kernel, "metric": m, "rows": len(ratios), "ratio": gm,
                            "worst_ratio": max(ratios), "verdict": error_verdict(1.0, gm, threshold)[1]})  # fmt: skip
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICT_ORDER}
    mcounts = {v: sum(g["verdict"] == v for g in metrics) for v in VERDICT_ORDER}
    overall = overall_verdict(VERDICT_ORDER, [counts, mcounts], bool(rows))
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": ACCURACY,
        "base": base_info,
        "new": new_info,
        "threshold": threshold,
        "error_floor": ERROR_FLOOR,
        "verdict": overall,
        "regression": overall == "worse",
        "counts": {"rows": counts, "metrics": mcounts, "unmatched": len(unmatched)},
        "metrics": metrics,
        "rows": rows,
        "unmatched": unmatched,
        "notes": [],
    }


ROWS_SHOWN = 20


def render_accuracy(result: dict[str, Any], console: Console, show_all: bool = False) -> None:
    """Rich tables: per kernel and metric, the rows that changed (worst first), the verdict."""
    t = result["threshold"]
    console.print(f"base [bold]{result['base']['label']}[/] ({result['base']['gpu']}, {result['base']['commit']})  vs  "
                  f"new [bold]{result['new']['label']}[/] ({result['new']['gpu']}, {result['new']['commit']}); "
                  f"threshold {percent(t)}; ratio = new error / base error (larger is worse)")  # fmt: skip
    mt = Table(title="Geometric mean of the error ratios per kernel and metric", title_justify="left")
    for col, just in (("kernel", "left"), ("metric", "left"), ("rows", "right"), ("ratio", "right"),
                      ("worst row", "right"), ("verdict", "left")):  # fmt: skip
        mt.add_column(col, justify=just, no_wrap=True)
    for g in result["metrics"]:
        mt.add_row(g["kernel"], g["metric"], str(g["rows"]), f"{g['ratio']:.3f}", f"{g['worst_ratio']:.3f}",
                   _verdict(g["verdict"]))  # fmt: skip
    if result["metrics"]:
        console.print(mt)
    else:
        console.print("no row measured in both runs: nothing to compare")
    shown = [r for r in result["rows"] if show_all or r["verdict"] != "same"]
    shown.sort(key=lambda r: (VERDICT_ORDER.index(r["verdict"]), -max([m["ratio"] for m in r["metrics"].values()] or [1])))
    if shown:
        rt = Table(title="Rows (worst first)", title_justify="left",
                   caption=f"{len(shown) - ROWS_SHOWN} more in --format json" if len(shown) > ROWS_SHOWN else None)
        for col in ("kernel", "configuration", *ERROR_METRICS, "verdict"):
            rt.add_column(col, no_wrap=True)
        for r in shown[:ROWS_SHOWN]:
            cells = [f"{m['base']:.2e} -> {m['new']:.2e}" if (m := r["metrics"].get(k)) else "-" for k in ERROR_METRICS]
            rt.add_row(r["kernel"], r["config"], *cells, _verdict(r["verdict"]))
        console.print(rt)
    if result["unmatched"]:
        console.print(f"{len(result['unmatched'])} row(s) not measured in both runs (not compared); first: "
                      f"{result['unmatched'][0]['kernel']} {result['unmatched'][0]['config']}: "
                      f"{result['unmatched'][0]['reason']}")  # fmt: skip
    c = result["counts"]["rows"]
    parts = ", ".join(f"{c[v]} {v}" for v in VERDICT_ORDER if c[v])
    line = f"verdict: {_verdict(result['verdict'])} ({parts or 'no rows'}; {result['counts']['unmatched']} unmatched)"
    if result["verdict"] == NOTHING_COMPARED:
        line += NOTHING_COMPARED_NOTE
    console.print(line + (" [bold red]REGRESSION[/]" if result["regression"] else ""))


def _verdict(v: str) -> str:
    return f"[{VERDICT_STYLE[v]}]{v}[/]"
