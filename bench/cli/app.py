"""The one typer ``app`` of the ``foscar`` command line, its root options, and :func:`main`.

The commands register themselves on :data:`app` when their modules are imported
(``bench/cli/__init__.py`` imports them all, in the order ``foscar --help`` lists them).
"""

from __future__ import annotations

import os
import sys

import typer

from bench.cli.options import CliState, DebugOpt
from bench.errors import EXIT_USAGE, FoscarError

app = typer.Typer(
    name="foscar",
    help="FOSCAR: affine-folded INT2/INT4 KV-cache decode attention, and its benchmark harness.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root(debug: DebugOpt = False) -> None:
    """FOSCAR: affine-folded INT2/INT4 KV-cache decode attention."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app on ``argv`` (default: ``sys.argv[1:]``); a
    :class:`FoscarError` becomes one line on stderr and exit code 2 (``--debug`` or
    ``FOSCAR_DEBUG=1``: raised, with its traceback). Other exit codes: typer's (``SystemExit``)."""
    state = CliState(argv=list(argv) if argv is not None else sys.argv[1:])
    try:
        app(args=argv, prog_name="foscar", obj=state)
    except FoscarError as e:
        if state.debug or os.environ.get("FOSCAR_DEBUG") == "1":
            raise
        typer.echo(f"error: {e} (rerun with --debug for the traceback)", err=True)
        sys.exit(EXIT_USAGE)
