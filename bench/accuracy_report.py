"""Tables, plots and ``accuracy.md`` for a ``foscar accuracy`` run directory.

The run writes them next to its results (``accuracy.md``); ``foscar report RUN`` redraws
them with a ``report.md`` (:mod:`bench.study`). Figures have a fixed width
(:data:`bench.plotting.FIGURE_WIDTH`): more data kinds (a ``--kv-file`` run has one per
layer) add rows of panels, :data:`PANELS_PER_ROW` per row.

* ``accuracy_error.png``: quantization error by data kind (panels), group size (x)
  and bits x layout (lines): relative L2 error vs exact BF16 attention (top row)
  and attention-probability KL (bottom row); no rotation; the ``fp64-dequant`` rows.
* ``accuracy_rotation.png``: the same error without and with the randomized
  Hadamard rotation, per bits x group size, quantized layout, gain factor on top.
* ``accuracy_kernels.png``: each kernel's own error (vs the fp64 reference on the
  cache it reads) over all configurations, against the tolerance.
* ``accuracy.md``: the run, the definitions, headline tables, the plots.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter
from rich.table import Table

from bench.accuracy_grid import COLUMN_DOCS, PLAIN_LAYOUT, REFERENCE_VARIANT, TOLERANCE, Grid
from bench.plotting import FIGURE_WIDTH, save_png

PANELS_PER_ROW = 4  # data kinds per row: a --kv-file run has one per layer; more kinds add rows, not width
BITS_COLORS = {2: "#d62728", 4: "#1f77b4"}
LAYOUT_STYLE = {True: "-", False: "--"}  # plain layout: solid, mixed: dashed
KERNEL_MARKERS = ["o", "s", "^", "D", "v"]


def _fmt(x: Any, spec: str = ".3g") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return "-"
    return format(x, spec)


# ---------------------------------------------------------------------------
# rich table


def accuracy_table(df: pd.DataFrame) -> Table:
    """One row per cache configuration: KL, quantization error, and each kernel's own error.

    Kernels' errors against exact BF16 attention are in results.csv
    (``rel_l2_vs_bf16_max``); they equal the quantization error up to the kernel's own
    error, so the table shows the latter only, to stay narrow.
    """
    measured = df[df["status"].isin(["ok", "failed"])]
    kernels = [k for k in dict.fromkeys(measured["kernel"]) if k != REFERENCE_VARIANT]
    keys = ["data", "bits", "group_size", "layout", "rotation"]
    skipped = df[df["status"] == "skipped"].drop_duplicates("kernel")
    caption = ["quant rel L2: fp64 reference on the dequantized cache vs fp64 attention on the unquantized BF16 cache "
               "(max over batch rows of ||out - ref|| / ||ref||); <kernel> vs deq: the kernel vs the fp64 reference on "
               "the cache it reads; attn KL: KL(p || p_hat) of the attention probabilities, nats"]  # fmt: skip
    caption += [f"{r['kernel']} skipped: {r['error']}" for r in skipped.to_dict("records")]
    errors = df[df["status"] == "error"]
    if len(errors):
        caption.append(f"{len(errors)} rows raised (see results.csv, column error)")
    table = Table(title="Accuracy vs exact attention", caption="\n".join(caption), title_justify="left",
                  caption_justify="left")  # fmt: skip
    for name, justify in (("data", "left"), ("bits", "right"), ("G", "right"), ("layout", "left"), ("rotation", "left"),
                          ("attn KL", "right"), ("quant rel L2", "right")):  # fmt: skip
        table.add_column(name, justify=justify, no_wrap=True, min_width=len(name))
    for k in kernels:
        header = f"{k.removeprefix('foscar-')} vs deq"
        table.add_column(header, justify="right", no_wrap=True, min_width=8)
    for key, grp in df.groupby(keys, sort=False):
        by = {r["kernel"]: r for r in grp.to_dict("records")}
        ref = by.get(REFERENCE_VARIANT) or {}
        kl = grp["attn_kl_mean"].dropna()
        cells = [str(key[0]), str(key[1]), str(key[2]), str(key[3]), str(key[4]),
                 _fmt(kl.iloc[0]) if len(kl) else "-", _fmt(ref.get("rel_l2_vs_bf16_max"))]  # fmt: skip
        for k in kernels:
            r = by.get(k)
            if r is None or r["status"] not in ("ok", "failed"):
                cells.append("-" if r is None else str(r["status"]))
                continue
            deq = _fmt(r["rel_l2_vs_deq_max"], ".2e")
            cells.append(deq if r["status"] == "ok" else f"[red]{deq}[/]")
        table.add_row(*cells)
    return table


# ---------------------------------------------------------------------------
# plots


def _ref_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["kernel"] == REFERENCE_VARIANT) & df["status"].isin(["ok", "failed"])]


def _plain_log_labels(ax) -> None:
    """Log y axis labelled 0.2, 0.5, 3 rather than 2x10^-1; minor labels only where they fit.

    Call after the data is drawn (it reads the axis range).
    """
    lo, hi = ax.get_ylim()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 99.0
    major = FuncFormatter(lambda v, _pos: f"{v:g}")

    def minor(v: float, _pos) -> str:
        if decades <= 0.6:
            return f"{v:g}"
        lead = round(v / 10 ** math.floor(math.log10(v) + 1e-9)) if v > 0 else 0
        return f"{v:g}" if decades <= 2.5 and lead in (2, 5) else ""

    ax.yaxis.set_major_formatter(major)
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))
    ax.tick_params(axis="y", which="minor", labelsize=7)


def _data_titles(df: pd.DataFrame) -> dict[str, str]:
    return {r["data"]: r["data_label"] for r in df.drop_duplicates("data").to_dict("records")}


def _wrap(text: str, width: int = 34) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    return "\n".join(lines + [cur])


def plot_error(df: pd.DataFrame) -> Figure | None:
    """Relative L2 error vs BF16 (top) and attention KL (bottom) per data kind; no rotation."""
    ref = _ref_rows(df)
    ref = ref[ref["rotation"] == "none"]
    if ref.empty:
        return None
    titles = _data_titles(df)
    kinds = list(dict.fromkeys(ref["data"]))
    groups = sorted(int(g) for g in ref["group_size"].unique())
    ncols = min(PANELS_PER_ROW, len(kinds))
    nrows = math.ceil(len(kinds) / ncols)
    fig = Figure(figsize=(FIGURE_WIDTH, 6.6 * nrows + 0.8))
    grid_axes = fig.subplots(2 * nrows, ncols, squeeze=False)
    for k in range(len(kinds), nrows * ncols):  # empty cells of the last row
        grid_axes[2 * (k // ncols)][k % ncols].set_visible(False)
        grid_axes[2 * (k // ncols) + 1][k % ncols].set_visible(False)
    handles = {}
    for n, kind in enumerate(kinds):
        j = n % ncols
        axes = grid_axes[2 * (n // ncols) : 2 * (n // ncols) + 2]  # rows: rel. L2, KL
        sub = ref[ref["data"] == kind]
        for (bits, layout), grp in sub.groupby(["bits", "layout"], sort=True):
            grp = grp.sort_values("group_size")
            plain = layout == PLAIN_LAYOUT
            label = f"INT{int(bits)}, " + ("whole cache quantized" if plain else f"{layout} in BF16")
            x = [groups.index(int(g)) for g in grp["group_size"]]
            for i, col in enumerate(("rel_l2_vs_bf16_max", "attn_kl_mean")):
                (line,) = axes[i][j].plot(x, grp[col], LAYOUT_STYLE[plain], color=BITS_COLORS.get(int(bits)),
                                          marker="o" if plain else "s", label=label)  # fmt: skip
                handles.setdefault(label, line)
        axes[0][j].set_title(_wrap(f"{kind}: {titles.get(kind, '')}"), fontsize=10)
        for i in range(2):
            ax = axes[i][j]
            ax.set_yscale("log")
            _plain_log_labels(ax)
            ax.grid(True, which="both", alpha=0.3)
            ax.set_xticks(range(len(groups)), [str(g) for g in groups])
        axes[1][j].set_xlabel("group size (channels per scale/offset)")
    for r in range(nrows):
        grid_axes[2 * r][0].set_ylabel("rel. L2 error vs exact BF16 attention\n(max over batch rows)")
        grid_axes[2 * r + 1][0].set_ylabel("attention KL(p || p_hat), nats\n(mean over rows and query heads)")
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=min(4, len(handles)),
               frameon=False, fontsize=9)  # fmt: skip
    fig.suptitle("Quantization error (fp64 reference on the dequantized cache, no rotation)", fontsize=12)
    fig.tight_layout(rect=(0, 0.07 / nrows, 1, 1 - 0.03 / nrows))
    return fig


def plot_rotation(df: pd.DataFrame) -> Figure | None:
    """Error without / with the randomized Hadamard rotation, quantized layout, gain on top."""
    ref = _ref_rows(df)
    ref = ref[ref["layout"] == PLAIN_LAYOUT]
    if set(ref["rotation"]) != {"none", "hadamard"}:
        return None
    titles = _data_titles(df)
    kinds = list(dict.fromkeys(ref["data"]))
    ncols = min(PANELS_PER_ROW, len(kinds))
    nrows = math.ceil(len(kinds) / ncols)
    fig = Figure(figsize=(FIGURE_WIDTH, 4.2 * nrows + 0.6))
    axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax in axes[len(kinds) :]:
        ax.set_visible(False)
    width = 0.38
    for ax, kind in zip(axes, kinds):
        piv = ref[ref["data"] == kind].pivot_table(
            index=["bits", "group_size"], columns="rotation", values="rel_l2_vs_bf16_max", aggfunc="first"
        )
        x = np.arange(len(piv))
        ax.bar(x - width / 2, piv["none"], width, color="#7f7f7f", label="no rotation")
        ax.bar(x + width / 2, piv["hadamard"], width, color="#2ca02c", label="randomized Hadamard")
        for xi, (none, had) in zip(x, zip(piv["none"], piv["hadamard"])):
            if had > 0 and math.isfinite(none / had):
                ax.annotate(f"{none / had:.2f}x", (xi, max(none, had)), xytext=(0, 3), textcoords="offset points",
                            ha="center", fontsize=8)  # fmt: skip
        ax.set_xticks(x, [f"INT{int(b)}\nG{int(g)}" for b, g in piv.index])
        ax.set_yscale("log")
        lo, hi = np.nanmin(piv.values), np.nanmax(piv.values)
        ax.set_ylim(lo / 2, hi * 2.5)
        _plain_log_labels(ax)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.set_title(_wrap(f"{kind}: {titles.get(kind, '')}"), fontsize=10)
    for ax in axes[::ncols]:
        ax.set_ylabel("rel. L2 error vs exact BF16 attention\n(max over batch rows)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False, fontsize=9)
    fig.suptitle("Randomized Hadamard rotation before quantization (whole cache quantized; "
                 "label: error without / with)", fontsize=11)  # fmt: skip
    fig.tight_layout(rect=(0, 0.08 / nrows, 1, 1 - 0.05 / nrows))
    return fig


def plot_kernels(df: pd.DataFrame) -> Figure | None:
    """Each kernel's own error (vs the fp64 reference on the cache it reads), all configurations."""
    rows = df[df["status"].isin(["ok", "failed"]) & (df["kernel"] != REFERENCE_VARIANT)]
    if rows.empty:
        return None
    kernels = list(dict.fromkeys(rows["kernel"]))
    fig = Figure(figsize=(FIGURE_WIDTH, 4.6))
    ax = fig.subplots()
    rng = np.random.default_rng(0)
    for i, k in enumerate(kernels):
        sub = rows[rows["kernel"] == k]
        for bits, grp in sub.groupby("bits"):
            for plain, g2 in grp.groupby(grp["layout"] == PLAIN_LAYOUT):
                jitter = rng.uniform(-0.15, 0.15, len(g2)) + (-0.2 if int(bits) == 2 else 0.2)
                ax.scatter(i + jitter, g2["rel_l2_vs_deq_max"].clip(lower=1e-8), s=16,
                           color=BITS_COLORS.get(int(bits)), marker="o" if plain else "s", alpha=0.7,
                           label=f"INT{int(bits)}, " + ("whole cache quantized" if plain else "sinks + recent in BF16"))  # fmt: skip
    ax.axhline(TOLERANCE, color="black", ls="--", lw=1, label=f"tolerance {TOLERANCE:g}")
    ax.set_xticks(range(len(kernels)), kernels)
    ax.set_xlim(-0.6, len(kernels) - 0.4)
    ax.set_yscale("log")
    _plain_log_labels(ax)
    ax.set_ylabel("rel. L2 error vs fp64 reference\non the cache the kernel reads (max over rows)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Kernel error alone (every data kind, group size, rotation)", fontsize=11)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------
