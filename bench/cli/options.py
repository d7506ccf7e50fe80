"""What several ``foscar`` commands share: the per-invocation state, the helpers that turn
parsed parameters into a command's options dataclass, and the typer ``Annotated`` option
aliases (with their choice enums) that more than one command takes.

A command's own options live in its module (``bench/cli/<command>_cmd.py``). Imports
here are light (no torch, triton or pandas): the CLI starts without them.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer

from bench.accuracy_grid import ROTATIONS
from bench.choice import Choice
from bench.devices import parse_devices, refuse_shard
from bench.engine import OutputFormat
from bench.shard import Shard, parse_shard

T = TypeVar("T")
# the metavar of an on/off flag: none (typer would print "<bool>", as if the flag took a value)
FLAG = ""


def choices(allowed: Any) -> str:
    """The metavar of a flag whose values are a fixed set: ``<a|b|c>`` (typer prints ``<str>`` for a plain str)."""
    return "<" + "|".join(str(a) for a in allowed) + ">"


E = TypeVar("E", bound=Enum)


def enum_parser(enum: type[E]) -> Callable[[Any], E]:
    """typer's ``parser=`` for an option whose values are ``enum``'s: the member whose value is given, else a
    usage error that names the allowed values ("'h300' is not one of 'auto', 'h100', ...").

    typer 0.29's own coercion of an Enum goes through pydantic, whose message starts "Value error, "; this parser
    keeps click's wording. Use it through :func:`enum_option`, with a :class:`bench.choice.Choice`: typer 0.26-0.28
    convert its result once more by ``str()``.
    """
    allowed = ", ".join(repr(m.value) for m in enum)

    def parse(value: Any) -> E:
        if isinstance(value, enum):
            return value
        try:
            return enum(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not one of {allowed}.") from None

    return parse


def enum_option(enum: type[Choice], *names: str, help: str, metavar: str | None = None) -> Any:
    """A ``typer.Option`` whose values are ``enum``'s (one value, or a list when the parameter is one): parsed by
    :func:`enum_parser`, shown as ``<a|b|c>`` in the help. ``enum`` is a :class:`bench.choice.Choice` (a plain ``str``
    Enum's members became ``None`` under typer 0.26-0.28; ``tests/test_cli.py`` checks every option)."""
    return typer.Option(*names, parser=enum_parser(enum), metavar=metavar or choices(m.value for m in enum), help=help)


class Bits(Choice):
    """Bit width of the quantized KV cache."""

    int2 = "2"
    int4 = "4"


Rotation = Choice("Rotation", {n: n for n in ROTATIONS})


@dataclass
class CliState:
    """Per invocation: the root context's ``obj`` (``ctx.obj``), set up by :func:`bench.cli.app.main`."""

    debug: bool = False  # --debug (or FOSCAR_DEBUG=1): tracebacks instead of one-line errors
    argv: list[str] | None = None  # the arguments after the program name, as given (None: sys.argv[1:])


def cli_state(ctx: typer.Context) -> CliState:
    """The invocation's :class:`CliState`: the root context's ``obj`` (created here when the
    app runs without :func:`bench.cli.app.main`, e.g. under typer's test runner)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def command_args(ctx: typer.Context) -> list[str]:
    """The command line after the program name, as recorded in a run's meta.json."""
    argv = cli_state(ctx).argv
    return list(argv) if argv is not None else sys.argv[1:]


def build_options(cls: type[T], ctx: typer.Context, **given: Any) -> T:
    """A command's options dataclass ``cls`` (e.g. :class:`bench.run.BenchOptions`) from its
    parsed parameters: each field takes ``given[name]``, else the command's parameter of the
    same name (``ctx.params``); ``None`` or an empty list (a flag not given: typer passes
    ``[]`` for a repeatable one) leaves the field's default. The items of a list that are
    choices (``str`` Enums) become their values; a string for a ``Path`` field (typer 0.26-0.28
    hand ``Optional[Path]`` options over as ``str``) becomes a ``Path``.
    """
    values: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)  # the fields' types, resolved (the dataclasses' modules postpone annotations)
    for f in dataclasses.fields(cls):
        value = given[f.name] if f.name in given else ctx.params.get(f.name)
        if value is None or (isinstance(value, (list, tuple)) and not value):
            continue
        if isinstance(value, (list, tuple)):
            value = [v.value if isinstance(v, Enum) else v for v in value]
        elif isinstance(value, str) and takes_path(hints[f.name]):  # typer 0.26-0.28 pass a Path option as str
            value = Path(value)
        values[f.name] = value
    return cls(**values)


def takes_path(hint: Any) -> bool:
    """Whether a field of type ``hint`` holds a ``Path``: ``Path`` itself, or a union with it
    (``Path | None``, ``Optional[Path]``, ``Union[Path, str]``)."""
    unions = (typing.Union, types.UnionType)
    return hint is Path or (typing.get_origin(hint) in unions and Path in typing.get_args(hint))


def bit_widths(bits: Optional[list[Bits]]) -> Optional[list[int]]:
    """``--bits`` as integers (``None`` when not given)."""
    return None if not bits else [int(b.value) for b in bits]


