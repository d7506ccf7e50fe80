"""Resumable sweeps without a GPU: a rerun into the same --out skips finished points, a
crash (or Ctrl-C) loses nothing measured, another config is refused with both hashes;
and the ETA."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import bench.backends
import bench.run
import foscar_cli
from bench.backends import Backend, Prepared
from bench.config import apply_overrides, config_hash, load_config
from bench.errors import FoscarError
from bench.progress import Eta
from bench.results import COLUMNS
from bench.run import BenchOptions, OutputFormat, run_bench

GRID = """
name = "tiny"
[shape]
num_qo_heads = 4
num_kv_heads = 2
head_dim = 64
page_size = 16
[sweep]
batch = [1, 2]
context = [17, 40]
bits = [2]
group_size = 32
operand = ["bf16"]
kernels = ["quant", "base"]
[timing]
cpu_reps = 1
"""


class Builds:
    """Fake backends (exact outputs) that count builds per (kernel, batch, context) and can crash."""

    def __init__(self):
        self.count: dict[str, int] = {}
        self.points: list[tuple[int, int]] = []
        self.interrupt_at: tuple[int, int] | None = None  # (batch, context) whose build raises KeyboardInterrupt

    def backend(self, name: str, quantized: bool) -> Backend:
        def build(w, operand):
            p = (w.point.batch, w.point.context)
            if p == self.interrupt_at:
                raise KeyboardInterrupt
            self.count[name] = self.count.get(name, 0) + 1
            if quantized:
                self.points.append(p)
            last = {}

            def fn():
                last["out"] = w.reference.clone().to(torch.bfloat16)

            return Prepared(fn=fn, output=lambda: last["out"], bytes=1000)

        return Backend(name, build, quantized, not quantized, lambda dev: None, name)

    def select(self, names):
        return [self.backend(n, quantized=(n == "quant")) for n in names]


@pytest.fixture
def builds(monkeypatch) -> Builds:
    b = Builds()
    monkeypatch.setattr(bench.backends, "select_backends", b.select)
    return b


@pytest.fixture
def grid_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(GRID)
    return path


def opts(grid_file, out, **kw) -> BenchOptions:
    return BenchOptions(config=grid_file, out=out, smoke=True, output=OutputFormat.quiet, argv=["foscar", "bench"], **kw)


def test_resume_after_a_crash_skips_finished_points(builds, grid_file, tmp_path, capsys):
    out = tmp_path / "run"
    builds.interrupt_at = (2, 17)  # the third point of batch {1, 2} x context {17, 40}
    with pytest.raises(KeyboardInterrupt):
        run_bench(opts(grid_file, out), device=None)
    assert "rerun with --out" in capsys.readouterr().err
    first = pd.read_csv(out / "results.csv")
    assert sorted(set(zip(first["batch"], first["context"]))) == [(1, 17), (1, 40)]  # nothing measured was lost
    assert set(first["status"]) == {"ok"}
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config_hash"] == config_hash(load_config(grid_file))
    assert set(meta["gpu_state"]) == {"start", "end", "reason"}  # written at the end, also on Ctrl-C
    assert builds.count == {"quant": 2, "base": 2}

    builds.interrupt_at = None
    builds.count.clear()
    builds.points.clear()
    run_bench(opts(grid_file, out), device=None)
    assert builds.count == {"quant": 2, "base": 2}  # only the two missing points were built
    assert builds.points == [(2, 17), (2, 40)]
    df = pd.read_csv(out / "results.csv")
    assert list(df.columns) == COLUMNS
    assert list(zip(df["batch"], df["context"], df["kernel"])) == [
        (b, c, k) for b in (1, 2) for c in (17, 40) for k in ("quant", "base")
    ]  # grid order, old and new rows together
    assert set(df["status"]) == {"ok"} and df["speedup_vs_flashinfer_bf16"].notna().all()
    old = first.set_index(["batch", "context", "kernel"])
    new = df.set_index(["batch", "context", "kernel"]).loc[old.index]
    pd.testing.assert_series_equal(new["median_us"], old["median_us"])  # kept, not re-measured
    meta = json.loads((out / "meta.json").read_text())
    assert [r["points_done_before"] for r in meta["resumes"]] == [2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["num_points"]["quant/int2/bf16"] == 4

    builds.count.clear()
    run_bench(opts(grid_file, out), device=None)  # everything done: nothing is built
    assert builds.count == {}
    assert len(pd.read_csv(out / "results.csv")) == 8


def test_a_point_missing_a_row_runs_again(builds, grid_file, tmp_path):
    out = tmp_path / "run"
    run_bench(opts(grid_file, out), device=None)
    df = pd.read_csv(out / "results.csv")
    drop = (df["batch"] == 2) & (df["context"] == 40) & (df["kernel"] == "base")
    df[~drop].to_csv(out / "results.csv", index=False)
    builds.count.clear()
    builds.points.clear()
    run_bench(opts(grid_file, out), device=None)
    assert builds.points == [(2, 40)] and builds.count == {"quant": 1, "base": 1}
    assert len(pd.read_csv(out / "results.csv")) == 8


def test_another_config_is_refused_with_both_hashes(builds, grid_file, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    run_bench(opts(grid_file, out), device=None)
    old = json.loads((out / "meta.json").read_text())["config_hash"]
    with pytest.raises(FoscarError) as e:
        run_bench(opts(grid_file, out, batch=[1]), device=None)
    msg = str(e.value)
    new = config_hash(apply_overrides(load_config(grid_file), batch=[1]))
    assert old in msg and new in msg and old != new
    assert "differs in: batch" in msg and "new --out DIR" in msg

    # through the CLI: one line, exit code 2
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    capsys.readouterr()
    code = 0
    try:
        foscar_cli.main(["bench", "--smoke", "--config", str(grid_file), "--out", str(out), "--context", "17"])
    except SystemExit as ex:
        code = ex.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: ") and old in err and "differs in: context" in err


def test_results_without_a_config_hash_are_not_resumed(builds, grid_file, tmp_path):
    out = tmp_path / "run"
    run_bench(opts(grid_file, out), device=None)
    meta = json.loads((out / "meta.json").read_text())
    del meta["config_hash"]
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(FoscarError, match="without a config_hash"):
        run_bench(opts(grid_file, out), device=None)


def test_a_run_on_another_gpu_is_not_resumed(builds, grid_file, tmp_path):
    out = tmp_path / "run"
    run_bench(opts(grid_file, out), device=None)
    meta = json.loads((out / "meta.json").read_text())
    meta["gpu"] = {"name": "NVIDIA H100 80GB HBM3"}
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(FoscarError, match="started on NVIDIA H100 80GB HBM3, this is the CPU"):
        run_bench(opts(grid_file, out), device=None)


def test_dry_run_shows_resume_state(builds, grid_file, tmp_path, capsys):
    out = tmp_path / "run"
    builds.interrupt_at = (2, 40)
    with pytest.raises(KeyboardInterrupt):
        run_bench(opts(grid_file, out), device=None)
    capsys.readouterr()
    bench.run.dry_run(BenchOptions(config=grid_file, out=out, smoke=True, output=OutputFormat.json), device=None)
    plan = json.loads(capsys.readouterr().out)
    assert plan["resume"]["points_done"] == 3
    assert [p["done"] for p in plan["points"]] == [True, True, True, False]


# ---------------------------------------------------------------------------
# ETA


def test_eta_weights_points_by_their_estimate():
    now = [0.0]
    eta = Eta([1.0, 1.0, 8.0], clock=lambda: now[0])
    assert eta.remaining_s() == 10.0  # before any point: the model's estimate
    now[0] = 4.0  # the first point took 4 s, estimated 1 s: everything is 4x slower
    eta.point_done()
    assert eta.remaining_s() == pytest.approx(36.0)
    now[0] = 6.0
    eta.point_done()
    assert eta.remaining_s() == pytest.approx(24.0)  # 6 s measured for 2 s estimated: 3x
    eta.point_done()
    assert eta.text() == "done"
