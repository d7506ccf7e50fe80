"""``foscar eval-model``: a model's predictions with the INT2/INT4 cache vs its BF16 cache
(:func:`bench.eval_model.run_eval_model`; the `hf` extra)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bench.cli.app import app
from bench.cli.options import (
    FLAG,
    Backend,
    BackendOpt,
    Bits,
    DebugOpt,
    DevicesOpt,
    EvalSeedOpt,
    FormatOpt,
    HfModelOpt,
    OutOpt,
    RandomInitOpt,
    Rotation,
    ShardOpt,
    TextOpt,
    bit_widths,
    build_options,
    command_args,
    enum_option,
    one_of,
    run_command,
    sharding,
)
from bench.config import SUPPORTED_GROUP_SIZES
from bench.engine import OutputFormat
from bench.errors import check_choices


EvalBitsOpt = Annotated[
    Optional[list[Bits]], enum_option(Bits, "--bits", help="Bit width (repeat for several; default 4).")
]
EvalGroupOpt = Annotated[
    Optional[list[int]],
    typer.Option("--group-size", help=f"Group size: {one_of(SUPPORTED_GROUP_SIZES)} (repeat; default 32)."),
]
EvalSinkOpt = Annotated[int, typer.Option("--sink", min=0, help="Leading tokens kept in BF16 (attention sinks).")]
EvalRecentOpt = Annotated[int, typer.Option("--recent", min=0, help="Trailing tokens kept in BF16.")]
EvalRotationOpt = Annotated[
    Rotation, enum_option(Rotation, "--rotation", help="none, or hadamard (randomized Hadamard before quantization).")
]
PrefillOpt = Annotated[int, typer.Option("--prefill", min=1, help="Prompt tokens (prefilled through SDPA on BF16 K/V).")]
MaxTokensOpt = Annotated[int, typer.Option("--max-tokens", min=1, help="Teacher-forced decode steps scored.")]
GreedyOpt = Annotated[int, typer.Option("--greedy-tokens", min=1, help="Greedy tokens generated (agreement and tokens/s).")]
EvalNoPlotsOpt = Annotated[
    bool, typer.Option("--no-plots", metavar=FLAG, help="Write no eval_model.png and no report.md.")
]


@app.command("eval-model")
def eval_model(
    ctx: typer.Context,
    model: HfModelOpt = None,
    random_init: RandomInitOpt = None,
    bits: EvalBitsOpt = None,
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
    shard: ShardOpt = None,
    devices: DevicesOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """A model's next-token predictions with the INT2/INT4 cache vs its own BF16 cache, on the same tokens.

    Perplexity, top-1 agreement, mean KL, greedy agreement, decode tokens/s and KV
    bytes per cache (bench/eval_model.py). Writes results.csv, meta.json, summary.json,
    eval_model.png and report.md. Needs the hf extra (transformers, safetensors; README).
    Rerunning the same command with the same --out DIR resumes it.
    """
    check_choices("--group-size", group_sizes, SUPPORTED_GROUP_SIZES)  # before transformers loads (seconds)
    from bench.eval_model import EvalOptions, run_eval_model

    opts = build_options(EvalOptions, ctx, bits=bit_widths(bits), rotation=rotation.value, backend=backend.value,
                         plots=not no_plots, output=output_format, argv=["foscar", *command_args(ctx)],
                         shard=sharding(shard, devices))  # fmt: skip
    run_command("eval-model", opts, run_eval_model, devices)
