"""A sweep's points and rows: the grid of a :class:`bench.config.BenchConfig`, and the
``(backend, bits, operand)`` rows of one point.

Shared by the sweep (:mod:`bench.sweep`, which runs them) and the plan
(:mod:`bench.plan`, which estimates them) without either importing the other.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from bench.config import BenchConfig
from bench.shape import fixed_fields
from bench.workload import Point

if TYPE_CHECKING:
    from bench.backends import Backend


def grid(cfg: BenchConfig) -> list[Point]:
    """All points: the ``[sweep]`` grid (batch-major, then context, then bits; workload
    ``cfg.workload``), then each ``[[ragged]]`` entry's batch x context x bits (its own
    workload), as far as ``cfg.grids`` asks for them. A point the ragged grid lists
    twice runs once."""
    points: list[Point] = []
    parts = [("sweep", cfg.batch, cfg.context, cfg.workload)] if "sweep" in cfg.grids else []
    if "ragged" in cfg.grids:
        parts += [("ragged", e.batch, e.context, e.workload) for e in cfg.ragged]
    for name, batches, contexts, spec in parts:
        for b, c, bits in itertools.product(batches, contexts, cfg.bits):
            point = Point(batch=b, context=c, bits=bits, **fixed_fields(cfg), workload=spec.at(c, max(contexts)), grid=name)
            if point not in points:
                points.append(point)
    return points


def row_specs(point: Point, backends: list[Backend], operands: list[str]) -> list[tuple[Backend, int | None, str | None]]:
    """(backend, bits, operand) of every row of a point: quantized kernels once per operand, baselines once."""
    specs: list[tuple[Backend, int | None, str | None]] = []
    for be in backends:
        if be.quantized:
            specs.extend((be, point.bits, op) for op in operands)
        else:
            specs.append((be, None, None))
    return specs
