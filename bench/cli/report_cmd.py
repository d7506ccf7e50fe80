"""``foscar report``: PNG plots and report.md for any run's kind (:func:`bench.study.report_runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.cli.app import app
from bench.cli.options import DebugOpt


RunDirsArg = Annotated[
    list[Path],
    typer.Argument(metavar="RUN_DIR...", help="A run directory of foscar bench, ablate, accuracy, eval-model or model-speed; "
                   "or several bench runs."),
]
ReportOutOpt = Annotated[
    Optional[Path],
    typer.Option("--out", help="Directory for report.md and the PNGs (default: the run directory; needed for several runs)."),
]


@app.command()
def report(run_dirs: RunDirsArg, out: ReportOutOpt = None, debug: DebugOpt = False) -> None:
    """Plot runs into PNGs and report.md; what is drawn depends on the run's kind (meta.json "kind").

    bench: speed-up, TB/s vs the HBM ceiling, heatmap, error vs speed, the ragged grid's speed-ups (several bench runs
    are overlaid in the speed-up plot, labelled by directory name, and drawn one by one
    in the others). ablate: geometric-mean and per-point speed-ups over each axis'
    reference. accuracy: quantization error, rotation, each kernel's own error.
    eval-model and model-speed runs: their own plot. Runs other than bench are drawn one at a time.
    """
    from bench.study import report_runs

    drawn = report_runs(list(run_dirs), out)
    n = len(drawn.plots)
    typer.echo(f"wrote {drawn.report} and {n} plot{'' if n == 1 else 's'} ({drawn.kind} run)")
