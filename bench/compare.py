"""``foscar compare``: did a run get slower than a baseline run? And ``foscar export-gab``.

Rows of the two runs are matched by :data:`MATCH_KEYS`. Per matched row, with
``ratio = new median / base median`` and the spreads being the p20..p80 intervals:

* ``slower``: ``ratio > 1 + threshold`` and the spreads do not overlap
  (new p20 > base p80);
* ``faster``: ``1 / ratio > 1 + threshold`` (the speed grew by more than the
  threshold) and the spreads do not overlap (new p80 < base p20);
* ``noisy``: the change exceeds the threshold but the spreads overlap;
* ``same``: the change is within the threshold.

A row without a recorded spread is judged on the threshold alone. A row timed at
a held-down clock in either run (its ``clock_note`` is set: throttled, or an SM clock
more than 5% below its run's median; :mod:`bench.clocks`) is ``ambiguous`` whatever
its ratio: never a regression, never an improvement, and left out of the
geometric means. So is every row of a point (:data:`CLOCK_POINT_KEYS`: the match keys
but the kernel variant) where any row of either run carries a note: a point's rows are
timed one after another, and the clock is read only before and after each, so a power
cap that shows on one row's readings may have held its neighbours down between theirs
(bench/NOTES.md §48: three rows of session 15's bench were called slower, by 2.0-2.3%,
at points whose FlashInfer rows, timed beside them, were throttled and 2.1-2.4% slower
too). Per series
(``kernel/int<bits>/<operand>``, or the baseline kernel's name) the geometric mean of
the ratios gets the same verdict, its spreads being the geometric means of
``p20 / base median`` and ``p80 / base median`` of each side. Any ``slower`` row or
geometric mean of a FOSCAR kernel is a regression (exit status 1 in the CLI); the overall verdict is the
most alarming verdict of any FOSCAR row or geometric mean (slower, noisy, ambiguous, faster,
same; ``none`` where no FOSCAR row matched though a run has some, exit status 2: nothing of
FOSCAR's was compared). The baselines' rows (FlashInfer) are judged and listed the same way, but
counted apart (``counts["baseline_rows"]``, ``baseline_verdict``) and never make a regression: a
slower FlashInfer row says that the GPU, its clocks or the baseline's software changed between
the runs, not that FOSCAR did. Runs of baselines only are gated on their rows.

Every field that changes the workload takes part in the match: the shape (batch,
context, heads, head_dim), the format (cache bits, group size, operand mode, K layout),
the page size and the workload (length distribution, the lengths themselves, the cache
capacity); see :data:`MATCH_KEYS`. Rows timed in only one run (or in neither) are listed
as unmatched, with the fields in which the other run's nearest rows differ. Under ``--strict``
a row timed in one run only fails the comparison (:func:`strict_failures`); a row timed in
neither (skipped or failed in both, e.g. a kernel that does not support the point) does not.
When the two runs' configurations (meta.json ``config``) or GPUs differ, a note says so.

Where both runs timed a row's read floor (``foscar bench --read-floor``: a plain read of the row's bytes, timed as
the row is; ``read_floor_us``), the row also gets ``floor_ratio``: the ratio with each side's time taken over its own
floor, ``(new median / new floor) / (base median / base floor)``. A change of the GPU's memory between the runs
(another machine: H200s' ceilings differ by ~2%) cancels out of it, the kernel's own change does not; a series gets
the geometric mean of its rows' where every judged row has one. It is shown beside the ratio and judged nowhere: a
floor is one timing in whatever power state the GPU is at its first such row (bench/NOTES.md §84).

:func:`export_gab` writes a run in the JSON that github-action-benchmark's
``customSmallerIsBetter`` tool reads: a list of ``{name, unit, value, range, extra}``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from bench import SCHEMA_VERSION
from bench.cells import cell, is_finite, match_key
from bench.clocks import has_clock_note
from bench.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, FoscarError
from bench.results import POINT_KEYS, geomean
from bench.rundir import Run, row_point_label, series_label, timed_rows

# the row's kernel variant and its point (bench.results.POINT_KEYS: shape, format, page size, K layout,
# workload, capacity, lengths) but not the grid it was listed in. cache_bits is part of the key: the
# BF16 baselines run once per cache bit width at the same shape
MATCH_KEYS = ["kernel", "bits", "operand", *[k for k in POINT_KEYS if k != "grid"]]
# an unmatched row's nearest rows in the other run: same variant, batch, context and cache bits
NEAR_KEYS = ["kernel", "bits", "operand", "batch", "context", "cache_bits"]
VERDICT_ORDER = ("slower", "noisy", "ambiguous", "faster", "same")  # most to least alarming
VERDICT_STYLE = {"slower": "bold red", "noisy": "yellow", "ambiguous": "magenta", "faster": "green", "same": "dim",
                 "none": "bold red"}
# the overall verdict where no row matched (bench runs: no FOSCAR row, though they have some): nothing was compared
# (exit_code: EXIT_USAGE)
NOTHING_COMPARED = "none"
NOTHING_COMPARED_NOTE = (" [bold red]nothing compared[/]: no row of the runs' own kernels was timed in both (exit 2); "
                         "compare runs of the same points and kernels")
AMBIGUOUS = "ambiguous"  # timed at a held-down clock in base or new (clock_note), or beside such a row: not judged
# a point for the clock (every match key but the kernel variant): its rows run one after another, so one row's
# clock note makes the whole point ambiguous in that comparison (module doc)
CLOCK_POINT_KEYS = [k for k in MATCH_KEYS if k not in ("kernel", "bits", "operand")]
# the least width of the tables' series, number and verdict columns (never cropped in a narrow terminal)
NUMBER_WIDTHS = {"series": 10, "points": 6, "ratio": 5, "time": 6, "vs floor": 8, "base spread": 11,
                 "new spread": 11, "verdict": 9}
# below this console width compare's tables are compact (render): the full rows table needs ~150 columns
FULL_TABLE_WIDTH = 150


def overall_verdict(order: tuple[str, ...], counts: list[dict[str, int]], compared: bool) -> str:
    """The run's verdict: the most alarming of ``order`` that any of ``counts`` (verdict -> rows) holds, else
    ``same`` where rows were ``compared``, else :data:`NOTHING_COMPARED`."""
    return next((v for v in order if any(c[v] for c in counts)), "same" if compared else NOTHING_COMPARED)


def percent(fraction: float) -> str:
    """A threshold as the tables print it: ``0.025`` -> ``2.5%``, ``0.05`` -> ``5%`` (no rounding to whole percent)."""
    return f"{fraction * 100:.6g}%"


def verdict(base: tuple[float, float, float], new: tuple[float, float, float], threshold: float) -> str:
    """``slower``/``faster``/``noisy``/``same`` for ``(median, p20, p80)`` of base and new (see module doc)."""
    b_med, b_lo, b_hi = base
    n_med, n_lo, n_hi = new
    ratio = n_med / b_med
    spread_known = all(is_finite(x) for x in (b_lo, b_hi, n_lo, n_hi))
    if ratio > 1 + threshold:
        return "slower" if not spread_known or n_lo > b_hi else "noisy"
    if 1 / ratio > 1 + threshold:
        return "faster" if not spread_known or n_hi < b_lo else "noisy"
    return "same"


def compare_runs(base: Run, new: Run, threshold: float = 0.05) -> dict[str, Any]:
    """Compare ``new`` against ``base``; a JSON-ready dict (``rows``, ``geomeans``, ``unmatched``, ``verdict``)."""
    b = _keyed(base.df)
    n = _keyed(new.df)
    held = {**_held_points(n, "new"), **_held_points(b, "base")}  # point -> a note there (base's where both have one)
    rows: list[dict[str, Any]] = []
    unmatched: list[dict[str, Any]] = []
    for key in sorted(set(b) | set(n), key=_sort_key):
        rb, rn = b.get(key), n.get(key)
        b_timed = rb is not None and _is_timed(rb)
        n_timed = rn is not None and _is_timed(rn)
        ref = rb if rb is not None else rn
        ident = _identity(ref)
        if not (b_timed and n_timed):
            unmatched.append({
                **ident,
                "base_status": _status(rb),
                "new_status": _status(rn),
                "reason": _unmatched_reason(rb, rn, b_timed, n_timed, b if rb is None else n, ref),
                "one_sided": b_timed != n_timed,  # timed in one run only: what --strict fails on
            })  # fmt: skip
            continue
        bt = (float(rb["median_us"]), _f(rb["p20_us"]), _f(rb["p80_us"]))
        nt = (float(rn["median_us"]), _f(rn["p20_us"]), _f(rn["p80_us"]))
        clock_notes = [f"{side}: {row['clock_note']}" for side, row in (("base", rb), ("new", rn)) if has_clock_note(row)]
        neighbour = held.get(match_key(ref, CLOCK_POINT_KEYS))  # a row at this point timed at a held-down clock
        if not clock_notes and neighbour:
            clock_notes = [f"same point, {neighbour}"]
        b_floor, n_floor = _read_floor(rb), _read_floor(rn)
        rows.append({
            **ident,
            "base_median_us": bt[0], "base_p20_us": bt[1], "base_p80_us": bt[2],
            "new_median_us": nt[0], "new_p20_us": nt[1], "new_p80_us": nt[2],
            "ratio": nt[0] / bt[0],
            "base_read_floor_us": b_floor, "new_read_floor_us": n_floor,
            "floor_ratio": (nt[0] / n_floor) / (bt[0] / b_floor) if b_floor and n_floor else None,
            "verdict": AMBIGUOUS if clock_notes else verdict(bt, nt, threshold),
            "clock_note": "; ".join(clock_notes) or None,
        })  # fmt: skip

    geomeans = []
    judged = [r for r in rows if r["verdict"] != AMBIGUOUS]
    for series in sorted({r["series"] for r in judged}):
        mine = [r for r in judged if r["series"] == series]
        gm = {side: tuple(_gm_rel(mine, side, q) for q in ("median_us", "p20_us", "p80_us")) for side in ("base", "new")}
        geomeans.append({
            "series": series,
            "kernel": mine[0]["kernel"], "bits": mine[0]["bits"], "operand": mine[0]["operand"],
            "baseline": mine[0]["baseline"],
            "num_points": len(mine),
            "ratio": gm["new"][0],
            "floor_ratio": (geomean(r["floor_ratio"] for r in mine)
                            if all(r["floor_ratio"] is not None for r in mine) else None),
            "base_p20_rel": gm["base"][1], "base_p80_rel": gm["base"][2],
            "new_p20_rel": gm["new"][1], "new_p80_rel": gm["new"][2],
            "verdict": verdict(gm["base"], gm["new"], threshold),
        })  # fmt: skip

    # the verdict and the gate are FOSCAR's: the most alarming verdict of any FOSCAR row or geomean; none where no
    # FOSCAR row matched though a run has some (a gate must not pass on the baselines alone). The baselines' rows are
    # judged and counted apart (baseline_verdict, counts["baseline_rows"]): a FlashInfer row that got slower says the
    # GPU or its software changed, not that FOSCAR regressed. Runs of baselines only are gated on them.
    foscar_runs = any(not x["baseline"] for x in rows + unmatched)
    gated = (lambda x: not x["baseline"]) if foscar_runs else (lambda x: True)
    own_rows, own_geomeans = [r for r in rows if gated(r)], [g for g in geomeans if gated(g)]
    others = [x for x in rows + geomeans if not gated(x)]
    counts = {v: sum(r["verdict"] == v for r in own_rows) for v in VERDICT_ORDER}
    gcounts = {v: sum(g["verdict"] == v for g in own_geomeans) for v in VERDICT_ORDER}
    bcounts = {v: sum(r["verdict"] == v for r in rows if not gated(r)) for v in VERDICT_ORDER}
    overall = overall_verdict(VERDICT_ORDER, [counts, gcounts], bool(own_rows))
    base_found = [v for v in VERDICT_ORDER if any(x["verdict"] == v for x in others)]
    return {
        "schema_version": SCHEMA_VERSION,
        "base": _run_info(base),
        "new": _run_info(new),
        "threshold": threshold,
        "verdict": overall,
        "baseline_verdict": base_found[0] if base_found else None,
        "regression": bool(counts["slower"] or gcounts["slower"]),
        "counts": {"rows": counts, "geomeans": gcounts, "baseline_rows": bcounts, "unmatched": len(unmatched)},
        "geomeans": geomeans,
        "rows": rows,
        "unmatched": unmatched,
        "notes": _notes(base, new),
    }


def to_json(obj: Any) -> str:
    """JSON text with NaN turned into ``null`` (strict JSON)."""

    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(obj), indent=2, allow_nan=False) + "\n"


def save_json(obj: Any, path: Path) -> None:
    """Write :func:`to_json` text to ``path`` (parents created).

    Raises:
        FoscarError: the file cannot be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_json(obj))
    except OSError as e:
        raise FoscarError(f"cannot write {path}: {e.strerror}") from None


