"""Reading a run directory back (``results.csv``, ``meta.json``, ``summary.json``), and
the labels that ``foscar report`` and ``foscar compare`` give its rows.

A run directory is what ``foscar bench`` writes (see :mod:`bench.run`). Only
``results.csv`` is required; a missing ``meta.json`` or ``summary.json`` becomes a
note (the summary is recomputed from the rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.errors import FoscarError
from bench.runfiles import check_run_dir, first_line, read_json_if_present
from bench.results import TIMED, read_results, summarize, variant_key
from bench.timing import INTERPRETER_TIMING

REQUIRED_COLUMNS = ("kernel", "bits", "operand", "batch", "context", "median_us", "status")


@dataclass
class Run:
    """One run directory, read back."""

    path: Path
    label: str  # the directory's name (made unique among the runs loaded together)
    df: pd.DataFrame  # results.csv with the schema's dtypes
    meta: dict[str, Any]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # what was missing or recomputed

    @property
    def hbm_tbps(self) -> float | None:
        v = self.meta.get("hbm_ceiling_tbps")
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None

    @property
    def gpu_name(self) -> str:
        name = (self.meta.get("gpu") or {}).get("name")
        if name:
            return name
        return "CPU (Triton interpreter)" if self.timing_mode == INTERPRETER_TIMING else "unknown GPU"

    @property
    def commit(self) -> str:
        git = self.meta.get("git") or {}
        commit = git.get("commit")
        if not commit:
            return "not recorded"
        return commit + (" (dirty)" if git.get("dirty") else "")

    @property
    def timing_mode(self) -> str | None:
        """meta.json's (or summary.json's) timing mode, else the one every row records (results.csv
        ``timing_mode``), else ``None``."""
        recorded = self.meta.get("timing_mode") or self.summary.get("timing_mode")
        if recorded or "timing_mode" not in self.df:
            return recorded
        modes = self.df["timing_mode"].dropna().unique()
        return str(modes[0]) if len(modes) == 1 else None


def load_run(path: Path | str) -> Run:
    """Read one run directory.

    Raises:
        FoscarError: the directory does not exist, has no ``results.csv``, or a file
            in it cannot be parsed.
    """
    path = check_run_dir(path)
    csv = path / "results.csv"
    if not csv.is_file():
        runs = sorted(str(p.parent.relative_to(path)) for p in path.glob("*/results.csv"))
        inside = (f"; it holds run directories: {', '.join(runs[:4])}{', ...' if len(runs) > 4 else ''}"
                  if runs else "")  # fmt: skip
        raise FoscarError(f"{path} has no results.csv{inside}; pass a run directory written by a foscar command "
                          "(bench, ablate, accuracy, eval-model, model-speed)")  # fmt: skip
    try:
        header = pd.read_csv(csv, nrows=0).columns
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise FoscarError(f"cannot read {csv}: {first_line(e)}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise FoscarError(f"{csv} lacks the column(s) {', '.join(missing)}; is it a `foscar bench` results.csv?")
    try:
        df = read_results(csv)
    except (pd.errors.ParserError, ValueError, TypeError) as e:
        raise FoscarError(f"cannot read {csv}: {first_line(e)}") from None

    notes: list[str] = []
    meta = read_json_if_present(path / "meta.json", notes)
    summary = read_json_if_present(path / "summary.json", notes)
    if not summary:
        summary = summarize(df)
        notes.append("geometric means recomputed from results.csv")
    return Run(path=path, label=path.resolve().name or str(path), df=df, meta=meta, summary=summary, notes=notes)


def load_runs(paths: list[Path | str]) -> list[Run]:
    """Read several run directories; labels are the directory names, with parents added where two collide."""
    runs = [load_run(p) for p in paths]
    labels = [r.label for r in runs]
    if len(set(labels)) < len(labels):
        for r in runs:
            parts = r.path.resolve().parts
            r.label = "/".join(parts[-2:])
    seen: dict[str, int] = {}
    for r in runs:  # still equal (the same directory twice): number them
        n = seen.get(r.label, 0)
        seen[r.label] = n + 1
        if n:
            r.label = f"{r.label}#{n + 1}"
    return runs


# ---------------------------------------------------------------------------
# labels and row selections


def timed_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that carry a time: status ``ok`` or ``suspect`` with a median."""
    return df[df["status"].isin(TIMED) & df["median_us"].notna()]


def untimed_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows left out of plots: any status other than ``ok``/``suspect`` (or no time)."""
    return df[~(df["status"].isin(TIMED) & df["median_us"].notna())]


def series_label(kernel: Any, bits: Any, operand: Any) -> str:
    """``foscar-triton/int2/bf16`` for a quantized variant, the kernel name for a BF16 baseline."""
    if _missing(bits):
        return str(kernel)
    return variant_key(kernel, bits, operand if not _missing(operand) else "-")


def context_label(context: Any) -> str:
    """``32K`` for whole multiples of 1024 tokens, else the token count."""
    c = int(context)
    return f"{c // 1024}K" if c >= 1024 and c % 1024 == 0 else str(c)


def point_label(batch: Any, context: Any) -> str:
    """``b8 x 32K``."""
    return f"b{int(batch)} x {context_label(context)}"


def workload_label(workload: Any, capacity: Any, context: Any) -> str:
    """A row's workload as tables and plots show it: ``""`` for ``uniform`` lengths in a cache of
    the context (every point before workloads existed), else the name, with ``in <capacity>``
    when the cache is larger than the context: ``one-long``, ``capacity in 128K``."""
    name = "uniform" if _missing(workload) else str(workload)
    at_context = _missing(capacity) or int(capacity) == int(context)
    if name == "uniform" and at_context:
        return ""
    return name if at_context else f"{name} in {context_label(capacity)}"


def row_point_label(row: Any) -> str:
    """``b8 x 32K``, with the workload when it is not plain (``b8 x 4K capacity in 128K``);
    ``row`` is a results.csv row (a ``pd.Series`` or a dict with the columns)."""
    get = row.get if hasattr(row, "get") else (lambda k, d=None: row[k])
    wl = workload_label(get("workload", None), get("capacity", None), row["context"])
    return point_label(row["batch"], row["context"]) + (f" {wl}" if wl else "")


def _missing(x: Any) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) or x == ""
