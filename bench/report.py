"""``foscar report``: PNG plots and a ``report.md`` from one or more run directories.

Plots (matplotlib, drawn on ``Figure`` objects with the Agg canvas: no display needed):

* ``speedup.png``: speed-up vs FlashInfer BF16 at its best against context length
  (log2 axis), one line per FOSCAR variant (kernel/bits/operand), one panel per batch
  size, a dashed line at 1.0. Several runs are overlaid (line style per run).
* ``bandwidth.png``: achieved TB/s of every kernel, baselines included, one panel per
  batch size, bars grouped by context length, against the measured HBM ceiling
  ("speed of light"). The figure has a fixed width (:data:`FIGURE_WIDTH`); more
  points add panels (rows), never width.
* ``heatmap.png``: batch x context speed-up per FOSCAR variant, cells annotated.
* ``error_vs_speed.png``: ``max_rel_err`` (log) against speed-up per kernel, one
  panel per check tolerance, so that every row is drawn against its own tolerance
  (:meth:`bench.config.BenchConfig.tolerance_for`: FP8 rows 0.1, the others 0.02 by
  default).

Every series (kernel/bits/operand) has one colour in every plot; only series with a
timed row take a colour (a series that was only ever skipped takes none), and the
palette never wraps (:func:`series_colors`).

* ``ragged.png`` (runs with a ``[[ragged]]`` grid): speed-up vs FlashInfer BF16 at its
  best per ragged point (batch, context, workload, capacity), one bar per FOSCAR
  variant, the variant's ragged geometric mean in its legend entry.

The speed-up, bandwidth and heatmap plots are of the ``[sweep]`` grid's rows (a ragged
point can share batch and context with a sweep point); error vs speed shows every row.
With several runs the last four are drawn per run (``bandwidth-<run>.png``, ...).
Rows whose status is not ``ok``/``suspect`` are left out of every plot and listed in
the report's "Not measured" table; ``suspect`` rows (faster than the HBM ceiling
allows) are drawn, outlined in red, and listed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullLocator

from bench.config import BenchConfig
from bench.errors import FoscarError
from bench.plotting import FIGURE_WIDTH, save_png
from bench.plotting import palette as _palette
from bench.results import BASELINE_FP8_LABEL, BASELINE_LABEL
from bench.rundir import Run, context_label, point_label, row_point_label, series_label, timed_rows, untimed_rows
from bench.runfiles import make_dir
from bench.timing import INTERPRETER_TIMING, TIMING_LABELS

SPEEDUP_LABEL = "speed-up vs FlashInfer BF16 at its best (x)"
SUSPECT_COLOR = "#d62728"
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P"]


@dataclass
class Plot:
    """One written PNG and what the report says about it."""

    file: str  # name inside the output directory
    title: str
    caption: str


@dataclass
class Written:
    report: Path  # report.md
    plots: list[Path]  # the PNGs it embeds


def write_report(runs: list[Run], out: Path) -> Written:
    """Draw the plots and write ``report.md`` into ``out``.

    Raises:
        FoscarError: ``out`` cannot be created.
    """
    make_dir(out, "report directory")
    colors = series_colors(runs)
    multi = len(runs) > 1
    sections: list[tuple[str, list[Plot], list[str]]] = []  # (heading, plots, what could not be drawn)

    plots, empty = [], []
    fig = plot_speedup(runs, colors)
    if fig is None:
        empty.append("No speed-ups to plot: no FOSCAR row has both a time and a passing FlashInfer baseline.")
    else:
        plots.append(_save(fig, out, "speedup.png", "Speed-up vs FlashInfer BF16 at its best",
                           "Speed-up = time of the fastest FlashInfer BF16 kernel that passed its check at the point / FOSCAR time "
                           "(x, higher is better); x axis: context length in tokens (log2); one panel per batch size; "
                           "dashed line: parity."))  # fmt: skip
    sections.append(("Speed-up vs context length", plots, empty))

    for heading, draw, name, title, caption, why_empty in (
        ("Bandwidth against the HBM ceiling", plot_bandwidth, "bandwidth", "Achieved bandwidth",
         "Achieved bandwidth in TB/s (1e12 B/s; bytes one call must move / median time) per point and kernel; "
         "horizontal line: measured HBM ceiling (speed of light); right axis: fraction of it; black ticks (runs with "
         "--read-floor): each bar's read floor, a plain read of the same bytes timed the same way.",
         "No bandwidth to plot (interpreter timing or no timed rows)"),
        ("Speed-up heatmap", plot_heatmap, "heatmap", "Speed-up heatmap",
         "Speed-up vs FlashInfer BF16 at its best (x) per batch size (rows) and context length in tokens "
         "(columns), one panel per FOSCAR variant; blue: faster than the baseline, red: slower.",
         "No speed-ups to plot"),
        ("Accuracy next to speed", plot_error_vs_speed, "error_vs_speed", "Error vs speed",
         "max_rel_err (relative L2 error vs the fp64 reference, max over checked rows; log axis) against "
         "speed-up vs FlashInfer BF16 at its best (x) — or median time in us where there is no baseline; "
         "one point per (point, kernel).",
         "No timed rows with an error to plot"),
    ) + ((("Ragged grid", plot_ragged, "ragged", "Ragged grid",
           "Speed-up vs FlashInfer BF16 at its best (x) per point of the ragged grid: batch x context, the "
           "length distribution and, where larger than the context, the cache capacity (lengths in results.csv "
           "and meta.json); one bar per FOSCAR variant, its geometric mean over these points in the legend.",
           "No ragged-grid row with a speed-up to plot"),) if any(_ragged(r.df).size for r in runs) else ()
    ):  # fmt: skip
        plots, empty = [], []
        for run in runs:
            fig = draw(run, colors)
            suffix = f"-{_slug(run.label)}" if multi else ""
            where = f" ({run.label})" if multi else ""
            if fig is None:
                empty.append(f"{why_empty}{where}.")
            else:
                plots.append(_save(fig, out, f"{name}{suffix}.png", f"{title}{where}", caption))
        sections.append((heading, plots, empty))

    path = out / "report.md"
    path.write_text(render_markdown(runs, sections))
    return Written(path, [out / p.file for _, plots, _ in sections for p in plots])


def _save(fig: Figure, out: Path, name: str, title: str, caption: str) -> Plot:
    save_png(fig, out / name)
    return Plot(name, title, caption)


# ---------------------------------------------------------------------------
# plots


def series_colors(runs: list[Run]) -> dict[str, Any]:
    """One distinct color per series that has a timed row in any run (FOSCAR variants
    first, then baselines), the same in every plot.

    Series with no timed row (only skipped, failed, ...) appear in no plot and take no
    color. Red is kept for warnings (suspect rows, the error tolerance). The palette
    grows with the number of series (tab10, tab20, then tab20 + tab20b + tab20c, then
    evenly spaced hues) and never repeats a color.
    """
    quant, base = set(), set()
    for r in runs:
        t = timed_rows(r.df)
        for (k, b, o, is_base), _ in t.groupby(["kernel", "bits", "operand", "is_baseline"], dropna=False):
            (base if is_base else quant).add(series_label(k, b, o))
    ordered = sorted(quant) + sorted(base)
    palette = _palette(len(ordered))
    return {s: palette[i] for i, s in enumerate(ordered)}


def _with_series(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["series"] = [series_label(k, b, o) for k, b, o in zip(df["kernel"], df["bits"], df["operand"])]
    return df


def _sweep(df: pd.DataFrame) -> pd.DataFrame:
    """The ``[sweep]`` grid's rows (older runs: all rows)."""
    return df[df["grid"].fillna("sweep") == "sweep"]


