"""Times that cannot be times (zero, negative, NaN, Inf): the row is flagged ``invalid``,
left out of every mean and baseline, summary.json is still strict JSON, and
``foscar bench`` exits with EXIT_RUN_PROBLEM (issue 13 item 5)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

import bench.backends
import bench.sweep
from bench.backends import Backend, Prepared
from bench.errors import EXIT_RUN_PROBLEM
from bench.results import INVALID, add_speedups, new_row, set_timing, summarize, to_frame, write_json
from bench.run import run_problems
from bench.timing import GRAPH_TIMING, INTERPRETER_TIMING, Timing
from bench.workload import Point
from tests.cli_helpers import run_main

P = Point(8, 32768, 2, 128, 32, 8, 128, 16)


def _row(kernel, us, bits=None, baseline=None, status="ok"):
    r = new_row(P, kernel, bits, "bf16" if bits else None, baseline)
    r.update(status=status, median_us=us, p20_us=us, p80_us=us)
    return r


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_set_timing_flags_a_time_that_is_not_positive_and_finite(bad):
    row = _row("foscar-cuda", None, bits=2)
    set_timing(row, Timing(bad, bad, bad, 15, GRAPH_TIMING), nbytes=1000, hbm_tbps=4.0)
    assert row["status"] == INVALID
    assert "not a positive finite number" in row["error"]
    assert row["tbps"] is None and row["sol_fraction"] is None  # no infinite bandwidth


def test_set_timing_flags_a_zero_spread_bound():
    row = _row("foscar-cuda", None, bits=2)
    set_timing(row, Timing(5.0, 0.0, 6.0, 15, INTERPRETER_TIMING), nbytes=1000, hbm_tbps=None)
    assert row["status"] == INVALID and "p20" in row["error"]


def test_zero_time_row_is_out_of_baselines_and_geomeans_and_summary_is_strict_json(tmp_path):
    """The issue's case: foscar-cuda at 0.0 us and a baseline at 10 us, both written as ok."""
    rows = [
        _row("foscar-cuda", 0.0, bits=2),
        _row("foscar-triton", 20.0, bits=2),
        _row("flashinfer-fa2", 10.0, baseline="bf16"),
        _row("flashinfer-fa2-tc", 0.0, baseline="bf16"),  # a zero baseline must not become "the best"
    ]
    df = add_speedups(to_frame(rows))
    by = df.set_index("kernel")
    assert by.loc["foscar-cuda", "status"] == INVALID and by.loc["flashinfer-fa2-tc", "status"] == INVALID
    assert by.loc["foscar-triton", "baseline_kernel"] == "flashinfer-fa2"
    assert by.loc["foscar-triton", "speedup_vs_flashinfer_bf16"] == pytest.approx(0.5)
    assert math.isnan(by.loc["foscar-cuda", "speedup_vs_flashinfer_bf16"])
    s = summarize(df)
    assert s["geomean_speedup"]["foscar-cuda/int2/bf16"] is None and s["num_points"]["foscar-cuda/int2/bf16"] == 0
    assert s["geomean_speedup"]["foscar-triton/int2/bf16"] == pytest.approx(0.5)
    assert list(s["geomean_speedup_vs"]["foscar-triton/int2/bf16"]) == ["flashinfer-fa2"]  # not the invalid one
    assert s["status_counts"][INVALID] == 2
    write_json(s, tmp_path / "summary.json")
    json.loads((tmp_path / "summary.json").read_text())  # strict JSON: no inf, no NaN
    assert run_problems(df) == ["2 row(s) with an invalid time (flashinfer-fa2-tc, foscar-cuda): left out of every mean"]


def test_write_json_turns_non_finite_floats_into_null(tmp_path):
    write_json({"a": math.inf, "b": [math.nan, 1.5], "c": {"d": -math.inf}}, tmp_path / "x.json")
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_run_problems_no_foscar_row_timed():
    df = to_frame([_row("foscar-cuda", None, bits=2, status="skipped"), _row("flashinfer-fa2", 10.0, baseline="bf16")])
    assert run_problems(df) == ["no FOSCAR row was timed (1 skipped)"]
    ok = to_frame([_row("foscar-cuda", 5.0, bits=2), _row("flashinfer-fa2", 10.0, baseline="bf16")])
    assert run_problems(ok) == []


def test_run_problems_name_a_baseline_that_broke_and_a_point_timed_in_two_modes():
    """A baseline that raised at one point made the best of the others "FlashInfer at its best" there, silently; a row
    whose CUDA-graph capture failed (timed by do_bench, with launch gaps) was compared with graph-timed rows silently.
    A skipped baseline (it cannot run on this machine at all) is no problem."""
    rows = [_row("foscar-cuda", 5.0, bits=2), _row("flashinfer-fa2", 10.0, baseline="bf16"),
            _row("flashinfer-xqa", None, baseline="bf16", status="error"),
            _row("flashinfer-fa2-tc", None, baseline="bf16", status="skipped")]
    for r in rows:
        r["timing_mode"] = GRAPH_TIMING
    assert run_problems(to_frame(rows)) == ["1 baseline row(s) failed or raised (flashinfer-xqa) at 1 point(s): their "
                                            "speed-ups are over the baselines that ran there"]
    rows = [r for r in rows if r["kernel"] != "flashinfer-xqa"]
    assert run_problems(to_frame(rows)) == []
    rows[1]["timing_mode"] = "do_bench"
    assert run_problems(to_frame(rows)) == [
        "1 point(s) with rows timed in different modes (a CUDA-graph capture failed and its row fell back to "
        "do_bench): their speed-ups compare the two"]


GRID = """
name = "tiny"
[shape]
num_qo_heads = 2
num_kv_heads = 1
head_dim = 64
page_size = 16
[sweep]
batch = [1]
context = [16]
bits = [2]
group_size = 32
operand = ["bf16"]
kernels = ["quant", "base"]
[timing]
cpu_reps = 1
"""


def _exact(name: str, quantized: bool) -> Backend:
    def build(w, operand):
        last = {}

        def fn():
            last["out"] = w.reference.clone().to(torch.bfloat16)

        return Prepared(fn=fn, output=lambda: last["out"], bytes=1000)

    return Backend(name, build, quantized, None if quantized else "bf16", lambda dev: None, name)


def test_bench_with_a_zero_time_writes_summary_and_exits_3(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(bench.backends, "select_backends", lambda names: [_exact(n, n == "quant") for n in names])
    monkeypatch.setattr(bench.sweep, "time_fn", lambda fns, dev, **kw: Timing(0.0, 0.0, 0.0, 1, INTERPRETER_TIMING))
    (tmp_path / "g.toml").write_text(GRID)
    out = tmp_path / "run"
    code, stdout, err = run_main(capsys, "bench", "--smoke", "--config", tmp_path / "g.toml", "--out", out,
                                 "--format", "quiet")  # fmt: skip
    assert code == EXIT_RUN_PROBLEM
    summary = json.loads((out / "summary.json").read_text())
    assert any("invalid time" in p for p in summary["problems"])
    assert any("no FOSCAR row was timed" in p for p in summary["problems"])
    assert "problem: 2 row(s) with an invalid time" in err
    df = pd.read_csv(out / "results.csv")
    assert (df["status"] == INVALID).all()
