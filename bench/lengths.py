"""Workloads: the sequence lengths of a point and the capacity of the cache that holds them.

A :class:`WorkloadSpec` (the ``[workload]`` table of a preset, an entry of its
``[[ragged]]`` grid, the ``--workload`` flags) names a length distribution; for a
point of ``batch`` sequences and a ``context`` it gives the ``batch`` lengths and the
cache capacity (``max_seq_len``: the K/V tensors' sequence dimension; for a paged
cache, the host-side bound ``PagedQuantizedKVCache.max_seq_len``). The lengths are a
pure function of ``(name, seed, short_len, batch, context)``, so a preset gives the
same lengths on every machine and every run (they are recorded in ``results.csv``,
:func:`lengths_summary`, and in full in ``meta.json``).

Distributions (:data:`WORKLOAD_NAMES`):

* ``uniform``: every sequence has ``context`` tokens; capacity ``context`` (the
  behaviour of every run before workloads existed).
* ``one-long``: sequence 0 has ``context`` tokens, the other ``batch - 1`` have
  ``min(short_len, context)`` (default 4096): one long request among short ones;
  capacity ``context``.
* ``lognormal``: a heavy-tailed mix: ``round(context / 8 * exp(sigma * z))`` with
  ``sigma = 1`` and ``z`` standard normal draws of ``random.Random(seed)`` (Python's
  generator, the same stream on every platform), clipped to ``[1, context]``: the
  median length is ``context / 8`` and about 1 sequence in 60 reaches ``context``;
  capacity ``context``.
* ``capacity``: every sequence has ``context`` tokens, in a cache sized for the largest
  context of its grid (or ``capacity``): the same lengths as ``uniform`` in a larger
  allocation.

``capacity``, when set, overrides the default of any distribution; it must be at
least the point's ``context``. Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
from dataclasses import dataclass
from typing import Any

WORKLOAD_NAMES = ("uniform", "one-long", "lognormal", "capacity")
DEFAULT_SHORT_LEN = 4096  # one-long: tokens of the short sequences
LOGNORMAL_MEDIAN_FRACTION = 1 / 8  # lognormal: median length = context / 8
LOGNORMAL_SIGMA = 1.0  # lognormal: sigma of log(length)
SUMMARY_MAX_RUNS = 8  # lengths_summary: run-length encoding up to this many runs, else a digest

# WorkloadSpec fields each distribution reads besides batch and context; the others are
# normalized away per point (WorkloadSpec.at), so they neither label nor split its rows
_PARAMS = {"uniform": (), "one-long": ("short_len",), "lognormal": ("seed",), "capacity": ()}


@dataclass(frozen=True)
class WorkloadSpec:
    """A length distribution by name, and the cache capacity.

    Attributes:
        name: one of :data:`WORKLOAD_NAMES`.
        capacity: tokens per sequence the cache is allocated for (``max_seq_len``), or
            ``None`` for the distribution's default (``context``; ``capacity``: the
            largest context of the grid).
        seed: seed of the random distributions (``lognormal``); independent of the
            K/V data seed (``[timing].seed``).
        short_len: ``one-long``: tokens of the ``batch - 1`` short sequences.
    """

    name: str = "uniform"
    capacity: int | None = None
    seed: int = 0
    short_len: int = DEFAULT_SHORT_LEN

    def validate(self, where: str = "workload") -> None:
        """Raise ``ValueError`` ("<where>.<field>: expected X, got Y") for a bad field."""
        if self.name not in WORKLOAD_NAMES:
            raise ValueError(f"{where}.name {self.name!r}: expected one of {', '.join(WORKLOAD_NAMES)}")
        if self.capacity is not None and not _positive_int(self.capacity):
            raise ValueError(f"{where}.capacity: expected a positive integer (tokens) or none, got {self.capacity!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"{where}.seed: expected an integer >= 0, got {self.seed!r}")
        if not _positive_int(self.short_len):
            raise ValueError(f"{where}.short_len: expected a positive integer (tokens), got {self.short_len!r}")

    def at(self, context: int, grid_max_context: int) -> WorkloadSpec:
        """The spec of one point: ``capacity`` resolved to tokens, and the fields the
        distribution does not read reset to their defaults.

        Raises:
            ValueError: ``capacity`` below ``context``.
        """
        cap = self.capacity
        if cap is None:
            cap = grid_max_context if self.name == "capacity" else context
        if cap < context:
            raise ValueError(f"capacity: expected >= context {context} (a cache holds every token), got {cap}")
        used = _PARAMS[self.name]
        reset = {f.name: f.default for f in dataclasses.fields(self) if f.name not in ("name", "capacity") and f.name not in used}
        return dataclasses.replace(self, capacity=cap, **reset)

    def lengths(self, batch: int, context: int) -> tuple[int, ...]:
        """The ``batch`` sequence lengths (tokens, each in ``[1, context]``)."""
        if self.name in ("uniform", "capacity"):
            return (context,) * batch
        if self.name == "one-long":
            return ((context,) + (min(self.short_len, context),) * (batch - 1))[:batch]
        if self.name == "lognormal":
            rng = random.Random(self.seed)
            median = context * LOGNORMAL_MEDIAN_FRACTION
            return tuple(
                min(context, max(1, round(median * math.exp(LOGNORMAL_SIGMA * rng.normalvariate(0.0, 1.0)))))
                for _ in range(batch)
            )
        raise ValueError(f"workload.name {self.name!r}: expected one of {', '.join(WORKLOAD_NAMES)}")

    def describe(self) -> str:
        """``one-long (short 4096)``, ``lognormal (seed 0)``, ``uniform``; with ``, capacity N`` when resolved."""
        params = [f"{'short' if p == 'short_len' else p} {getattr(self, p)}" for p in _PARAMS.get(self.name, ())]
        text = self.name + (f" ({', '.join(params)})" if params else "")
        return text + (f", capacity {self.capacity}" if self.capacity is not None else "")


def _positive_int(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, int) and x > 0


def lengths_summary(lengths: tuple[int, ...] | list[int]) -> str:
    """A compact, CSV-safe text of a lengths list: run-length encoded in order
    (``131072,4096x7``; ``4096x8``) up to :data:`SUMMARY_MAX_RUNS` runs, else
    ``n=64 min=12 max=32768 sum=... #<sha256 prefix>`` (the digest keeps two
    different lists apart)."""
    lens = [int(x) for x in lengths]
    runs: list[list[int]] = []
    for n in lens:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    if len(runs) <= SUMMARY_MAX_RUNS:
        return ",".join(f"{n}x{c}" if c > 1 else str(n) for n, c in runs)
    digest = hashlib.sha256(",".join(map(str, lens)).encode()).hexdigest()[:8]
    return f"n={len(lens)} min={min(lens)} max={max(lens)} sum={sum(lens)} #{digest}"

