"""The results schema (one row per point x kernel), speedups, geometric means, files.

Columns of ``results.csv`` (:data:`COLUMNS`):

* what ran: ``kernel`` (backend name), ``bits`` (2/4; empty for baselines),
  ``operand`` (FOSCAR operand mode; empty for baselines), ``kv_dtype`` (``int2``,
  ``int4``, ``bf16``, ``fp8_e4m3``), ``is_baseline`` (any baseline kind),
  ``baseline_kind`` (``bf16`` or ``fp8``: which "at its best" the row counts
  towards; empty for FOSCAR rows; runs written before it existed had BF16
  baselines only, so an empty kind on an ``is_baseline`` row reads as ``bf16``);
* the point: ``cache_bits`` (bits of the quantized cache the point was built from;
  baselines read its dequantized values, as BF16 or FP8), ``group_size``, ``batch``,
  ``context``, ``num_qo_heads``, ``num_kv_heads``, ``head_dim``, ``page_size``, ``page_order``
  (:data:`bench.shape.SHAPE_COLUMNS`, declared once in :class:`bench.shape.PointShape`);
  its workload (:data:`WORKLOAD_COLUMNS`, from :meth:`bench.workload.Point.row_columns`):
  ``workload`` (the length distribution, :mod:`bench.lengths`), ``capacity`` (tokens
  per sequence the cache is allocated for), ``lengths`` (the sequence lengths,
  :func:`bench.lengths.lengths_summary`: ``131072,4096x7``), ``kv_tokens`` (their sum:
  the tokens one call reads per KV head), ``k_layout`` (``token`` or
  ``channel-<k_block>``), ``grid`` (``sweep`` or ``ragged``: the preset's ``[sweep]``
  or ``[[ragged]]`` grid). Runs written before these columns read back as ``uniform``,
  capacity = context, ``token``, ``sweep``;
* timing: ``median_us``, ``p20_us``, ``p80_us``, ``reps``, ``timing_mode``;
* traffic: ``bytes`` (what one call must move), ``tbps`` (bytes / median, 1e12 B/s),
  ``sol_fraction`` (tbps / ``hbm_ceiling_tbps``), ``hbm_ceiling_tbps`` (the HBM ceiling
  measured on the GPU this row ran on, :mod:`bench.hbm`; a merged multi-GPU run keeps each
  row's own; empty on the CPU);
* the read floor (``foscar bench --read-floor``; empty without it, on the CPU, for rows timed by ``do_bench``, and
  where its buffers did not fit or its timing raised: the console says which): ``read_floor_us`` (a plain read of
  ``bytes``, timed as the row is, over as many copies as the row's rotation: :func:`bench.hbm.read_floor_us`),
  ``floor_fraction`` (read_floor_us / median_us: 1.0 is as fast as that reference read of the row's bytes at its
  size, where ``sol_fraction`` compares with a 16 GiB stream; above 1 is possible for a few MiB, where the read is
  mostly launch and drain);
* speed-up: ``baseline_kernel``, ``baseline_us`` (the fastest FlashInfer BF16 row of
  the point that passed its check), ``speedup_vs_flashinfer_bf16`` = baseline_us /
  median_us; the same against FlashInfer with an FP8 e4m3 cache:
  ``baseline_fp8_kernel``, ``baseline_fp8_us``, ``speedup_vs_flashinfer_fp8``
  (empty where the point has no passing FP8 row);
* correctness: ``max_rel_err`` (max over ``checked_rows`` of the relative L2 error
  ``||out_b - ref_b|| / ||ref_b||`` against the fp64 reference), ``checked_rows``
  (``all`` or ``0;32;63``);
* ``gpu_uuid``: the GPU the row ran on (``GPU-...`` as NVML and nvidia-smi write it, from
  torch or NVML; empty on the CPU or where neither says);
* the GPU's clocks around the row's timing: ``sm_clock_before_mhz``,
  ``sm_clock_after_mhz``, ``clock_events_before``, ``clock_events_after`` and
  ``clock_note``, and what NVML read while the timed calls ran: ``sm_clock_during_mhz`` (the median of its
  readings), ``clock_events_during`` (:mod:`bench.clocks`; empty without NVML);
* ``status``: ``ok``; ``failed`` (check failed: not timed); ``error`` (raised:
  ``error`` holds the reason); ``skipped`` (cannot run here, or the point does not
  fit in memory); ``suspect`` (timed, but faster than the HBM ceiling allows: a
  measurement bug, excluded from geometric means); ``invalid`` (the timer gave a
  median, p20 or p80 that is zero, negative, NaN or Inf: ``error`` says which; such a
  row is neither a baseline nor in any geometric mean, and ``foscar bench`` exits
  with :data:`bench.errors.EXIT_RUN_PROBLEM`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench import SCHEMA_VERSION
from bench.clocks import CLOCK_COLUMNS
from bench.shape import INT_SHAPE_COLUMNS, SHAPE_COLUMNS, SHAPE_KEYS
from bench.timing import DEVICE_TIMINGS

WORKLOAD_COLUMNS = ["workload", "capacity", "lengths", "kv_tokens", "k_layout", "grid"]
COLUMNS = [
    "kernel", "bits", "operand", "kv_dtype", "is_baseline", "baseline_kind",
    *SHAPE_COLUMNS,
    *WORKLOAD_COLUMNS,
    "median_us", "p20_us", "p80_us", "reps", "bytes", "tbps", "sol_fraction", "hbm_ceiling_tbps",
    "read_floor_us", "floor_fraction",
    "baseline_kernel", "baseline_us", "speedup_vs_flashinfer_bf16",
    "baseline_fp8_kernel", "baseline_fp8_us", "speedup_vs_flashinfer_fp8",
    "max_rel_err", "checked_rows", "status", "error", "timing_mode", "working_set_bytes", "gpu_uuid",
    *CLOCK_COLUMNS,
]  # fmt: skip
# what makes two rows the same point: the shape, the format and the workload (kv_tokens follows from lengths)
POINT_KEYS = [*SHAPE_KEYS, "k_layout", "workload", "capacity", "lengths", "grid"]
GRID_SUFFIXES = {"sweep": "", "ragged": "_ragged"}  # summary.json key suffix of each grid's geometric means
TIMED = ("ok", "suspect")  # statuses that carry a time
INVALID = "invalid"  # the timer's numbers cannot be a time (<= 0, NaN, Inf): see invalid_time
BASELINE_LABEL = (
    "FlashInfer BF16 at its best: the fastest of the FlashInfer BF16 rows that passed the check, per point "
    "(rows flagged suspect included)"
)
BASELINE_FP8_LABEL = (
    "FlashInfer FP8-KV at its best: the fastest of the FlashInfer rows reading an FP8 (e4m3, per-tensor scale) "
    "cache that passed the check, per point (rows flagged suspect included)"
)


@dataclass(frozen=True)
class BaselineSpec:
    """Where one baseline kind's per-point best and speed-ups go (columns and summary.json keys)."""

    kind: str  # baseline_kind of the rows it is taken over
    label: str  # what "at its best" means, for summary.json and reports
    title: str  # short name for table titles
    kernel_col: str  # results.csv: the point's fastest passing row of this kind
    us_col: str  # results.csv: its median_us
    speedup_col: str  # results.csv: its median_us / the row's median_us
    summary_suffix: str  # summary.json: geomean_speedup<suffix>, geomean_ci95<suffix>, num_points<suffix>


