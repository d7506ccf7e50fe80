"""What a sweep will do, before it runs: ``foscar bench --dry-run`` and the progress ETA.

Nothing here touches a GPU or builds data. Per point: the rows (kernels x operand
modes), the bytes one call of each kind of row must move, the device memory the
point needs at its peak (:func:`bench.workload.estimate_bytes`), and an estimated
time.

The run-time estimate is a simple model, not a measurement (constants below; the
setup constants are :data:`GPU_SETUP` or :data:`INTERPRETER_SETUP`):

* the run: ``run_s`` (imports, the HBM-ceiling probe);
* each point: ``point_s`` + the BF16 K/V bytes / :data:`SETUP_BYTES_PER_S`
  (random K/V, quantization in chunks, FlashInfer's BF16 paged cache, the fp64
  reference of the checked rows);
* each row that runs: ``row_s`` (build, the checked first call, rotation copies,
  graph capture), plus ``sustain_s`` (``--sustain-s``), plus its timing (three times with ``--read-floor``: the
  row's read floor, two read shapes timed as the row is):

  - GPU (CUDA-graph timing, :func:`bench.timing.time_graph`): ``GRAPH_REPLAYS``
    replays (one probe, one untimed, 15 timed), each lasting ``REPLAY_S`` or one
    call, whichever is longer; one call = its bytes / :data:`ASSUMED_TBPS`;
  - Triton interpreter: ``1 + cpu_reps`` calls of :data:`INTERPRETER_CALL_S` each
    (measured on the smoke grid; larger shapes take far longer).

One check on an H200 (8 points of the h200 grid, batch {1, 64} x context {8K, 128K}
x int2/int4, foscar-triton only, FlashInfer absent): 14 s from start to end, 20 s
estimated with these constants (the points alone: about 12 s measured, 15 s estimated).

First-time compilation is left out (Triton: seconds per kernel; FlashInfer's JIT:
minutes on a cold cache), and so are points that turn out not to fit in free memory
(they are skipped quickly). On a GPU every row is assumed to run (asking which
backends can run here would initialize CUDA); under the interpreter, rows whose
backend cannot run on the CPU are counted as skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.config import BenchConfig
from bench.lengths import lengths_summary
from bench.points import grid, row_specs
from bench.workload import Point, bytes_per_token, estimate_bytes

ASSUMED_TBPS = 3.0  # TB/s one decode call streams at (an H100's HBM3 achieves about this; H200 more)
SETUP_BYTES_PER_S = 50e9  # BF16 K/V bytes per second of point setup (generate, quantize, paged copy)
GRAPH_REPLAYS = 17  # bench.timing.time_graph: probe + untimed + replays=15
REPLAY_S = 10e-3  # bench.timing.time_graph: replay_ms=10
INTERPRETER_CALL_S = 0.25  # one smoke-grid call through the Triton interpreter (this repo's CI machine)


@dataclass(frozen=True)
class SetupCosts:
    """Fixed seconds per run, per point and per row that runs."""

    run_s: float
    point_s: float
    row_s: float


GPU_SETUP = SetupCosts(run_s=5.0, point_s=1.0, row_s=0.5)
INTERPRETER_SETUP = SetupCosts(run_s=3.0, point_s=0.1, row_s=0.05)

ESTIMATE_NOTE = (
    "an estimate from a simple model (bench/plan.py): setup per run, point and row, plus each row's "
    f"timing replays at an assumed {ASSUMED_TBPS:g} TB/s; first-time compilation not included"
)
INTERPRETER_NOTE = (
    f"an estimate for the Triton interpreter: {INTERPRETER_CALL_S:g} s per call (smoke-sized shapes; "
    "larger ones take far longer)"
)

GIB = float(1 << 30)


@dataclass(frozen=True)
class PointPlan:
    """One point of the grid, before it runs."""

    point: Point
    rows: int  # rows (kernel x operand) the point has
    runnable_rows: int  # of which are expected to run (the rest: skipped, no time)
    quant_call_bytes: int  # bytes one call of a quantized kernel moves
    bf16_call_bytes: int  # bytes one call of a BF16 baseline moves
    device_bytes: int  # device memory the point needs at its peak (estimate_bytes)
    seconds: float  # estimated wall time of the point


def call_bytes(point: Point, quantized: bool, kv_elem_bytes: int = 2) -> int:
    """Bytes one decode call must move: K/V of the tokens of the point's lengths (quantized
    codes + scales, or ``kv_elem_bytes`` per value: 2 for BF16, 1 for FP8) + q read +
    output written. The cache capacity does not count: slots past a length are not read."""
    p = point
    io = 2 * p.batch * p.num_qo_heads * p.head_dim * 2
    tokens = p.kv_tokens * p.num_kv_heads
    if quantized:
        return tokens * bytes_per_token(p.bits, p.group_size, p.head_dim) + io
    return tokens * p.head_dim * kv_elem_bytes * 2 + io


def _row_call_bytes(point: Point, backend) -> int:
    """Bytes one call of ``backend``'s row moves at ``point``."""
    if backend.quantized:
        return call_bytes(point, True)
    return call_bytes(point, False, kv_elem_bytes=1 if backend.kv_dtype == "fp8_e4m3" else 2)


