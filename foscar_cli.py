"""The ``foscar`` command line: a thin shell that wires commands to ``bench/``.

    foscar bench --arch h200                      # the preset grid of configs/h200.toml
    foscar bench --arch auto --bits 2 --batch 8 --context 32768
    foscar bench --config my.toml --out results/my-run
    foscar bench --smoke                          # tiny grid; Triton interpreter when there is no GPU
    foscar bench --arch h200 --model llama-3.1-70b-tp8    # a model's shape (configs/models/) on the h200 grid
    foscar bench --arch h200 --dry-run            # the grid, memory per point, estimated time; runs nothing
    foscar bench --arch h200 --grid ragged        # only the preset's ragged grid ([[ragged]])
    foscar bench --arch h200 --workload one-long --capacity 131072   # the [sweep] grid with other lengths
    foscar bench --arch h200 --shard 0/2 --out results/s0 # every 2nd point from point 0 (one shard)
    foscar merge results/s0 results/s1 --out results/all  # shards -> one run
    foscar bench --arch h200 --devices all        # one worker per local GPU, merged at the end
    foscar report results/<run> [more runs] [--out DIR]   # PNG plots + report.md, for any run's kind (bench.study)
    foscar compare BASE NEW [--threshold 0.05] [--json]   # two runs of one kind; exit 1 on a regression
    foscar export-gab RUN [--out FILE]            # github-action-benchmark customSmallerIsBetter JSON
    foscar accuracy [--smoke] [--out DIR]         # kernel error vs exact attention: data x bits x group x rotation x layout
    foscar ablate [--smoke]                       # folded vs per-value, group size, split-KV, operands, paging
    foscar eval-model --model DIR --bits 4 --group-size 32   # a real model: INT2/INT4 cache vs its BF16 cache
    foscar dump-kv --model DIR --out kv.safetensors          # per-layer post-RoPE q/k/v; then accuracy --kv-file

Errors the user can fix raise :class:`bench.errors.FoscarError`; :func:`main` prints
them as one line on stderr and exits with code 2 (``--debug`` or ``FOSCAR_DEBUG=1``
shows the traceback). Exit codes: 0 done, 1 ``compare`` found a regression, 2 bad
input, 3 ``bench`` finished but its numbers need a look (:mod:`bench.errors`).
Nothing heavy (torch, triton, flashinfer) is imported until a command runs, and the
flags with a fixed set of values (``--kernel``, ``--group-size``, ``--operand``,
``--head-dim``, ``--axis``, ``--shard``, ``--devices``) are checked before that, in one wording
(:func:`bench.errors.check_choices`), against the backend registry and
:mod:`bench.config`'s lists of what the kernels take. Options that several commands take
are typer ``Annotated`` aliases defined once below; a command's parameters are named as the
fields of its options dataclass (the flag names are in the aliases), and :func:`_options`
builds the dataclass from them by name.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from bench.ablate_grid import AXES
from bench.accuracy_grid import DATA_KIND_NAMES, ROTATIONS, VARIANT_NAMES
from bench.arch import Arch
from bench.backends import kernel_names
from bench.config import (
    GRIDS,
    SUPPORTED_GROUP_SIZES,
    SUPPORTED_HEAD_DIMS,
    SUPPORTED_OPERANDS,
    UNBUILT_OPERANDS,
    model_names,
)
from bench.devices import parse_devices
from bench.errors import EXIT_RUN_PROBLEM, EXIT_USAGE, FoscarError, check_choices
from bench.lengths import WORKLOAD_NAMES
from bench.run import BenchOptions, OutputFormat
from bench.shard import parse_shard

T = TypeVar("T")

app = typer.Typer(
    name="foscar",
    help="FOSCAR: affine-folded INT2/INT4 KV-cache decode attention, and its benchmark harness.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@dataclass
class CliState:
    """Per invocation: the root context's ``obj`` (``ctx.obj``), set up by :func:`main`."""

    debug: bool = False  # --debug (or FOSCAR_DEBUG=1): tracebacks instead of one-line errors
    argv: list[str] | None = None  # the arguments after the program name, as given (None: sys.argv[1:])