# accuracy.md


def write_accuracy_report(out: Path, df: pd.DataFrame, summary: dict[str, Any], grid: Grid,
                          meta: dict[str, Any] | None = None, md_name: str = "accuracy.md") -> list[Path]:  # fmt: skip
    """Draw the PNGs and write the markdown (``md_name``) into ``out``; return the files written.

    ``meta``: the run's ``meta.json`` (default: read from ``out``). ``foscar report`` writes
    ``report.md``, possibly into another directory; the run itself writes ``accuracy.md``.
    """
    written: list[Path] = []
    plots: list[tuple[str, str, str]] = []  # (file, title, caption)
    for draw, name, title, caption in (
        (plot_error, "accuracy_error.png", "Quantization error by data, bits, group size and layout",
         "Top: relative L2 error of the fp64 reference on the dequantized cache against fp64 attention on the "
         "unquantized BF16 cache (max over batch rows). Bottom: KL divergence of the attention probabilities "
         "(exact K vs the K the kernel reads). Solid: whole cache quantized; dashed: sinks + recent tokens kept in "
         "BF16. No rotation."),
        (plot_rotation, "accuracy_rotation.png", "Effect of the randomized Hadamard rotation",
         "Relative L2 error vs exact BF16 attention without and with the rotation (whole cache quantized); the "
         "label over each pair is error without / error with."),
        (plot_kernels, "accuracy_kernels.png", "Kernel error alone",
         "Each kernel's relative L2 error against the fp64 reference on the cache it actually reads: what the "
         "kernel adds to the quantization error (BF16 operands, fp32 accumulation, BF16 output)."),
    ):  # fmt: skip
        fig = draw(df)
        if fig is None:
            continue
        save_png(fig, out / name)
        written.append(out / name)
        plots.append((name, title, caption))
    if meta is None:
        meta_path = out / "meta.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    md = out / md_name
    md.write_text(render_markdown(meta, df, summary, grid, plots))
    written.append(md)
    return written