BASELINES: tuple[BaselineSpec, ...] = (
    BaselineSpec("bf16", BASELINE_LABEL, "FlashInfer BF16", "baseline_kernel", "baseline_us",
                 "speedup_vs_flashinfer_bf16", ""),
    BaselineSpec("fp8", BASELINE_FP8_LABEL, "FlashInfer FP8-KV", "baseline_fp8_kernel", "baseline_fp8_us",
                 "speedup_vs_flashinfer_fp8", "_fp8"),
)  # fmt: skip


def new_row(
    point, kernel: str, bits: int | None, operand: str | None, baseline: str | bool | None,
    kv_dtype: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A row with the point's columns filled and every measurement empty.

    ``baseline``: the row's baseline kind (``"bf16"``, ``"fp8"``) or ``None``
    (``True``/``False``: the old form, ``True`` = ``"bf16"``). ``kv_dtype``: the cache
    dtype a baseline reads; default ``int<bits>`` for FOSCAR rows, else ``fp8_e4m3`` for
    an FP8 baseline and ``bf16`` otherwise.
    """
    kind = "bf16" if baseline is True else (None if baseline is False else baseline)
    if kv_dtype is None:
        kv_dtype = f"int{bits}" if bits else ("fp8_e4m3" if kind == "fp8" else "bf16")
    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(
        kernel=kernel,
        bits=bits,
        operand=operand,
        kv_dtype=kv_dtype,
        is_baseline=kind is not None,
        baseline_kind=kind,
        **point.row_columns(),
    )
    return row


def invalid_time(median_us: Any, p20_us: Any = None, p80_us: Any = None) -> str | None:
    """Why these numbers (microseconds) cannot be a measured time, or ``None`` when they can.

    The median must be given, finite and > 0; p20/p80 must be finite and > 0 where
    they are recorded (``None`` or NaN: not recorded, which is allowed). A zero time
    makes every speed-up and bandwidth infinite, so such a row must never reach a
    baseline, a table's mean or summary.json.
    """
    for name, v in (("median", median_us), ("p20", p20_us), ("p80", p80_us)):
        if v is None or v is pd.NA or (name != "median" and isinstance(v, float) and math.isnan(v)):
            if name == "median":
                return "no median time recorded"
            continue
        x = float(v)
        if not math.isfinite(x) or x <= 0:
            return f"{name} time {x!r} us is not a positive finite number (a timer fault); not used"
    return None


def set_timing(row: dict[str, Any], timing, nbytes: int, hbm_tbps: float | None) -> None:
    """Fill time, bandwidth and roofline fraction (against ``hbm_tbps``, the ceiling measured on the
    GPU the row ran on, which the engine records as ``hbm_ceiling_tbps``); mark ``suspect`` above it,
    ``invalid`` (with the reason in ``error``) when the time is zero, negative, NaN or Inf
    (:func:`invalid_time`).

    Interpreter timings get no bandwidth (``tbps``/``sol_fraction`` stay empty).
    """
    row.update(
        median_us=timing.median_us,
        p20_us=timing.p20_us,
        p80_us=timing.p80_us,
        reps=timing.reps,
        timing_mode=timing.mode,
        bytes=nbytes,
    )
    why = invalid_time(timing.median_us, timing.p20_us, timing.p80_us)
    if why:
        row.update(status=INVALID, error=why)
        return
    row["status"] = "ok"
    if timing.mode not in DEVICE_TIMINGS:  # interpreter time: bandwidth would be meaningless
        return
    row["tbps"] = nbytes / (timing.median_us * 1e-6) / 1e12
    if hbm_tbps:
        row["sol_fraction"] = row["tbps"] / hbm_tbps
        if row["sol_fraction"] > 1.0:
            row["status"] = "suspect"
            row["error"] = f"implied {row['tbps']:.2f} TB/s exceeds the measured HBM ceiling {hbm_tbps:.2f} TB/s"


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with exactly :data:`COLUMNS`, nullable integer columns."""
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ("bits", *INT_SHAPE_COLUMNS, "reps", "bytes", "capacity", "kv_tokens", "sm_clock_before_mhz",
              "sm_clock_after_mhz", "sm_clock_during_mhz"):  # fmt: skip
        df[c] = pd.to_numeric(df[c]).astype("Int64")
    _backfill_workload(df)
    for c in ("median_us", "p20_us", "p80_us", "tbps", "sol_fraction", "hbm_ceiling_tbps", "read_floor_us",
              "floor_fraction", "baseline_us", "baseline_fp8_us",
              "speedup_vs_flashinfer_bf16", "speedup_vs_flashinfer_fp8", "max_rel_err"):  # fmt: skip
        df[c] = pd.to_numeric(df[c]).astype("float64")
    df["is_baseline"] = df["is_baseline"].astype(bool)
    # runs from before baseline_kind: every baseline row was FlashInfer BF16
    kind = df["baseline_kind"].astype(object).where(df["baseline_kind"].notna(), None)
    df["baseline_kind"] = kind.where(~(df["is_baseline"] & kind.isna()), "bf16")
    for c in ("baseline_kernel", "baseline_fp8_kernel"):
        df[c] = df[c].astype(object)
    return flag_invalid_times(df)


def flag_invalid_times(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a timed status (``ok``/``suspect``) whose time is not a positive finite
    number (:func:`invalid_time`) become ``invalid`` with the reason in ``error`` (in
    place; returns ``df``). Catches rows from any source: an older results.csv, a test."""
    timed = df.index[df["status"].isin(TIMED)]
    for i in timed:
        why = invalid_time(df.at[i, "median_us"], df.at[i, "p20_us"], df.at[i, "p80_us"])
        if why:
            df.at[i, "status"] = INVALID
            df.at[i, "error"] = why
    return df


def _backfill_workload(df: pd.DataFrame) -> None:
    """Rows written before the workload columns: every sequence at ``context`` in a cache of
    ``context``, token-wise K, the [sweep] grid (what every run was then), in place."""
    if df.empty:
        return
    plain = {
        "workload": pd.Series("uniform", index=df.index),
        "capacity": df["context"],
        "lengths": pd.Series([_plain_lengths(b, c) for b, c in zip(df["batch"], df["context"])], index=df.index),
        "kv_tokens": df["batch"] * df["context"],
        "k_layout": pd.Series("token", index=df.index),
        "grid": pd.Series("sweep", index=df.index),
        # before session 27: FOSCAR's paged rows shuffled, FlashInfer's pages in order (bench/NOTES.md §65); matched as
        # the shuffled rows of a later run (at 16-token pages FOSCAR's time did not depend on the order)
        "page_order": pd.Series("shuffled", index=df.index),
    }
    for col, value in plain.items():
        missing = df[col].isna()
        if missing.any():
            df[col] = df[col].astype(value.dtype if col in ("capacity", "kv_tokens") else object)
            df.loc[missing, col] = value[missing]


def _plain_lengths(batch: Any, context: Any) -> Any:
    if pd.isna(batch) or pd.isna(context):
        return None
    return f"{int(context)}x{int(batch)}" if int(batch) > 1 else str(int(context))


def add_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Fill, per point and per baseline kind (:data:`BASELINES`), the point's best row
    (``baseline_kernel``/``baseline_fp8_kernel``), its time (``baseline_us``/``baseline_fp8_us``)
    and every timed row's speed-up over it (``speedup_vs_flashinfer_bf16``/``_fp8``).

    The baseline of a point is its fastest timed row of that ``baseline_kind`` (status
    ``ok``, or ``suspect``: a baseline that looks faster than the ceiling still
    counts, so a mis-measured ceiling can only make FOSCAR's speed-ups smaller, never
    larger); speed-ups are given to every timed row (baselines included). Points
    without a passing baseline of a kind get NaN in its columns.
    """
    df = df.copy()
    for spec in BASELINES:
        df[spec.kernel_col] = df[spec.kernel_col].astype(object)
    for _, idx in df.groupby(POINT_KEYS, dropna=False).groups.items():
        grp = df.loc[idx]
        timed = grp.index[grp["status"].isin(TIMED) & grp["median_us"].notna()]
        for spec in BASELINES:
            base = grp[(grp["baseline_kind"] == spec.kind) & grp["status"].isin(TIMED) & grp["median_us"].notna()]
            if base.empty:
                continue
            best = base.loc[base["median_us"].idxmin()]
            df.loc[idx, spec.kernel_col] = best["kernel"]
            df.loc[idx, spec.us_col] = best["median_us"]
            df.loc[timed, spec.speedup_col] = best["median_us"] / df.loc[timed, "median_us"]
    return df


def variant_key(kernel: str, bits: Any, operand: Any) -> str:
    """``"<kernel>/int<bits>/<operand>"``, the key of a quantized kernel variant in summary.json."""
    return f"{kernel}/int{int(bits)}/{operand}"


def geomean(values) -> float:
    """Geometric mean of positive finite values (NaN for none).

    Raises:
        ValueError: a value that is zero, negative, NaN or Inf (it has no logarithm
            that a mean could use; such rows must be left out before).
    """
    xs = [float(v) for v in values]
    bad = [x for x in xs if not (math.isfinite(x) and x > 0)]
    if bad:
        raise ValueError(f"geomean: expected positive finite values, got {bad[0]!r}")
    if not xs:
        return math.nan
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95
CI_METHOD = (
    f"{CI_LEVEL:.0%} percentile bootstrap of the geometric mean over points: {BOOTSTRAP_RESAMPLES} resamples "
    f"of the points with replacement, seed {BOOTSTRAP_SEED}; it shows how much the mean depends on which points "
    "were measured, not the timing noise within a point"
)


def geomean_ci(
    values, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = CI_LEVEL
) -> list[float] | None:
    """``[lo, hi]``: percentile bootstrap interval of the geometric mean of positive ``values``.

    Draws ``resamples`` samples of ``len(values)`` values with replacement (a fixed
    ``seed``: the same values give the same interval), takes each sample's geometric
    mean, and returns the ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles
    (linear interpolation). One value gives ``[v, v]``; none gives ``None``.
    """
    logs = np.log(np.asarray([float(v) for v in values], dtype=np.float64))
    if logs.size == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, logs.size, size=(resamples, logs.size))
    means = np.exp(logs[idx].mean(axis=1))
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def summarize(df: pd.DataFrame) -> dict[str, Any]:
    """Geometric-mean speed-ups of every quantized kernel variant, with bootstrap intervals,
    per grid: the keys below are over the ``[sweep]`` grid's points (``grid == "sweep"``);
    the same keys with ``_ragged`` appended (``geomean_speedup_ragged``,
    ``geomean_ci95_ragged``, ``num_points_ragged``, ``geomean_speedup_fp8_ragged``, ...)
    are over the ``[[ragged]]`` grid's points, present with values when the run had ragged
    rows (``grid_rows`` counts the rows of each grid). ``geomean_speedup_vs`` is over the
    sweep grid only.

    Against FlashInfer BF16 at its best: ``geomean_speedup[key]`` is over the points
    where the variant has status ``ok`` and the point has a passing BF16 baseline;
    ``num_points[key]`` counts them (a variant with none gets ``null``);
    ``geomean_ci95[key]`` is its ``[lo, hi]`` (:func:`geomean_ci`, method in
    ``geomean_ci95_method``). Against FlashInfer FP8-KV at its best, the same under
    ``geomean_speedup_fp8``, ``geomean_ci95_fp8``, ``num_points_fp8`` (``baseline_fp8``
    says what it is). ``baseline_rows[kind]`` counts the run's rows of each baseline
    kind, whatever their status (0: that baseline was not part of the run).
    ``geomean_speedup_vs[key][baseline]`` is the same against each FlashInfer row's
    own time (BF16 and FP8 rows alike, with its own ``geomean_ci95``).
    """
    quant = df[df["bits"].notna() & ~df["is_baseline"]]
    bases = df[df["is_baseline"] & df["status"].isin(TIMED)]
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "baseline": BASELINE_LABEL,
        "baseline_fp8": BASELINE_FP8_LABEL,
        "baseline_rows": {spec.kind: int((df["baseline_kind"] == spec.kind).sum()) for spec in BASELINES},
        "geomean_speedup": {},
        "geomean_ci95": {},
        "geomean_ci95_method": CI_METHOD,
        "num_points": {},
        "geomean_speedup_fp8": {},
        "geomean_ci95_fp8": {},
        "num_points_fp8": {},
        "geomean_speedup_vs": {},
        "status_counts": {str(k): int(v) for k, v in df["status"].value_counts().items()},
        "grid_rows": {g: int((df["grid"] == g).sum()) for g in GRID_SUFFIXES},
    }
    variants = sorted({(k, int(b), o) for k, b, o in zip(quant["kernel"], quant["bits"], quant["operand"])},
                      key=lambda v: (str(v[0]), v[1], str(v[2])))  # fmt: skip
    for grid, gsfx in GRID_SUFFIXES.items():
        if gsfx:
            for spec in BASELINES:
                for name in ("geomean_speedup", "geomean_ci95", "num_points"):
                    out[name + spec.summary_suffix + gsfx] = {}
        if not out["grid_rows"][grid]:
            continue
        mine_grid = quant[quant["grid"] == grid]
        for kernel, bits, operand in variants:
            key = variant_key(kernel, bits, operand)
            grp = mine_grid[(mine_grid["kernel"] == kernel) & (mine_grid["bits"] == bits)
                            & (mine_grid["operand"].fillna("") == ("" if pd.isna(operand) else operand))]  # fmt: skip
            for spec in BASELINES:
                sfx = spec.summary_suffix + gsfx
                ok = grp[(grp["status"] == "ok") & grp[spec.speedup_col].notna()]
                out["geomean_speedup" + sfx][key] = None if ok.empty else geomean(ok[spec.speedup_col])
                out["geomean_ci95" + sfx][key] = geomean_ci(ok[spec.speedup_col])
                out["num_points" + sfx][key] = int(len(ok))
    sweep_quant = quant[quant["grid"] == "sweep"]
    for (kernel, bits, operand), grp in sweep_quant.groupby(["kernel", "bits", "operand"], dropna=False, sort=True):
        key = variant_key(kernel, bits, operand)
        per_base: dict[str, Any] = {}
        mine = grp[grp["status"] == "ok"]
        for bname, bgrp in bases.groupby("kernel", sort=True):
            both = mine.merge(bgrp[POINT_KEYS + ["median_us"]], on=POINT_KEYS, suffixes=("", "_base"))
            ratios = both["median_us_base"] / both["median_us"]
            per_base[str(bname)] = (
                {"geomean_speedup": geomean(ratios), "geomean_ci95": geomean_ci(ratios), "num_points": len(both)}
                if len(both)
                else {"geomean_speedup": None, "geomean_ci95": None, "num_points": 0}
            )
        out["geomean_speedup_vs"][key] = per_base
    return out