def setup_costs(interpreter: bool) -> SetupCosts:
    return INTERPRETER_SETUP if interpreter else GPU_SETUP


def row_seconds(nbytes: int, interpreter: bool, cpu_reps: int, sustain_s: float = 0.0, read_floor: bool = False) -> float:
    """Estimated wall time of one row that runs (see the module docstring); ``sustain_s``: the config's untimed
    seconds before the row's timing (``--sustain-s``), counted in full; ``read_floor`` (``--read-floor``): the
    row's read floor timed too, two read shapes timed as the row, each after ``sustain_s`` of untimed reads (an upper
    bound: rows of the same bytes share one)."""
    if interpreter:
        return INTERPRETER_SETUP.row_s + (1 + cpu_reps) * INTERPRETER_CALL_S + sustain_s
    call_s = nbytes / (ASSUMED_TBPS * 1e12)
    timing_s = GRAPH_REPLAYS * max(REPLAY_S, call_s)
    return GPU_SETUP.row_s + timing_s + sustain_s + (2 * (timing_s + sustain_s) if read_floor else 0.0)


def plan_points(
    cfg: BenchConfig,
    backends: list,
    interpreter: bool,
    runnable: dict[str, bool] | None = None,
    total_memory: int | None = None,
) -> list[PointPlan]:
    """A :class:`PointPlan` per point of the grid, in sweep order.

    Args:
        backends: :class:`bench.backends.Backend` of the config's kernels.
        interpreter: the run would use the Triton interpreter (CPU timing model).
        runnable: backend name -> whether it runs here; missing names count as runnable.
        total_memory: device bytes; a point that needs more is skipped by a run, and its estimate is 0 s.
    """
    runnable = runnable or {}
    with_bf16 = any(not be.quantized for be in backends)
    with_fp8 = any(be.kv_dtype == "fp8_e4m3" for be in backends)
    plans = []
    for point in grid(cfg):
        specs = row_specs(point, backends, cfg.operand)
        qb, bb = call_bytes(point, True), call_bytes(point, False)
        run = [(be, bits) for be, bits, _ in specs if runnable.get(be.name, True)]
        device_bytes = estimate_bytes(point, with_bf16_cache=with_bf16, with_fp8_cache=with_fp8)
        seconds = 0.0
        if run and (total_memory is None or device_bytes <= total_memory):
            kv_bf16 = point.num_kv_heads * point.kv_tokens * point.head_dim * 2 * 2
            seconds = setup_costs(interpreter).point_s + kv_bf16 / SETUP_BYTES_PER_S
            seconds += sum(row_seconds(_row_call_bytes(point, be), interpreter, cfg.cpu_reps, cfg.sustain_s,
                                       cfg.read_floor) for be, _ in run)
        plans.append(
            PointPlan(
                point=point,
                rows=len(specs),
                runnable_rows=len(run),
                quant_call_bytes=qb,
                bf16_call_bytes=bb,
                device_bytes=device_bytes,
                seconds=seconds,
            )
        )
    return plans


def total_seconds(plans: list[PointPlan], interpreter: bool = False) -> float:
    """Estimated wall time of the whole run: setup plus every point (0 with no point to run)."""
    if not plans:
        return 0.0
    return setup_costs(interpreter).run_s + sum(p.seconds for p in plans)


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2 h 05 min``."""
    if not math.isfinite(seconds):
        return "?"
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    h, m = divmod(round(minutes), 60)
    return f"{h} h {m:02d} min"


def plan_json(
    cfg: BenchConfig,
    cfg_hash: str,
    plans: list[PointPlan],
    kernels: list[str],
    interpreter: bool,
    total_memory: int | None,
    resume: dict[str, Any] | None,
    memory_source: str | None = None,
) -> dict[str, Any]:
    """The dry run as a JSON-ready dict (``--dry-run --format json``); ``memory_source`` says whose
    ``total_memory`` it is (the GPU's name, or a preset's nominal memory)."""
    todo = still_to_run(plans, resume)
    return {
        "dry_run": True,
        "config": cfg.to_dict(),
        "config_hash": cfg_hash,
        "kernels": kernels,
        "operands": list(cfg.operand),
        "num_points": len(plans),
        "num_rows": sum(p.rows for p in plans),
        "points": [
            {
                "batch": p.point.batch,
                "context": p.point.context,
                "bits": p.point.bits,
                "grid": p.point.grid,
                "workload": p.point.workload.name,
                "capacity": p.point.capacity,
                "lengths": list(p.point.lengths),
                "rows": p.rows,
                "runnable_rows": p.runnable_rows,
                "quant_call_bytes": p.quant_call_bytes,
                "bf16_call_bytes": p.bf16_call_bytes,
                "device_bytes": p.device_bytes,
                "fits": None if total_memory is None else p.device_bytes <= total_memory,
                "estimated_seconds": p.seconds,
                "done": is_done(p, resume),
            }
            for p in plans
        ],
        "peak_device_bytes": max((p.device_bytes for p in plans), default=0),
        "device_total_memory_bytes": total_memory,
        "device_total_memory_source": memory_source,
        "estimated_seconds": total_seconds(todo, interpreter),
        "estimate": INTERPRETER_NOTE if interpreter else ESTIMATE_NOTE,
        "resume": resume,
    }


def still_to_run(plans: list[PointPlan], resume: dict[str, Any] | None) -> list[PointPlan]:
    """The plans of the points a resumed run would still run (all of them without ``resume``)."""
    return [p for p in plans if not is_done(p, resume)]


def point_key(point: Point) -> list[Any]:
    """``[grid, batch, context, bits, workload, capacity, lengths summary]``: a point of the
    grid as JSON (``resume["done_points"]`` holds these)."""
    return [point.grid, point.batch, point.context, point.bits, point.workload.name, point.capacity,
            lengths_summary(point.lengths)]  # fmt: skip


def is_done(plan: PointPlan, resume: dict[str, Any] | None) -> bool:
    """Whether ``resume["done_points"]`` (:func:`point_key` lists) holds the plan's point."""
    if not resume:
        return False
    return point_key(plan.point) in resume.get("done_points", [])


