"""The files of a run directory, opened the same way by every command that reads or
writes one (bench, merge, resume, report, compare, the study kinds): the directory check,
JSON objects (``meta.json``, ``summary.json``) and output directories, each failure a
:class:`bench.errors.FoscarError` that names the path.

Imports nothing heavy (only :mod:`json`), so :mod:`bench.kinds` can use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.errors import FoscarError


def first_line(e: Exception) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def check_run_dir(path: Path | str) -> Path:
    """``path`` as a :class:`Path`, once it is an existing directory.

    Raises:
        FoscarError: ``path`` does not exist, or is a file.
    """
    path = Path(path)
    if not path.exists():
        raise FoscarError(f"run directory not found: {path}")
    if not path.is_dir():
        raise FoscarError(f"not a run directory: {path} is a file; pass the directory that holds results.csv")
    return path


def read_json_object(path: Path, then: str = "") -> dict[str, Any]:
    """The JSON object in the file ``path``.

    ``then``: what the user should do next, appended to the message of a parse error
    (``"pass a new --out DIR"``).

    Raises:
        FoscarError: the file cannot be read or parsed, or holds something other than an object.
    """
    try:
        obj = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FoscarError(f"cannot parse {path}: {first_line(e)}{'; ' + then if then else ''}") from None
    if not isinstance(obj, dict):
        raise FoscarError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def read_json_if_present(path: Path, notes: list[str]) -> dict[str, Any]:
    """:func:`read_json_object`, or ``{}`` with ``"<name> missing"`` appended to ``notes``
    when there is no such file."""
    if not path.is_file():
        notes.append(f"{path.name} missing")
        return {}
    return read_json_object(path)


def open_report_run(run_dir: Path | str, out: Path | str | None) -> tuple[dict[str, Any], Any, Path]:
    """``(meta.json's object, results.csv as a pandas DataFrame, the report directory)`` for
    drawing a run: the files read as they are (no schema applied: the kinds whose reports
    draw them directly), the report directory (``out``, default ``run_dir``) created.

    Raises:
        FoscarError: either file is missing or cannot be parsed; the directory cannot be created.
    """
    import pandas as pd

    run_dir = Path(run_dir)
    try:
        meta = read_json_object(run_dir / "meta.json")
        rows = pd.read_csv(run_dir / "results.csv")
    except (OSError, ValueError, FoscarError) as e:
        raise FoscarError(f"{run_dir}: cannot read results.csv and meta.json ({e})") from None
    return meta, rows, make_dir(Path(out) if out is not None else run_dir, "report directory")


def gpu_of(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta.json["gpu"]`` as a dict: ``{}`` for a CPU run; an ablation's ``"NAME (sm_XX)"`` text
    (``foscar ablate`` records the GPU so) as ``{"name": text}``."""
    gpu = meta.get("gpu")
    if isinstance(gpu, dict):
        return gpu
    return {"name": gpu} if gpu else {}


def make_dir(path: Path, what: str) -> Path:
    """Create the directory ``path`` (and its parents; an existing one is kept) and return it.

    ``what``: its role for the message (``"run directory"``, ``"report directory"``).

    Raises:
        FoscarError: it cannot be created.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FoscarError(f"cannot create the {what} {path}: {e.strerror}") from None
    return path
