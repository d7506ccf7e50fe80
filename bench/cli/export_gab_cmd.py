"""``foscar export-gab``: a run's median times as github-action-benchmark JSON (:func:`bench.compare.export_gab`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.cli.app import app
from bench.cli.options import DebugOpt


RunDirArg = Annotated[
    Path, typer.Argument(metavar="RUN_DIR", help="A run directory written by `foscar bench` (holds results.csv).")
]
GabOutOpt = Annotated[Optional[Path], typer.Option("--out", help="Write the JSON to this file (default: stdout).")]


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
