"""``python -m bench.model_speed ARGS``: the same as ``foscar model-speed ARGS`` (the study is
:mod:`bench.model_speed_study`; this module is only the older entry point, kept for
``scripts/eval_model_gpu.sh`` and existing users)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run ``foscar model-speed`` with ``argv`` (default: ``sys.argv[1:]``) through the ``foscar``
    entry point (``foscar_cli``: the command line sits on top of ``bench``); exits with its code."""
    from foscar_cli import main as cli_main

    cli_main(["model-speed", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
