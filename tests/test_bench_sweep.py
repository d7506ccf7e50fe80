"""The sweep loop on CPU with fake backends: checks before timing, failures recorded, the sweep goes on."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

import bench.sweep
from bench.backends import Backend, Prepared
from bench.config import BenchConfig
from bench.sweep import Sweep, run_sweep


def fake(name: str, make_out, *, quantized=True, baseline=False, calls=None, unavailable=None) -> Backend:
    """A backend whose output is ``make_out(reference)``; counts its calls in ``calls[name]``."""

    def build(w, operand):
        last = {}

        def fn():
            if calls is not None:
                calls[name] = calls.get(name, 0) + 1
            last["out"] = make_out(w.reference.clone()).to(torch.bfloat16)

        return Prepared(fn=fn, output=lambda: last["out"], bytes=1000)

    return Backend(
        name=name,
        build=build,
        quantized=quantized,
        baseline=baseline,
        unavailable=unavailable or (lambda dev: None),
        description=name,
    )


def boom(ref):
    raise RuntimeError("compile error\n  at line 3")


@pytest.fixture
def cfg() -> BenchConfig:
    return BenchConfig(
        name="t", num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=16, batch=[2], context=[17, 40],
        bits=[2], group_size=32, operand=["bf16"], kernels=["unused"], cpu_reps=2,
    )  # fmt: skip


def test_sweep_records_every_outcome(cfg, tmp_path):
    calls: dict[str, int] = {}
    backends = [
        fake("good", lambda r: r, calls=calls),
        fake("off", lambda r: r * 1.1, calls=calls),  # 10% off: fails the check
        fake("nan", lambda r: r * math.nan, calls=calls),
        fake("raises", boom, calls=calls),
        fake("absent", lambda r: r, quantized=False, baseline=True, unavailable=lambda dev: "not here"),
        fake("base", lambda r: r, quantized=False, baseline=True, calls=calls),
    ]
    path = tmp_path / "results.csv"
    df = run_sweep(Sweep(cfg, backends, torch.device("cpu"), None, path, console=None))
    assert len(df) == 2 * len(backends)
    by = {k: g for k, g in df.groupby("kernel")}
    assert (by["good"]["status"] == "ok").all() and (by["good"]["max_rel_err"] < 1e-2).all()
    assert (by["off"]["status"] == "failed").all()
    assert by["off"]["max_rel_err"].iloc[0] == pytest.approx(0.1, rel=0.05)
    assert by["off"]["median_us"].isna().all()  # a failed row is not timed
    assert (by["nan"]["status"] == "failed").all() and by["nan"]["error"].str.contains("NaN").all()
    assert (by["raises"]["status"] == "error").all()
    assert by["raises"]["error"].iloc[0] == "RuntimeError: compile error at line 3"
    assert (by["absent"]["status"] == "skipped").all() and (by["absent"]["error"] == "not here").all()
    assert calls["good"] == 2 * (1 + cfg.cpu_reps)  # one checked run + timed runs, per point
    assert calls["off"] == 2 and calls["nan"] == 2
    assert by["good"]["speedup_vs_flashinfer_bf16"].notna().all()
    assert (by["base"]["is_baseline"]).all() and by["base"]["bits"].isna().all()
    assert (df["cache_bits"] == 2).all()
    on_disk = pd.read_csv(path)
    assert len(on_disk) == len(df)


def test_a_point_that_cannot_be_built_does_not_stop_the_sweep(cfg, tmp_path, monkeypatch):
    real = bench.sweep.build_workload

    def flaky(point, *args, **kwargs):
        if point.context == 17:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")
        return real(point, *args, **kwargs)

    monkeypatch.setattr(bench.sweep, "build_workload", flaky)
    backends = [fake("good", lambda r: r)]
    df = run_sweep(Sweep(cfg, backends, torch.device("cpu"), None, tmp_path / "r.csv", console=None))
    first, second = df.iloc[0], df.iloc[1]
    assert first["status"] == "error" and "OutOfMemoryError" in first["error"]
    assert first["error"].startswith("building inputs: ")
    assert second["status"] == "ok"


def test_foscar_cuda_paged_rows_share_one_paged_copy(monkeypatch):
    """The paged backend times a shuffled paginate() of the point's cache, built once per
    point for both operand rows; what it decodes is the contiguous cache's tokens."""
    import foscar
    from bench import backends
    from bench.workload import Point, build_workload

    point = Point(batch=2, context=40, bits=2, group_size=64, num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=16)
    w = build_workload(point, torch.device("cpu"), seed=0, full_check_max_tokens=1 << 20)
    seen = []

    class Plan:
        def run(self, q, cache):
            return q

    monkeypatch.setattr(foscar, "plan_decode", lambda cache, num_qo_heads, **kw: seen.append((cache, kw["operand"])) or Plan())
    for op in ("bf16", "fp8"):
        backends.foscar_cuda_paged(w, op).fn()
    (a, op_a), (b, op_b) = seen
    assert a is b and (op_a, op_b) == ("bf16", "fp8")
    assert a.page_size == 16 and a.kv_indices.tolist() != sorted(a.kv_indices.tolist())
    assert torch.equal(a.lengths(), w.cache.seq_lens)
    assert torch.equal(a.to_contiguous().k_codes[:, :, :40], w.cache.k_codes[:, :, :40])


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU smoke path (interpreter)")
def test_a_sweep_where_every_row_is_skipped_says_so(capsys, tmp_path):
    from tests.cli_helpers import run_main

    code, out, err = run_main(capsys, "bench", "--smoke", "--operand", "fp8", "--kernel", "foscar-triton",
                              "--out", tmp_path / "run")
    assert code == 3, err  # EXIT_RUN_PROBLEM: no FOSCAR row was timed
    assert "problem: no FOSCAR row was timed (10 skipped)" in err
    assert "no row ran: every row was skipped" in out + err
    assert "exists in the folded CUDA kernel (foscar-cuda) only" in out + err