def strict_failures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The unmatched rows that ``--strict`` fails on: those timed (measured) in one run only. A row untimed in both
    runs (skipped or failed in each: a point the kernel does not support) compares nothing and fails nothing.
    ``result``: a comparison of any kind; an unmatched row without ``one_sided`` counts."""
    return [u for u in result["unmatched"] if u.get("one_sided", True)]


def exit_code(result: dict[str, Any], strict: bool = False) -> int:
    """:data:`~bench.errors.EXIT_USAGE` (2) where no row matched (verdict :data:`NOTHING_COMPARED`; bench runs: no
    FOSCAR row, so a gate over them would pass without comparing anything of FOSCAR's); 1 for a regression (or, under
    ``strict``, a row timed in one run only: :func:`strict_failures`); else 0. ``result``: a comparison of any kind
    (bench, ablate, accuracy)."""
    if result["verdict"] == NOTHING_COMPARED:
        return EXIT_USAGE
    return EXIT_REGRESSION if result["regression"] or (strict and strict_failures(result)) else EXIT_OK


# ---------------------------------------------------------------------------
# matching


def _keyed(df: pd.DataFrame) -> dict[tuple, pd.Series]:
    out: dict[tuple, pd.Series] = {}
    for _, row in df.iterrows():
        key = match_key(row, MATCH_KEYS)
        if key in out:  # keep the timed one if a run holds the same row twice
            if _is_timed(out[key]) or not _is_timed(row):
                continue
        out[key] = row
    return out


def _held_points(rows: dict[tuple, pd.Series], side: str) -> dict[tuple, str]:
    """The points (:data:`CLOCK_POINT_KEYS`) of a run's rows (:func:`_keyed`: the rows compare keeps) where a
    row carries a clock note, each with the first such note as ``"<side> <kernel>: <note>"``."""
    out: dict[tuple, str] = {}
    for row in rows.values():
        if has_clock_note(row):
            out.setdefault(match_key(row, CLOCK_POINT_KEYS), f"{side} {row['kernel']}: {row['clock_note']}")
    return out


def _sort_key(key: tuple) -> tuple:
    return tuple((v is None, str(v) if isinstance(v, str) else v if v is not None else 0) for v in key)


def _is_timed(row: pd.Series) -> bool:
    return row["status"] in ("ok", "suspect") and is_finite(row["median_us"]) and float(row["median_us"]) > 0


def _identity(row: pd.Series) -> dict[str, Any]:
    ident = {k: cell(row[k]) for k in MATCH_KEYS}
    ident["series"] = series_label(row["kernel"], row["bits"], row["operand"])
    ident["point"] = row_point_label(row)
    ident["baseline"] = bool(row["is_baseline"])  # (a bool column in every loaded run: bench.results.to_frame)
    return ident


def _status(row: pd.Series | None) -> str | None:
    if row is None:
        return None
    return row["status"] if isinstance(row["status"], str) else "no status"


UNMATCHED_ROWS_SHOWN = 24  # more unmatched rows than this print as one line per series (JSON keeps them all)


def _unmatched_reason(rb, rn, b_timed: bool, n_timed: bool, other: dict[tuple, pd.Series], ref: pd.Series) -> str:
    """Why a row is unmatched; a row missing from one run says in which fields that run's
    nearest rows (:data:`NEAR_KEYS` equal) differ, e.g. ``not in new (new has page_size 64)``."""

    def why(row, name):
        if row is None:
            return f"not in {name}" + _nearest(ref, other, name)
        err = row["error"] if isinstance(row.get("error"), str) else ""
        return f"{_status(row)} in {name}" + (f" ({err})" if err else "")

    parts = [why(rb, "base") if not b_timed else None, why(rn, "new") if not n_timed else None]
    return "; ".join(p for p in parts if p)


def _nearest(ref: pd.Series, other: dict[tuple, pd.Series], name: str) -> str:
    """`` (<name> has page_size 64)``: the match keys in which the nearest row of ``other`` (the
    same :data:`NEAR_KEYS`, the fewest other keys differing) differs from ``ref``; ``""`` when
    there is none."""
    near = match_key(ref, NEAR_KEYS)
    best: list[str] | None = None
    for row in other.values():
        if match_key(row, NEAR_KEYS) != near:
            continue
        diff = [f"{k} {cell(row[k])}" for k in MATCH_KEYS if k not in NEAR_KEYS and cell(row[k]) != cell(ref[k])]
        if diff and (best is None or len(diff) < len(best)):
            best = diff
    return f" ({name} has {', '.join(best)})" if best else ""


def _gm_rel(rows: list[dict[str, Any]], side: str, q: str) -> float:
    vals = [r[f"{side}_{q}"] / r["base_median_us"] for r in rows]
    if not all(is_finite(v) and v > 0 for v in vals):
        return math.nan
    return geomean(vals)


def _read_floor(row: pd.Series) -> float | None:
    """The row's ``read_floor_us`` where it is a positive finite number (a run with ``--read-floor``), else ``None``."""
    x = _f(row.get("read_floor_us"))
    return x if x > 0 else None  # (NaN > 0 is False)


