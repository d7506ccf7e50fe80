"""The point's shape and format fields, declared once.

:class:`PointShape` lists what makes a sweep point (batch, context, the quantized
format, the attention shape, the page size and the pages' order). Everything that copies these fields from
one place to another reads them from here with :func:`dataclasses.fields`:

* the grid (:func:`bench.points.grid`) takes the swept fields (``swept=True``: lists in
  the config) from the grid's product and every other one from the config by name;
* a results.csv row (:func:`shape_columns`, :data:`SHAPE_COLUMNS`) holds each field under
  its column name (``column``: ``bits`` is the row's ``cache_bits``, since a row's own
  ``bits`` column is empty for baselines);
* the point key of bench and compare (:data:`bench.results.POINT_KEYS`).

The preset's ``[shape]`` and ``[sweep]`` tables take these fields too
(:data:`SHAPE_TABLE_FIELDS`, :data:`SWEEP_TABLE_FIELDS`). Adding a field: declare it
here, and give :class:`bench.config.BenchConfig` a default of the same name (a list
when ``swept``); a command-line flag for it is a :class:`bench.run.BenchOptions` field
and an option of ``foscar bench`` of that name.

Imports nothing heavy (no torch, no pandas), so the config and results modules can use it.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any


def _column(name: str | None = None, *, swept: bool = False, fmt: bool = False, default: Any = dataclasses.MISSING) -> Any:
    """Field metadata: results.csv column ``name`` (default: the field's name); ``swept``: a
    list in the config that the grid multiplies out; ``fmt``: part of the quantized format
    (results.csv puts the format columns first); ``default``: the field's value when a
    :class:`bench.workload.Point` is built without it."""
    return field(default=default, metadata={"column": name, "swept": swept, "format": fmt})


@dataclass(frozen=True)
class PointShape:
    """One point's shape and quantized format (field order: the positional order of
    :class:`bench.workload.Point`)."""

    batch: int = _column(swept=True)  # sequences per decode call
    context: int = _column(swept=True)  # tokens per sequence (the workload may vary the lengths)
    bits: int = _column("cache_bits", swept=True, fmt=True)  # bits of the quantized cache: 2 or 4
    group_size: int = _column(fmt=True)  # channels per quantization group
    num_qo_heads: int = _column()
    num_kv_heads: int = _column()
    head_dim: int = _column()
    page_size: int = _column()  # tokens per page of the paged caches (FOSCAR's and FlashInfer's)
    # the order of those pages in memory, the same for every paged cache of the point (PAGE_ORDERS)
    page_order: str = _column(default="shuffled")


# "shuffled": pages at random places in the pool (one fixed permutation a cache, seed 0), as in a pool that has served
# for a while; "in-order": every sequence's pages consecutive, in token order (a pool just filled)
PAGE_ORDERS = ("shuffled", "in-order")
PAGE_SHUFFLE_SEED = 0  # torch.Generator seed of the "shuffled" permutation (FOSCAR's paged copy and FlashInfer's pages)


SHAPE_FIELDS: tuple[dataclasses.Field, ...] = dataclasses.fields(PointShape)
SWEPT_FIELDS = tuple(f.name for f in SHAPE_FIELDS if f.metadata["swept"])
FIXED_FIELDS = tuple(f.name for f in SHAPE_FIELDS if not f.metadata["swept"])


# the preset's TOML table of each field: the grid's lists and the format in [sweep], the rest in [shape]
SWEEP_TABLE_FIELDS = tuple(f.name for f in SHAPE_FIELDS if f.metadata["swept"] or f.metadata["format"])
SHAPE_TABLE_FIELDS = tuple(f.name for f in SHAPE_FIELDS if f.name not in SWEEP_TABLE_FIELDS)


def column_name(f: dataclasses.Field) -> str:
    """The results.csv column of a :class:`PointShape` field."""
    return f.metadata["column"] or f.name


# results.csv's order: the format first (cache_bits, group_size), then the shape
SHAPE_COLUMNS = [column_name(f) for f in SHAPE_FIELDS if f.metadata["format"]] + [
    column_name(f) for f in SHAPE_FIELDS if not f.metadata["format"]
]
# the point key's order (bench.results.POINT_KEYS, compare's row order): the fields' order
SHAPE_KEYS = [column_name(f) for f in SHAPE_FIELDS]
# the integer columns (results.csv reads them as nullable integers; page_order is a string)
_FIELD_TYPES = typing.get_type_hints(PointShape)  # the annotations are strings here (``from __future__ import annotations``)
INT_SHAPE_COLUMNS = [column_name(f) for f in SHAPE_FIELDS if _FIELD_TYPES[f.name] is int]


def shape_columns(shape: PointShape) -> dict[str, Any]:
    """``{column: value}`` of a point's shape fields, as a results.csv row holds them."""
    return {column_name(f): getattr(shape, f.name) for f in SHAPE_FIELDS}


def fixed_fields(source: Any) -> dict[str, Any]:
    """``{name: value}`` of the fields the grid does not sweep, read by name from ``source``
    (a :class:`bench.config.BenchConfig`)."""
    return {name: getattr(source, name) for name in FIXED_FIELDS}