def run_problems(df) -> list[str]:
    """Why a finished run's numbers need a look (empty: none), one sentence each.

    * rows with status ``invalid`` (a time that is zero, negative, NaN or Inf);
    * no FOSCAR row (a non-baseline row) was timed (``ok`` or ``suspect``), e.g. every
      one was skipped, failed its check or raised: the run measured nothing of FOSCAR;
    * baseline rows that failed their check or raised (not ``skipped``: a kernel that cannot run
      here at all): at their points "FlashInfer at its best" is the best of the others;
    * points whose timed rows were timed in different modes (one row's CUDA-graph capture failed
      and it fell back to ``do_bench``): their speed-ups compare the two.
    """
    problems = []
    invalid = df[df["status"] == INVALID]
    if len(invalid):
        names = ", ".join(sorted(set(invalid["kernel"].astype(str))))
        problems.append(f"{len(invalid)} row(s) with an invalid time ({names}): left out of every mean")
    foscar = df[~df["is_baseline"].astype(bool)]
    if not foscar["status"].isin(TIMED).any():
        counts = ", ".join(f"{n} {s}" for s, n in foscar["status"].value_counts().items()) or "no rows"
        problems.append(f"no FOSCAR row was timed ({counts})")
    broke = df[df["is_baseline"].astype(bool) & df["status"].isin(["error", "failed"])]
    if len(broke):
        names = ", ".join(sorted(set(broke["kernel"].astype(str))))
        points = len(broke.groupby(POINT_KEYS, dropna=False))
        problems.append(f"{len(broke)} baseline row(s) failed or raised ({names}) at {points} point(s): their "
                        "speed-ups are over the baselines that ran there")
    if "timing_mode" in df:
        timed = df[df["status"].isin(TIMED)]
        modes = timed.groupby(POINT_KEYS, dropna=False)["timing_mode"].nunique()
        if (modes > 1).any():
            problems.append(f"{int((modes > 1).sum())} point(s) with rows timed in different modes (a CUDA-graph "
                            "capture failed and its row fell back to do_bench): their speed-ups compare the two")
    return problems


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Write atomically (temporary file, then rename), so a crash never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def write_json(obj: Any, path: Path) -> None:
    """Write strict JSON atomically; NaN and +-Inf floats become ``null`` (JSON has no such numbers)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_finite_or_null(obj), indent=2, default=_json_default, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _finite_or_null(x: Any) -> Any:
    if isinstance(x, float):  # numpy's float64 included
        return None if not math.isfinite(x) else x
    if isinstance(x, dict):
        return {k: _finite_or_null(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_or_null(v) for v in x]
    return x


def _json_default(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serializable: {type(x).__name__}")


def read_results(path: Path) -> pd.DataFrame:
    """Read a ``results.csv`` back with the schema's dtypes."""
    text = {"kernel": str, "operand": str, "status": str, "error": str, "checked_rows": str, "workload": str,
            "lengths": str, "k_layout": str, "grid": str,  # "4096" in lengths is a text, not a number
            "clock_events_before": str, "clock_events_after": str, "clock_note": str, "gpu_uuid": str,
            "clock_events_during": str}
    df = pd.read_csv(path, dtype=text)
    return to_frame(df.to_dict("records"))
