"""Which study a run directory holds, from its ``meta.json`` ``kind``.

Every command that writes a run directory records its kind: ``bench``, ``ablate``,
``accuracy``, ``eval-model`` (``foscar eval-model``) or ``model-speed``
(``foscar model-speed``, also ``python -m bench.model_speed``). ``foscar report`` and ``foscar compare`` dispatch on
it (:mod:`bench.study`). Runs from before the field existed: an ablation's
``meta.json`` lists its ``settings``; any other ``meta.json`` without a kind is a bench run; a run without
``meta.json`` is the kind whose columns its ``results.csv`` holds (:func:`kind_of_columns`).
"""

from __future__ import annotations

from pathlib import Path

from bench.errors import FoscarError
from bench.runfiles import check_run_dir, read_json_object

BENCH = "bench"
ABLATE = "ablate"
ACCURACY = "accuracy"
EVAL_MODEL = "eval-model"
MODEL_SPEED = "model-speed"
KINDS = (BENCH, ABLATE, ACCURACY, EVAL_MODEL, MODEL_SPEED)
COMMANDS = {BENCH: "foscar bench", ABLATE: "foscar ablate", ACCURACY: "foscar accuracy",
            EVAL_MODEL: "foscar eval-model", MODEL_SPEED: "foscar model-speed"}  # fmt: skip


def kind_of(meta: dict) -> str:
    """The study kind a run's ``meta.json`` records, as it stands (not checked against :data:`KINDS`); a
    ``meta.json`` without one (written before the field): an ablation's lists its ``settings`` and ``points``, any
    other is a bench run's."""
    kind = meta.get("kind")
    if kind is None:
        return ABLATE if isinstance(meta.get("settings"), list) and "points" in meta else BENCH
    return kind


# columns only one kind's results.csv holds (bench/<kind>.py COLUMNS), for a run whose meta.json is gone
_KIND_COLUMNS = ((ABLATE, {"axis", "setting"}), (ACCURACY, {"rotation", "rel_l2_vs_deq_max"}),
                 (EVAL_MODEL, {"perplexity", "scored_tokens"}), (MODEL_SPEED, {"speedup_vs_bf16", "step_ms"}))


def kind_of_columns(csv: Path) -> str:
    """The study kind of a run without ``meta.json``, from its ``results.csv`` header (a bench run's where the file
    is missing, unreadable or holds no other kind's columns)."""
    try:
        with open(csv, encoding="utf-8") as f:
            header = set(f.readline().strip().split(","))
    except (OSError, UnicodeDecodeError):
        return BENCH
    return next((kind for kind, columns in _KIND_COLUMNS if columns <= header), BENCH)


def run_kind(path: Path | str) -> str:
    """The study kind of the run directory ``path`` (one of :data:`KINDS`).

    Raises:
        FoscarError: ``path`` is not a directory; its ``meta.json`` cannot be parsed or
            names a kind not in :data:`KINDS`.
    """
    meta_path = check_run_dir(path) / "meta.json"
    if not meta_path.is_file():
        return kind_of_columns(meta_path.parent / "results.csv")
    kind = kind_of(read_json_object(meta_path))
    if kind not in KINDS:
        raise FoscarError(f"{meta_path}: unknown study kind {kind!r}; expected one of {', '.join(KINDS)}")
    return kind