def render_markdown(meta: dict[str, Any], df: pd.DataFrame, summary: dict[str, Any], grid: Grid,
                    plots: list[tuple[str, str, str]]) -> str:  # fmt: skip
    """The accuracy report: the run (from its ``meta.json`` dict), definitions, tables, the plots."""
    gpu = (meta.get("gpu") or {}).get("name") or ("CPU (Triton interpreter)" if meta.get("triton_interpreter") else "-")
    git = meta.get("git") or {}
    s = grid.shape
    lines = ["# FOSCAR accuracy report", ""]
    info = [
        ("device", gpu),
        ("date", meta.get("date", "-")),
        ("git commit", (git.get("commit") or "not recorded") + (" (dirty)" if git.get("dirty") else "")),
        ("command", f"`{meta['command']}`" if meta.get("command") else "-"),
        ("shape", f"batch {s.batch}, context {s.context}, {s.num_qo_heads} query / {s.num_kv_heads} KV heads, "
                  f"head_dim {s.head_dim}"),
        ("grid", f"bits {grid.bits}, group sizes {grid.group_sizes}, data {grid.data}, rotation {grid.rotations}, "
                 f"layouts {grid.layouts}, seed {grid.seed}"),
        ("rows", ", ".join(f"{n} {k}" for k, n in summary.get("status_counts", {}).items())),
    ]  # fmt: skip
    lines += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in info] + [""]
    if meta.get("triton_interpreter"):
        lines += ["Kernels ran in the Triton interpreter on CPU (same arithmetic as on a GPU, tiny shape).", ""]
    lines += ["## What is compared", ""]
    lines += [f"* `{c}`: {COLUMN_DOCS[c]}" for c in ("rel_l2_vs_bf16_max", "rel_l2_vs_deq_max", "cosine_vs_bf16_min",
                                                    "attn_kl_mean", "rotation", "layout", "status")]  # fmt: skip
    lines += [f"* `{REFERENCE_VARIANT}` is reference (b) itself: its `vs_bf16` error is the quantization error alone.", ""]

    lines += ["## Kernel error alone (max rel. L2 vs the fp64 reference on the cache it reads)", ""]
    lines += ["| kernel | max rel. L2 | rows |", "|---|---|---|"]
    for k, v in summary.get("kernel_max_rel_l2_vs_deq", {}).items():
        bad = v.get("non_finite") or 0  # (summaries before session 78 do not count them)
        worst = f"NaN or Inf in {bad} row(s)" if bad else _fmt(v["max"], ".2e")
        lines.append(f"| `{k}` | {worst} | {v['rows']} |")
    for r in df[df["status"] == "skipped"].drop_duplicates("kernel").to_dict("records"):
        lines.append(f"| `{r['kernel']}` | skipped: {r['error']} | 0 |")
    lines.append("")

    ref = _ref_rows(df)
    if not ref.empty:
        lines += ["## Quantization error (rel. L2 vs exact BF16 attention, max over rows)", ""]
        piv = ref.pivot_table(index=["data", "bits", "group_size"], columns=["layout", "rotation"],
                              values="rel_l2_vs_bf16_max", aggfunc="first")  # fmt: skip
        cols = [(lay, rot) for lay in grid.layouts for rot in grid.rotations if (lay, rot) in piv.columns]
        lines.append("| data | bits | G | " + " | ".join(f"{lay}, {rot}" for lay, rot in cols) + " |")
        lines.append("|---|---|---|" + "---|" * len(cols))
        for (data, bits, g), r in piv.iterrows():
            lines.append(f"| {data} | {int(bits)} | {int(g)} | " + " | ".join(_fmt(r[c]) for c in cols) + " |")
        lines.append("")
    for name, title, caption in plots:
        lines += [f"## {title}", "", f"![{title}]({name})", "", f"*{caption}*", ""]
    errors = df[df["status"].isin(["error", "failed"])]
    if len(errors):
        lines += ["## Rows that failed or raised", "", "| data | bits | G | kernel | rotation | layout | status | error |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in errors.to_dict("records"):
            lines.append(f"| {r['data']} | {r['bits']} | {r['group_size']} | {r['kernel']} | {r['rotation']} | "
                         f"{r['layout']} | {r['status']} | {str(r['error']).replace('|', '/')} |")  # fmt: skip
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
