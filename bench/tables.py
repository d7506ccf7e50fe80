"""Rich tables: one per point while the sweep runs, and the geometric means at the end."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from bench.results import BASELINES, GRID_SUFFIXES
from bench.timing import INTERPRETER_TIMING, TIMING_LABELS

STATUS_STYLE = {"ok": "green", "failed": "red", "error": "red", "skipped": "yellow", "suspect": "magenta", "invalid": "red"}


def _num(x: Any, fmt: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return "-"
    return format(x, fmt)


def point_table(df: pd.DataFrame, title: str, hbm_tbps: float | None) -> Table:
    """One point's rows: time (p20-p80), TB/s, fraction of the HBM ceiling (and of the read floor, where measured),
    speed-ups vs FlashInfer BF16 and FP8-KV at their best (a column empty for the whole point is left out), error."""
    modes = set(df["timing_mode"].dropna())
    notes = [TIMING_LABELS[m] for m in sorted(modes) if m in TIMING_LABELS]
    if hbm_tbps:
        notes.append(f"SOL = TB/s / HBM ceiling {hbm_tbps:.2f} TB/s")
    if "floor_fraction" in df and df["floor_fraction"].notna().any():
        notes.append("floor = a plain read of the row's bytes, timed the same way / median (--read-floor)")
    checked = df["checked_rows"].dropna()
    if len(checked):
        title += f"  (checked rows: {checked.iloc[0]})"
    records = df.to_dict("records")
    columns: list[tuple[str, str, list[str]]] = [  # (header, justify, cells)
        ("kernel", "left", [r["kernel"] for r in records]),
        ("kv/op", "left", [r["kv_dtype"] + (f"/{r['operand']}" if isinstance(r["operand"], str) else "") for r in records]),
        ("status", "left", [_status(r["status"]) for r in records]),
        ("median us", "right", [_num(r["median_us"], ".1f") for r in records]),
        ("p20-p80 us", "right", [_spread(r) for r in records]),
        ("TB/s", "right", [_num(r["tbps"], ".2f") for r in records]),
        ("SOL", "right", [_num(r["sol_fraction"], ".0%") for r in records]),
        ("floor", "right", [_num(r.get("floor_fraction"), ".0%") for r in records]),
        ("vs FI BF16", "right", [_num(r["speedup_vs_flashinfer_bf16"], ".2f") for r in records]),
        ("vs FI FP8", "right", [_num(r["speedup_vs_flashinfer_fp8"], ".2f") for r in records]),
        ("rel err", "right", [_num(r["max_rel_err"], ".1e") for r in records]),
        ("note", "left", [r["error"] if isinstance(r["error"], str) else "" for r in records]),
    ]
    # drop measurement columns that are empty for the whole point (e.g. TB/s under the interpreter)
    columns = [c for c in columns if c[0] in ("kernel", "status") or any(v not in ("-", "") for v in c[2])]
    table = Table(title=title, caption="; ".join(notes) or None, title_justify="left")
    for header, justify, _ in columns:
        if header == "note":
            table.add_column(header, overflow="ellipsis", no_wrap=True, max_width=60)
        else:
            table.add_column(header, justify=justify, no_wrap=True)
    for i in range(len(records)):
        table.add_row(*(c[2][i] for c in columns))
    return table


def _status(status: Any) -> str:
    status = status if isinstance(status, str) else "-"
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/]" if style else status


def _spread(r: dict[str, Any]) -> str:
    if _num(r["p20_us"], ".1f") == "-":
        return "-"
    return f"{r['p20_us']:.1f}-{r['p80_us']:.1f}"


PIPE_WIDTH = 160  # columns of a console whose output goes to a file or pipe, unless COLUMNS says otherwise


def make_console(stderr: bool = False) -> Console:
    """A console that is wide enough for the tables also when output goes to a file or pipe: :data:`PIPE_WIDTH`
    columns there, or ``COLUMNS`` where it is set to a number (a terminal: its own width)."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    cols = os.environ.get("COLUMNS", "")
    return Console(stderr=stderr, width=int(cols) if cols.isdigit() and int(cols) > 0 else PIPE_WIDTH)


def summary_table(summary: dict[str, Any], interpreter: bool, baseline: str = "bf16", grid: str = "sweep") -> Table:
    """Geometric-mean speed-up per quantized kernel variant vs FlashInfer BF16 at its best
    (``baseline="bf16"``: ``summary["geomean_speedup"]``) or vs FlashInfer FP8-KV at its best
    (``baseline="fp8"``: ``summary["geomean_speedup_fp8"]``), with its 95% bootstrap interval
    over points (``geomean_ci95`` / ``geomean_ci95_fp8``) and the number of points; over the
    ``[sweep]`` grid (``grid="sweep"``) or the ``[[ragged]]`` grid (``grid="ragged"``: the
    keys with ``_ragged`` appended, :data:`bench.results.GRID_SUFFIXES`)."""
    spec = next((b for b in BASELINES if b.kind == baseline), None)
    if spec is None:
        raise ValueError(f"baseline: expected one of {[b.kind for b in BASELINES]}, got {baseline!r}")
    if grid not in GRID_SUFFIXES:
        raise ValueError(f"grid: expected one of {list(GRID_SUFFIXES)}, got {grid!r}")
    sfx = spec.summary_suffix + GRID_SUFFIXES[grid]
    notes = ["95% CI: bootstrap over points (1000 resamples, seed 0)"]
    if interpreter:
        notes.append(TIMING_LABELS[INTERPRETER_TIMING])
    where = "" if grid == "sweep" else ": ragged grid"
    if not any((summary.get("num_points" + sfx) or {}).values()):  # every cell "-": say why
        notes.append(f"no point has both a FOSCAR row and a {spec.title} row timed: no speed-up to take"
                     + (" (FlashInfer needs a CUDA GPU)" if interpreter else ""))
    table = Table(
        title=f"Geomean speed-up vs {spec.title} at its best{where}",
        caption="; ".join(notes),
        title_justify="left",
    )
    table.add_column("kernel/bits/operand")
    table.add_column("geomean speed-up", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("points", justify="right")
    cis = summary.get("geomean_ci95" + sfx) or {}
    counts = summary.get("num_points" + sfx) or {}
    for key, value in (summary.get("geomean_speedup" + sfx) or {}).items():
        ci = cis.get(key)
        table.add_row(
            key,
            "-" if value is None else f"{value:.3f}",
            "-" if not ci else f"{ci[0]:.3f}-{ci[1]:.3f}",
            str(counts.get(key, 0)),
        )
    return table


def summary_tables(summary: dict[str, Any], interpreter: bool) -> list[Table]:
    """The end-of-run tables: vs FlashInfer BF16 at its best, then vs FlashInfer FP8-KV at
    its best when the run had FP8 baseline rows (``summary["baseline_rows"]["fp8"] > 0``,
    whatever their status: a run whose FP8 rows all failed still shows the table, with ``-``);
    for the ``[sweep]`` grid, then the same for the ragged grid when the run had ragged rows
    (``summary["grid_rows"]["ragged"] > 0``). A run of the ragged grid alone shows only those."""
    rows = summary.get("grid_rows") or {"sweep": 1}
    grids = [g for g in GRID_SUFFIXES if rows.get(g, 0) > 0] or ["sweep"]
    kinds = ["bf16"] + (["fp8"] if (summary.get("baseline_rows") or {}).get("fp8", 0) > 0 else [])
    return [summary_table(summary, interpreter, kind, grid) for grid in grids for kind in kinds]
