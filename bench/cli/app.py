"""The one typer ``app`` of the ``foscar`` command line, its root options, and :func:`main`.

The commands register themselves on :data:`app` when their modules are imported
(``bench/cli/__init__.py`` imports them all, in the order ``foscar --help`` lists them).
"""

from __future__ import annotations

import inspect
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


def reflow(doc: str) -> str:
    """A command's docstring as its ``--help`` text: each paragraph's lines joined into one line, so that rich wraps
    it to the terminal's width (typer's rich help keeps the docstring's own line breaks, which at 80 columns left
    half-filled lines); blank lines between paragraphs, indented lines (examples) and list items (``- ``, ``* ``) stay
    on their own lines, and typer's ``\\f`` (the end of the help) with them."""
    out: list[str] = []
    for line in inspect.cleandoc(doc).split("\n"):
        joinable = (line.strip() and not line.startswith((" ", "- ", "* ")) and out and out[-1].strip()
                    and not out[-1].startswith(" "))
        if joinable and "\f" not in line and "\f" not in out[-1]:
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


def reflow_command_help() -> None:
    """Give every registered command whose help comes from its docstring the :func:`reflow`-ed text (called once
    the command modules are imported, ``bench/cli/__init__.py``)."""
    for info in app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = reflow(info.callback.__doc__)


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