def _f(x: Any) -> float:
    return float(x) if is_finite(x) else math.nan


def _run_info(run: Run) -> dict[str, Any]:
    return {
        "path": str(run.path),
        "label": run.label,
        "gpu": run.gpu_name,
        "commit": run.commit,
        "date": run.meta.get("date"),
        "timing_mode": run.timing_mode,
        "hbm_ceiling_tbps": run.hbm_tbps,
    }


def _notes(base: Run, new: Run) -> list[str]:
    notes = []
    if base.gpu_name != new.gpu_name:
        notes.append(f"different GPUs: base {base.gpu_name}, new {new.gpu_name}")
    config_note = _config_note(base.meta.get("config"), new.meta.get("config"))
    if config_note:
        notes.append(config_note)
    if base.timing_mode != new.timing_mode:
        notes.append(f"different timing modes: base {base.timing_mode}, new {new.timing_mode}")
    if "interpreter" in (base.timing_mode, new.timing_mode):
        notes.append("interpreter timing: not a performance number")
    for run, name in ((base, "base"), (new, "new")):
        notes += [f"{name}: {n}" for n in run.notes if "meta.json" in n]
    return notes


# config fields that add results.csv columns and change no row's measurement (compare's notes name them apart)
COLUMNS_ONLY_FIELDS = ("read_floor",)