def sharding(shard: Optional[str], devices: Optional[str]) -> Optional[Shard]:
    """``--shard`` parsed, once ``--devices`` (when given) is valid and not given with it.

    Raises:
        FoscarError: a malformed ``--shard`` or ``--devices``, or both given.
    """
    shard_k_n = None if shard is None else parse_shard(shard)
    if devices is not None:
        parse_devices(devices)
        refuse_shard(shard_k_n)
    return shard_k_n


def run_command(kind: str, opts: Any, run: Any, devices: Optional[str]) -> None:
    """Run a study command (``bench``, ``ablate``, ``accuracy``): ``run(opts)`` on this process's
    GPU, or with ``--devices`` one worker per GPU and the merge (:func:`bench.devices.run_devices`);
    then exit with the outcome's code (3: the numbers need a look). ``run`` may return ``None``
    (nothing ran: a dry run)."""
    if devices is not None:
        from bench.devices import run_devices

        outcome = run_devices(kind, opts)
    else:
        outcome = run(opts)
    if outcome is not None and outcome.exit_code:
        raise typer.Exit(outcome.exit_code)


def set_debug(ctx: typer.Context, value: bool) -> bool:
    """``--debug``'s callback: records it in the invocation's :class:`CliState`; returns ``value``."""
    if value:
        cli_state(ctx).debug = True
    return value


def one_of(values) -> str:
    """``values`` for a help text: ``"32, 64, 128"``."""
    return ", ".join(str(v) for v in values)


# shared option aliases; --debug on the root and on every command (its callback sets CliState.debug)
DebugOpt = Annotated[
    bool, typer.Option("--debug", metavar=FLAG, callback=set_debug,
                       help="Show full tracebacks instead of one-line errors.")
]
OutOpt = Annotated[
    Optional[Path],
    typer.Option("--out", help="Run directory (default: a new results/<timestamp>-<what ran>, e.g. bench's "
                 "<arch>-<git commit>, with -<model> and -smoke after <arch> where given; under results/_scratch/ for "
                 "bench, ablate and accuracy --smoke runs and for runs without a GPU)."),
]  # fmt: skip
SmokeOpt = Annotated[
    bool,
    typer.Option("--smoke", metavar=FLAG,
                 help="Tiny grid (bench: configs/smoke.toml, or --config FILE's, not with --arch; ablate: "
                 "batch 1 x 64 and 2 x 200 tokens); on a machine without GPU it runs through the Triton interpreter, "
                 "and its times are not performance numbers."),
]  # fmt: skip
BitsOpt = Annotated[Optional[list[Bits]], enum_option(Bits, "--bits", help="Bit width (repeat for several).")]
BatchOpt = Annotated[Optional[list[int]], typer.Option("--batch", min=1, help="Batch size (repeat for several).")]
ContextOpt = Annotated[Optional[list[int]], typer.Option("--context", min=1, help="Context length in tokens (repeat).")]
FormatOpt = Annotated[
    OutputFormat,
    enum_option(OutputFormat, "--format", help="table: rich tables; json: the result as JSON on stdout (the run's "
                "summary.json); quiet: the run directory only."),
]  # fmt: skip
JsonOpt = Annotated[bool, typer.Option("--json", metavar=FLAG, help="Same as --format json.")]
ShardOpt = Annotated[
    Optional[str],
    typer.Option("--shard", metavar="K/N", help="Run only every N-th point of the grid, starting at point K "
                 "(0 <= K < N; a point with all its rows), into its own run directory; `foscar merge` combines "
                 "the N shards."),
]  # fmt: skip
DevicesOpt = Annotated[
    Optional[str],
    typer.Option("--devices", metavar="all|0,1,...", help="One worker process per listed local GPU, each running "
                 "--shard i/N on its GPU into <out>/shards/, then merged into <out>. Default: this process's GPU only."),
]  # fmt: skip

# eval-model and dump-kv (transformers; the `hf` extra)
HfModelOpt = Annotated[
    Optional[str], typer.Option("--model", metavar="DIR",
                                help="A local model directory (config.json + weights); nothing is downloaded.")
]
RandomInitOpt = Annotated[
    Optional[Path],
    typer.Option("--random-init", metavar="CONFIG.json", help="Instead of --model: a transformers config.json built "
                 "with random weights (speed only; no accuracy claim), e.g. configs/hf/qwen3-8b.json."),
]  # fmt: skip
TextOpt = Annotated[Optional[Path], typer.Option("--text", help="A UTF-8 text file (default: the public-domain sample bench/data/sample.txt).")]
EvalSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the rotation's signs and of --random-init's weights.")]
DumpSeedOpt = Annotated[int, typer.Option("--seed", help="Seed of --random-init's weights.")]
DumpRandomInitOpt = Annotated[
    Optional[Path],
    typer.Option("--random-init", metavar="CONFIG.json", help="Instead of --model: a transformers config.json built "
                 "with random weights (its K/V test the file format and the pipeline, not a model's statistics), "
                 "e.g. configs/hf/tiny-qwen3.json."),
]  # fmt: skip
Backend = Choice("Backend", {n: n for n in ("auto", "cuda", "triton")})  # foscar.decode.BACKENDS
BackendOpt = Annotated[Backend, enum_option(Backend, "--backend", help="foscar.decode backend for the decode steps.")]
