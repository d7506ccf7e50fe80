"""The loop over sweep points.

For every point (batch x context x bits, in that nesting; the ``[sweep]`` grid,
then the ``[[ragged]]`` grid, :func:`bench.points.grid`):

1. estimate the point's device memory and skip it (with the reason in every row)
   if it does not fit in what ``torch.cuda.mem_get_info`` reports free;
2. build its inputs (:func:`bench.workload.build_workload`): random BF16 K/V,
   quantized in chunks, random q, fp64 reference for the checked rows;
3. for every kernel row: skip it with the reason if the backend cannot run here;
   build it, run it once, check it against the reference (NaN or ``max_rel_err >``
   the tolerance for the cache it reads, :meth:`BenchConfig.tolerance_for`, fails,
   and a failed row is not timed); then time it: CUDA-graph replay over rotating
   input copies (:func:`rotation`, :mod:`bench.timing`), with the GPU's SM clock
   and clock event reasons read just before and just after (:mod:`bench.clocks`);
4. add the point's speed-ups and the clock notes (over all rows so far), rewrite ``results.csv`` (so nothing measured is lost
   if a later point crashes the process), print the point's table, free memory.

A point or row that raises (out of memory, compile error, unsupported shape) is
recorded with ``status = "error"`` and the reason, and the sweep goes on.

Every row records the GPU it ran on (``gpu_uuid``) and that GPU's measured HBM ceiling
(``hbm_ceiling_tbps``, which its ``sol_fraction`` divides by). ``Sweep.indices`` limits
the loop to some points of the grid (``--shard K/N``, :mod:`bench.shard`).

Resuming (:mod:`bench.resume`): points whose rows are all in the previous
``results.csv`` with a final status are taken from it and not run again. Progress
(:mod:`bench.progress`): each point's header line carries an ETA, and a rich bar
on stderr shows the current point where stderr is a terminal.
"""

from __future__ import annotations

import gc
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from rich.console import Console

from bench.backends import Backend, Prepared, operand_unavailable
from bench.clocks import ClockReader, add_clock_notes, clock_fields
from bench.config import BenchConfig
from bench.plan import plan_points
from bench.points import grid, row_specs  # noqa: F401  (re-exported: bench.sweep.grid)
from bench.progress import Eta, SweepProgress, bar_wanted
from bench.resume import finished_rows, row_key
from bench.results import add_speedups, new_row, set_timing, to_frame, write_csv
from bench.tables import point_table
from bench.timing import time_fn
from bench.workload import Point, build_workload, describe_rows, estimate_bytes, max_rel_err

GIB = float(1 << 30)


@dataclass
class Sweep:
    """What the loop needs: the config, the kernels, where to run and where to write."""

    cfg: BenchConfig
    backends: list[Backend]
    device: torch.device
    hbm_tbps: float | None
    results_path: Path
    console: Console | None  # None: print nothing
    prior: pd.DataFrame | None = None  # rows of the run being resumed (bench.resume.load_prior)
    progress: bool = False  # a rich bar on stderr (where stderr is a terminal)
    clocks: ClockReader | None = None  # NVML reader of the GPU's clocks; None: none recorded
    indices: list[int] | None = None  # grid indices to run (a shard, bench.shard); None: every point
    gpu_uuid: str | None = None  # the GPU the rows run on (results.csv gpu_uuid); None on the CPU


def error_reason(e: BaseException, limit: int = 300) -> str:
    """``"Type: message"`` on one line, whitespace squashed, at most ``limit`` characters."""
    msg = " ".join(str(e).split())
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expected_rows(point: Point, backends: list[Backend], operands: list[str]) -> list[tuple[str, int | None, str | None]]:
    """``(kernel, bits, operand)`` of every row of a point (:func:`bench.resume.row_key` form)."""
    return [row_key(be.name, bits, op) for be, bits, op in row_specs(point, backends, operands)]


def finished_points(cfg: BenchConfig, backends: list[Backend], prior: pd.DataFrame | None) -> dict[int, list[dict[str, Any]]]:
    """Grid index -> the point's rows from ``prior``, for every point that need not run again."""
    done: dict[int, list[dict[str, Any]]] = {}
    if prior is None or not len(prior):
        return done
    for i, point in enumerate(grid(cfg)):
        rows = finished_rows(prior, point, expected_rows(point, backends, cfg.operand))
        if rows is not None:
            done[i] = rows
    return done