def _config_note(base: Any, new: Any) -> str | None:
    """``different configurations: page_size 16 -> 64, ...`` when both runs recorded a config
    (meta.json ``config``) and they differ; long values are named, not shown."""
    if not isinstance(base, dict) or not isinstance(new, dict) or base == new:
        return None
    from bench.resume import differing_fields

    parts, columns_only = [], []
    for k in differing_fields(base, new):
        if k in COLUMNS_ONLY_FIELDS:
            columns_only.append(k)
            continue
        b, n = base.get(k, "(absent)"), new.get(k, "(absent)")
        shown = f"{k} {b!r} -> {n!r}"
        parts.append(shown if len(shown) <= 60 else k)
    if not parts:
        return f"{', '.join(columns_only)} differs (it adds columns; the rows are measured the same way)"
    return ("different configurations: " + ", ".join(parts)
            + "; rows are matched on their workload (shape, format, page size, lengths, capacity), the others are "
            "listed as unmatched"
            + (f"; {', '.join(columns_only)} differs too (it adds columns only)" if columns_only else ""))  # fmt: skip


# ---------------------------------------------------------------------------
# output


def render(result: dict[str, Any], console: Console, show_all: bool = False) -> None:
    """Rich tables: geometric means, rows (FOSCAR's before the baselines', each most alarming first; ``same`` rows
    and the baselines' ``ambiguous`` ones only with ``show_all``), unmatched rows, then the verdict.

    Below :data:`FULL_TABLE_WIDTH` columns the tables are compact (no vertical rules, no "time" column, the rows'
    medians without their p20-p80 spreads), so that the ratio and the verdict stay whole down to 80 columns."""
    t = result["threshold"]
    compact = console.width < FULL_TABLE_WIDTH
    style = {"box": box.SIMPLE_HEAD, "pad_edge": False, "collapse_padding": True} if compact else {}
    console.print(
        f"base [bold]{result['base']['label']}[/] ({result['base']['gpu']}, {result['base']['commit']})  vs  "
        f"new [bold]{result['new']['label']}[/] ({result['new']['gpu']}, {result['new']['commit']}); "
        f"threshold {percent(t)}; ratio = new time / base time (lower is better)"
    )
    for note in result["notes"]:
        console.print(f"[yellow]note:[/] {note}")

    if not result["geomeans"]:
        console.print("no row timed in both runs: nothing to compare (the unmatched rows below say why)")
    gt = Table(title="Geometric mean per series", title_justify="left",
               caption="spreads: geometric means of p20 and p80 over the base median", **style)  # fmt: skip
    g_floor = any(g.get("floor_ratio") is not None for g in result["geomeans"])
    for col, just in (("series", "left"), ("points", "right"), ("ratio", "right"),
                      *((("time", "right"),) if not compact else ()), *((("vs floor", "right"),) if g_floor else ()),
                      ("base spread", "right"), ("new spread", "right"), ("verdict", "left")):  # fmt: skip
        # in a narrow terminal the series' names and the spreads wrap; the numbers and the verdict keep their width
        gt.add_column(col, justify=just, no_wrap=col not in ("series", "base spread", "new spread"), overflow="fold",
                      min_width=NUMBER_WIDTHS.get(col))  # fmt: skip
    for g in result["geomeans"]:
        change = (_change(g["ratio"]),) if not compact else ()
        gt.add_row(g["series"], str(g["num_points"]), f"{g['ratio']:.3f}", *change,
                   *((_ratio(g.get("floor_ratio")),) if g_floor else ()),
                   _rel(g["base_p20_rel"], g["base_p80_rel"]), _rel(g["new_p20_rel"], g["new_p80_rel"]),
                   _verdict(g["verdict"]))  # fmt: skip
    if result["geomeans"]:
        console.print(gt)

    # by default neither the rows within the threshold nor the baselines' ambiguous rows (never judged): FOSCAR's
    # rows first, each side most alarming first (ablate and accuracy rows have no baselines)
    shown = [r for r in result["rows"]
             if show_all or (r["verdict"] != "same" and not (r.get("baseline") and r["verdict"] == AMBIGUOUS))]
    n_same = sum(r["verdict"] == "same" for r in result["rows"])
    hidden = [f"{n_same} within ±{percent(t)} (same)"] if n_same and not show_all else []
    if len(result["rows"]) - len(shown) > n_same and not show_all:
        hidden.append(f"{len(result['rows']) - len(shown) - n_same} of the baselines' ambiguous")
    caption = "; ".join([*([f"rows not shown: {' and '.join(hidden)}; --all lists them"] if hidden else []),
                         *([f"medians only: a terminal of {FULL_TABLE_WIDTH} columns, or --format json, shows p20-p80"]
                           if compact else [])]) or None  # fmt: skip
    order = "FOSCAR's first, most alarming first" if any(r.get("baseline") for r in shown) else "most alarming first"
    rt = Table(title=f"Rows ({order})", title_justify="left", caption=caption, **style)
    r_floor = any(r.get("floor_ratio") is not None for r in shown)
    times = ("base us", "new us") if compact else ("base us (p20-p80)", "new us (p20-p80)")
    for col, just in (("series", "left"), ("point", "left"), ("cache", "left"), *((c, "right") for c in times),
                      ("ratio", "right"), *((("time", "right"),) if not compact else ()),
                      *((("vs floor", "right"),) if r_floor else ()), ("verdict", "left")):  # fmt: skip
        # the labels (and in the full table the times) wrap where the console is too narrow; the ratio, the change
        # and the verdict keep their width
        wraps = col in ("series", "point", "cache") or col.endswith("(p20-p80)")
        rt.add_column(col, justify=just, no_wrap=not wraps, overflow="fold", min_width=NUMBER_WIDTHS.get(col))
    us = (lambda med, lo, hi: f"{med:.1f}") if compact else _us  # the compact table: medians only
    for r in sorted(shown, key=lambda r: (bool(r.get("baseline")), VERDICT_ORDER.index(r["verdict"]),
                                          -abs(math.log(r["ratio"])))):  # fmt: skip
        rt.add_row(r["series"], r["point"], _cache_cell(r),
                   us(r["base_median_us"], r["base_p20_us"], r["base_p80_us"]),
                   us(r["new_median_us"], r["new_p20_us"], r["new_p80_us"]),
                   f"{r['ratio']:.3f}", *((_change(r["ratio"]),) if not compact else ()),
                   *((_ratio(r.get("floor_ratio")),) if r_floor else ()), _verdict(r["verdict"]))  # fmt: skip
    if shown:
        console.print(rt)
    ambiguous = [r for r in result["rows"] if r["verdict"] == AMBIGUOUS]
    if ambiguous:
        console.print(f"[magenta]ambiguous:[/] {len(ambiguous)} row(s) timed at a held-down GPU clock in base or new, "
                      f"or at a point where a row was (not judged, not in the geometric means); first: "
                      f"{ambiguous[0]['clock_note']}")  # fmt: skip
    elif result["rows"] and not shown:
        console.print(f"all {n_same} matched rows within ±{percent(t)} (same)")

    if result["unmatched"] and len(result["unmatched"]) > UNMATCHED_ROWS_SHOWN:
        # many (a run with new kernels or operand modes): one line per series and statuses
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for u in result["unmatched"]:
            groups.setdefault((u["series"], u["base_status"] or "-", u["new_status"] or "-"), []).append(u)
        ut = Table(title=f"Unmatched rows (not compared): {len(result['unmatched'])}, by series", title_justify="left")
        for col in ("series", "rows", "base", "new", "reason (first row)"):
            ut.add_column(col, overflow="ellipsis", no_wrap=True, max_width=70 if col.startswith("reason") else None)
        for (series, b, n), us in groups.items():
            ut.add_row(series, str(len(us)), b, n, us[0]["reason"])
        console.print(ut)
    elif result["unmatched"]:
        ut = Table(title="Unmatched rows (not compared)", title_justify="left")
        for col in ("series", "point", "cache", "base", "new", "reason"):
            ut.add_column(col, overflow="ellipsis", no_wrap=True, max_width=70 if col == "reason" else None)
        for u in result["unmatched"]:
            ut.add_row(u["series"], u["point"], _cache_cell(u),
                       u["base_status"] or "-", u["new_status"] or "-", u["reason"])  # fmt: skip
        console.print(ut)

    c = result["counts"]
    parts = ", ".join(f"{c['rows'][v]} {v}" for v in VERDICT_ORDER if c["rows"][v])
    summary = f"verdict: {_verdict(result['verdict'])} ({parts or 'no rows'}; {c['unmatched']} unmatched)"
    if result["regression"]:
        summary += " [bold red]REGRESSION[/]"
    if result["verdict"] == NOTHING_COMPARED:
        summary += NOTHING_COMPARED_NOTE
    b = c.get("baseline_rows") or {}
    if any(b.values()):
        bparts = ", ".join(f"{b[v]} {v}" for v in VERDICT_ORDER if b[v])
        summary += f"; baseline rows: {bparts}" + (
            " (not gating: the GPU, its clocks or the baseline's software changed between the runs?)"
            if result.get("baseline_verdict") in ("slower", "noisy") else " (not gating)")
    console.print(summary)
    if g_floor or r_floor:
        console.print("vs floor: the ratio with each run's time over its own read floor (foscar bench --read-floor); "
                      "shown, not judged")


