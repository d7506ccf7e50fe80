"""``foscar ablate``: each idea's speed-up on the same points (:func:`bench.ablate.run_ablation`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bench.ablate_grid import AXES
from bench.cli.app import app
from bench.cli.options import BatchOpt, BitsOpt, ContextOpt, DebugOpt, DevicesOpt, FormatOpt, OutOpt, ShardOpt
from bench.cli.options import SmokeOpt, bit_widths, build_options, command_args, one_of, run_command, sharding
from bench.engine import OutputFormat
from bench.errors import check_choices


@app.command()
def ablate(
    ctx: typer.Context,
    bits: BitsOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    out: OutOpt = None,
    smoke: SmokeOpt = False,
    axes: Annotated[Optional[list[str]], typer.Option(
        "--axis", help=f"Only this axis (repeat): {one_of(AXES)}.")] = None,
    shard: ShardOpt = None,
    devices: DevicesOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Isolate each idea on the same points: folded vs per-value reconstruction, group
    size 32/64/128, split-KV off/fixed/auto, BF16 vs FP8 operands, contiguous vs paged
    cache, token- vs channel-wise K; geometric-mean speed-up per setting.

    Default points: batch {1, 8, 64} x 32K and 8 x 128K, INT2 and INT4, Qwen3-8B shape.
    Rerunning the same command with the same --out DIR resumes it.
    """
    check_choices("--axis", axes, AXES)
    from bench.ablate import AblateOptions, run_ablation

    opts = build_options(AblateOptions, ctx, bits=bit_widths(bits), output=output_format, argv=command_args(ctx),
                         shard=sharding(shard, devices))  # fmt: skip
    run_command("ablate", opts, run_ablation, devices)
