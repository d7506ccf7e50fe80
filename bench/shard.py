"""``--shard K/N``: which points of the grid one run measures.

The grid's points (:func:`bench.sweep.grid`: the ``[sweep]`` grid batch-major, then
context, then bits; then the ``[[ragged]]`` grid) are numbered 0, 1, ... in that
order. Shard ``K/N`` (``0 <= K < N``) takes points ``K, K + N, K + 2N, ...``, each
with all its kernel rows, so a point's FlashInfer baselines and FOSCAR rows always
land in the same shard and its speed-ups need no other shard. The N shards together
cover every point exactly once; :mod:`bench.merge` puts them back together in grid
order.

Interleaving (rather than contiguous blocks) spreads the expensive points (large
batch x context at the end of each batch's row) over the shards, so N shards take
roughly the same time.

Nothing here imports torch: the CLI parses ``--shard`` before any heavy import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bench.errors import FoscarError

_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``k`` of ``n`` (``0 <= k < n``): grid points ``k, k + n, k + 2n, ...``."""

    k: int
    n: int

    def __post_init__(self) -> None:
        if self.n < 1 or not 0 <= self.k < self.n:
            raise FoscarError(f"--shard {self.k}/{self.n}: expected K/N with N >= 1 and 0 <= K < N")

    def indices(self, num_points: int) -> list[int]:
        """Grid indices of this shard's points, ascending, for a grid of ``num_points`` points."""
        return list(range(self.k, num_points, self.n))

    def label(self) -> str:
        """``"K/N"``, as the flag is written."""
        return f"{self.k}/{self.n}"

    def dir_name(self) -> str:
        """``"shard-K-of-N"``: the directory name ``--devices`` gives the shard's run."""
        return f"shard-{self.k}-of-{self.n}"

    def to_json(self, num_points: int) -> dict[str, Any]:
        """``meta.json["shard"]``: ``{"k", "n", "grid_points", "points"}`` (``points``: this shard's grid indices)."""
        return {"k": self.k, "n": self.n, "grid_points": num_points, "points": self.indices(num_points)}


def parse_shard(text: str) -> Shard:
    """``"K/N"`` -> :class:`Shard`.

    Raises:
        FoscarError: not two integers ``K/N`` with ``N >= 1`` and ``0 <= K < N``.
    """
    m = _SHARD_RE.match(text or "")
    if not m:
        raise FoscarError(f"--shard {text!r}: expected K/N, two integers with 0 <= K < N (e.g. 0/2)")
    return Shard(int(m.group(1)), int(m.group(2)))


def shard_of(meta: dict[str, Any]) -> Shard | None:
    """The shard a run's ``meta.json`` records, or ``None`` for a run of the whole grid.

    Raises:
        FoscarError: a ``shard`` entry that is not ``{"k": int, "n": int, ...}``.
    """
    rec = meta.get("shard")
    if rec is None:
        return None
    try:
        return Shard(int(rec["k"]), int(rec["n"]))
    except (TypeError, KeyError, ValueError):
        raise FoscarError(f"meta.json: shard {rec!r}: expected {{'k': K, 'n': N, ...}}") from None


def check_shard_fits(shard: Shard, num_points: int) -> None:
    """Refuse a shard that would get no point (``k >= num_points``).

    Raises:
        FoscarError: the grid has fewer points than ``k + 1``.
    """
    if shard.k >= num_points:
        raise FoscarError(
            f"--shard {shard.label()}: the grid has {num_points} point(s), so shard {shard.k} would run none; "
            f"use N <= {num_points}"
        )


def describe(shard: Shard | None) -> str:
    """``"shard K/N"``, or ``"the whole grid"`` for ``None``."""
    return "the whole grid" if shard is None else f"shard {shard.label()}"


def shard_mismatch(meta: dict[str, Any], shard: Shard | None) -> str | None:
    """Why a session running ``shard`` may not resume the run of ``meta`` (another shard, or
    a sharded run against a whole-grid one); ``None`` when it may.

    Raises:
        FoscarError: ``meta["shard"]`` is malformed (:func:`shard_of`).
    """
    old = shard_of(meta)
    if old != shard:
        return f"it holds {describe(old)}, this command runs {describe(shard)}"
    return None
