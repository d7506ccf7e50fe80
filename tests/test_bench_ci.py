"""Bootstrap confidence intervals of the geometric means (summary.json, the final table), on synthetic data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rich.console import Console

from bench.results import (
    BOOTSTRAP_RESAMPLES,
    add_speedups,
    geomean,
    geomean_ci,
    new_row,
    summarize,
    to_frame,
)
from bench.tables import summary_table
from bench.workload import Point


def test_ci_is_deterministic_and_brackets_the_geomean():
    xs = [1.1, 1.4, 2.0, 2.5, 3.1, 1.8]
    lo, hi = geomean_ci(xs)
    assert [lo, hi] == geomean_ci(list(xs))  # fixed seed: the same interval every time
    assert min(xs) <= lo < geomean(xs) < hi <= max(xs)
    assert geomean_ci(xs, seed=1) != [lo, hi]  # the seed is what makes it repeatable


def test_ci_percentile_bootstrap_by_hand():
    """The interval equals the 2.5/97.5 percentiles of 1000 geometric means of resampled points."""
    xs = np.array([0.9, 1.2, 1.5, 4.0])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(xs), size=(BOOTSTRAP_RESAMPLES, len(xs)))
    means = np.exp(np.log(xs)[idx].mean(axis=1))
    assert geomean_ci(xs) == pytest.approx(list(np.percentile(means, [2.5, 97.5])))


def test_ci_degenerate_cases():
    assert geomean_ci([]) is None
    assert geomean_ci([2.0]) == [2.0, 2.0]
    assert geomean_ci([1.5] * 7) == pytest.approx([1.5, 1.5])


def test_ci_narrows_with_more_points():
    rng = np.random.default_rng(123)
    few = np.exp(rng.normal(0.5, 0.3, size=5))
    many = np.exp(rng.normal(0.5, 0.3, size=200))
    w_few = np.diff(geomean_ci(few))[0]
    w_many = np.diff(geomean_ci(many))[0]
    assert w_many < w_few / 3


def _point(context: int) -> Point:
    return Point(batch=8, context=context, bits=2, group_size=128, num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)


def _rows():
    rows = []
    for context, ours, fi in ((8192, 10.0, 20.0), (16384, 10.0, 25.0), (32768, 10.0, 40.0), (65536, 10.0, 15.0)):
        p = _point(context)
        q = new_row(p, "foscar-triton", 2, "bf16", False)
        q.update(status="ok", median_us=ours)
        b = new_row(p, "flashinfer-fa2", None, None, True)
        b.update(status="ok", median_us=fi)
        rows += [q, b]
    return rows


def test_summary_has_a_ci_next_to_each_geomean():
    s = summarize(add_speedups(to_frame(_rows())))
    key = "foscar-triton/int2/bf16"
    speedups = [2.0, 2.5, 4.0, 1.5]
    assert s["geomean_speedup"][key] == pytest.approx(geomean(speedups))
    assert s["geomean_ci95"][key] == pytest.approx(geomean_ci(speedups))
    lo, hi = s["geomean_ci95"][key]
    assert 1.5 <= lo < s["geomean_speedup"][key] < hi <= 4.0
    vs = s["geomean_speedup_vs"][key]["flashinfer-fa2"]
    assert vs["geomean_ci95"] == pytest.approx(geomean_ci(speedups))
    assert "bootstrap" in s["geomean_ci95_method"] and "1000" in s["geomean_ci95_method"]
    assert set(s["geomean_ci95"]) == set(s["geomean_speedup"])


def test_no_points_no_ci():
    rows = _rows()
    for r in rows:
        if r["is_baseline"]:
            r.update(status="skipped", median_us=None)
    s = summarize(add_speedups(to_frame(rows)))
    assert s["geomean_speedup"]["foscar-triton/int2/bf16"] is None
    assert s["geomean_ci95"]["foscar-triton/int2/bf16"] is None


def test_summary_table_shows_the_ci():
    s = summarize(add_speedups(to_frame(_rows())))
    console = Console(width=200, record=True)
    console.print(summary_table(s, interpreter=False))
    text = console.export_text()
    lo, hi = s["geomean_ci95"]["foscar-triton/int2/bf16"]
    assert "95% CI" in text and f"{lo:.3f}-{hi:.3f}" in text
    assert math.isfinite(lo)
