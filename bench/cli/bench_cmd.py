"""``foscar bench``: the flags that pick the grid, the shape, the workload and the shards, checked
before anything heavy is imported; then :func:`bench.run.run_bench` (or :func:`bench.devices.run_devices`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.arch import Arch
from bench.backends import kernel_names
from bench.cli.app import app
from bench.cli.options import (
    FLAG,
    choices,
    BatchOpt,
    BitsOpt,
    ContextOpt,
    DebugOpt,
    FormatOpt,
    JsonOpt,
    OutOpt,
    DevicesOpt,
    ShardOpt,
    SmokeOpt,
    bit_widths,
    build_options,
    command_args,
    enum_option,
    one_of,
    run_command,
    sharding,
)
from bench.config import (
    GRIDS,
    MAX_SUSTAIN_S,
    SUPPORTED_GROUP_SIZES,
    SUPPORTED_HEAD_DIMS,
    SUPPORTED_OPERANDS,
    UNBUILT_OPERANDS,
    model_names,
)
from bench.engine import OutputFormat
from bench.errors import FoscarError, check_choices
from bench.lengths import WORKLOAD_NAMES
from bench.shape import PAGE_ORDERS
from bench.run import BenchOptions


ArchOpt = Annotated[
    Arch,
    enum_option(Arch, "--arch", help="Preset to run: configs/<arch>.toml. auto: from the GPU's name and compute "
                "capability."),
]
ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", help="A TOML sweep config (format: configs/h200.toml); default: the arch's preset.")
]
GroupOpt = Annotated[
    Optional[int], typer.Option("--group-size", help=f"Quantization group size: {one_of(SUPPORTED_GROUP_SIZES)}.")
]
OperandOpt = Annotated[
    Optional[list[str]],
    typer.Option("--operand", metavar=choices(SUPPORTED_OPERANDS),
                 help=f"FOSCAR tensor-core operand mode (repeat): {one_of(SUPPORTED_OPERANDS)}."),
]
KernelOpt = Annotated[
    Optional[list[str]], typer.Option("--kernel", metavar="NAME",
                                      help=f"Only these kernels (repeat): {one_of(kernel_names())}.")
]
ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", metavar="NAME", help="A model's attention shape over the arch preset's grid: "
                 f"{one_of(model_names())} (configs/models/NAME.toml) or a TOML path."),
]  # fmt: skip
QoHeadsOpt = Annotated[Optional[int], typer.Option("--num-qo-heads", min=1, help="Query heads (overrides preset and --model).")]
KvHeadsOpt = Annotated[Optional[int], typer.Option("--num-kv-heads", min=1, help="KV heads (overrides preset and --model).")]
HeadDimOpt = Annotated[
    Optional[int],
    typer.Option("--head-dim", help=f"Head dimension: {one_of(SUPPORTED_HEAD_DIMS)} (overrides preset and --model)."),
]
PageSizeOpt = Annotated[
    Optional[int],
    typer.Option("--page-size", min=1, help="Tokens per page of the paged caches, FOSCAR's (foscar-cuda-paged) and "
                 "FlashInfer's (overrides the preset's page_size, 16): e.g. 1 (a token pool, as SGLang's), 16 (vLLM's "
                 "default), 64. The CUDA kernel takes powers of two; a kernel that cannot take the size records a "
                 "row with status error and the reason."),
]  # fmt: skip
PageOrderOpt = Annotated[
    Optional[str],
    typer.Option("--page-order", metavar=choices(PAGE_ORDERS),
                 help="Order of the paged caches' pages in memory, FOSCAR's and FlashInfer's alike: "
                 "shuffled (the presets'; a pool that has served for a while) or in-order (each sequence's pages "
                 "consecutive)."),
]  # fmt: skip
WorkloadOpt = Annotated[
    Optional[str],
    typer.Option("--workload", metavar="NAME",
                 help="Sequence lengths of the \\[sweep] grid's points: uniform (all = context), one-long "
                 "(one at context, the rest at --short-len), lognormal (heavy-tailed, median context/8, seeded), "
                 "capacity (all = context in a cache of the grid's largest context or --capacity). Default: the "
                 "preset's \\[workload]."),
]  # fmt: skip
CapacityOpt = Annotated[
    Optional[int],
    typer.Option("--capacity", min=1, help="Tokens per sequence the cache is allocated for (max_seq_len), >= every "
                 "context of the \\[sweep] grid; default: per workload (context; capacity: the largest context)."),
]  # fmt: skip
WorkloadSeedOpt = Annotated[
    Optional[int], typer.Option("--workload-seed", min=0, help="Seed of the lognormal lengths (not of the K/V data).")
]
ShortLenOpt = Annotated[
    Optional[int], typer.Option("--short-len", min=1, help="one-long: tokens of the short sequences (default 4096).")
]
GridOpt = Annotated[
    Optional[list[str]],
    typer.Option("--grid", metavar=choices(GRIDS),
                 help="Only this grid (repeat): sweep (the preset's \\[sweep] grid, with --workload) or "
                 "ragged (its \\[\\[ragged]] grid). Default: both; only sweep when --batch, --context or a workload "
                 "flag is given."),
]  # fmt: skip
SustainOpt = Annotated[
    Optional[float],
    typer.Option("--sustain-s", min=0, max=MAX_SUSTAIN_S, help="Before timing each row, replay it back to back, "
                 "untimed, for this many seconds and time it right after, so that every row is timed in the power and "
                 "clock state of sustained decoding (an H200 reaches its 700 W cap within a second and was still "
                 "slowing after 2 s; bench/NOTES.md §77, §82). Default: the preset's \\[timing] sustain_s, 0."),
]  # fmt: skip
ReadFloorOpt = Annotated[
    bool,
    typer.Option("--read-floor", metavar=FLAG, help="Also time, for every timed row, a plain read of its "
                 "bytes over the same rotating copies and CUDA-graph replays (results.csv read_floor_us; "
                 "floor_fraction = read_floor_us / median_us, 1.0 as fast as that reference read; meaningful from ~100 "
                 "MiB up): the HBM ceiling is a 16 GiB stream, and a ~45 us call cannot reach it (bench/NOTES.md "
                 "§84). Up to ~1 s more a row; not with --sustain-s's power state. Default: the preset's \\[timing] "
                 "read_floor, off."),
]  # fmt: skip
# Its own flag, not typer's "--read-floor/--no-read-floor" pair: rich's help gives a pair's second name a column of its
# own, which left every option's help ~19 columns wide at 80 columns and cut 11 values with "…".
NoReadFloorOpt = Annotated[
    bool,
    typer.Option("--no-read-floor", metavar=FLAG,
                 help="No read floors, whatever the config's \\[timing] read_floor says."),
]  # fmt: skip
NearestOpt = Annotated[
    bool,
    typer.Option("--nearest-preset", metavar=FLAG,
                 help="With --arch auto on a GPU no preset names (e.g. sm_80): run the nearest "
                 "preset (h100 below sm_100, b200 from it) instead of stopping with an error."),
]  # fmt: skip
DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", metavar=FLAG,
                 help="Print the resolved grid, the device memory per point and an estimated run time; "
                 "run nothing, touch no GPU, write nothing."),
]  # fmt: skip
@app.command()
def bench(
    ctx: typer.Context,
    arch: ArchOpt = Arch.auto,
    config: ConfigOpt = None,
    out: OutOpt = None,
    smoke: SmokeOpt = False,
    bits: BitsOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    group_size: GroupOpt = None,
    operand: OperandOpt = None,
    kernels: KernelOpt = None,
    model: ModelOpt = None,
    num_qo_heads: QoHeadsOpt = None,
    num_kv_heads: KvHeadsOpt = None,
    head_dim: HeadDimOpt = None,
    page_size: PageSizeOpt = None,
    page_order: PageOrderOpt = None,
    workload: WorkloadOpt = None,
    capacity: CapacityOpt = None,
    workload_seed: WorkloadSeedOpt = None,
    short_len: ShortLenOpt = None,
    grids: GridOpt = None,
    sustain_s: SustainOpt = None,
    read_floor: ReadFloorOpt = False,
    no_read_floor: NoReadFloorOpt = False,
    dry_run: DryRunOpt = False,
    nearest_preset: NearestOpt = False,
    shard: ShardOpt = None,
    devices: DevicesOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Benchmark FOSCAR decode kernels against FlashInfer (BF16 and FP8 KV caches) over a batch x context x bits grid.

    The preset's \\[sweep] grid runs with its \\[workload] (sequence lengths and cache
    capacity; --workload and friends override it), then its \\[\\[ragged]] grid (--grid
    picks). Every kernel is checked against an fp64 reference before it is timed. Writes
    results.csv, meta.json and summary.json to the run directory. Rerunning the same
    command with the same --out DIR resumes it (finished points are not run again).

    Exit code 2: a bad flag or config (nothing ran); 3: the run finished, but a row's time was invalid or no FOSCAR row was timed (summary.json's "problems").
    """
    check_choices("--kernel", kernels, kernel_names())
    check_choices("--group-size", None if group_size is None else [group_size], SUPPORTED_GROUP_SIZES)
    check_choices("--operand", operand, SUPPORTED_OPERANDS, UNBUILT_OPERANDS)
    check_choices("--head-dim", None if head_dim is None else [head_dim], SUPPORTED_HEAD_DIMS)
    check_choices("--workload", None if workload is None else [workload], WORKLOAD_NAMES)
    check_choices("--page-order", None if page_order is None else [page_order], PAGE_ORDERS)
    check_choices("--grid", grids, GRIDS)
    shard_k_n = sharding(shard, devices)
    if read_floor and no_read_floor:
        raise FoscarError("--read-floor and --no-read-floor: pass one of them")
    opts = build_options(
        BenchOptions,
        ctx,
        bits=bit_widths(bits),
        output=OutputFormat.json if as_json else output_format,
        argv=["foscar", *command_args(ctx)],
        shard=shard_k_n,
        read_floor=True if read_floor else False if no_read_floor else None,  # None: the config's
    )
    from bench.run import run_bench

    run_command("bench", opts, run_bench, None if dry_run else devices)  # --dry-run --devices: the plan only