def _ragged(df: pd.DataFrame) -> pd.DataFrame:
    """The ``[[ragged]]`` grid's rows."""
    return df[df["grid"] == "ragged"]


def _quant_speedups(run: Run) -> pd.DataFrame:
    t = _sweep(timed_rows(run.df))
    t = t[~t["is_baseline"] & t["speedup_vs_flashinfer_bf16"].notna()]
    return _with_series(t)


def plot_speedup(runs: list[Run], colors: dict[str, Any]) -> Figure | None:
    """Speed-up vs context (log2), one line per variant (and run), one panel per batch size."""
    data = [(i, r, _quant_speedups(r)) for i, r in enumerate(runs)]
    data = [d for d in data if not d[2].empty]
    if not data:
        return None
    batches = sorted({int(b) for _, _, t in data for b in t["batch"]})
    contexts = sorted({int(c) for _, _, t in data for c in t["context"]})
    ncols = min(4, len(batches))
    nrows = math.ceil(len(batches) / ncols)
    fig = Figure(figsize=(3.6 * ncols + 0.6, 3.0 * nrows + 1.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    handles: dict[str, Any] = {}
    any_suspect = False
    for ax, b in zip(axes.flat, batches):
        for i, run, t in data:
            for series, grp in t[t["batch"] == b].groupby("series", sort=True):
                g = grp.sort_values("context")
                label = series if len(runs) == 1 else f"{series} [{run.label}]"
                (line,) = ax.plot(g["context"].astype(float), g["speedup_vs_flashinfer_bf16"], color=colors[series],
                                  linestyle=LINESTYLES[i % len(LINESTYLES)], marker=MARKERS[i % len(MARKERS)],
                                  markersize=5, linewidth=1.6, label=label)  # fmt: skip
                handles.setdefault(label, line)
                sus = g[g["status"] == "suspect"]
                if len(sus):
                    any_suspect = True
                    ax.scatter(sus["context"].astype(float), sus["speedup_vs_flashinfer_bf16"], s=110,
                               facecolors="none", edgecolors=SUSPECT_COLOR, linewidths=1.5, zorder=5)  # fmt: skip
        ax.axhline(1.0, color="0.35", linestyle="--", linewidth=1.0, zorder=0)
        _context_axis(ax, contexts)
        ax.set_title(f"batch {b}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes.flat[len(batches):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(SPEEDUP_LABEL)
    lo, hi = _speedup_limits([t["speedup_vs_flashinfer_bf16"] for _, _, t in data])
    axes[0, 0].set_ylim(lo, hi)
    extra = [Line2D([], [], color="0.35", linestyle="--", label="FlashInfer BF16 at its best (1.0)")]
    if any_suspect:
        extra.append(_suspect_handle())
    items = list(handles.values()) + extra
    fig.legend(handles=items, loc="outside lower center", ncols=min(len(items), 3 if len(runs) > 1 else 4),
               fontsize=9, frameon=False)  # fmt: skip
    fig.suptitle("FOSCAR decode speed-up vs FlashInfer BF16 (higher is better)", fontsize=12)
    return fig


def _context_axis(ax, contexts: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks([float(c) for c in contexts])
    ax.set_xticklabels([context_label(c) for c in contexts])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(min(contexts) / 1.5, max(contexts) * 1.5)
    ax.set_xlabel("context length (tokens)")


def _speedup_limits(series: list[pd.Series]) -> tuple[float, float]:
    vals = pd.concat(series).astype(float)
    lo, hi = min(float(vals.min()), 1.0), max(float(vals.max()), 1.0)
    pad = max(0.05, 0.08 * (hi - lo))
    return max(0.0, lo - pad), hi + pad


def _suspect_handle() -> Line2D:
    return Line2D([], [], linestyle="none", marker="o", markersize=9, markerfacecolor="none",
                  markeredgecolor=SUSPECT_COLOR, label="suspect: faster than the HBM ceiling allows")  # fmt: skip


def plot_bandwidth(run: Run, colors: dict[str, Any]) -> Figure | None:
    """Achieved TB/s of the ``[sweep]`` grid against the measured HBM ceiling: one panel per batch size, bars
    grouped by context length, one bar per kernel; fixed width (:data:`FIGURE_WIDTH`). A run with read floors
    (``foscar bench --read-floor``) marks each bar's floor, the TB/s of a plain read of its bytes, with a black tick."""
    t = _sweep(timed_rows(run.df))
    t = _with_series(t[t["tbps"].notna()])
    if t.empty:
        return None
    t = t.assign(floor_tbps=t["bytes"].astype("float64") / (t["read_floor_us"] * 1e-6) / 1e12)
    # BF16 baselines run once per cache bit width at the same (batch, context): average those repeats
    agg = (
        t.groupby(["series", "is_baseline", "batch", "context"], sort=True)
        .agg(tbps=("tbps", "mean"), floor_tbps=("floor_tbps", "mean"),
             suspect=("status", lambda s: bool((s == "suspect").any())))
        .reset_index()
    )
    batches = sorted({int(b) for b in agg["batch"]})
    contexts = sorted({int(c) for c in agg["context"]})
    order = sorted(agg.loc[~agg["is_baseline"], "series"].unique()) + sorted(agg.loc[agg["is_baseline"], "series"].unique())
    width = 0.84 / len(order)
    hbm = run.hbm_tbps
    floors = agg["floor_tbps"].notna().any()
    top = max(float(agg["tbps"].max()), float(agg["floor_tbps"].max()) if floors else 0.0, hbm or 0.0) * 1.12
    fig = Figure(figsize=(FIGURE_WIDTH, 2.3 * len(batches) + 1.0), layout="constrained")
    axes = fig.subplots(len(batches), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    pos = {c: i for i, c in enumerate(contexts)}
    handles: dict[str, Any] = {}
    for ax, b in zip(axes, batches):
        for j, series in enumerate(order):
            g = agg[(agg["series"] == series) & (agg["batch"] == b)]
            if g.empty:
                continue
            xs = np.array([pos[int(c)] for c in g["context"]], dtype=float) + (j - (len(order) - 1) / 2) * width
            bars = ax.bar(xs, g["tbps"], width=width, color=colors[series], label=series)
            handles.setdefault(series, bars)
            fl = g["floor_tbps"].to_numpy()
            if floors and np.isfinite(fl).any():
                ax.hlines(fl, xs - width / 2, xs + width / 2, colors="black", linewidth=1.4)
            for bar, sus in zip(bars, g["suspect"]):
                if sus:
                    bar.set_edgecolor(SUSPECT_COLOR)
                    bar.set_linewidth(1.2)
                    bar.set_hatch("///")
        if hbm:
            ax.axhline(hbm, color="black", linestyle="-", linewidth=1.6)
            sol = ax.secondary_yaxis("right", functions=(lambda v: v / hbm, lambda f: f * hbm))
            sol.set_ylabel("of ceiling")
            sol.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
        ax.set_ylim(0, top)
        ax.set_xlim(-0.6, len(contexts) - 0.4)
        ax.set_ylabel("TB/s")
        ax.set_title(f"batch {b}", fontsize=10, loc="left")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[-1].set_xticks(np.arange(len(contexts)))
    axes[-1].set_xticklabels([f"context {context_label(c)}" for c in contexts])
    axes[-1].set_xlabel("context length (tokens); bars: one per kernel, in the legend's order")
    items = [handles[s] for s in order if s in handles]
    if hbm:
        items.append(Line2D([], [], color="black", linewidth=1.6, label=f"measured HBM ceiling {hbm:.2f} TB/s"))
    if floors:
        items.append(Line2D([], [], color="black", linewidth=1.4, label="tick: read floor (a plain read of the bytes)"))
    if agg["suspect"].any():
        items.append(Patch(facecolor="white", edgecolor=SUSPECT_COLOR, hatch="///", label="suspect: above the HBM ceiling"))
    fig.legend(handles=items, loc="outside right upper", fontsize=8, frameon=False)
    fig.suptitle(f"Achieved bandwidth (TB/s) vs HBM ceiling: {run.gpu_name}" + ("" if hbm else " (no ceiling recorded)"),
                 fontsize=11)  # fmt: skip
    return fig


def plot_heatmap(run: Run, colors: dict[str, Any]) -> Figure | None:
    """Batch x context speed-up per FOSCAR variant, annotated cells."""
    t = _quant_speedups(run)
    if t.empty:
        return None
    variants = sorted(t["series"].unique())
    batches = sorted({int(b) for b in t["batch"]})
    contexts = sorted({int(c) for c in t["context"]})
    vals = t["speedup_vs_flashinfer_bf16"].astype(float)
    d = max(float(np.abs(np.log(vals)).max()), math.log(1.05))
    norm = TwoSlopeNorm(vcenter=1.0, vmin=math.exp(-d), vmax=math.exp(d))
    ncols = min(3, len(variants))
    nrows = math.ceil(len(variants) / ncols)
    cell_w, cell_h = 0.95, 0.55
    fig = Figure(
        figsize=(ncols * (len(contexts) * cell_w + 1.3) + 1.4, max(3.0, nrows * (len(batches) * cell_h + 1.2) + 0.6)),
        layout="constrained",
    )
    axes = fig.subplots(nrows, ncols, squeeze=False)
    im = None
    for ax, variant in zip(axes.flat, variants):
        g = t[t["series"] == variant]
        grid = np.full((len(batches), len(contexts)), np.nan)
        suspect = np.zeros_like(grid, dtype=bool)
        for _, r in g.iterrows():
            i, j = batches.index(int(r["batch"])), contexts.index(int(r["context"]))
            grid[i, j] = r["speedup_vs_flashinfer_bf16"]
            suspect[i, j] = r["status"] == "suspect"
        im = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu", norm=norm, aspect="auto")
        ax.set_facecolor("0.85")
        for i in range(len(batches)):
            for j in range(len(contexts)):
                v = grid[i, j]
                if np.isnan(v):
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=9, color="0.3")
                    continue
                dark = abs(float(norm(v)) - 0.5) > 0.32
                ax.text(j, i, f"{v:.2f}" + ("*" if suspect[i, j] else ""), ha="center", va="center", fontsize=10,
                        color="white" if dark else "black")  # fmt: skip
        ax.set_xticks(range(len(contexts)))
        ax.set_xticklabels([context_label(c) for c in contexts])
        ax.set_yticks(range(len(batches)))
        ax.set_yticklabels([str(b) for b in batches])
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("batch size")
        ax.set_title(variant, fontsize=10)
    for ax in axes.flat[len(variants):]:
        ax.set_visible(False)
    fig.colorbar(im, ax=axes, label="speed-up (x)", shrink=0.9)
    suptitle = "Speed-up vs FlashInfer BF16 at its best (x, higher is better)"
    if (t["status"] == "suspect").any():
        suptitle += "  (* suspect row)"
    fig.suptitle(suptitle, fontsize=11)
    return fig


def row_tolerances(run: Run, df: pd.DataFrame) -> pd.Series:
    """Each row's check tolerance and the config key it comes from, ``"<value>|<key>"``
    (:meth:`bench.config.BenchConfig.tolerance_for` with the run's recorded config;
    keys a run did not record take the defaults)."""
    recorded = run.meta.get("config") or {}
    fields = {f for f in BenchConfig.__dataclass_fields__ if f.startswith("tolerance")}
    cfg = BenchConfig(**{k: v for k, v in recorded.items() if k in fields and isinstance(v, (int, float))})
    kv = df["kv_dtype"] if "kv_dtype" in df.columns else pd.Series(None, index=df.index)
    out = []
    for dtype, op in zip(kv, df["operand"]):
        tol, key = cfg.tolerance_for(dtype if isinstance(dtype, str) else None, op if isinstance(op, str) else None)
        out.append(f"{tol:g}|{key}")
    return pd.Series(out, index=df.index)


def plot_ragged(run: Run, colors: dict[str, Any]) -> Figure | None:
    """Speed-up vs FlashInfer BF16 at its best per ragged-grid point, one bar per FOSCAR variant."""
    t = _ragged(timed_rows(run.df))
    t = _with_series(t[~t["is_baseline"] & t["speedup_vs_flashinfer_bf16"].notna()])
    if t.empty:
        return None
    t = t.assign(point=[row_point_label(r) for _, r in t.iterrows()])
    order = list(dict.fromkeys(t.sort_values(["cache_bits", "batch", "context"], kind="stable")["point"]))
    variants = sorted(t["series"].unique())
    width = 0.84 / len(variants)
    fig = Figure(figsize=(min(16.0, max(8.0, 0.9 * len(order) + 0.25 * len(order) * len(variants) + 3.0)), 5.2),
                 layout="constrained")  # fmt: skip
    ax = fig.subplots()
    pos = {p: i for i, p in enumerate(order)}
    summary = run.summary.get("geomean_speedup_ragged") or {}
    for j, series in enumerate(variants):
        g = t[t["series"] == series]
        xs = np.array([pos[p] for p in g["point"]], dtype=float) + (j - (len(variants) - 1) / 2) * width
        gm = summary.get(series)
        label = series + (f" (geomean {gm:.2f}x)" if isinstance(gm, (int, float)) else "")
        bars = ax.bar(xs, g["speedup_vs_flashinfer_bf16"], width=width, color=colors[series], label=label)
        for bar, status in zip(bars, g["status"]):
            if status == "suspect":
                bar.set_edgecolor(SUSPECT_COLOR)
                bar.set_hatch("///")
    ax.axhline(1.0, color="0.35", linestyle="--", linewidth=1.0)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=30 if len(order) > 4 else 0, ha="right" if len(order) > 4 else "center",
                       fontsize=9)  # fmt: skip
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel(SPEEDUP_LABEL)
    ax.set_xlabel("point: batch x context, workload (in <capacity>: a cache larger than the context)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.35", linestyle="--", label="FlashInfer BF16 at its best (1.0)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3), fontsize=9, frameon=False)
    fig.suptitle(f"Ragged grid: speed-up vs FlashInfer BF16 at its best, higher is better ({run.gpu_name})",
                 fontsize=11)  # fmt: skip
    return fig


def plot_error_vs_speed(run: Run, colors: dict[str, Any]) -> Figure | None:
    """max_rel_err (log) against speed-up (or median time without a baseline), one color per
    kernel, one panel per check tolerance: each row drawn against its own tolerance."""
    t = timed_rows(run.df)
    t = _with_series(t[t["max_rel_err"].notna()])
    if t.empty:
        return None
    use_speedup = t["speedup_vs_flashinfer_bf16"].notna().any()
    xcol = "speedup_vs_flashinfer_bf16" if use_speedup else "median_us"
    t = t[t[xcol].notna()]
    if t.empty:
        return None
    t = t.assign(tolerance=row_tolerances(run, t))
    groups = sorted(t["tolerance"].unique(), key=lambda s: float(s.split("|")[0]))
    floor = 1e-9  # an exact match would sit at -inf on the log axis
    fig = Figure(figsize=(4.6 * len(groups) + 3.4, 4.6), layout="constrained")
    axes = fig.subplots(1, len(groups), squeeze=False, sharey=True)[0]
    order = sorted(t.loc[~t["is_baseline"], "series"].unique()) + sorted(t.loc[t["is_baseline"], "series"].unique())
    marker = {s: MARKERS[k % len(MARKERS)] for k, s in enumerate(order)}
    handles: dict[str, Any] = {}
    for ax, group in zip(axes, groups):
        tol_value, tol_key = group.split("|")
        tol = float(tol_value)
        tg = t[t["tolerance"] == group]
        for series in order:
            g = tg[tg["series"] == series]
            if g.empty:
                continue
            handles.setdefault(series, ax.scatter(g[xcol], g["max_rel_err"].clip(lower=floor), color=colors[series],
                                                  marker=marker[series], s=36, alpha=0.85, label=series, zorder=3))
            sus = g[g["status"] == "suspect"]
            if len(sus):
                ax.scatter(sus[xcol], sus["max_rel_err"].clip(lower=floor), s=110, facecolors="none",
                           edgecolors=SUSPECT_COLOR, linewidths=1.3, zorder=4)  # fmt: skip
        ax.axhline(tol, color=SUSPECT_COLOR, linestyle="--", linewidth=1.0)
        ax.set_title(f"checked against {tol_key} = {tol:g}", fontsize=10)
        if use_speedup:
            ax.axvline(1.0, color="0.35", linestyle=":", linewidth=1.0)
            ax.set_xlabel("speed-up vs FlashInfer BF16 (x)")
        else:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(FuncFormatter(_minor_log_label))
            ax.set_xlabel("median time (us), lower is better")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_yscale("log")
    top = max(float(t["max_rel_err"].max()), max(float(g.split("|")[0]) for g in groups))
    bottom = max(float(t["max_rel_err"].clip(lower=floor).min()), floor)
    axes[0].set_ylim(bottom / 1.5, top * 1.5)
    axes[0].set_ylabel("max_rel_err vs fp64 reference (log)")
    items = [handles[s] for s in order if s in handles]
    items.append(Line2D([], [], color=SUSPECT_COLOR, linestyle="--", label="the panel's check tolerance"))
    if use_speedup:
        items.append(Line2D([], [], color="0.35", linestyle=":", label="parity with FlashInfer BF16"))
    if (t["status"] == "suspect").any():
        items.append(_suspect_handle())
    fig.legend(handles=items, loc="outside right upper", fontsize=9, frameon=False)
    title = f"Accuracy next to speed: {run.gpu_name}" + (" (x: higher is better)" if use_speedup else "")
    if run.timing_mode == INTERPRETER_TIMING:
        title += "\n(interpreter timing: not a performance number)"
    fig.suptitle(title, fontsize=11)
    return fig


def _minor_log_label(v: float, _pos: Any) -> str:
    """Label the 2x, 3x and 5x minor ticks of a log axis (a short axis has few major ticks)."""
    if v <= 0:
        return ""
    lead = round(v / 10 ** math.floor(math.log10(v)), 6)
    return f"{v:g}" if lead in (2, 3, 5) else ""


# ---------------------------------------------------------------------------
# report.md


def render_markdown(runs: list[Run], sections: list[tuple[str, list[Plot], list[str]]]) -> str:
    """The report: run headers, geomean table, plots with captions, not-measured and suspect rows."""
    lines = ["# FOSCAR benchmark report", ""]
    lines.append(f"Baseline: {BASELINE_LABEL}.")
    if any(_has_fp8(r) for r in runs):
        lines.append(f"Second baseline: {BASELINE_FP8_LABEL}.")
    lines.append("")
    for run in runs:
        lines += _run_header(run, len(runs) > 1)
    lines += ["## Geometric-mean speed-ups", ""]
    lines += _geomean_table(runs)
    for heading, plots, empty in sections:
        lines += [f"## {heading}", ""]
        for p in plots:
            lines += [f"![{p.title}]({p.file})", "", f"*{p.caption}*", ""]
        for e in empty:
            lines += [e, ""]
    lines += _row_table(
        runs,
        "Not measured",
        "Rows with a status other than ok/suspect: left out of every plot and of the geometric means.",
        lambda df: untimed_rows(df),
        "Every row was timed.",
    )
    lines += _row_table(
        runs,
        "Suspect rows",
        "Timed faster than the measured HBM ceiling allows: a measurement problem. Drawn (outlined in red) but "
        "left out of the geometric means; as baselines they still count (they can only lower FOSCAR's speed-ups).",
        lambda df: df[df["status"] == "suspect"],
        "None.",
    )
    return "\n".join(lines).rstrip() + "\n"


def _run_header(run: Run, multi: bool) -> list[str]:
    meta = run.meta
    gpu = meta.get("gpu") or {}
    versions = meta.get("versions") or {}
    heading = f"## Run `{run.label}`" if multi else f"Run `{run.label}`"
    gpu_bits = [f"{gpu['sm_count']} SMs" if gpu.get("sm_count") else None,
                f"sm {gpu['compute_capability']}" if gpu.get("compute_capability") else None,
                f"driver {gpu['driver']}" if gpu.get("driver") else None]  # fmt: skip
    gpu_extra = ", ".join(b for b in gpu_bits if b)
    hbm = run.hbm_tbps
    hbm_text = f"{hbm:.2f} TB/s" if hbm else "not measured"
    if hbm and meta.get("hbm_ceiling_method"):
        hbm_text += f" ({meta['hbm_ceiling_method']})"
    timing = meta.get("timing") or TIMING_LABELS.get(run.timing_mode or "", run.timing_mode or "not recorded")
    vers = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    counts = run.df["status"].fillna("no status").value_counts()
    rows = [
        ("GPU", run.gpu_name + (f" ({gpu_extra})" if gpu_extra else "")),
        ("date", meta.get("date") or "not recorded"),
        ("git commit", run.commit),
        ("command", f"`{meta['command']}`" if meta.get("command") else "not recorded"),
        ("HBM ceiling", hbm_text),
        ("timing", timing),
        ("versions", vers or "not recorded"),
        ("rows", ", ".join(f"{int(n)} {s}" for s, n in counts.items())),
        ("directory", f"`{run.path}`"),
    ]
    out = [heading, "", "| | |", "|---|---|"]
    out += [f"| {k} | {_cell(v)} |" for k, v in rows]
    out.append("")
    if run.timing_mode == INTERPRETER_TIMING:
        out += [f"**{TIMING_LABELS[INTERPRETER_TIMING]}**: the times and speed-ups below are not performance "
                "numbers.", ""]  # fmt: skip
    for note in run.notes:
        out += [f"Note: {note}.", ""]
    return out


def _has_fp8(run: Run) -> bool:
    """Whether the run had FlashInfer FP8-KV baseline rows (summary.json ``baseline_rows``; older runs: no)."""
    return (run.summary.get("baseline_rows") or {}).get("fp8", 0) > 0


def _geomean_table(runs: list[Run]) -> list[str]:
    multi = len(runs) > 1
    fp8 = any(_has_fp8(r) for r in runs)
    bases = sorted({b for r in runs for per in (r.summary.get("geomean_speedup_vs") or {}).values() for b in per})
    ragged = any((r.summary.get("grid_rows") or {}).get("ragged", 0) > 0 for r in runs)
    head = (["run"] if multi else []) + ["variant", "vs FlashInfer BF16 at its best (x)", "points"]
    if fp8:
        head += ["vs FlashInfer FP8-KV at its best (x, points)"]
    if ragged:
        head += ["ragged grid: vs FlashInfer BF16 at its best (x, points)"]
    head += [f"vs {b} (x, points)" for b in bases]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    any_row = False
    for r in runs:
        gm = r.summary.get("geomean_speedup") or {}
        if ragged:  # variants that ran only in the ragged grid get a line too
            gm = {**gm, **{k: gm.get(k) for k in (r.summary.get("geomean_speedup_ragged") or {})}}
        for key, value in gm.items():
            any_row = True
            cells = ([f"`{r.label}`"] if multi else []) + [f"`{key}`", _fmt(value, ".3f"),
                                                           str((r.summary.get("num_points") or {}).get(key, "-"))]  # fmt: skip
            if fp8:
                v8 = (r.summary.get("geomean_speedup_fp8") or {}).get(key)
                n8 = (r.summary.get("num_points_fp8") or {}).get(key, 0)
                cells.append(f"{_fmt(v8, '.3f')} ({n8})" if _has_fp8(r) else "- (not run)")
            if ragged:
                vr = (r.summary.get("geomean_speedup_ragged") or {}).get(key)
                nr = (r.summary.get("num_points_ragged") or {}).get(key, 0)
                cells.append(f"{_fmt(vr, '.3f')} ({nr})")
            per = (r.summary.get("geomean_speedup_vs") or {}).get(key) or {}
            for b in bases:
                e = per.get(b) or {}
                cells.append(f"{_fmt(e.get('geomean_speedup'), '.3f')} ({e.get('num_points', 0)})")
            out.append("| " + " | ".join(cells) + " |")
    if not any_row:
        return ["No quantized kernel variant in the summary.", ""]
    out += ["", "*Geometric mean over the points where the variant and the baseline both passed (status ok); "
            "x = baseline time / FOSCAR time, higher is better."
            + (" The first columns are over the [sweep] grid, the ragged column over the [[ragged]] grid.*"
               if ragged else "*"), ""]  # fmt: skip
    return out


def _row_table(runs: list[Run], heading: str, intro: str, select, none_text: str) -> list[str]:
    multi = len(runs) > 1
    out = [f"## {heading}", "", intro, ""]
    head = (["run"] if multi else []) + ["kernel", "point", "cache", "status", "error"]
    body = []
    for r in runs:
        sel = select(r.df)
        for _, row in sel.iterrows():
            cache = f"int{int(row['cache_bits'])}" if pd.notna(row["cache_bits"]) else "-"
            cells = ([f"`{r.label}`"] if multi else []) + [
                f"`{series_label(row['kernel'], row['bits'], row['operand'])}`",
                row_point_label(row),
                cache,
                str(row["status"]) if isinstance(row["status"], str) else "no status",
                _cell(row["error"] if isinstance(row["error"], str) else ""),
            ]
            body.append("| " + " | ".join(cells) + " |")
    if not body:
        return out + [none_text, ""]
    return out + ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + body + [""]


def _cell(text: Any, limit: int = 240) -> str:
    s = " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _fmt(x: Any, spec: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "run"