def test_sustain_s_runs_each_checked_row_untimed_before_its_timing(cfg, tmp_path):
    """``sustain_s`` (``--sustain-s``): every row that passed its check is called back to back for that long before it
    is timed (bench.timing.sustain); rows that failed their check are not; 0 (the default) adds no call."""
    import dataclasses

    calls: dict[str, int] = {}
    backends = [fake("good", lambda r: r, calls=calls), fake("off", lambda r: r * 1.1, calls=calls)]
    run_sweep(Sweep(dataclasses.replace(cfg, sustain_s=0.05), backends, torch.device("cpu"), None,
                    tmp_path / "r.csv", console=None))
    assert calls["good"] > 2 * (1 + cfg.cpu_reps)  # per point: the checked call, the sustained ones, the timed ones
    assert calls["off"] == 2  # failed the check: neither sustained nor timed


def test_sustained_calls_come_right_before_the_timed_ones():
    """``time_fn(..., sustain_s=S)``: whole rounds over the rotating copies for S seconds, then ``on_sustained``,
    then the timed calls; S = 0 adds no call and still calls ``on_sustained``."""
    from time import perf_counter

    from bench.timing import sustain, time_fn

    seen: list[str] = []
    fns = [lambda: seen.append("a"), lambda: seen.append("b")]
    assert sustain(fns, 0) == 0 and not seen
    t0 = perf_counter()
    time_fn(fns, "cpu", warmup_ms=1, rep_ms=1, cpu_reps=3, sustain_s=0.02, on_sustained=lambda: seen.append("|"))
    assert perf_counter() - t0 >= 0.02
    cut = seen.index("|")
    assert seen.count("|") == 1 and cut >= 2 and cut % 2 == 0  # whole rounds before it
    assert seen[cut + 1:] == ["a"] * 3  # then the timed calls (time_cpu times fns[0])
    seen.clear()
    time_fn(fns, "cpu", warmup_ms=1, rep_ms=1, cpu_reps=2, on_sustained=lambda: seen.append("|"))
    assert seen == ["|", "a", "a"]