def _verdict(v: str) -> str:
    return f"[{VERDICT_STYLE[v]}]{v}[/]"


def _cache_cell(r: dict[str, Any]) -> str:
    """The table's cache column: FOSCAR's cache (``int2``); a baseline row, which reads its own BF16 or FP8 cache, is
    timed once per FOSCAR bit width at a point: ``for int2``."""
    if r["cache_bits"] is None:
        return "-"
    return f"for int{r['cache_bits']}" if r.get("baseline") else f"int{r['cache_bits']}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _change(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _rel(lo: float, hi: float) -> str:
    return "-" if not (is_finite(lo) and is_finite(hi)) else f"{lo:.3f}-{hi:.3f}"


def _us(med: float, lo: float, hi: float) -> str:
    spread = f" ({lo:.1f}-{hi:.1f})" if is_finite(lo) and is_finite(hi) else ""
    return f"{med:.1f}{spread}"


# ---------------------------------------------------------------------------
# github-action-benchmark export


def export_gab(run: Run) -> list[dict[str, Any]]:
    """Timed rows as github-action-benchmark ``customSmallerIsBetter`` entries (median time in us).

    ``name`` is stable across runs of the same grid: series, point, cache (for the BF16
    baselines, which run once per cache bit width), heads, head_dim and group size.
    ``range`` is half the p20..p80 spread; ``extra`` carries the spread, TB/s,
    speed-up, error, status, GPU and commit.
    """
    entries = []
    for _, r in timed_rows(run.df).iterrows():
        series = series_label(r["kernel"], r["bits"], r["operand"])
        cache = f" (int{int(r['cache_bits'])} cache)" if bool(r["is_baseline"]) and pd.notna(r["cache_bits"]) else ""
        shape = f"{int(r['num_qo_heads'])}/{int(r['num_kv_heads'])} heads, d{int(r['head_dim'])}, g{int(r['group_size'])}"
        name = f"{series}{cache} {row_point_label(r)} [{shape}]"
        lo, hi = _f(r["p20_us"]), _f(r["p80_us"])
        extra = [f"p20-p80 {lo:.2f}-{hi:.2f} us" if is_finite(lo) and is_finite(hi) else "no spread recorded"]
        if is_finite(r["tbps"]):
            extra.append(f"{r['tbps']:.2f} TB/s")
        if is_finite(r["speedup_vs_flashinfer_bf16"]):
            extra.append(f"speed-up vs FlashInfer BF16 {r['speedup_vs_flashinfer_bf16']:.3f}x")
        if is_finite(r["speedup_vs_flashinfer_fp8"]):
            extra.append(f"speed-up vs FlashInfer FP8-KV {r['speedup_vs_flashinfer_fp8']:.3f}x")
        if is_finite(r["max_rel_err"]):
            extra.append(f"max_rel_err {r['max_rel_err']:.2e}")
        extra.append(f"status {r['status']}")
        extra.append(f"{run.gpu_name}, commit {run.commit}, timing {run.timing_mode or 'not recorded'}")
        entries.append({
            "name": name,
            "unit": "us",
            "value": float(r["median_us"]),
            "range": f"± {(hi - lo) / 2:.2f}" if is_finite(lo) and is_finite(hi) else "",
            "extra": "\n".join(extra),
        })  # fmt: skip
    return entries