def _cli_state(ctx: typer.Context) -> CliState:
    """The invocation's :class:`CliState`: the root context's ``obj`` (created here when the
    app runs without :func:`main`, e.g. under typer's test runner)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def _args(ctx: typer.Context) -> list[str]:
    """The command line after the program name, as recorded in a run's meta.json."""
    argv = _cli_state(ctx).argv
    return list(argv) if argv is not None else sys.argv[1:]


def _options(cls: type[T], ctx: typer.Context, **given: Any) -> T:
    """A command's options dataclass ``cls`` (e.g. :class:`bench.run.BenchOptions`) from its
    parsed parameters: each field takes ``given[name]``, else the command's parameter of the
    same name (``ctx.params``); ``None`` or an empty list (a flag not given: typer passes
    ``[]`` for a repeatable one) leaves the field's default. The items of a list that are
    choices (``str`` Enums) become their values.
    """
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        value = given[f.name] if f.name in given else ctx.params.get(f.name)
        if value is None or (isinstance(value, (list, tuple)) and not value):
            continue
        if isinstance(value, (list, tuple)):
            value = [v.value if isinstance(v, Enum) else v for v in value]
        values[f.name] = value
    return cls(**values)


def _bit_widths(bits: Optional[list[Bits]]) -> Optional[list[int]]:
    """``--bits`` as integers (``None`` when not given)."""
    return None if not bits else [int(b.value) for b in bits]


def _set_debug(ctx: typer.Context, value: bool) -> bool:
    if value:
        _cli_state(ctx).debug = True
    return value


class Bits(str, Enum):
    """Bit width of the quantized KV cache."""

    int2 = "2"
    int4 = "4"


# shared option aliases; --debug on the root and on every command (its callback sets CliState.debug)
DebugOpt = Annotated[
    bool, typer.Option("--debug", callback=_set_debug, help="Show full tracebacks instead of one-line errors.")
]
ArchOpt = Annotated[
    Arch, typer.Option("--arch", help="Preset to run: configs/<arch>.toml. auto: from the GPU's name and compute capability.")
]
ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", help="A TOML sweep config (format: configs/h200.toml); default: the arch's preset.")
]
OutOpt = Annotated[
    Optional[Path],
    typer.Option("--out", help="Run directory (default: a new results/<timestamp>-... named by arch, study and git "
                 "commit; --smoke runs and runs without GPU: under results/_scratch/)."),
]  # fmt: skip
SmokeOpt = Annotated[
    bool,
    typer.Option("--smoke", help="Tiny grid (configs/smoke.toml); on a machine without GPU it runs through the Triton "
                 "interpreter, and its times are not performance numbers."),
]  # fmt: skip
BitsOpt = Annotated[Optional[list[Bits]], typer.Option("--bits", help="Bit width (repeat for several).")]
BatchOpt = Annotated[Optional[list[int]], typer.Option("--batch", min=1, help="Batch size (repeat for several).")]
ContextOpt = Annotated[Optional[list[int]], typer.Option("--context", min=1, help="Context length in tokens (repeat).")]
def _one_of(values) -> str:
    return ", ".join(str(v) for v in values)


