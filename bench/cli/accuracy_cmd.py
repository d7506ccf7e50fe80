"""``foscar accuracy``: every kernel variant's error against exact attention (:func:`bench.accuracy.run_accuracy`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.accuracy_grid import DATA_KIND_NAMES, VARIANT_NAMES
from bench.choice import Choice
from bench.cli.app import app
from bench.cli.options import (
    FLAG,
    BitsOpt,
    DebugOpt,
    DevicesOpt,
    FormatOpt,
    OutOpt,
    Rotation,
    ShardOpt,
    bit_widths,
    build_options,
    command_args,
    enum_option,
    one_of,
    run_command,
    sharding,
)
from bench.config import SUPPORTED_GROUP_SIZES, SUPPORTED_HEAD_DIMS
from bench.engine import OutputFormat
from bench.errors import check_choices


DataKind = Choice("DataKind", {n: n for n in DATA_KIND_NAMES})

AccSmokeOpt = Annotated[
    bool,
    typer.Option("--smoke", metavar=FLAG,
                 help="Tiny shape (batch 1 x 64 tokens, 4/1 heads, head_dim 128, sinks 8 + recent 16, "
                 "group size 128) that the Triton interpreter runs on CPU in seconds."),
]  # fmt: skip
AccGroupOpt = Annotated[
    Optional[list[int]],
    typer.Option("--group-size", help=f"Group size: {one_of(SUPPORTED_GROUP_SIZES)} (repeat; default all, smoke 128)."),
]
AccDataOpt = Annotated[
    Optional[list[DataKind]], enum_option(DataKind, "--data", help="Synthetic data kind (repeat; default all).")
]
AccKernelOpt = Annotated[
    Optional[list[str]], typer.Option("--kernel", help=f"Variant (repeat; default all): {one_of(VARIANT_NAMES)}.")
]
AccRotationOpt = Annotated[
    Optional[list[Rotation]], enum_option(Rotation, "--rotation", help="Rotation (repeat; default both).")
]
AccBatchOpt = Annotated[Optional[int], typer.Option("--batch", min=1, help="Batch size (default 4; smoke 1).")]
AccContextOpt = Annotated[Optional[int], typer.Option("--context", min=1, help="Tokens per sequence (default 8192; smoke 64).")]
AccQoOpt = Annotated[Optional[int], typer.Option("--num-qo-heads", min=1, help="Query heads (default 32; smoke 4).")]
AccKvOpt = Annotated[Optional[int], typer.Option("--num-kv-heads", min=1, help="KV heads (default 8; smoke 1).")]
AccDimOpt = Annotated[
    Optional[int], typer.Option("--head-dim", help=f"Head dimension: {one_of(SUPPORTED_HEAD_DIMS)} (default 128).")
]
SinkOpt = Annotated[Optional[int], typer.Option("--num-sink", min=0, help="Leading tokens kept in BF16 (default 64; smoke 8).")]
RecentOpt = Annotated[Optional[int], typer.Option("--num-recent", min=0, help="Trailing tokens kept in BF16 (default 256; smoke 16).")]
NoMixedOpt = Annotated[
    bool, typer.Option("--no-mixed", metavar=FLAG, help="Leave out the sink + recent mixed-precision layout.")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the synthetic data and of the rotation's signs.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", metavar=FLAG, help="Write no PNGs and no accuracy.md.")]
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
    shard: ShardOpt = None,
    devices: DevicesOpt = None,
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
    Rerunning the same command with the same --out DIR resumes it.
    """
    check_choices("--kernel", kernels, VARIANT_NAMES)
    check_choices("--group-size", group_sizes, SUPPORTED_GROUP_SIZES)
    check_choices("--head-dim", None if head_dim is None else [head_dim], SUPPORTED_HEAD_DIMS)
    from bench.accuracy import AccuracyOptions, run_accuracy

    opts = build_options(AccuracyOptions, ctx, bits=bit_widths(bits), plots=not no_plots, output=output_format,
                         argv=["foscar", *command_args(ctx)], shard=sharding(shard, devices))  # fmt: skip
    run_command("accuracy", opts, run_accuracy, devices)
