"""The engine's studies (:mod:`bench.engine`) by kind: rebuild a run's study from its ``meta.json``.

``foscar merge`` reads shard runs of any kind with it: the recorded ``kind`` picks the
study definition, the recorded ``config`` rebuilds its grid. The study so rebuilt reads,
frames and summarizes rows; it does not measure (no device).
"""

from __future__ import annotations

from typing import Any

from bench.engine import Study
from bench.errors import FoscarError
from bench.kinds import ABLATE, ACCURACY, BENCH, EVAL_MODEL, MODEL_SPEED

ENGINE_KINDS = (BENCH, ABLATE, ACCURACY, EVAL_MODEL, MODEL_SPEED)  # the kinds whose runs the engine writes (and merge combines)


def study_class(kind: str) -> type[Study]:
    """The study definition of ``kind`` (its ``read`` reads a results.csv without a config).

    Raises:
        FoscarError: a kind the engine does not run.
    """
    if kind == BENCH:
        from bench.sweep import BenchStudy

        return BenchStudy
    if kind == ABLATE:
        from bench.ablate import AblateStudy

        return AblateStudy
    if kind == ACCURACY:
        from bench.accuracy import AccuracyStudy

        return AccuracyStudy
    if kind == EVAL_MODEL:
        from bench.eval_model import EvalModelStudy

        return EvalModelStudy
    if kind == MODEL_SPEED:
        from bench.model_speed_study import ModelSpeedStudy

        return ModelSpeedStudy
    raise FoscarError(f"meta.json kind {kind!r}: not a study of the engine; expected one of {', '.join(ENGINE_KINDS)}")


def study_from_meta(meta: dict[str, Any]) -> Study:
    """The study a run's ``meta.json`` records (kind and config), for reading, framing and
    summarizing its rows (it cannot measure).

    Raises:
        FoscarError: a kind the engine does not run, or a config that cannot be rebuilt.
    """
    return study_class(meta.get("kind", BENCH)).from_meta(meta)