def test_read_floor_is_set_once_per_bytes_and_copies(monkeypatch):
    """``_set_read_floor`` (``--read-floor``, GPU runs): a timed row gets ``read_floor_us`` from one measurement per
    (bytes, rotation copies) and ``floor_fraction`` = read_floor_us / median_us; untimed rows, a floor that does not
    fit (None) and one whose timing raises leave the row's floor empty. The floor is timed after the run's
    ``sustain_s`` (``--sustain-s``), as its rows are."""
    seen = []

    def floor(nbytes, copies, device, sustain_s):
        assert sustain_s == 1.5
        seen.append((nbytes, copies))
        if nbytes == 3000:
            raise RuntimeError("no graph")
        return None if nbytes == 2000 else 5.0

    monkeypatch.setattr(bench.sweep, "read_floor_us", floor)
    sweep = Sweep(BenchConfig(read_floor=True, sustain_s=1.5), [], torch.device("cpu"), None, None, console=None)
    g = "cuda_graph"
    rows = [dict(status="ok", timing_mode=g, bytes=1000, working_set_bytes=4000, median_us=10.0),
            dict(status="suspect", timing_mode=g, bytes=1000, working_set_bytes=4000, median_us=4.0),
            dict(status="ok", timing_mode=g, bytes=1000, working_set_bytes=2000, median_us=8.0),
            dict(status="ok", timing_mode=g, bytes=2000, working_set_bytes=2000, median_us=8.0),
            dict(status="ok", timing_mode=g, bytes=3000, working_set_bytes=3000, median_us=8.0),
            dict(status="failed", timing_mode=None, bytes=None, working_set_bytes=None, median_us=None)]
    for row in rows:
        bench.sweep._set_read_floor(row, sweep)
    assert seen == [(1000, 4), (1000, 2), (2000, 1), (3000, 1)]
    assert [r.get("floor_fraction") for r in rows] == [0.5, 1.25, 0.625, None, None, None]
    assert rows[0]["read_floor_us"] == 5.0 and "read_floor_us" not in rows[3]


@pytest.mark.parametrize("value, ok", [("true", True), ("false", True), ("1", False), ('"yes"', False)])
def test_read_floor_from_the_timing_table_and_the_flag(tmp_path, value, ok):
    """``[timing] read_floor`` (``--read-floor``): true or false, else a one-line error naming the key; off in the
    presets and left out of the config hash at that default (older runs still hash as recorded); the flag overrides the
    preset and adds the floor's timing to the estimate."""
    from bench.config import FoscarError, config_hash, load_config, preset_path
    from bench.plan import row_seconds
    from bench.run import BenchOptions, resolve_config

    text = preset_path("smoke").read_text()
    path = tmp_path / "t.toml"
    path.write_text(text.replace("[timing]", f"[timing]\nread_floor = {value}", 1))
    if ok:
        assert load_config(path).read_floor is (value == "true")
    else:
        with pytest.raises(FoscarError, match=r"read_floor: expected true or false, got"):
            load_config(path)
    base = load_config(preset_path("smoke"))
    assert base.read_floor is False and "read_floor" not in base.to_dict()
    on, _ = resolve_config(BenchOptions(arch="h200", read_floor=True), "h200")
    off, _ = resolve_config(BenchOptions(arch="h200"), "h200")
    assert on.read_floor and not off.read_floor and config_hash(on) != config_hash(off)
    assert row_seconds(10**9, False, 3, read_floor=True) > row_seconds(10**9, False, 3)
    # with --sustain-s, each of the floor's two read shapes is sustained too
    assert row_seconds(10**9, False, 3, 2.0, True) == pytest.approx(row_seconds(10**9, False, 3, 0.0, True) + 3 * 2.0)


