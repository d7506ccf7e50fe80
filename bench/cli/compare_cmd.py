"""``foscar compare``: two runs of one kind, row by row; exit code 1 on a regression (:mod:`bench.study`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.cli.app import app
from bench.cli.options import FLAG, DebugOpt, JsonOpt, enum_option
from bench.engine import OutputFormat


BaseArg = Annotated[Path, typer.Argument(metavar="BASE", help="The run directory to compare against (the baseline).")]
NewArg = Annotated[Path, typer.Argument(metavar="NEW", help="The run directory under test.")]
ThresholdOpt = Annotated[
    float,
    typer.Option("--threshold", min=0.0, max=1.0, help="Relative change that counts, a fraction from 0 to 1 (0.05 = "
                 "5%): of the median time (bench, ablate) or of an error metric (accuracy: worse above 1 + threshold, "
                 "so at most twice the error)."),
]
CompareFormatOpt = Annotated[
    OutputFormat,
    enum_option(OutputFormat, "--format", help="table: rich tables; json: the comparison as JSON on stdout; quiet: "
                "the verdict only."),
]
CompareOutOpt = Annotated[Optional[Path], typer.Option("--out", help="Also write the comparison as JSON to this file.")]
AllRowsOpt = Annotated[
    bool,
    typer.Option("--all", metavar=FLAG, help="List every matched row in the table, also those within the threshold "
                 "and the baselines' ambiguous ones."),
]  # fmt: skip
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", metavar=FLAG,
                 help="Also fail (exit 1) when a row is timed in only one of the runs (not one untimed in both)."),
]


@app.command()
def compare(
    base: BaseArg,
    new: NewArg,
    threshold: ThresholdOpt = 0.05,
    output_format: CompareFormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
    out: CompareOutOpt = None,
    strict: StrictOpt = False,
    show_all: AllRowsOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Compare NEW against BASE row by row (two runs of one kind); exit status 1 on a regression.

    bench and ablate runs, on the median time: slower/faster: it changed by more than
    the threshold and the p20-p80 spreads do not overlap; noisy: it changed by more, but
    the spreads overlap; same: within the threshold; ambiguous (bench runs, whose rows record the clock): timed
    at a held-down GPU clock (a clock note) in either run, or beside such a row at its point: never a regression,
    and left out of the geometric means. Each series' geometric mean gets the same verdict; any slower FOSCAR row or
    series is a regression (the baselines' verdict is reported apart, never a regression). accuracy runs, on the
    error metrics (larger is worse): worse/better/same by the threshold; any worse is a regression. Rows
    measured in only one run are listed (a failure with --strict); where no row of the runs' own kernels (FOSCAR's in
    bench and ablate runs; any row in accuracy runs) was measured in both: verdict none, exit 2.
    """
    from bench.compare import exit_code, save_json, strict_failures, to_json
    from bench.study import compare_paths
    from bench.tables import make_console

    found = compare_paths(base, new, threshold)
    result = found.result
    if out is not None:
        save_json(result, out)
    fmt = OutputFormat.json if as_json else output_format
    if fmt is OutputFormat.json:
        typer.echo(to_json(result), nl=False)
    elif fmt is OutputFormat.quiet:  # the verdict only
        typer.echo(result["verdict"])
    else:
        found.render(result, make_console(), show_all)
    failing = strict_failures(result)
    if fmt is not OutputFormat.json and strict and failing and not result["regression"] and result["verdict"] != "none":
        # why --strict fails a run whose verdict is fine, on stderr
        typer.echo(f"--strict: {len(failing)} row(s) measured in one run only", err=True)
    code = exit_code(result, strict)
    if code:
        raise typer.Exit(code)