def run_sweep(sweep: Sweep) -> pd.DataFrame:
    """Run every point of ``sweep.indices`` (default: the whole grid) not already finished in
    ``sweep.prior``; return all rows, in grid order (also written to ``results_path`` after each point)."""
    cfg = sweep.cfg
    points = grid(cfg)
    selected = list(range(len(points))) if sweep.indices is None else list(sweep.indices)
    by_point = finished_points(cfg, sweep.backends, sweep.prior)
    todo = [i for i in selected if i not in by_point]
    position = {i: n for n, i in enumerate(selected)}  # 0-based place of a grid index among the selected points
    if sweep.console and by_point:
        sweep.console.print(
            f"resuming: {len(selected) - len(todo)} of {len(selected)} points already in {sweep.results_path}; "
            f"running the other {len(todo)}"
        )

    def all_rows() -> pd.DataFrame:
        return add_clock_notes(add_speedups(to_frame([r for i in sorted(by_point) for r in by_point[i]])))

    runnable = {be.name: be.unavailable(sweep.device) is None for be in sweep.backends}
    plans = plan_points(cfg, sweep.backends, interpreter=sweep.device.type != "cuda", runnable=runnable)
    eta = Eta([plans[i].seconds for i in todo])
    df = all_rows()
    with SweepProgress(eta, len(selected)) if sweep.progress and bar_wanted() else nullcontext() as bar:
        for i in todo:
            point = points[i]
            if bar:
                bar.point_started(position[i] + 1, point.label())
            if sweep.console:
                sweep.console.print(f"[bold][{position[i] + 1}/{len(selected)}][/] {point.label()}  [dim]({eta.text()})[/]")
            point_rows = run_point(point, sweep)
            by_point[i] = point_rows
            df = all_rows()
            write_csv(df, sweep.results_path)
            eta.point_done()
            if bar:
                bar.point_done()
            if sweep.console:
                start = sum(len(by_point[j]) for j in by_point if j < i)
                mine = df.iloc[start : start + len(point_rows)]
                sweep.console.print(point_table(mine, point.label(), sweep.hbm_tbps))
            _free(sweep.device)
    if not todo:
        write_csv(df, sweep.results_path)
    return df


def run_point(point: Point, sweep: Sweep) -> list[dict[str, Any]]:
    """All rows of one point (never raises for a kernel's or the point's own failure)."""
    cfg, dev = sweep.cfg, sweep.device
    specs = row_specs(point, sweep.backends, cfg.operand)
    rows = [new_row(point, be.name, bits, op, be.baseline, kv_dtype=be.kv_dtype) for be, bits, op in specs]
    for row in rows:  # where the row ran, whatever becomes of it
        row.update(gpu_uuid=sweep.gpu_uuid, hbm_ceiling_tbps=sweep.hbm_tbps)

    # cannot run here at all: say why, per row
    runnable = []
    for (be, bits, op), row in zip(specs, rows):
        reason = be.unavailable(dev) or (operand_unavailable(dev, op, be.name) if be.quantized else None)
        if reason:
            row.update(status="skipped", error=reason)
        else:
            runnable.append((be, op, row))
    if not runnable:
        return rows

    # does the point fit?
    if dev.type == "cuda":
        need = estimate_bytes(
            point,
            with_bf16_cache=any(not be.quantized for be, _, _ in runnable),
            with_fp8_cache=any(be.kv_dtype == "fp8_e4m3" for be, _, _ in runnable),
        )
        free, _ = torch.cuda.mem_get_info(dev)
        if need > free:
            reason = f"point needs ~{need / GIB:.1f} GiB of device memory, {free / GIB:.1f} GiB free"
            for _, _, row in runnable:
                row.update(status="skipped", error=reason)
            return rows

    try:
        w = build_workload(point, dev, cfg.seed, cfg.full_check_max_tokens)
    except Exception as e:  # OOM, a quantizer error: the point's inputs could not be built
        reason = "building inputs: " + error_reason(e)
        for _, _, row in runnable:
            row.update(status="error", error=reason)
        return rows

    checked = describe_rows(w.rows, point.batch)
    for be, op, row in runnable:
        _run_row(be, op, row, w, checked, sweep)
        _free(dev, collect=False)
    del w
    return rows


def _run_row(be: Backend, operand: str | None, row: dict[str, Any], w, checked: str, sweep: Sweep) -> None:
    cfg, dev = sweep.cfg, sweep.device
    prep = None
    try:
        prep = be.build(w, operand)
        prep.fn()  # first call: compiles/JITs outside any timing
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        err = max_rel_err(prep.output(), w.reference, w.rows)
        row.update(max_rel_err=err, checked_rows=checked)
        if not err == err:  # NaN
            row.update(status="failed", error="NaN/Inf in a checked row of the output or the reference; not timed")
            return
        tolerance, key = cfg.tolerance_for(row["kv_dtype"], operand)
        if err > tolerance:
            row.update(status="failed", error=f"max_rel_err {err:.3g} > {key} {tolerance:g}; not timed")
            return
        fns = rotation(prep, dev)
        before = sweep.clocks.read() if sweep.clocks else None
        timing = time_fn(fns, dev.type, warmup_ms=cfg.warmup_ms, rep_ms=cfg.rep_ms, cpu_reps=cfg.cpu_reps)
        after = sweep.clocks.read() if sweep.clocks else None
        row.update(clock_fields(before, after))
        set_timing(row, timing, prep.bytes, sweep.hbm_tbps)
        row["working_set_bytes"] = prep.bytes * len(fns)
        del fns
    except Exception as e:
        row.update(status="error", error=error_reason(e))
    finally:
        del prep


ROTATE_L2_MULTIPLE = 4  # rotating copies until their bytes exceed 4x the L2
MAX_COPIES = 64


def rotation(prep: Prepared, dev: torch.device) -> list:
    """``prep.fn`` plus enough replicas over their own input copies that one round of
    calls reads ``ROTATE_L2_MULTIPLE`` times the device's L2 (60 MB on the H200): every
    timed call then reads its inputs from HBM. One call when the inputs alone exceed
    that, or on the CPU."""
    if dev.type != "cuda" or prep.replica is None:
        return [prep.fn]
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    copies = min(MAX_COPIES, max(1, -(-ROTATE_L2_MULTIPLE * l2 // max(prep.bytes, 1))))
    return [prep.fn] + [prep.replica() for _ in range(copies - 1)]


def _free(dev: torch.device, collect: bool = True) -> None:
    if collect:
        gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
