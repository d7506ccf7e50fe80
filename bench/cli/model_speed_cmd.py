"""``foscar model-speed``: whole-model decode tokens/s with the INT2/INT4 cache vs the BF16 cache
(:func:`bench.model_speed_study.run_model_speed`; the `hf` extra). ``python -m bench.model_speed`` runs it too."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from bench.choice import Choice
from bench.cli.app import app
from bench.cli.options import (
    FLAG,
    Backend,
    BackendOpt,
    BatchOpt,
    ContextOpt,
    DebugOpt,
    DevicesOpt,
    FormatOpt,
    HfModelOpt,
    OutOpt,
    ShardOpt,
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
from bench.model_speed_study import CACHES, DEFAULT_RANDOM_INIT, SMOKE_RANDOM_INIT

Cache = Choice("Cache", {n: n for n in CACHES})
SpeedRandomInitOpt = Annotated[
    Optional[str],
    typer.Option("--random-init", metavar="CONFIG.json", help="A transformers config.json built with random weights "
                 f"(speed only; no accuracy claim). Ignored with --model. Default: {DEFAULT_RANDOM_INIT} "
                 f"(--smoke: {SMOKE_RANDOM_INIT})."),
]  # fmt: skip
CacheOpt = Annotated[Optional[list[Cache]], enum_option(Cache, "--cache", help="Cache (repeat; default all).")]
NumLayersOpt = Annotated[Optional[int], typer.Option("--num-layers", min=1, help="Override num_hidden_layers (random init).")]
SpeedGroupOpt = Annotated[Optional[int], typer.Option("--group-size", help="Group size of the FOSCAR caches: "
                          f"{one_of(SUPPORTED_GROUP_SIZES)}. Default: 128 (--smoke: 64).")]  # fmt: skip
DecodeOpt = Annotated[Optional[int], typer.Option("--decode", min=1, help="Timed greedy decode steps per cache. "
                      "Default: 64 (--smoke: 3).")]  # fmt: skip
WarmupOpt = Annotated[Optional[int], typer.Option("--warmup", min=0, help="Untimed decode steps first (the CUDA "
                      "extension compiles on the first). Default: 3 (--smoke: 1).")]  # fmt: skip
ProfileOpt = Annotated[Optional[int], typer.Option("--profile-steps", min=1, help="Decode steps with CUDA events "
                       "around attention and cache updates. Default: 8 (--smoke: 1).")]  # fmt: skip
SpeedSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the prompt tokens (each point's) and of the random weights.")]
SpeedSmokeOpt = Annotated[
    bool, typer.Option("--smoke", metavar=FLAG,
                       help=f"{SMOKE_RANDOM_INIT}, batch 1 x 32 tokens, group size 64, 1 warm-up, 3 timed "
                       "and 1 profiled step: runs on the CPU (interpreter); flags given are used as given.")
]


@app.command("model-speed")
def model_speed(
    ctx: typer.Context,
    random_init: SpeedRandomInitOpt = None,
    model: HfModelOpt = None,
    num_layers: NumLayersOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    cache: CacheOpt = None,
    group_size: SpeedGroupOpt = None,
    decode: DecodeOpt = None,
    warmup: WarmupOpt = None,
    profile_steps: ProfileOpt = None,
    backend: BackendOpt = Backend.auto,
    seed: SpeedSeedOpt = 0,
    smoke: SpeedSmokeOpt = False,
    out: OutOpt = None,
    shard: ShardOpt = None,
    devices: DevicesOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Decode tokens/s of a whole transformers model with the INT2/INT4 cache vs its BF16 cache.

    Per point (batch x context, default {1, 8} x {8K, 32K}): one prefill, then per cache
    warm-up, timed and profiled greedy decode steps; tokens/s, speed-up over the BF16 cache,
    attention share of the step time (bench/model_speed_study.py). Writes results.csv, meta.json,
    summary.json and model_speed.md. Needs the hf extra. Rerunning the same command with the
    same --out DIR resumes it.
    """
    check_choices("--group-size", None if group_size is None else [group_size], SUPPORTED_GROUP_SIZES)
    from bench.model_speed_study import ModelSpeedOptions, run_model_speed

    opts = build_options(ModelSpeedOptions, ctx, backend=backend.value, output=output_format, argv=["foscar", *command_args(ctx)],
                         shard=sharding(shard, devices))  # fmt: skip
    run_command("model-speed", opts, run_model_speed, devices)
