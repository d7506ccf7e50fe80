"""Resuming a run: the same command with the same ``--out DIR`` picks up where it stopped.
The engine (:mod:`bench.engine`: :func:`~bench.engine.check_resume`,
:func:`~bench.engine.finished_points`) does it for every study with the helpers here.

``results.csv`` is rewritten after every point, so after a crash or Ctrl-C it holds
every point that finished. Rerunning into that directory:

* is allowed only when the resolved config hashes (:func:`bench.config.config_hash`)
  to the ``config_hash`` in the directory's ``meta.json``; otherwise it stops with
  both hashes and the fields that differ (a mixed results.csv would be wrong);
* skips every point whose rows (kernel x operand) are all in ``results.csv`` with a
  final status (``ok``, ``failed``, ``error``, ``skipped``, ``suspect``: an error
  or a skip is a result too; remove those rows, or use a new ``--out``, to redo
  them); any other point runs again from scratch;
* appends a record of the session to ``meta.json["resumes"]`` (date, command, git,
  GPU UUID and state, HBM ceiling), keeping the first session's manifest.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from bench.errors import FoscarError
from bench.kinds import COMMANDS, kind_of
from bench.runfiles import gpu_of, read_json_object

def load_prior(
    out: Path, cfg_hash: str, config: dict[str, Any], read: Callable[[Path], pd.DataFrame] | None = None,
    kind: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """``(rows, meta)`` of the run in ``out`` to resume, or ``None`` when ``out`` holds no results.csv.

    ``read``: how the study reads its results.csv back (default: bench's
    :func:`bench.results.read_results`). ``kind``: the resuming study's (``meta.json`` ``kind``, :mod:`bench.kinds`);
    a run of another kind is refused as such, before its config is compared.

    Raises:
        FoscarError: results.csv without a readable meta.json or its config_hash; a run of another kind than
            ``kind`` (another command's); a config hash that differs from ``cfg_hash`` (the message names both).
    """
    out = Path(out)
    csv = out / "results.csv"
    if not csv.exists():
        return None
    meta_path = out / "meta.json"
    if not meta_path.is_file():
        raise FoscarError(f"{out} already holds results.csv but no meta.json, so it cannot be resumed; pass a new --out DIR")
    meta = read_json_object(meta_path, "pass a new --out DIR")
    held = kind_of(meta)
    if kind and held != kind:  # another command's run: say so, not which of its config fields differ
        raise FoscarError(f"{out} holds a {COMMANDS.get(held, held)} run, not a {COMMANDS.get(kind, kind)} one: "
                          "pass a new --out DIR")
    old = meta.get("config_hash")
    if not old:
        raise FoscarError(
            f"{out} already holds results.csv from a run without a config_hash in meta.json "
            "(written before runs could resume); pass a new --out DIR"
        )
    if old != cfg_hash:
        fields = differing_fields(meta.get("config") or {}, config)
        which = f" (differs in: {', '.join(fields)})" if fields else ""
        raise FoscarError(
            f"{out} holds a run of another config: config hash {old} in its meta.json, "
            f"{cfg_hash} for this command{which}; rerun with that run's flags to resume it, or pass a new --out DIR"
        )
    if read is None:
        from bench.results import read_results as read

    try:
        rows = read(csv)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, TypeError, KeyError) as e:
        raise FoscarError(f"cannot read {csv} to resume it: {str(e).splitlines()[0]}; pass a new --out DIR") from None
    return rows, meta


def differing_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Config fields whose values differ (or that only one side has), sorted."""
    return sorted(k for k in set(old) | set(new) if old.get(k, _MISSING) != new.get(k, _MISSING))


_MISSING = object()


def _opt(x: Any) -> Any:
    if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)):
        return None
    return x


def row_key(kernel: Any, bits: Any, operand: Any) -> tuple[str, int | None, str | None]:
    """``(kernel, bits, operand)`` with missing values as ``None`` (baselines have no bits/operand)."""
    bits, operand = _opt(bits), _opt(operand)
    return str(kernel), None if bits is None else int(bits), None if operand is None else str(operand)


def session_record(manifest: dict[str, Any], points_done_before: int) -> dict[str, Any]:
    """What ``meta.json["resumes"]`` keeps of a resuming session's own manifest."""
    keep = ("date", "command", "git", "versions", "hbm_ceiling_tbps", "timing_mode", "gpu_state", "clock_readings")
    rec = {k: manifest.get(k) for k in keep}
    gpu = gpu_of(manifest)
    rec["gpu"] = {"name": gpu.get("name"), "uuid": gpu.get("uuid"), "driver": gpu.get("driver")} if gpu else None
    rec["points_done_before"] = points_done_before
    return rec


def gpu_mismatch(meta: dict[str, Any], device) -> str | None:
    """Why a session on ``device`` (:class:`bench.arch.DeviceInfo` or ``None`` for the CPU)
    may not resume the run of ``meta``: another kind of GPU. ``None`` when it may."""
    old = gpu_of(meta).get("name")
    new = device.name if device is not None else None
    if old != new:
        return f"the run was started on {old or 'the CPU'}, this is {new or 'the CPU'}"
    return None


def device_mismatch(meta: dict[str, Any], device_name: str) -> str | None:
    """Why a session on ``device_name`` may not resume the run of ``meta`` whose ``device`` field
    names another device (the model studies, eval-model and model-speed), or ``None``."""
    old = meta.get("device")
    return None if old == device_name else f"the run was started on {old}, this is {device_name}"