def test_read_floor_skips_rows_not_timed_by_graph_replay_and_says_why_a_floor_is_missing(monkeypatch):
    """A row timed by the do_bench fallback (one copy, eager, L2 flushed) gets no floor (the floor is graph-timed over
    the rotation); a floor that does not fit or raises is named on the console once per (bytes, copies)."""
    import io

    from rich.console import Console

    calls = []

    def floor(nbytes, copies, device, sustain_s):
        calls.append(nbytes)
        if nbytes == 3000:
            raise RuntimeError("capture failed")
        return None

    monkeypatch.setattr(bench.sweep, "read_floor_us", floor)
    out = io.StringIO()
    sweep = Sweep(BenchConfig(read_floor=True), [], torch.device("cpu"), None, None, console=Console(file=out, width=200))
    eager = dict(status="ok", timing_mode="do_bench", bytes=1000, working_set_bytes=4000, median_us=10.0)
    bench.sweep._set_read_floor(eager, sweep)
    assert not calls and "floor_fraction" not in eager
    for nbytes in (2000, 2000, 3000, 3000):
        row = dict(status="ok", timing_mode="cuda_graph", bytes=nbytes, working_set_bytes=nbytes, median_us=1.0)
        bench.sweep._set_read_floor(row, sweep)
        assert "floor_fraction" not in row
    assert calls == [2000, 3000]
    text = out.getvalue()
    assert text.count("read floor of 2000 B x 1 copies not measured: its buffers would leave less than 1 GiB") == 1
    assert text.count("read floor of 3000 B x 1 copies not measured: RuntimeError: capture failed") == 1


def test_point_table_shows_the_floor_column_only_with_floors():
    from bench.results import new_row, to_frame
    from bench.tables import point_table
    from bench.workload import Point

    p = Point(batch=1, context=64, bits=2, group_size=32, num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=16)
    row = new_row(p, "foscar-cuda", 2, "bf16", False, kv_dtype="int2")
    row.update(status="ok", median_us=10.0, timing_mode="cuda_graph", bytes=1000)

    from tests.cli_helpers import render_table

    assert "floor" not in render_table(point_table(to_frame([row]), "p", None))
    row.update(read_floor_us=5.0, floor_fraction=0.5)
    text = render_table(point_table(to_frame([row]), "p", None))
    assert "floor" in text and "50%" in text


def test_rotation_copies_read_four_l2s_a_round_within_bounds():
    """The bench's rotation (and the read floor's, ``scripts/read_floor.py``'s): copies until a round reads 4x the
    L2, at least one, at most MAX_COPIES (1024)."""
    from bench.sweep import MAX_COPIES, rotation_copies

    l2 = 60 << 20
    assert MAX_COPIES == 1024
    assert rotation_copies(167903232, l2) == 2  # INT2 8 x 32K: 160 MiB, two copies (the bench's working set)
    assert rotation_copies(5 << 20, l2) == 48
    assert rotation_copies(659456, l2) == 382  # INT2 1 x 8K at one KV head: under the old cap of 64, all in L2
    assert rotation_copies(1000, l2) == 1024 and rotation_copies(0, l2) == 1024
    assert rotation_copies(1 << 30, l2) == 1


@pytest.mark.parametrize("l2_mib", [50, 60])  # the H100's and the H200's L2
def test_every_preset_points_smallest_call_rotates_over_four_l2s(l2_mib):
    """Every point of the h100 / h200 presets, alone and with each model's shape (configs/models/), at its smallest
    call (INT2's quantized cache, the fewest bytes a row reads): one round of its copies reads at least 4x the L2,
    so no timed call finds its inputs in the L2. Under the cap of 64 copies before session 78, INT2 1 x 8K at the
    Llama-3.1-70B TP8 shape (0.66 MB a call) rotated over 42 MB, less than an H100's L2."""
    from bench.config import apply_model, load_config, load_model, model_names, preset_path
    from bench.sweep import ROTATE_L2_MULTIPLE, grid, rotation_copies
    from bench.workload import bytes_per_token

    l2 = l2_mib << 20
    checked = 0
    for arch in ("h100", "h200"):
        base = load_config(preset_path(arch))
        for cfg in [base] + [apply_model(base, load_model(m)) for m in model_names()]:
            for p in grid(cfg):
                nbytes = (sum(p.lengths) * p.num_kv_heads * bytes_per_token(2, p.group_size, p.head_dim)
                          + 2 * 2 * p.batch * p.num_qo_heads * p.head_dim)  # + q read and the output written
                assert rotation_copies(nbytes, l2) * nbytes >= ROTATE_L2_MULTIPLE * l2, (arch, cfg.model, p.label())
                checked += 1
    assert checked > 100
