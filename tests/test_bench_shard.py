"""Sharding without a GPU: --shard K/N picks every N-th grid point, foscar merge puts the
shards back together (and refuses shards that do not belong together), a shard resumes
on its own, and --devices runs its workers on fake devices (CPU, Triton interpreter)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import bench.backends
from bench.config import load_config, preset_path
from bench.errors import FoscarError
from bench.merge import merge_runs
from bench.results import POINT_KEYS, read_results
from bench.run import BenchOptions, run_bench
from bench.shard import Shard, parse_shard
from bench.sweep import grid
from tests.cli_helpers import run_main
from tests.test_bench_resume import GRID, Builds, builds, grid_file  # noqa: F401 (fixtures)
from tests.test_bench_resume import opts as resume_opts

KEY_COLUMNS = ["kernel", "bits", "operand", "kv_dtype", "is_baseline", *POINT_KEYS, "status"]


def opts(grid_file, out, shard=None, **kw) -> BenchOptions:
    return resume_opts(grid_file, out, shard=shard, **kw)


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory) -> list:
    """Shards 0/2 and 1/2 of the tiny grid (fake backends), run once for the module."""
    root = tmp_path_factory.mktemp("shards")
    grid_file = root / "tiny.toml"
    grid_file.write_text(GRID)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench.backends, "select_backends", Builds().select)
        for k in range(2):
            run_bench(opts(grid_file, root / f"s{k}", Shard(k, 2)), device=None)
    return [root / "s0", root / "s1"]


@pytest.fixture
def shards(two_shards, tmp_path) -> list:
    """Copies of :func:`two_shards` that a test may edit."""
    return [Path(shutil.copytree(d, tmp_path / d.name)) for d in two_shards]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_shards_cover_every_point_exactly_once(n):
    points = grid(load_config(preset_path("smoke")))  # the [sweep] grid, then the [[ragged]] point
    picked = [i for k in range(n) for i in Shard(k, n).indices(len(points))]
    assert sorted(picked) == list(range(len(points)))
    assert Shard(0, n).indices(len(points))[:2] == list(range(0, len(points), n))[:2]  # interleaved, in grid order


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "-1/2", "0/0"])
def test_a_bad_shard_is_refused_before_torch(text, capsys):
    with pytest.raises(FoscarError, match="expected K/N"):
        parse_shard(text)
    code, _, err = run_main(capsys, "bench", "--smoke", "--shard", text)
    assert code == 2 and "--shard" in err and "0 <= K < N" in err


def test_merge_of_two_shards_equals_the_unsharded_run(builds, grid_file, shards, tmp_path):
    whole = tmp_path / "whole"
    run_bench(opts(grid_file, whole), device=None)
    s0, s1 = shards
    meta0 = json.loads((s0 / "meta.json").read_text())
    assert meta0["shard"] == {"k": 0, "n": 2, "grid_points": 4, "points": [0, 2]}
    assert meta0["config_hash"] == json.loads((whole / "meta.json").read_text())["config_hash"]
    assert len(read_results(s0 / "results.csv")) == 4  # 2 points x 2 kernels

    outcome = merge_runs([s1, s0], tmp_path / "merged", argv=["foscar", "merge"])
    assert outcome.problems == [] and outcome.missing_shards == []
    merged, ref = read_results(tmp_path / "merged" / "results.csv"), read_results(whole / "results.csv")
    pd.testing.assert_frame_equal(merged[KEY_COLUMNS], ref[KEY_COLUMNS])  # same rows, grid order
    assert merged["speedup_vs_flashinfer_bf16"].notna().all()
    meta = json.loads((tmp_path / "merged" / "meta.json").read_text())
    assert meta["shard"] is None and meta["grid_points"] == 4
    assert [(s["k"], s["points"], s["run_dir"]) for s in meta["shards"]] == [(0, [0, 2], str(s0)), (1, [1, 3], str(s1))]
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    ref_summary = json.loads((whole / "summary.json").read_text())
    assert summary["num_points"] == ref_summary["num_points"] == {"quant/int2/bf16": 4}
    assert summary["status_counts"] == ref_summary["status_counts"]


def test_rows_keep_their_own_gpu_and_ceiling(shards, tmp_path):
    s0, s1 = shards
    for d, uuid, ceiling in ((s0, "GPU-aaaa", 4.0), (s1, "GPU-bbbb", 5.0)):  # as if each ran on its own GPU
        df = pd.read_csv(d / "results.csv")
        df["gpu_uuid"], df["hbm_ceiling_tbps"] = uuid, ceiling
        df.to_csv(d / "results.csv", index=False)
    merge_runs([s0, s1], tmp_path / "m")
    df = read_results(tmp_path / "m" / "results.csv")
    assert list(df["gpu_uuid"]) == ["GPU-aaaa"] * 2 + ["GPU-bbbb"] * 2 + ["GPU-aaaa"] * 2 + ["GPU-bbbb"] * 2
    assert list(df["hbm_ceiling_tbps"]) == [4.0] * 2 + [5.0] * 2 + [4.0] * 2 + [5.0] * 2


def _edit_meta(run_dir, edit) -> None:
    meta = json.loads((run_dir / "meta.json").read_text())
    edit(meta)
    (run_dir / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "edit, field, values",
    [
        (lambda m: m.update(config_hash="f00d"), "config fingerprint", "'f00d'"),
        (lambda m: m["git"].update(commit="deadbeef"), "git commit", "'deadbeef'"),
        (lambda m: m["shard"].update(n=3), "shard count", "2 in"),
    ],
)
def test_merge_refuses_shards_that_differ(shards, tmp_path, edit, field, values):
    s0, s1 = shards
    _edit_meta(s1, edit)
    with pytest.raises(FoscarError) as e:
        merge_runs([s0, s1], tmp_path / "m")
    msg = str(e.value)
    assert f"{field}" in msg and "differs" in msg and values in msg and str(s0) in msg and str(s1) in msg
    assert not (tmp_path / "m").exists()  # nothing written


def test_merge_refuses_a_point_that_lacks_some_of_its_rows(builds, shards, tmp_path, capsys):
    """A row deleted to be rerun (README: delete the error rows, then resume) and the rerun forgotten: the point
    still has rows, and merge used to take it, one row short. It is refused, or merged with --allow-partial and
    counted in meta.json's incomplete_points."""
    s0, s1 = shards
    df = pd.read_csv(s1 / "results.csv")
    gone = df.index[df.kernel == "quant"][0]
    df.drop(index=gone).to_csv(s1 / "results.csv", index=False)
    with pytest.raises(FoscarError, match=r"cannot merge: missing rows of 1 point\(s\) of shard 1/2 .*: missing quant"):
        merge_runs([s0, s1], tmp_path / "m")
    outcome = merge_runs([s0, s1], tmp_path / "m", allow_partial=True)
    assert any("merged without rows of 1 point(s) of shard 1/2" in p for p in outcome.problems)
    assert json.loads((tmp_path / "m" / "meta.json").read_text())["incomplete_points"] == 1
    assert len(read_results(tmp_path / "m" / "results.csv")) == len(df) - 1 + len(pd.read_csv(s0 / "results.csv"))


