"""bench/shape.py: the point's shape fields, declared once, reach the config, the grid and the rows."""

from __future__ import annotations

import dataclasses

import pytest

from bench.config import BenchConfig, _TABLES
from bench.points import grid
from bench.results import COLUMNS, POINT_KEYS, new_row
from bench.shape import SHAPE_COLUMNS, SHAPE_FIELDS, SWEPT_FIELDS, PointShape, column_name, shape_columns
from bench.workload import Point


def test_results_columns_keep_their_names_and_order():
    # results.csv of old runs must still read: the block of shape columns is unchanged
    start = COLUMNS.index("cache_bits")
    assert COLUMNS[start:start + 8] == ["cache_bits", "group_size", "batch", "context", "num_qo_heads",
                                        "num_kv_heads", "head_dim", "page_size"]  # fmt: skip
    assert POINT_KEYS[:8] == ["batch", "context", "cache_bits", "group_size", "num_qo_heads", "num_kv_heads",
                              "head_dim", "page_size"]  # fmt: skip
    assert sorted(SHAPE_COLUMNS) == sorted(column_name(f) for f in SHAPE_FIELDS)


def test_every_shape_field_is_a_config_field_and_a_preset_key():
    cfg = BenchConfig()
    preset_keys = set(_TABLES["shape"]) | set(_TABLES["sweep"])
    for f in SHAPE_FIELDS:
        value = getattr(cfg, f.name)
        assert isinstance(value, list) == (f.name in SWEPT_FIELDS), f.name
        assert f.name in preset_keys, f.name


def test_point_is_a_shape_and_keeps_its_positional_order():
    p = Point(8, 32768, 2, 128, 32, 8, 128, 16)
    assert isinstance(p, PointShape)
    assert [getattr(p, f.name) for f in SHAPE_FIELDS] == [8, 32768, 2, 128, 32, 8, 128, 16, "shuffled"]


@pytest.mark.parametrize("kernel, bits, baseline", [("foscar-triton", 2, None), ("flashinfer-fa2", None, "bf16")])
def test_grid_and_row_carry_every_shape_field(kernel, bits, baseline):
    cfg = dataclasses.replace(BenchConfig(), batch=[3], context=[40], bits=[2], group_size=32, num_qo_heads=4,
                              num_kv_heads=2, head_dim=64, page_size=8, page_order="in-order", grids=["sweep"])  # fmt: skip
    (point,) = grid(cfg)
    assert {f.name: getattr(point, f.name) for f in SHAPE_FIELDS} == dict(
        batch=3, context=40, bits=2, group_size=32, num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=8,
        page_order="in-order",
    )
    row = new_row(point, kernel, bits, "bf16" if bits else None, baseline)
    assert {c: row[c] for c in SHAPE_COLUMNS} == shape_columns(point)
    assert row["cache_bits"] == 2 and row["bits"] == bits
