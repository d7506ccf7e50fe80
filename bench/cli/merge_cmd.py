"""``foscar merge``: shard runs -> one run (:func:`bench.merge.merge_runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import FLAG, DebugOpt, FormatOpt, command_args
from bench.errors import EXIT_RUN_PROBLEM
from bench.engine import OutputFormat


@app.command()
def merge(
    ctx: typer.Context,
    run_dirs: Annotated[list[Path], typer.Argument(metavar="RUN_DIR...", help="Shard run directories, written by foscar bench, ablate, accuracy, eval-model or model-speed with --shard K/N.")],
    out: Annotated[Path, typer.Option("--out", help="The merged run directory.")],
    allow_partial: Annotated[
        bool, typer.Option("--allow-partial", metavar=FLAG,
                           help="Merge even when shards (or points of a shard) are missing; they are listed.")
    ] = False,
    output_format: FormatOpt = OutputFormat.table,
    debug: DebugOpt = False,
) -> None:
    """Combine shard runs of one study (bench, ablate, accuracy, eval-model or model-speed) into one run: rows in grid order,
    manifests merged, summary.json (and the study's report files) recomputed.

    Refuses shards whose study kind, config fingerprint, git commit, shard count, GPU model or timing
    mode differ (naming the field and both values), a shard given twice, and missing
    shards (unless --allow-partial). Exit code 3 when the merged numbers need a look.
    """
    from bench.merge import merge_runs

    result = merge_runs(run_dirs, out, allow_partial=allow_partial,
                        argv=["foscar", *command_args(ctx)])  # fmt: skip
    if output_format is OutputFormat.json:
        typer.echo((out / "summary.json").read_text(), nl=False)
    elif output_format is OutputFormat.quiet:
        typer.echo(str(out))
    else:
        typer.echo(f"merged {len(run_dirs)} shard run(s) into {out} (results.csv, meta.json, summary.json)")
    for p in result.problems:
        typer.echo(f"problem: {p} (exit code {EXIT_RUN_PROBLEM})", err=True)
    if result.problems:
        raise typer.Exit(EXIT_RUN_PROBLEM)