def test_merge_refuses_a_shard_whose_recorded_config_was_edited(shards, tmp_path):
    s0, s1 = shards
    _edit_meta(s0, lambda m: m["config"].update(seed=m["config"]["seed"] + 1))  # the shard whose config is rebuilt
    with pytest.raises(FoscarError, match="does not hash to the recorded config_hash; the manifest was edited"):
        merge_runs([s0, s1], tmp_path / "m")


def test_committed_shards_from_before_later_config_fields_merge_into_their_committed_run(tmp_path):
    """Session 11's two H200 shards recorded a config without the fields added since (page_order, ...): rebuilt with
    their defaults, that config hashed differently, and merge called the manifest edited. The recorded dict is what
    is hashed, and the merge gives the committed merged run's rows."""
    run = Path(__file__).resolve().parent.parent / "results/2026-12-01-h200-s11/bench-f2796c6-2gpu"
    recorded = json.loads((run / "shards/shard-0-of-2/meta.json").read_text())["config"]
    assert "page_order" not in recorded  # (why this run is the case)
    merge_runs([run / "shards/shard-0-of-2", run / "shards/shard-1-of-2"], tmp_path / "m")
    got, want = (read_results(d / "results.csv") for d in (tmp_path / "m", run))
    key = ["kernel", "bits", "operand", "workload", "batch", "context", "page_size"]
    got, want = (d.sort_values(key + ["median_us"]).reset_index(drop=True) for d in (got, want))
    assert len(got) == len(want) == 238
    assert got[key].equals(want[key]) and (got.median_us - want.median_us).abs().max() < 1e-9


