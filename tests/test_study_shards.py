"""`foscar ablate` and `foscar accuracy` on the engine without a GPU: --shard K/N, foscar merge
(equal to the whole run; refusing shards of another kind), resume per shard, --devices on
fake devices (worker processes on the CPU, Triton interpreter), and every row's gpu_uuid."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import bench.ablate
import bench.accuracy
import bench.engine
from bench.ablate import AblateOptions, run_ablation
from bench.accuracy import AccuracyOptions, read_accuracy, run_accuracy
from bench.engine import OutputFormat
from bench.errors import FoscarError
from bench.merge import merge_runs
from bench.shard import Shard
from tests.cli_helpers import run_main

ABLATE_KEYS = ["axis", "setting", "batch", "context", "bits", "status", "speedup_vs_reference"]
ACCURACY_KEYS = ["data", "bits", "group_size", "rotation", "layout", "kernel", "status", "rel_l2_vs_deq_max"]


@pytest.fixture
def fake_ablation(monkeypatch) -> list:
    """Every setting "measured" at once (no kernel runs): the reference at 10 us + batch, the
    others faster; returns the list of points measured."""
    measured = []

    def measure(cfg, point, device, rows):
        measured.append(point)
        for i, row in enumerate(rows):
            t = 10.0 + point[0] - (0 if row["is_reference"] else 1 + i)
            row.update(status="ok", median_us=t, p20_us=t, p80_us=t, timing_mode="interpreter", max_rel_err=0.0)
        return rows

    monkeypatch.setattr(bench.ablate, "measure_point", measure)
    return measured


def ablate_opts(out, shard=None) -> AblateOptions:
    return AblateOptions(out=out, smoke=True, bits=[2], batch=[1, 2, 4], context=[64], axes=["cache"],
                         output=OutputFormat.quiet, argv=["ablate"], shard=shard)  # fmt: skip


def test_ablate_shards_merge_into_the_whole_run_and_resume_on_their_own(fake_ablation, tmp_path):
    whole = run_ablation(ablate_opts(tmp_path / "whole")).path
    assert fake_ablation == [(1, 64, 2), (2, 64, 2), (4, 64, 2)]
    fake_ablation.clear()
    shards = [run_ablation(ablate_opts(tmp_path / f"s{k}", Shard(k, 2))).path for k in (0, 1)]
    assert fake_ablation == [(1, 64, 2), (4, 64, 2), (2, 64, 2)]  # shard 0: points 0 and 2; shard 1: point 1
    meta = json.loads((shards[1] / "meta.json").read_text())
    assert meta["kind"] == "ablate" and meta["shard"] == {"k": 1, "n": 2, "grid_points": 3, "points": [1]}

    fake_ablation.clear()
    run_ablation(ablate_opts(tmp_path / "s0", Shard(0, 2)))  # the same command again: nothing left to run
    assert fake_ablation == []
    with pytest.raises(FoscarError, match="holds shard 0/2, this command runs the whole grid"):
        run_ablation(ablate_opts(tmp_path / "s0"))

    outcome = merge_runs(shards[::-1], tmp_path / "merged", argv=["foscar", "merge"])
    assert outcome.problems == []
    merged, ref = (pd.read_csv(d / "results.csv") for d in (tmp_path / "merged", whole))
    pd.testing.assert_frame_equal(merged[ABLATE_KEYS], ref[ABLATE_KEYS])
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert summary["ablation"] == json.loads((whole / "summary.json").read_text())["ablation"]
    assert (tmp_path / "merged" / "ablate.md").is_file()  # the study's report, written by the merge too


def test_ablate_shards_from_a_gpu_merge_and_report(fake_ablation, tmp_path, capsys):
    """`foscar ablate` records its GPU as text ("NAME (sm_XX)"): merge, resume records and report take it."""
    from bench.resume import session_record

    shards = [run_ablation(ablate_opts(tmp_path / f"s{k}", Shard(k, 2))).path for k in (0, 1)]
    for d in shards:
        meta = json.loads((d / "meta.json").read_text())
        meta["gpu"] = "NVIDIA H200 (sm_90)"
        (d / "meta.json").write_text(json.dumps(meta))
    assert session_record(meta, 0)["gpu"]["name"] == "NVIDIA H200 (sm_90)"
    merge_runs(shards, tmp_path / "merged")
    meta = json.loads((tmp_path / "merged" / "meta.json").read_text())
    assert meta["gpu"] == "NVIDIA H200 (sm_90)" and [s["gpu"] for s in meta["shards"]] == [meta["gpu"]] * 2
    code, out, err = run_main(capsys, "report", tmp_path / "merged", "--out", tmp_path / "rep")
    assert code == 0 and "(ablate run)" in out, err


@pytest.fixture
def fake_gpus(monkeypatch) -> list:
    """Each session "runs on" the next of GPU-fake-0, GPU-fake-1, ... (bench.engine.gpu_site, which
    ablate and accuracy ask for their session's GPU); returns the UUIDs handed out."""
    given = []

    def site(info, index=0, hbm_tbps=None):
        given.append(f"GPU-fake-{len(given)}")
        return bench.engine.Site(given[-1], hbm_tbps)

    monkeypatch.setattr(bench.engine, "gpu_site", site)
    return given


def test_ablate_rows_record_their_gpu_and_merge_keeps_each_shards(fake_ablation, fake_gpus, tmp_path):
    shards = [run_ablation(ablate_opts(tmp_path / f"s{k}", Shard(k, 2))).path for k in (0, 1)]
    assert [list(pd.read_csv(d / "results.csv")["gpu_uuid"].unique()) for d in shards] == [[g] for g in fake_gpus]
    merge_runs(shards, tmp_path / "merged")
    df = pd.read_csv(tmp_path / "merged" / "results.csv")
    per_point = df.groupby("batch")["gpu_uuid"].unique().map(list).to_dict()
    assert per_point == {1: ["GPU-fake-0"], 2: ["GPU-fake-1"], 4: ["GPU-fake-0"]}  # shard 0: points 0 and 2


def test_accuracy_rows_record_their_gpu_and_merge_keeps_each_shards(fake_gpus, tmp_path):
    shards = [run_accuracy(accuracy_opts(tmp_path / f"s{k}", Shard(k, 2), plots=False)).path for k in (0, 1)]
    assert [json.loads((d / "meta.json").read_text())["gpu"] for d in shards] == [None, None]  # CPU: no GPU entry
    merge_runs(shards, tmp_path / "merged")
    df = read_accuracy(tmp_path / "merged" / "results.csv")
    assert list(df["gpu_uuid"]) == ["GPU-fake-0"] * 2 + ["GPU-fake-1"] * 2  # int2 on shard 0, int4 on shard 1
    assert "gpu_uuid" in json.loads((tmp_path / "merged" / "meta.json").read_text())["columns"]


def accuracy_opts(out, shard=None, **kw) -> AccuracyOptions:
    return AccuracyOptions(out=out, smoke=True, data=["gaussian"], bits=[2, 4], rotations=["none"], no_mixed=True,
                           kernels=["fp64-dequant", "foscar-triton"], output=OutputFormat.quiet, argv=["foscar"],
                           shard=shard, **kw)  # fmt: skip


@pytest.fixture(scope="module")
def accuracy_shards(tmp_path_factory) -> tuple:
    """The whole tiny accuracy grid (2 configurations x 2 variants) and its two shards, run once."""
    root = tmp_path_factory.mktemp("acc")
    whole = run_accuracy(accuracy_opts(root / "whole", plots=False)).path
    shards = [run_accuracy(accuracy_opts(root / f"s{k}", Shard(k, 2), plots=False)).path for k in (0, 1)]
    return whole, shards


def test_accuracy_shards_merge_into_the_whole_run(accuracy_shards, tmp_path, capsys):
    whole, shards = accuracy_shards
    assert list(read_accuracy(shards[1] / "results.csv")["bits"]) == [4, 4]
    merge_runs(shards, tmp_path / "merged")
    merged, ref = (read_accuracy(d / "results.csv") for d in (tmp_path / "merged", whole))
    pd.testing.assert_frame_equal(merged[ACCURACY_KEYS], ref[ACCURACY_KEYS])
    summary, ref_summary = (json.loads((d / "summary.json").read_text()) for d in (tmp_path / "merged", whole))
    assert summary == ref_summary  # the same headline numbers, recomputed from the merged rows
    assert (tmp_path / "merged" / "accuracy.md").is_file()
    code, out, err = run_main(capsys, "report", tmp_path / "merged", "--out", tmp_path / "rep")
    assert code == 0 and "(accuracy run)" in out, err


def test_accuracy_resumes_a_lost_configuration(accuracy_shards, tmp_path, monkeypatch):
    whole, _ = accuracy_shards
    out = Path(shutil.copytree(whole, tmp_path / "run"))
    df = read_accuracy(out / "results.csv")
    df[df["bits"] == 2].to_csv(out / "results.csv", index=False)  # the int4 configuration lost
    measured = []
    real = bench.accuracy.measure_config
    monkeypatch.setattr(bench.accuracy, "measure_config", lambda *a: measured.append(a[1]) or real(*a))
    run_accuracy(accuracy_opts(out, plots=False))
    assert measured == [4]
    pd.testing.assert_frame_equal(read_accuracy(out / "results.csv")[ACCURACY_KEYS],
                                  read_accuracy(whole / "results.csv")[ACCURACY_KEYS])  # fmt: skip


def test_merge_refuses_shards_of_another_study(fake_ablation, accuracy_shards, tmp_path):
    abl = run_ablation(ablate_opts(tmp_path / "a1", Shard(1, 2))).path
    with pytest.raises(FoscarError, match="cannot merge: study kind differs: 'accuracy' in .*, 'ablate' in"):
        merge_runs([accuracy_shards[1][0], abl], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_bad_shard_and_devices_flags_are_refused_for_every_study(capsys):
    for command in ("ablate", "accuracy"):
        code, _, err = run_main(capsys, command, "--smoke", "--shard", "2/2")
        assert code == 2 and "--shard 2/2: expected K/N" in err
        code, _, err = run_main(capsys, command, "--smoke", "--devices", "0", "--shard", "0/2")
        assert code == 2 and "--devices and --shard together" in err


@pytest.mark.parametrize(
    "command, args, rows",
    [
        ("ablate", ["--bits", "2", "--batch", "1", "--batch", "2", "--context", "64", "--axis", "cache"], 6),
        ("accuracy", ["--data", "gaussian", "--bits", "2", "--bits", "4", "--rotation", "none", "--no-mixed",
                      "--kernel", "fp64-dequant", "--kernel", "foscar-triton", "--no-plots"], 4),
    ],
)  # fmt: skip
def test_devices_on_fake_devices(command, args, rows, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FOSCAR_FAKE_DEVICES", "2")
    out = tmp_path / "run"
    code, stdout, err = run_main(capsys, command, "--smoke", *args, "--devices", "all", "--out", out, "--format", "quiet")
    assert code == 0, err
    assert stdout.strip() == str(out)
    df = pd.read_csv(out / "results.csv")
    assert len(df) == rows and df["status"].isin(["ok", "skipped"]).all()
    assert "gpu_uuid" in df.columns and df["gpu_uuid"].isna().all()  # fake devices run on the CPU: no GPU to name
    meta = json.loads((out / "meta.json").read_text())
    assert meta["kind"] == command and meta["shard"] is None and meta["missing_shards"] == []
    assert [(w["shard"], w["exit_code"]) for w in meta["devices"]["workers"]] == [("0/2", 0), ("1/2", 0)]
    assert meta["devices"]["warm"] is None  # no warm-up on fake devices
    for k in (0, 1):
        shard = out / "shards" / f"shard-{k}-of-2"
        assert json.loads((shard / "meta.json").read_text())["shard"]["k"] == k