def plan_table(
    cfg: BenchConfig,
    plans: list[PointPlan],
    kernels: list[str],
    interpreter: bool,
    total_memory: int | None,
    resume: dict[str, Any] | None,
    memory_source: str | None = None,
):
    """Header lines (kernels, shape), a rich table of the grid (one line per point), then the totals;
    with ``total_memory`` (bytes, whose: ``memory_source``) a column says which points fit, and a line how
    many do not."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    todo = still_to_run(plans, resume)
    model = f" ({cfg.model})" if cfg.model else ""
    header = [
        f"kernels: {', '.join(kernels)}; operand {', '.join(cfg.operand)}; group size {cfg.group_size}",
        f"shape{model}: {cfg.num_qo_heads} qo / {cfg.num_kv_heads} kv heads, head_dim {cfg.head_dim}, "
        f"page size {cfg.page_size} ({cfg.page_order} pages)",
    ]
    title = f"dry run: {len(plans)} points x {len(kernels)} kernels"
    peak = max((p.device_bytes for p in plans), default=0)
    caption = [
        f"{sum(p.rows for p in plans)} rows; peak device memory ~{peak / GIB:.1f} GiB"
        + (f" of {total_memory / GIB:.1f} GiB" if total_memory else "")
        + (f" ({memory_source})" if total_memory and memory_source else ""),
        f"estimated run time ~{format_duration(total_seconds(todo, interpreter))}: "
        + (INTERPRETER_NOTE if interpreter else ESTIMATE_NOTE),
    ]
    too_big = sum(p.device_bytes > total_memory for p in plans) if total_memory else 0
    if too_big:
        caption.insert(0, Text(f"{too_big} of {len(plans)} points need more device memory than "
                               f"{total_memory / GIB:.1f} GiB: a run skips them", style="yellow"))
    if resume:
        caption.insert(0, f"resuming: {len(plans) - len(todo)} of {len(plans)} points already in results.csv")
    ragged = any(not p.point.is_plain() or p.point.grid != "sweep" for p in plans)
    if cfg.workload != type(cfg.workload)():
        header.append(f"[sweep] grid workload: {cfg.workload.describe()}")
    if ragged:
        header.append(
            "workload: lengths (tokens; AxN = N sequences of A) and cache capacity of each point; "
            "bytes count the tokens of the lengths"
        )
    table = Table(title=title, title_justify="left")
    names = ["#", "batch", "context", "bits"] + (["grid", "workload", "lengths", "capacity"] if ragged else [])
    for name in names + ["rows", "KV+io / call (int / bf16)", "device mem", "est. time"]:
        table.add_column(name, justify="left" if name.startswith("KV") or name in ("grid", "workload", "lengths") else "right")
    if total_memory:
        table.add_column("fits", justify="left")
    for i, p in enumerate(plans, 1):
        rows = str(p.rows) if p.runnable_rows == p.rows else f"{p.runnable_rows}/{p.rows}"
        cells = [str(i), str(p.point.batch), str(p.point.context), f"int{p.point.bits}"]
        if ragged:
            cells += [p.point.grid, p.point.workload.name, lengths_summary(p.point.lengths), str(p.point.capacity)]
        cells += [
            rows,
            f"{_bytes(p.quant_call_bytes)} / {_bytes(p.bf16_call_bytes)}",
            f"{p.device_bytes / GIB:.1f} GiB",
            "done" if is_done(p, resume) else "-" if total_memory and p.device_bytes > total_memory
            else format_duration(p.seconds),
        ]
        if total_memory:
            cells.append("yes" if p.device_bytes <= total_memory else "[yellow]no: skipped[/]")
        table.add_row(*cells)
    caption_lines = (line if isinstance(line, Text) else Text(line) for line in caption)
    return Group(*(Text(line) for line in header), table, *caption_lines)


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