def test_merge_refuses_duplicates_and_missing_shards(builds, grid_file, shards, tmp_path, capsys):
    s0, s1 = shards
    with pytest.raises(FoscarError, match="shard 0/2 given twice"):
        merge_runs([s0, s0, s1], tmp_path / "m")
    code, _, err = run_main(capsys, "merge", s0, "--out", tmp_path / "m")
    assert code == 2 and "missing shard 1/2" in err and "--allow-partial" in err
    code, out, err = run_main(capsys, "merge", s0, "--out", tmp_path / "m", "--allow-partial")
    assert code == 3 and "merged without shard 1/2" in err  # written, and says what is missing
    assert json.loads((tmp_path / "m" / "meta.json").read_text())["missing_shards"] == [1]
    assert len(read_results(tmp_path / "m" / "results.csv")) == 4
    run_bench(opts(grid_file, tmp_path / "whole"), device=None)
    with pytest.raises(FoscarError, match="not a shard run.*eval-model\\|model-speed --shard K/N"):
        merge_runs([s0, tmp_path / "whole"], tmp_path / "m2")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FoscarError, match="has no meta.json.*bench\\|ablate\\|accuracy\\|eval-model"):
        merge_runs([s0, tmp_path / "empty"], tmp_path / "m3")
    with pytest.raises(FoscarError, match=r"not a run directory: .*results.csv is a file; pass the directory"):
        merge_runs([s0 / "results.csv", s1], tmp_path / "m4")  # (it said "run directory not found")


def test_a_shard_resumes_on_its_own(builds, grid_file, tmp_path):
    out = tmp_path / "s1"
    builds.interrupt_at = (2, 40)  # shard 1/2 holds points 1 (1 x 40) and 3 (2 x 40)
    with pytest.raises(KeyboardInterrupt):
        run_bench(opts(grid_file, out, Shard(1, 2)), device=None)
    assert builds.points == [(1, 40)]
    builds.interrupt_at, builds.points = None, []
    run_bench(opts(grid_file, out, Shard(1, 2)), device=None)
    assert builds.points == [(2, 40)]  # only the missing point
    assert list(zip(*[pd.read_csv(out / "results.csv")[c] for c in ("batch", "context")])) == [(1, 40)] * 2 + [(2, 40)] * 2
    for other, says in ((Shard(0, 2), "holds shard 1/2, this command runs shard 0/2"),
                        (None, "holds shard 1/2, this command runs the whole grid")):  # fmt: skip
        with pytest.raises(FoscarError, match=says):
            run_bench(opts(grid_file, out, other), device=None)


# ---------------------------------------------------------------------------
# --devices: workers are real processes, on fake devices (CPU, Triton interpreter)

TINY = ["--smoke", "--kernel", "foscar-triton", "--kernel", "flashinfer-fa2", "--batch", "1", "--batch", "2",
        "--context", "17", "--bits", "2", "--format", "quiet"]  # fmt: skip