GroupOpt = Annotated[
    Optional[int], typer.Option("--group-size", help=f"Quantization group size: {_one_of(SUPPORTED_GROUP_SIZES)}.")
]
OperandOpt = Annotated[
    Optional[list[str]],
    typer.Option("--operand", help=f"FOSCAR tensor-core operand mode (repeat): {_one_of(SUPPORTED_OPERANDS)}."),
]
KernelOpt = Annotated[
    Optional[list[str]], typer.Option("--kernel", help=f"Only these kernels (repeat): {_one_of(kernel_names())}.")
]
FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--format", help="table: rich tables; json: the result as JSON on stdout (a run's summary.json, "
                 "compare's comparison); quiet: the run directory only (compare: the verdict only)."),
]  # fmt: skip
RunDirArg = Annotated[
    Path, typer.Argument(metavar="RUN_DIR", help="A run directory written by `foscar bench` (holds results.csv).")
]
RunDirsArg = Annotated[
    list[Path],
    typer.Argument(metavar="RUN_DIR...", help="A run directory of foscar bench, ablate, accuracy or eval-model; "
                   "or several bench runs."),
]
BaseArg = Annotated[Path, typer.Argument(metavar="BASE", help="The run directory to compare against (the baseline).")]
NewArg = Annotated[Path, typer.Argument(metavar="NEW", help="The run directory under test.")]
ReportOutOpt = Annotated[
    Optional[Path],
    typer.Option("--out", help="Directory for report.md and the PNGs (default: the run directory; needed for several runs)."),
]
ThresholdOpt = Annotated[
    float,
    typer.Option("--threshold", min=0.0, help="Relative change that counts (0.05 = 5%): of the median time (bench, "
                 "ablate) or of an error metric (accuracy)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", metavar="NAME", help="A model's attention shape over the arch preset's grid: "
                 f"{_one_of(model_names())} (configs/models/NAME.toml) or a TOML path."),
]  # fmt: skip
QoHeadsOpt = Annotated[Optional[int], typer.Option("--num-qo-heads", min=1, help="Query heads (overrides preset and --model).")]
KvHeadsOpt = Annotated[Optional[int], typer.Option("--num-kv-heads", min=1, help="KV heads (overrides preset and --model).")]
HeadDimOpt = Annotated[
    Optional[int],
    typer.Option("--head-dim", help=f"Head dimension: {_one_of(SUPPORTED_HEAD_DIMS)} (overrides preset and --model)."),
]
WorkloadOpt = Annotated[
    Optional[str],
    typer.Option("--workload", help="Sequence lengths of the \\[sweep] grid's points: uniform (all = context), one-long "
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
    typer.Option("--grid", help="Only this grid (repeat): sweep (the preset's \\[sweep] grid, with --workload) or "
                 "ragged (its \\[\\[ragged]] grid). Default: both; only sweep when --batch, --context or a workload "
                 "flag is given."),
]  # fmt: skip
NearestOpt = Annotated[
    bool,
    typer.Option("--nearest-preset", help="With --arch auto on a GPU no preset names (e.g. sm_80): run the nearest "
                 "preset (h100 below sm_100, b200 from it) instead of stopping with an error."),
]  # fmt: skip
DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the resolved grid, the device memory per point and an estimated run time; "
                 "run nothing, touch no GPU, write nothing."),
]  # fmt: skip
ShardOpt = Annotated[
    Optional[str],
    typer.Option("--shard", metavar="K/N", help="Run only every N-th point of the grid, starting at point K "
                 "(0 <= K < N; a point with all its kernels), into its own run directory; `foscar merge` combines "
                 "the N shards."),
]  # fmt: skip
DevicesOpt = Annotated[
    Optional[str],
    typer.Option("--devices", metavar="all|0,1,...", help="One worker process per listed local GPU, each running "
                 "--shard i/N on its GPU into <out>/shards/, then merged into <out>. Default: this process's GPU only."),
]  # fmt: skip
CompareOutOpt = Annotated[Optional[Path], typer.Option("--out", help="Also write the comparison as JSON to this file.")]
AllRowsOpt = Annotated[bool, typer.Option("--all", help="List every matched row in the table, also those within the threshold.")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Also fail (exit 1) when a row is timed in only one of the runs.")]
GabOutOpt = Annotated[Optional[Path], typer.Option("--out", help="Write the JSON to this file (default: stdout).")]


@app.callback()
def _root(debug: DebugOpt = False) -> None:
    """FOSCAR: affine-folded INT2/INT4 KV-cache decode attention."""


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
    workload: WorkloadOpt = None,
    capacity: CapacityOpt = None,
    workload_seed: WorkloadSeedOpt = None,
    short_len: ShortLenOpt = None,
    grids: GridOpt = None,
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
    check_choices("--grid", grids, GRIDS)
    shard_k_n = None if shard is None else parse_shard(shard)
    if devices is not None:
        parse_devices(devices)
        if shard_k_n is not None:
            raise FoscarError("--devices and --shard together: --devices makes its own shards; pass one of them")
    opts = _options(
        BenchOptions,
        ctx,
        bits=_bit_widths(bits),
        output=OutputFormat.json if as_json else output_format,
        argv=["foscar", *_args(ctx)],
        shard=shard_k_n,
    )
    if devices is not None and not dry_run:  # workers per GPU, then the merge
        from bench.devices import run_devices

        outcome = run_devices(opts)
    else:
        from bench.run import run_bench

        outcome = run_bench(opts)
    if outcome is not None and outcome.exit_code:
        raise typer.Exit(outcome.exit_code)


@app.command()
def merge(
    ctx: typer.Context,
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Shard run directories (foscar bench --shard K/N).")],
    out: Annotated[Path, typer.Option("--out", help="The merged run directory.")],
    allow_partial: Annotated[
        bool, typer.Option("--allow-partial", help="Merge even when shards (or points of a shard) are missing; they are listed.")
    ] = False,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Combine shard runs into one run: rows in grid order, manifests merged, summary.json recomputed.

    Refuses shards whose config fingerprint, git commit, shard count, GPU model or timing
    mode differ (naming the field and both values), a shard given twice, and missing
    shards (unless --allow-partial). Exit code 3 when the merged numbers need a look.
    """
    from bench.merge import merge_runs

    result = merge_runs(run_dirs, out, allow_partial=allow_partial,
                        argv=["foscar", *_args(ctx)])  # fmt: skip
    if output_format is OutputFormat.json:
        typer.echo((out / "summary.json").read_text(), nl=False)
    elif output_format is OutputFormat.quiet:
        typer.echo(str(out))
    else:
        typer.echo(f"merged {len(run_dirs)} shard run(s) into {out} (results.csv, meta.json, summary.json)")
    for p in result.problems:
        typer.echo(f"problem: {p} (exit code {EXIT_RUN_PROBLEM})", err=True)
    if result.problems:
        raise typer.Exit(EXIT_RUN_PROBLEM)


@app.command()
def report(run_dirs: RunDirsArg, out: ReportOutOpt = None, debug: DebugOpt = False) -> None:
    """Plot runs into PNGs and report.md; what is drawn depends on the run's kind (meta.json "kind").

    bench: speed-up, TB/s vs the HBM ceiling, heatmap, error vs speed (several bench runs
    are overlaid in the speed-up plot, labelled by directory name, and drawn one by one
    in the others). ablate: geometric-mean and per-point speed-ups over each axis'
    reference. accuracy: quantization error, rotation, each kernel's own error.
    eval-model and model-speed runs: their own plot. Runs other than bench are drawn one at a time.
    """
    from bench.study import report_runs

    drawn = report_runs(list(run_dirs), out)
    n = len(drawn.plots)
    typer.echo(f"wrote {drawn.report} and {n} plot{'' if n == 1 else 's'} ({drawn.kind} run)")


@app.command()
def compare(
    base: BaseArg,
    new: NewArg,
    threshold: ThresholdOpt = 0.05,
    output_format: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    out: CompareOutOpt = None,
    strict: StrictOpt = False,
    show_all: AllRowsOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Compare NEW against BASE row by row (two runs of one kind); exit status 1 on a regression.

    bench and ablate runs, on the median time: slower/faster: it changed by more than
    the threshold and the p20-p80 spreads do not overlap; noisy: it changed by more, but
    the spreads overlap; same: within the threshold. Each series' geometric mean gets the
    same verdict; any slower is a regression. accuracy runs, on the error metrics (larger
    is worse): worse/better/same by the threshold; any worse is a regression. Rows
    measured in only one run are listed (a failure with --strict).
    """
    from bench.compare import exit_code, save_json, to_json
    from bench.study import compare_paths
    from bench.tables import make_console

    found = compare_paths(base, new, threshold)
    result = found.result
    if out is not None:
        save_json(result, out)
    fmt = OutputFormat.json if as_json else output_format
    if fmt is OutputFormat.json:
        typer.echo(to_json(result), nl=False)
    elif fmt is OutputFormat.quiet:
        typer.echo(result["verdict"])
    else:
        found.render(result, make_console(), show_all)
    code = exit_code(result, strict)
    if code:
        raise typer.Exit(code)


@app.command()
def ablate(
    ctx: typer.Context,
    bits: BitsOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    out: OutOpt = None,
    smoke: SmokeOpt = False,
    axis: Annotated[Optional[list[str]], typer.Option(
        "--axis", help=f"Only this axis (repeat): {_one_of(AXES)}.")] = None,
    debug: DebugOpt = False,
) -> None:
    """Isolate each idea on the same points: folded vs per-value reconstruction, group
    size 32/64/128, split-KV off/fixed/auto, BF16 vs FP8 operands, contiguous vs paged
    cache, token- vs channel-wise K; geometric-mean speed-up per setting.

    Default points: batch {1, 8, 64} x 32K and 8 x 128K, INT2 and INT4, Qwen3-8B shape.
    """
    check_choices("--axis", axis, AXES)
    from bench.ablate import run_ablate
    from bench.tables import make_console

    run_ablate(
        out,
        [int(b.value) for b in bits] if bits else None,
        batch,
        context,
        smoke,
        argv=_args(ctx),
        console=make_console(),
        axes=axis,
    )


@app.command("export-gab")
def export_gab(run_dir: RunDirArg, out: GabOutOpt = None, debug: DebugOpt = False) -> None:
    """Export a run's median times as github-action-benchmark `customSmallerIsBetter` JSON."""
    from bench.compare import export_gab as export, save_json, to_json
    from bench.rundir import load_run

    entries = export(load_run(run_dir))
    if out is None:
        typer.echo(to_json(entries), nl=False)
    else:
        save_json(entries, out)
        typer.echo(f"wrote {out} ({len(entries)} entries)")


# --- foscar accuracy -----------------------------------------------------------

DataKind = Enum("DataKind", {n: n for n in DATA_KIND_NAMES}, type=str)
Rotation = Enum("Rotation", {n: n for n in ROTATIONS}, type=str)

AccSmokeOpt = Annotated[
    bool,
    typer.Option("--smoke", help="Tiny shape (batch 1 x 64 tokens, 4/1 heads, head_dim 128, sinks 8 + recent 16, "
                 "group size 128) that the Triton interpreter runs on CPU in seconds."),
]  # fmt: skip
AccGroupOpt = Annotated[
    Optional[list[int]],
    typer.Option("--group-size", help=f"Group size: {_one_of(SUPPORTED_GROUP_SIZES)} (repeat; default all, smoke 128)."),
]
AccDataOpt = Annotated[Optional[list[DataKind]], typer.Option("--data", help="Synthetic data kind (repeat; default all).")]
AccKernelOpt = Annotated[
    Optional[list[str]], typer.Option("--kernel", help=f"Variant (repeat; default all): {_one_of(VARIANT_NAMES)}.")
]
AccRotationOpt = Annotated[Optional[list[Rotation]], typer.Option("--rotation", help="Rotation (repeat; default both).")]
AccBatchOpt = Annotated[Optional[int], typer.Option("--batch", min=1, help="Batch size (default 4; smoke 1).")]
AccContextOpt = Annotated[Optional[int], typer.Option("--context", min=1, help="Tokens per sequence (default 8192).")]
AccQoOpt = Annotated[Optional[int], typer.Option("--num-qo-heads", min=1, help="Query heads (default 32).")]
AccKvOpt = Annotated[Optional[int], typer.Option("--num-kv-heads", min=1, help="KV heads (default 8).")]
AccDimOpt = Annotated[Optional[int], typer.Option("--head-dim", min=1, help="Head dimension (default 128).")]
SinkOpt = Annotated[Optional[int], typer.Option("--num-sink", min=0, help="Leading tokens kept in BF16 (default 64).")]
RecentOpt = Annotated[Optional[int], typer.Option("--num-recent", min=0, help="Trailing tokens kept in BF16 (default 256).")]
NoMixedOpt = Annotated[bool, typer.Option("--no-mixed", help="Leave out the sink + recent mixed-precision layout.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the synthetic data and of the rotation's signs.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Write no PNGs and no accuracy.md.")]
KvFileOpt = Annotated[
    Optional[Path],
    typer.Option("--kv-file", help="A `foscar dump-kv` safetensors file: its layers' real post-RoPE q/K/V are the data "
                 "(real-L<i> rows; the shape comes from the file; --data adds synthetic kinds at that shape)."),
]  # fmt: skip


@app.command()
def accuracy(
    ctx: typer.Context,
    smoke: AccSmokeOpt = False,
    out: OutOpt = None,
    bits: BitsOpt = None,
    group_sizes: AccGroupOpt = None,
    data: AccDataOpt = None,
    kernels: AccKernelOpt = None,
    rotations: AccRotationOpt = None,
    batch: AccBatchOpt = None,
    context: AccContextOpt = None,
    num_qo_heads: AccQoOpt = None,
    num_kv_heads: AccKvOpt = None,
    head_dim: AccDimOpt = None,
    num_sink: SinkOpt = None,
    num_recent: RecentOpt = None,
    no_mixed: NoMixedOpt = False,
    seed: SeedOpt = 0,
    kv_file: KvFileOpt = None,
    no_plots: NoPlotsOpt = False,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Accuracy next to speed: every kernel variant's error against exact attention.

    For each synthetic data kind x bits x group size x rotation (none, randomized
    Hadamard) x layout (whole cache quantized; first/last tokens kept in BF16), the
    output of each variant (foscar-cuda, foscar-triton, foscar-cuda-per-value,
    foscar-cuda-fp8, and the fp64 reference on the dequantized cache) is compared with (a) fp64 attention
    on the unquantized BF16 cache and (b) fp64 attention on the cache the kernel
    reads: relative L2, max abs, cosine, and the attention-probability KL. Writes
    results.csv, meta.json, summary.json, PNGs and accuracy.md to the run directory.
    """
    check_choices("--kernel", kernels, VARIANT_NAMES)
    check_choices("--group-size", group_sizes, SUPPORTED_GROUP_SIZES)
    from bench.accuracy import AccuracyOptions, run_accuracy

    run_accuracy(
        _options(AccuracyOptions, ctx, bits=_bit_widths(bits), plots=not no_plots, output=output_format,
                 argv=["foscar", *_args(ctx)])
    )  # fmt: skip


# --- foscar eval-model / dump-kv (transformers; the `hf` extra) -------------------------

HfModelOpt = Annotated[
    Optional[str], typer.Option("--model", metavar="DIR", help="A local model directory (config.json + weights); nothing is downloaded.")
]
RandomInitOpt = Annotated[
    Optional[Path],
    typer.Option("--random-init", metavar="CONFIG.json", help="Instead of --model: a transformers config.json built "
                 "with random weights (speed only; no accuracy claim), e.g. configs/hf/qwen3-8b.json."),
]  # fmt: skip
TextOpt = Annotated[Optional[Path], typer.Option("--text", help="A UTF-8 text file (default: the public-domain sample bench/data/sample.txt).")]
EvalGroupOpt = Annotated[
    Optional[list[int]],
    typer.Option("--group-size", help=f"Group size: {_one_of(SUPPORTED_GROUP_SIZES)} (repeat; default 32)."),
]
EvalSinkOpt = Annotated[int, typer.Option("--sink", min=0, help="Leading tokens kept in BF16 (attention sinks).")]
EvalRecentOpt = Annotated[int, typer.Option("--recent", min=0, help="Trailing tokens kept in BF16.")]
EvalRotationOpt = Annotated[Rotation, typer.Option("--rotation", help="none, or hadamard (randomized Hadamard before quantization).")]
PrefillOpt = Annotated[int, typer.Option("--prefill", min=1, help="Prompt tokens (prefilled through SDPA on BF16 K/V).")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Teacher-forced decode steps scored.")]
GreedyOpt = Annotated[int, typer.Option("--greedy-tokens", min=1, help="Greedy tokens generated (agreement and tokens/s).")]
EvalSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the rotation's signs and of --random-init's weights.")]
EvalNoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Write no eval_model.png and no report.md.")]
Backend = Enum("Backend", {n: n for n in ("auto", "cuda", "triton")}, type=str)  # foscar.decode.BACKENDS
BackendOpt = Annotated[Backend, typer.Option("--backend", help="foscar.decode backend for the decode steps.")]


@app.command("eval-model")
def eval_model(
    ctx: typer.Context,
    model: HfModelOpt = None,
    random_init: RandomInitOpt = None,
    bits: BitsOpt = None,
    group_sizes: EvalGroupOpt = None,
    num_sink: EvalSinkOpt = 0,
    num_recent: EvalRecentOpt = 0,
    rotation: EvalRotationOpt = Rotation.none,
    text: TextOpt = None,
    prefill: PrefillOpt = 256,
    max_tokens: MaxTokensOpt = 256,
    greedy_tokens: GreedyOpt = 32,
    backend: BackendOpt = Backend.auto,
    seed: EvalSeedOpt = 0,
    out: OutOpt = None,
    no_plots: EvalNoPlotsOpt = False,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """A model's next-token predictions with the INT2/INT4 cache vs its own BF16 cache, on the same tokens.

    Perplexity, top-1 agreement, mean KL, greedy agreement, decode tokens/s and KV
    bytes per cache (bench/eval_model.py). Writes results.csv, meta.json, summary.json,
    eval_model.png and report.md. Needs the hf extra (transformers, safetensors; README).
    """
    from bench.eval_model import EvalOptions, run_eval_model

    run_eval_model(
        _options(EvalOptions, ctx, bits=_bit_widths(bits), rotation=rotation.value, backend=backend.value,
                 plots=not no_plots, output=output_format, argv=["foscar", *_args(ctx)])
    )  # fmt: skip


@app.command("dump-kv")
def dump_kv(
    out: Annotated[Path, typer.Option("--out", help="The safetensors file to write.")],
    model: HfModelOpt = None,
    random_init: RandomInitOpt = None,
    text: TextOpt = None,
    layers: Annotated[Optional[list[int]], typer.Option("--layers", help="Layer index (repeat; default all).")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=2, help="Tokens of the text to run.")] = 512,
    seed: EvalSeedOpt = 0,
    debug: DebugOpt = False,
) -> None:
    """Write a model's per-layer post-RoPE queries, keys and values to a safetensors file.

    Keys layers.<i>.q/k/v: (batch, heads, seq_len, head_dim) bfloat16 (bench/dump_kv.py);
    `foscar accuracy --kv-file FILE` measures every kernel variant on them.
    """
    from bench.dump_kv import dump_kv as run_dump

    typer.echo(f"wrote {run_dump(model, random_init, text, out, layers, max_tokens, seed)}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app; a :class:`FoscarError` becomes one line on stderr and exit code 2."""
    state = CliState(argv=list(argv) if argv is not None else sys.argv[1:])
    try:
        app(args=argv, prog_name="foscar", obj=state)
    except FoscarError as e:
        if state.debug or os.environ.get("FOSCAR_DEBUG") == "1":
            raise
        typer.echo(f"error: {e} (rerun with --debug for the traceback)", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
