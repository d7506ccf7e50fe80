"""Plots and markdown of a ``foscar ablate`` run (its own ``ablate.md``, and ``foscar report``'s ``report.md``).

* ``ablation.png``: per axis (one panel each, three per row), the geometric-mean
  speed-up of every setting over the axis' reference, one bar per cache bit width,
  whiskers from the smallest to the largest per-point speed-up.
* ``ablation_points.png``: per axis, every point's speed-up over the reference, one
  bar per setting (one colour per setting, the same in every panel).

Both have the fixed width :data:`bench.plotting.FIGURE_WIDTH`; more axes add rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from bench.ablate_grid import COLUMNS, KIND, add_reference_speedups, summarize_ablation
from bench.errors import FoscarError
from bench.plotting import FIGURE_WIDTH, palette, save_png
from bench.runfiles import make_dir, read_json_if_present

PANELS_PER_ROW = 3
SPEEDUP_LABEL = "speed-up vs the axis' reference (x)"


@dataclass
class AblationRun:
    """An ablation run directory, read back."""

    path: Path
    df: pd.DataFrame  # results.csv, every column of :data:`bench.ablate_grid.COLUMNS` (older runs: missing ones empty)
    meta: dict[str, Any]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def read_ablation(path: Path) -> AblationRun:
    """Read an ablation run directory (``results.csv``; ``meta.json`` and ``summary.json`` if there).

    A missing ``summary.json`` is recomputed from the rows (a note says so).

    Raises:
        FoscarError: no readable ``results.csv``, or one without the ablation's columns.
    """
    path = Path(path)
    try:
        df = pd.read_csv(path / "results.csv")
    except (OSError, ValueError) as e:
        raise FoscarError(f"{path}: cannot read results.csv ({e})") from None
    missing = [c for c in ("axis", "setting", "is_reference", "bits", "batch", "context", "median_us", "status")
               if c not in df.columns]  # fmt: skip
    if missing:
        raise FoscarError(f"{path / 'results.csv'} lacks the column(s) {', '.join(missing)}; is it a `foscar ablate` run?")
    df = df.reindex(columns=COLUMNS)
    df["is_reference"] = df["is_reference"].astype(str).str.lower().eq("true")
    notes = []
    meta = read_json_if_present(path / "meta.json", notes)
    summary = read_json_if_present(path / "summary.json", notes)
    if not summary.get("ablation"):
        if df["speedup_vs_reference"].isna().all():
            df = add_reference_speedups(df)
        summary = summarize_ablation(df)
        notes.append("geometric means recomputed from results.csv")
    return AblationRun(path, df, meta, summary, notes)


def _panels(n: int, row_height: float) -> tuple[Figure, list[Any]]:
    ncols = min(PANELS_PER_ROW, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(FIGURE_WIDTH, row_height * nrows + 1.2), layout="constrained")
    axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def plot_geomeans(summary: dict[str, Any]) -> Figure | None:
    """Geometric-mean speed-up per setting over its axis' reference (one panel per axis, one
    colour per bit width, whiskers min..max over points); ``None`` when nothing was timed."""
    axes_data = summary.get("ablation") or {}
    if not axes_data:
        return None
    bits_keys = sorted({b for by_bits in axes_data.values() for b in by_bits})
    colors = dict(zip(bits_keys, palette(len(bits_keys))))
    fig, axes = _panels(len(axes_data), 3.4)
    for ax, (axis, by_bits) in zip(axes, axes_data.items()):
        settings = list(dict.fromkeys(s for b in sorted(by_bits) for s in by_bits[b]))
        width = 0.8 / max(len(bits_keys), 1)
        for i, b in enumerate(bits_keys):
            got = [(j, by_bits[b][s]) for j, s in enumerate(settings) if s in by_bits.get(b, {})]
            if not got:
                continue
            xs = [j + (i - (len(bits_keys) - 1) / 2) * width for j, _ in got]
            ys = [v["geomean_speedup"] for _, v in got]
            # max(0, .): a single point's geomean can differ from it by an ulp
            lo = [max(0.0, v["geomean_speedup"] - v["min"]) for _, v in got]
            hi = [max(0.0, v["max"] - v["geomean_speedup"]) for _, v in got]
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, color=colors[b], label=b)
        ax.axhline(1.0, color="0.35", ls="--", lw=1)
        ax.set_xticks(range(len(settings)), settings, fontsize=9)
        ax.set_title(f"{axis} (reference: {(summary.get('reference') or {}).get(axis, '?')})", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    for ax in axes[:: min(PANELS_PER_ROW, len(axes))]:
        ax.set_ylabel(SPEEDUP_LABEL)
    handles = [Line2D([], [], color=colors[b], lw=8, label=b) for b in bits_keys]
    handles.append(Line2D([], [], color="0.35", ls="--", label="the reference (1.0)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=9, frameon=False)
    fig.suptitle("foscar ablate: geometric mean over points, higher is better; whiskers: min-max over points",
                 fontsize=11)  # fmt: skip
    return fig


def _point_label(r: Any) -> str:
    c = int(r["context"])
    ctx = f"{c // 1024}K" if c >= 1024 and c % 1024 == 0 else str(c)
    return f"b{int(r['batch'])} x {ctx} int{int(r['bits'])}"


def plot_points(df: pd.DataFrame) -> Figure | None:
    """Every point's speed-up over its axis' reference: one panel per axis, one bar per
    non-reference setting (one colour per setting); ``None`` when no speed-up was measured."""
    t = df[(df["status"] == "ok") & df["speedup_vs_reference"].notna() & ~df["is_reference"]]
    if t.empty:
        return None
    t = t.assign(point=[_point_label(r) for _, r in t.iterrows()], series=t["axis"] + ": " + t["setting"])
    series = list(dict.fromkeys(t["series"]))
    colors = dict(zip(series, palette(len(series))))
    axes_names = list(dict.fromkeys(t["axis"]))
    fig, axes = _panels(len(axes_names), 3.2)
    handles: dict[str, Any] = {}
    for ax, axis in zip(axes, axes_names):
        g = t[t["axis"] == axis].sort_values(["bits", "batch", "context"], kind="stable")
        points = list(dict.fromkeys(g["point"]))
        names = list(dict.fromkeys(g["series"]))
        width = 0.84 / len(names)
        for j, s in enumerate(names):
            gs = g[g["series"] == s]
            xs = np.array([points.index(p) for p in gs["point"]], dtype=float) + (j - (len(names) - 1) / 2) * width
            handles.setdefault(s, ax.bar(xs, gs["speedup_vs_reference"].astype(float), width, color=colors[s], label=s))
        ax.axhline(1.0, color="0.35", ls="--", lw=1)
        ax.set_xticks(range(len(points)), points, fontsize=8, rotation=35, ha="right", rotation_mode="anchor")
        ax.set_title(axis, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    for ax in axes[:: min(PANELS_PER_ROW, len(axes))]:
        ax.set_ylabel(SPEEDUP_LABEL)
    fig.legend(handles=list(handles.values()), loc="outside lower center", ncols=min(4, len(handles)), fontsize=9,
               frameon=False)  # fmt: skip
    fig.suptitle("foscar ablate: speed-up of each setting over its axis' reference per point (higher is better)",
                 fontsize=11)  # fmt: skip
    return fig


PLOTS = (
    ("ablation.png", "Geometric-mean speed-up per setting",
     "Bars: geometric-mean speed-up of each setting over its axis' reference (x = reference time / setting time, "
     "higher is better), one bar per cache bit width; whiskers: smallest and largest per-point speed-up."),
    ("ablation_points.png", "Speed-up per point",
     "Each point's speed-up of each setting over its axis' reference (x, higher is better); point: batch x context, "
     "cache bits."),
)  # fmt: skip


def write_ablation_report(out: Path, run: AblationRun, md_name: str = "report.md") -> list[Path]:
    """Draw :data:`PLOTS` and write the markdown (``md_name``) into ``out``; return the files written.

    Raises:
        FoscarError: ``out`` cannot be created.
    """
    make_dir(out, "report directory")
    drawn, empty, written = [], [], []
    for (name, title, caption), fig in zip(PLOTS, (plot_geomeans(run.summary), plot_points(run.df))):
        if fig is None:
            empty.append(f"{title}: nothing to plot (no setting timed next to its reference).")
            continue
        save_png(fig, out / name)
        written.append(out / name)
        drawn.append((name, title, caption))
    md = out / md_name
    md.write_text(render_markdown(run, drawn, empty))
    return [*written, md]


def render_markdown(run: AblationRun, drawn: list[tuple[str, str, str]], empty: list[str]) -> str:
    """The ablation report: the run, the geometric-mean table, the plots, the rows not measured."""
    meta, summary, df = run.meta, run.summary, run.df
    gpu = (meta.get("gpu") or {}).get("name") if isinstance(meta.get("gpu"), dict) else meta.get("gpu")
    git = meta.get("git") or {}
    lines = ["# foscar ablate", ""]
    info = [
        ("kind", KIND),
        ("device", gpu or ("CPU (Triton interpreter)" if meta.get("triton_interpreter") else "not recorded")),
        ("date", meta.get("date") or "not recorded"),
        ("git commit", (git.get("commit") or "not recorded") + (" (dirty)" if git.get("dirty") else "")),
        ("command", f"`{meta['command']}`" if meta.get("command") else "not recorded"),
        ("timing", meta.get("timing") or "not recorded"),
        ("directory", f"`{run.path}`"),
    ]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in info] + [""]
    lines += [f"Note: {n}." for n in run.notes] + ([""] if run.notes else [])
    lines += ["| axis | bits | setting | geomean speed-up vs reference (x) | min | max | points |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for axis, by_bits in (summary.get("ablation") or {}).items():
        for b, settings in by_bits.items():
            for s, v in settings.items():
                lines.append(f"| {axis} | {b} | {s} | {v['geomean_speedup']:.3f} | {v['min']:.3f} | {v['max']:.3f} | "
                             f"{v['points']} |")  # fmt: skip
    for name, title, caption in drawn:
        lines += ["", f"## {title}", "", f"![{title}]({name})", "", f"*{caption}*"]
    lines += [f"\n{e}" for e in empty]
    skipped = df[df["status"] != "ok"]
    if not skipped.empty:
        lines += ["", "## Not measured", ""]
        lines += [f"- {r.axis}/{r.setting} int{r.bits} b{r.batch} x {r.context}: {r.status} ({r.error})"
                  for r in skipped.itertuples()]  # fmt: skip
    return "\n".join(lines) + "\n"
