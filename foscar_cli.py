"""The ``foscar`` command line: a thin shell that wires commands to ``bench/``.

    foscar bench --arch h200                      # the preset grid of configs/h200.toml
    foscar bench --arch auto --bits 2 --batch 8 --context 32768
    foscar bench --config my.toml --out results/my-run
    foscar bench --smoke                          # tiny grid; Triton interpreter when there is no GPU

Errors the user can fix raise :class:`bench.errors.FoscarError`; :func:`main` prints
them as one line on stderr and exits with code 2 (``--debug`` or ``FOSCAR_DEBUG=1``
shows the traceback).
Nothing heavy (torch, triton, flashinfer) is imported until a command runs.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.arch import Arch
from bench.errors import EXIT_USAGE, FoscarError
from bench.run import BenchOptions, OutputFormat

app = typer.Typer(
    name="foscar",
    help="FOSCAR: affine-folded INT2/INT4 KV-cache decode attention, and its benchmark harness.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

_state: dict = {"debug": False, "argv": None}


class Bits(str, Enum):
    """Bit width of the quantized KV cache."""

    int2 = "2"
    int4 = "4"


class Operand(str, Enum):
    """Tensor-core operand the codes are turned into (DESIGN §4)."""

    bf16 = "bf16"
    fp8 = "fp8"
    fp4 = "fp4"


# shared option aliases
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show full tracebacks instead of one-line errors.")]
ArchOpt = Annotated[
    Arch, typer.Option("--arch", help="Preset to run: configs/<arch>.toml. auto: from the GPU's name and compute capability.")
]
ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", help="A TOML sweep config (format: configs/h200.toml); default: the arch's preset.")
]
OutOpt = Annotated[
    Optional[Path],
    typer.Option("--out", help="Run directory (default results/<timestamp>-<arch>-<git short>; smoke: results/_scratch/...)."),
]
SmokeOpt = Annotated[
    bool,
    typer.Option("--smoke", help="Tiny grid (configs/smoke.toml); on a machine without GPU it runs through the Triton "
                 "interpreter, and its times are not performance numbers."),
]  # fmt: skip
BitsOpt = Annotated[Optional[list[Bits]], typer.Option("--bits", help="Bit width (repeat for several).")]
BatchOpt = Annotated[Optional[list[int]], typer.Option("--batch", min=1, help="Batch size (repeat for several).")]
ContextOpt = Annotated[Optional[list[int]], typer.Option("--context", min=1, help="Context length in tokens (repeat).")]
GroupOpt = Annotated[Optional[int], typer.Option("--group-size", help="Quantization group size: 32, 64 or 128.")]
OperandOpt = Annotated[Optional[list[Operand]], typer.Option("--operand", help="FOSCAR operand mode (repeat).")]
KernelOpt = Annotated[
    Optional[list[str]],
    typer.Option("--kernel", help="Only these kernels (repeat): foscar-triton, flashinfer-fa2, flashinfer-fa2-tc, flashinfer-xqa."),
]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", help="table: tables as it runs; json: summary.json on stdout; quiet: the run directory only.")
]


@app.callback()
def _root(debug: DebugOpt = False) -> None:
    """FOSCAR: affine-folded INT2/INT4 KV-cache decode attention."""
    if debug:
        _state["debug"] = True


@app.command()
def bench(
    arch: ArchOpt = Arch.auto,
    config: ConfigOpt = None,
    out: OutOpt = None,
    smoke: SmokeOpt = False,
    bits: BitsOpt = None,
    batch: BatchOpt = None,
    context: ContextOpt = None,
    group_size: GroupOpt = None,
    operand: OperandOpt = None,
    kernel: KernelOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Benchmark FOSCAR decode kernels against FlashInfer BF16 over a batch x context x bits grid.

    Every kernel is checked against an fp64 reference before it is timed. Writes
    results.csv, meta.json and summary.json to the run directory.
    """
    if debug:
        _state["debug"] = True
    from bench.run import run_bench

    run_bench(
        BenchOptions(
            arch=arch,
            config=config,
            out=out,
            smoke=smoke,
            bits=[int(b.value) for b in bits or []],
            batch=list(batch or []),
            context=list(context or []),
            group_size=group_size,
            operand=[o.value for o in operand or []],
            kernels=list(kernel or []),
            output=output_format,
            argv=["foscar", *(_state["argv"] if _state["argv"] is not None else sys.argv[1:])],
        )
    )


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app; a :class:`FoscarError` becomes one line on stderr and exit code 2."""
    _state["argv"] = list(argv) if argv is not None else sys.argv[1:]
    try:
        app(args=argv, prog_name="foscar")
    except FoscarError as e:
        if _state["debug"] or os.environ.get("FOSCAR_DEBUG") == "1":
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
