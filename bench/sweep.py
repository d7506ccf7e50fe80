"""``foscar bench`` as a study of the engine (:mod:`bench.engine`): :class:`BenchStudy`, and
how one point is measured (:func:`run_point`). The engine runs the loop (resume, progress,
failure rows, ``results.csv`` after every point).

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
4. with ``--read-floor`` (``BenchConfig.read_floor``), once the point's inputs are freed: every timed row's read floor,
   a plain read of its bytes over as many copies as its rotation, timed the same way, ``--sustain-s`` included
   (:func:`bench.hbm.read_floor_us`; one measurement per byte count and copy count in a run): ``read_floor_us`` and
   ``floor_fraction``;
5. add the point's speed-ups and the clock notes (over all rows so far), rewrite ``results.csv`` (so nothing measured is lost
   if a later point crashes the process), print the point's table, free memory.

A point or row that raises (out of memory, compile error, unsupported shape) is
recorded with ``status = "error"`` and the reason, and the sweep goes on.

Every row records the GPU it ran on (``gpu_uuid``) and that GPU's measured HBM ceiling
(``hbm_ceiling_tbps``, which its ``sol_fraction`` divides by): the engine writes both
(:attr:`BenchStudy.site_columns`, :func:`bench.engine.stamp_rows`). ``Sweep.indices`` limits
the loop to some points of the grid (``--shard K/N``, :mod:`bench.shard`).

Resuming (:func:`bench.engine.finished_points`): points whose rows are all in the previous
``results.csv`` with a final status are taken from it and not run again. Progress
(:mod:`bench.progress`): each point's header line carries an ETA, and a rich bar
on stderr shows the current point where stderr is a terminal.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from rich.console import Console

from bench.backends import Backend, Prepared, operand_unavailable
from bench.clocks import ClockReader, ClockSampler, add_clock_notes, clock_fields, sampled_fields
from bench.config import BenchConfig, config_from_meta
from bench.engine import Site, Study, error_reason, run_points
from bench.errors import FoscarError
from bench.hbm import read_floor_us
from bench.kinds import BENCH
from bench.plan import plan_points
from bench.points import grid, row_specs  # noqa: F401  (re-exported: bench.sweep.grid)
from bench.resume import row_key
from bench.results import (
    POINT_KEYS,
    TIMED,
    add_speedups,
    new_row,
    read_results,
    run_problems,
    set_timing,
    summarize,
    to_frame,
)
from bench.tables import point_table
from bench.timing import GRAPH_TIMING, time_fn
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
    floors: dict[tuple[int, int], float | None] = field(default_factory=dict)  # (bytes, copies) -> read floor, us


__all__ = ["BenchStudy", "Sweep", "error_reason", "grid", "row_specs", "run_point", "run_sweep"]


def expected_rows(point: Point, backends: list[Backend], operands: list[str]) -> list[tuple[str, int | None, str | None]]:
    """``(kernel, bits, operand)`` of every row of a point (:func:`bench.resume.row_key` form)."""
    return [row_key(be.name, bits, op) for be, bits, op in row_specs(point, backends, operands)]


def point_values(point: Point) -> dict[str, Any]:
    """The :data:`bench.results.POINT_KEYS` columns a :class:`bench.workload.Point`'s rows carry
    (``cache_bits`` = its bits; the workload columns from :meth:`Point.row_columns`)."""
    row = new_row(point, "", None, None, None)
    return {k: row[k] for k in POINT_KEYS}


class BenchStudy(Study):
    """``foscar bench`` as an engine study: the config's grid (:func:`bench.points.grid`) x its
    kernels (:func:`bench.points.row_specs`); a point is measured by :func:`run_point` (check
    against fp64, then time). Without a :class:`Sweep` (a merge) it only reads and summarizes.

    Args:
        cfg: the resolved config.
        backends: its kernels (``None``: only read, frame and summarize rows, as a merge does).
        sweep: where and how to run; ``None``: the study cannot measure.
        timing_mode, smoke: recorded in ``summary.json``.
    """

    kind = BENCH
    site_columns = ("gpu_uuid", "hbm_ceiling_tbps")  # the ceiling sol_fraction divides by

    def __init__(self, cfg: BenchConfig, backends: list[Backend] | None, sweep: Sweep | None = None,
                 timing_mode: str | None = None, smoke: bool | None = None):  # fmt: skip
        self.cfg, self.backends, self.sweep = cfg, backends, sweep
        self.timing_mode, self.smoke = timing_mode, smoke
        self._points = grid(cfg)
        if sweep is not None and cfg.read_floor and sweep.device.type != "cuda" and sweep.console is not None:
            sweep.console.print("--read-floor: no read floors without a CUDA GPU (read_floor_us stays empty)")

    def points(self) -> list[Point]:
        return self._points

    def label(self, point: Point) -> str:
        return point.label()

    def point_columns(self, point: Point) -> dict[str, Any]:
        return point_values(point)

    def row_keys(self, point: Point) -> list[tuple]:
        return expected_rows(point, self.backends, self.cfg.operand)

    def row_key(self, row: dict[str, Any]) -> tuple:
        return row_key(row["kernel"], row["bits"], row["operand"])

    def measure(self, point: Point) -> list[dict[str, Any]]:
        return run_point(point, self.sweep)

    def failure_rows(self, point: Point, reason: str) -> list[dict[str, Any]]:
        rows = [new_row(point, be.name, bits, op, be.baseline, kv_dtype=be.kv_dtype)
                for be, bits, op in row_specs(point, self.backends, self.cfg.operand)]  # fmt: skip
        for row in rows:
            row.update(status="error", error=reason)
        return rows

    def frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return add_clock_notes(add_speedups(to_frame(rows)))

    def merge_frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return add_speedups(to_frame(rows))  # each shard's clock notes are against its own GPU's median

    @staticmethod
    def read(path: Path) -> pd.DataFrame:
        return read_results(path)

    @staticmethod
    def empty_frame() -> pd.DataFrame:
        return to_frame([])

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> BenchStudy:
        # the backends only tell a merge which rows each point gives (row_keys; the registry imports no torch): None
        # where a kernel the run named is no longer registered, and reading and summarizing rows need none
        import bench.backends  # (looked up at the call: tests register fake backends there)

        cfg = config_from_meta(meta)
        try:
            backends = bench.backends.select_backends(list(cfg.kernels))
        except FoscarError:
            backends = None
        return cls(cfg, backends, timing_mode=meta.get("timing_mode"), smoke=meta.get("smoke"))

    def summarize(self, df: pd.DataFrame) -> dict[str, Any]:
        summary = summarize(df)
        summary["timing_mode"] = self.timing_mode
        summary["smoke"] = self.smoke
        return summary

    def problems(self, df: pd.DataFrame) -> list[str]:
        return run_problems(df)

    def estimates(self) -> list[float]:
        dev = self.sweep.device if self.sweep else torch.device("cpu")
        runnable = {be.name: be.unavailable(dev) is None for be in self.backends}
        return [p.seconds for p in plan_points(self.cfg, self.backends, interpreter=dev.type != "cuda", runnable=runnable)]

    def show_point(self, console, rows: pd.DataFrame, point: Point) -> None:
        console.print(point_table(rows, point.label(), self.sweep.hbm_tbps if self.sweep else None))

    def after_point(self) -> None:
        if self.sweep is not None:
            _free(self.sweep.device)


def run_sweep(sweep: Sweep) -> pd.DataFrame:
    """Run every point of ``sweep.indices`` (default: the whole grid) not already finished in
    ``sweep.prior``; return all rows, in grid order (also written to ``results_path`` after each point).
    The rows record no GPU UUID (``foscar bench`` runs through :func:`bench.engine.run_study`, whose
    run directory knows its GPU) and ``sweep.hbm_tbps`` as their ceiling."""
    study = BenchStudy(sweep.cfg, sweep.backends, sweep)
    return run_points(study, sweep.results_path, sweep.indices, sweep.prior, sweep.console, sweep.progress,
                      Site(hbm_ceiling_tbps=sweep.hbm_tbps))  # fmt: skip


def run_point(point: Point, sweep: Sweep) -> list[dict[str, Any]]:
    """All rows of one point (never raises for a kernel's or the point's own failure)."""
    cfg, dev = sweep.cfg, sweep.device
    specs = row_specs(point, sweep.backends, cfg.operand)
    rows = [new_row(point, be.name, bits, op, be.baseline, kv_dtype=be.kv_dtype) for be, bits, op in specs]

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
    if cfg.read_floor and dev.type == "cuda":  # (on the CPU: BenchStudy says once that there are none)
        _free(dev)
        for row in rows:
            _set_read_floor(row, sweep)
    return rows


def _set_read_floor(row: dict[str, Any], sweep: Sweep) -> None:
    """``read_floor_us`` and ``floor_fraction`` of a row timed by CUDA-graph replay (:func:`bench.hbm.read_floor_us`
    over its bytes and its rotation's copies, measured once per pair in a run, after the run's ``sustain_s`` of untimed
    reads as its rows are after theirs). Rows timed otherwise (the do_bench
    fallback times one copy eagerly) get none. Where the floor's buffers do not fit or its timing raises, the row keeps
    its own numbers, the floor stays empty, and the console says why (once per pair)."""
    if (row.get("status") not in TIMED or row.get("timing_mode") != GRAPH_TIMING or not row.get("bytes")
            or not row.get("working_set_bytes")):  # fmt: skip
        return
    key = (int(row["bytes"]), int(row["working_set_bytes"]) // int(row["bytes"]))
    if key not in sweep.floors:
        why = None
        try:
            sweep.floors[key] = read_floor_us(*key, sweep.device, sustain_s=sweep.cfg.sustain_s)
            if sweep.floors[key] is None:
                why = "its buffers would leave less than 1 GiB of device memory free"
        except Exception as e:  # a floor that cannot be timed leaves the row as it is
            sweep.floors[key] = None
            why = error_reason(e)
        if why and sweep.console is not None:
            sweep.console.print(f"read floor of {key[0]} B x {key[1]} copies not measured: {why}")
    floor = sweep.floors[key]
    if floor is not None:
        row.update(read_floor_us=floor, floor_fraction=floor / row["median_us"])


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
        before = [sweep.clocks.read() if sweep.clocks else None]

        def sustained() -> None:  # --sustain-s: the reading just before the timed calls, in the sustained state
            if sweep.clocks:
                before[0] = sweep.clocks.read()

        # NVML read every 20 ms while the timed graph replays run (a real reader only: a stand-in hands out readings)
        sampler = ClockSampler(sweep.clocks) if isinstance(sweep.clocks, ClockReader) else None
        timing = time_fn(fns, dev.type, warmup_ms=cfg.warmup_ms, rep_ms=cfg.rep_ms, cpu_reps=cfg.cpu_reps,
                         sustain_s=cfg.sustain_s, on_sustained=sustained if cfg.sustain_s > 0 else None,
                         during=sampler)
        after = sweep.clocks.read() if sweep.clocks else None
        row.update(clock_fields(before[0], after))
        row.update(sampled_fields(sampler, timing.mode))
        set_timing(row, timing, prep.bytes, sweep.hbm_tbps)
        row["working_set_bytes"] = prep.bytes * len(fns)
        del fns
    except Exception as e:
        row.update(status="error", error=error_reason(e))
    finally:
        del prep


ROTATE_L2_MULTIPLE = 4  # rotating copies until their bytes exceed 4x the L2
# the most copies a row rotates over: the smallest call of the presets (INT2 1 x 8K at one KV head, 0.66 MB) needs
# ~320 on an H100's 50 MiB L2 and ~380 on an H200's 60 MiB; until session 78 the cap was 64, under which such a
# row's 42 MB working set fitted in the L2 (tests/test_bench_sweep.py checks every preset point against the bound).
# Only calls under ~200 KB (smoke grids, whose times are not performance numbers) reach it.
MAX_COPIES = 1024


def rotation_copies(nbytes: int, l2_bytes: int) -> int:
    """How many input copies :func:`rotation` times over for a call of ``nbytes`` bytes on a device with ``l2_bytes``
    of L2: enough that one round reads ``ROTATE_L2_MULTIPLE`` times the L2, at least 1, at most ``MAX_COPIES``."""
    return min(MAX_COPIES, max(1, -(-ROTATE_L2_MULTIPLE * l2_bytes // max(nbytes, 1))))


def rotation(prep: Prepared, dev: torch.device) -> list:
    """``prep.fn`` plus enough replicas over their own input copies that one round of
    calls reads ``ROTATE_L2_MULTIPLE`` times the device's L2 (60 MB on the H200): every
    timed call then reads its inputs from HBM. One call when the inputs alone exceed
    that, or on the CPU."""
    if dev.type != "cuda" or prep.replica is None:
        return [prep.fn]
    copies = rotation_copies(prep.bytes, torch.cuda.get_device_properties(dev).L2_cache_size)
    return [prep.fn] + [prep.replica() for _ in range(copies - 1)]


def _free(dev: torch.device, collect: bool = True) -> None:
    if collect:
        gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
