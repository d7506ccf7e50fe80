"""The ``foscar`` command line (typer): one module per command, the shared options in one.

* :mod:`bench.cli.options`         per-invocation state, options-dataclass helpers, option aliases that several commands take
* :mod:`bench.cli.app`             the one typer ``app``, its root ``--debug``, :func:`main` (errors -> exit codes)
* :mod:`bench.cli.bench_cmd`       ``foscar bench``
* :mod:`bench.cli.merge_cmd`       ``foscar merge``
* :mod:`bench.cli.report_cmd`      ``foscar report``
* :mod:`bench.cli.compare_cmd`     ``foscar compare``
* :mod:`bench.cli.ablate_cmd`      ``foscar ablate``
* :mod:`bench.cli.export_gab_cmd`  ``foscar export-gab``
* :mod:`bench.cli.accuracy_cmd`    ``foscar accuracy``
* :mod:`bench.cli.eval_model_cmd`  ``foscar eval-model``
* :mod:`bench.cli.model_speed_cmd` ``foscar model-speed`` (also ``python -m bench.model_speed``)
* :mod:`bench.cli.dump_kv_cmd`     ``foscar dump-kv``

Each command module registers its command on :data:`bench.cli.app.app` when imported;
this package imports them in the order ``foscar --help`` lists them. A command checks
its flags with a fixed set of values here (:func:`bench.errors.check_choices`) and
imports the heavy modules (torch, triton, pandas) only in its body, so the CLI starts
without them. ``foscar_cli.py`` (the console script) only calls :func:`main`.
"""

from __future__ import annotations

from bench.cli.app import app, main
from bench.cli import (  # noqa: F401  (registers the commands, in this order)
    bench_cmd,
    merge_cmd,
    report_cmd,
    compare_cmd,
    ablate_cmd,
    export_gab_cmd,
    accuracy_cmd,
    eval_model_cmd,
    model_speed_cmd,
    dump_kv_cmd,
)
from bench.cli.app import reflow_command_help

reflow_command_help()

__all__ = ["app", "main"]
