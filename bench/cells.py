"""Reading one cell of a results frame the same way everywhere: matching rows of two runs
(:mod:`bench.compare`, :mod:`bench.ablate_compare`, :mod:`bench.accuracy_compare`) and
checking that a number was recorded."""

from __future__ import annotations

import math
from typing import Any, Iterable

import pandas as pd


def cell(x: Any) -> Any:
    """A cell as a plain Python value for matching: ``None`` for None/NA/NaN, an ``int``
    for a whole float (pandas reads an integer column with gaps as float), numpy scalars
    unwrapped, anything else as is."""
    if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)):
        return None
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x.item() if hasattr(x, "item") else x


def is_finite(x: Any) -> bool:
    """Whether ``x`` is a finite number (False for None, NA, NaN, +-Inf and non-numbers)."""
    try:
        return x is not None and x is not pd.NA and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def match_key(row: Any, keys: Iterable[str]) -> tuple:
    """The tuple of :func:`cell` values of ``row``'s ``keys`` (a dict or a pandas Series):
    what matches a row of one run with the same row of another."""
    return tuple(cell(row[k]) for k in keys)
