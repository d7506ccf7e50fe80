"""``foscar ablate``: each idea's speed-up on the same points (:func:`bench.ablate.run_ablate`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bench.ablate_grid import AXES
from bench.cli.app import app
from bench.cli.options import BatchOpt, BitsOpt, ContextOpt, DebugOpt, OutOpt, SmokeOpt, command_args, one_of
from bench.errors import check_choices


@app.command()
def ablate(
    ctx: typer.Context,
    bits: BitsOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    out: OutOpt = None,
    smoke: SmokeOpt = False,
    axis: Annotated[Optional[list[str]], typer.Option(
        "--axis", help=f"Only this axis (repeat): {one_of(AXES)}.")] = None,
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
        argv=command_args(ctx),
        console=make_console(),
        axes=axis,
    )