def test_devices_on_fake_devices_end_to_end_with_a_failing_worker_and_a_resume(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FOSCAR_FAKE_DEVICES", "2")
    out = tmp_path / "run"
    blocker = out / "shards" / "shard-1-of-2"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("in the way")  # worker 1 cannot create its run directory
    code, _, err = run_main(capsys, "bench", *TINY, "--devices", "all", "--out", out)
    log = out / "shards" / "shard-1-of-2.log"
    assert code == 3 and f"shard 1/2 on GPU fake (CPU) failed (exit code 2); its log: {log}" in err
    assert "cannot create the run directory" in log.read_text()
    assert list(read_results(out / "results.csv")["batch"]) == [1, 1]  # shard 0's point is kept
    assert any("shard 1/2" in p and "failed" in p for p in json.loads((out / "summary.json").read_text())["problems"])

    blocker.unlink()  # the same command again: shard 0 resumes (nothing left to run), shard 1 runs
    code, stdout, err = run_main(capsys, "bench", *TINY, "--devices", "0,1", "--out", out)
    assert code == 0, err
    assert stdout.strip() == str(out)
    df = read_results(out / "results.csv")
    assert list(zip(df["batch"], df["kernel"])) == [(1, "foscar-triton"), (1, "flashinfer-fa2"),
                                                    (2, "foscar-triton"), (2, "flashinfer-fa2")]  # fmt: skip
    assert list(df["status"]) == ["ok", "skipped"] * 2 and df["gpu_uuid"].isna().all()  # CPU: no GPU to name
    meta = json.loads((out / "meta.json").read_text())
    assert [(w["shard"], w["exit_code"]) for w in meta["devices"]["workers"]] == [("0/2", 0), ("1/2", 0)]
    assert [s["run_dir"] for s in meta["shards"]] == [str(out / "shards" / f"shard-{k}-of-2") for k in (0, 1)]
    assert meta["missing_shards"] == [] and json.loads((out / "summary.json").read_text())["problems"] == []
    assert "resuming: 1 of 1 points" in (out / "shards" / "shard-0-of-2.log").read_text()


def test_devices_without_a_gpu_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.delenv("FOSCAR_FAKE_DEVICES", raising=False)
    monkeypatch.setattr("torch.cuda.device_count", lambda: 0)
    code, _, err = run_main(capsys, "bench", "--smoke", "--devices", "all")
    assert code == 2 and "no CUDA GPU is visible" in err
    code, _, err = run_main(capsys, "bench", "--smoke", "--devices", "0", "--shard", "0/2")
    assert code == 2 and "--devices and --shard together" in err


def test_device_indices_follow_cuda_visible_devices(monkeypatch):
    from bench.devices import local_devices, parse_devices

    monkeypatch.delenv("FOSCAR_FAKE_DEVICES", raising=False)
    monkeypatch.setattr("torch.cuda.device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert local_devices(parse_devices("all")) == ["2", "3"]
    assert local_devices(parse_devices("1")) == ["3"]
    with pytest.raises(FoscarError, match="GPU 2 does not exist; this process sees 2"):
        local_devices(parse_devices("0,2"))
    for bad in ("", "0,x", "1;2"):
        with pytest.raises(FoscarError, match="expected all or comma-separated GPU indices"):
            parse_devices(bad)


def test_warm_up_calls_what_can_run_and_says_why_the_rest_cannot():
    import torch

    from bench.backends import select_backends
    from bench.warm import warm

    cfg = load_config(preset_path("smoke"))
    cfg.bits, cfg.kernels = [2], ["foscar-triton", "flashinfer-fa2"]
    records = warm(cfg, select_backends(cfg.kernels), torch.device("cpu"))
    assert [(r["kernel"], r["status"].split(":")[0]) for r in records] == [("foscar-triton", "ok"), ("flashinfer-fa2", "skipped")]


@pytest.mark.gpu
def test_devices_on_real_gpus_record_each_rows_gpu_and_ceiling(tmp_path, capsys):
    """On the GPU machine: every local GPU runs a shard; each row names its GPU, and its
    sol_fraction is against the ceiling measured on that GPU."""
    import torch

    out = tmp_path / "run"
    code, _, err = run_main(capsys, "bench", "--smoke", "--kernel", "foscar-triton", "--devices", "all", "--out", out,
                            "--format", "quiet")  # fmt: skip
    assert code == 0, err
    df = read_results(out / "results.csv")
    ok = df[df["status"] == "ok"]
    assert len(ok) and df["gpu_uuid"].str.startswith("GPU-").all() and (df["hbm_ceiling_tbps"] > 0).all()
    assert (ok["sol_fraction"] - ok["tbps"] / ok["hbm_ceiling_tbps"]).abs().max() < 1e-9
    meta = json.loads((out / "meta.json").read_text())
    assert len(meta["shards"]) == min(torch.cuda.device_count(), meta["grid_points"])
    assert {s["gpu"]["uuid"] for s in meta["shards"]} == set(df["gpu_uuid"])


def test_worker_options_round_trip_when_typer_hands_enums_over_as_strings():
    """Some typer versions pass an Enum option's plain value; the --devices worker's JSON must still work,
    for every command that takes --devices."""
    from bench.ablate import AblateOptions
    from bench.accuracy import AccuracyOptions
    from bench.arch import Arch
    from bench.devices import options_from_json, options_to_json
    from bench.run import BenchOptions, OutputFormat

    opts = BenchOptions(arch="h200", output="quiet", bits=[2], shard=Shard(1, 2))
    assert opts.arch is Arch.h200 and opts.output is OutputFormat.quiet
    assert options_from_json(BenchOptions, options_to_json(opts)) == opts
    for other in (AblateOptions(output="json", out=Path("x"), axes=["cache"]),
                  AccuracyOptions(output="quiet", kv_file=Path("kv.safetensors"), rotations=["none"])):  # fmt: skip
        assert other.output in (OutputFormat.json, OutputFormat.quiet)
        assert options_from_json(type(other), options_to_json(other)) == other
