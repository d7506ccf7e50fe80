"""`foscar eval-model` and `foscar model-speed` as studies of the engine, on the CPU with tiny
models (random weights, Triton interpreter): run directory, --format json, resume, --shard and
`foscar merge`, --devices' view of them, `foscar report` / `compare` on their runs."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

import bench.eval_model  # noqa: E402
import bench.model_speed  # noqa: E402
import bench.model_speed_study  # noqa: E402
from bench.eval_model import EvalModelStudy  # noqa: E402
from bench.merge import merge_runs  # noqa: E402
from tests.cli_helpers import run_main  # noqa: E402

SPEED = ["model-speed", "--smoke", "--cache", "int4", "--cache", "bf16", "--batch", "1", "--batch", "2"]


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A 2-layer Qwen3-style checkpoint (GQA 4/2, head_dim 64, vocabulary 32) saved to disk."""
    import foscar.hf as fh

    fh.register()
    torch.manual_seed(0)
    cfg = transformers.Qwen3Config(vocab_size=32, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                   max_position_embeddings=256)  # fmt: skip
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="foscar", dtype=torch.bfloat16)
    path = tmp_path_factory.mktemp("tiny-qwen3")
    model.save_pretrained(path)
    return path


@pytest.fixture
def measured(monkeypatch) -> list:
    """The points each study measures in this test (the real measurement runs)."""
    seen = []
    for cls in (EvalModelStudy, bench.model_speed_study.ModelSpeedStudy):
        real = cls.measure
        monkeypatch.setattr(cls, "measure", lambda self, point, real=real: seen.append(point) or real(self, point))
    return seen


def eval_args(model, out, *more) -> list:
    return ["eval-model", "--model", model, "--bits", "4", "--bits", "2", "--group-size", "32", "--prefill", "16",
            "--max-tokens", "2", "--greedy-tokens", "2", "--no-plots", "--out", out, *more]  # fmt: skip


def test_eval_model_shards_resume_and_merge(tiny_checkpoint, measured, tmp_path, capsys):
    from bench.eval_model import CacheConfig

    shards = [tmp_path / f"s{k}" for k in (0, 1)]
    for k, out in enumerate(shards):
        code, stdout, err = run_main(capsys, *eval_args(tiny_checkpoint, out, "--shard", f"{k}/2", "--format", "json"))
        assert code == 0, err
        assert json.loads(stdout)["kind"] == "eval-model"
    bf16, int4, int2 = CacheConfig("bf16"), CacheConfig("foscar", 4, 32), CacheConfig("foscar", 2, 32)
    assert measured == [bf16, int2, int4]  # shard 0: points 0 and 2 of (bf16, int4 g32, int2 g32)
    meta = json.loads((shards[1] / "meta.json").read_text())
    assert meta["kind"] == "eval-model" and meta["shard"]["points"] == [1] and meta["config"]["bits"] == [4, 2]

    measured.clear()  # shard 0 lost its last row: resuming runs that point alone
    df = pd.read_csv(shards[0] / "results.csv")
    df[df["cache"] == "bf16"].to_csv(shards[0] / "results.csv", index=False)
    code, _, err = run_main(capsys, *eval_args(tiny_checkpoint, shards[0], "--shard", "0/2", "--format", "quiet"))
    assert code == 0 and measured == [int2], err
    assert json.loads((shards[0] / "meta.json").read_text())["resumes"][0]["points_done_before"] == 1
    code, _, err = run_main(capsys, *eval_args(tiny_checkpoint, shards[0], "--shard", "0/2", "--greedy-tokens", "3"))
    assert code == 2 and "another config" in err

    merge_runs(shards, tmp_path / "merged")
    merged = EvalModelStudy.read(tmp_path / "merged" / "results.csv")
    assert merged["cache"].tolist() == ["bf16", "foscar", "foscar"] and merged["bits"].tolist()[1:] == [4, 2]
    assert (merged["status"] == "ok").all() and "gpu_uuid" in merged.columns and merged["gpu_uuid"].isna().all()
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert list(summary["caches"]) == ["bf16", "int4 g32", "int2 g32"] and summary["problems"] == []
    code, out, err = run_main(capsys, "report", tmp_path / "merged", "--out", tmp_path / "rep")
    assert code == 0 and "(eval-model run)" in out, err
    code, _, err = run_main(capsys, "compare", tmp_path / "merged", shards[0])
    assert code == 2 and "compare takes two bench, ablate or accuracy runs" in err


def test_model_speed_runs_on_the_engine_and_resumes(measured, tmp_path, capsys):
    out = tmp_path / "speed"
    code, stdout, err = run_main(capsys, *SPEED, "--out", out, "--format", "json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["kind"] == "model-speed" and set(summary["points"]) == {
        f"{c}/b{b}/ctx32" for c in ("int4", "bf16") for b in (1, 2)}  # fmt: skip
    assert measured == [(1, 32), (2, 32)]
    df = pd.read_csv(out / "results.csv")
    assert list(df.columns) == bench.model_speed_study.COLUMNS and (df["status"] == "ok").all()
    assert df["cache"].tolist() == ["int4", "bf16"] * 2 and df["kernel"].tolist() == ["triton", "sdpa"] * 2
    assert (df[df["cache"] == "bf16"]["speedup_vs_bf16"] == 1.0).all() and df["gpu_uuid"].isna().all()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["kind"] == "model-speed" and meta["random_weights"] is True and meta["config"]["decode"] == 3
    assert meta["command"].startswith("foscar model-speed --smoke") and (out / "model_speed.md").is_file()

    measured.clear()
    df[df["batch"] == 1].to_csv(out / "results.csv", index=False)  # the batch-2 point lost
    with pytest.raises(SystemExit) as e:  # `python -m bench.model_speed`: the same command
        bench.model_speed.main([*SPEED[1:], "--out", str(out), "--format", "quiet"])
    assert e.value.code == 0 and measured == [(2, 32)]
    assert pd.read_csv(out / "results.csv")["batch"].tolist() == [1, 1, 2, 2]


def test_devices_takes_both_commands(tiny_checkpoint, tmp_path):
    """--devices runs these commands as it runs ablate's (the worker path itself: tests/test_study_shards.py):
    their options survive the worker's JSON, and the plan counts their points without loading a model."""
    from bench.devices import command, options_from_json, options_to_json
    from bench.eval_model import EvalOptions
    from bench.model_speed_study import ModelSpeedOptions
    from bench.shard import Shard

    speed = ModelSpeedOptions(smoke=True, batch=[1, 2], cache=["int4", "bf16"], out=tmp_path / "s", shard=Shard(1, 2))
    evals = EvalOptions(model=str(tiny_checkpoint), bits=[4, 2], group_sizes=[32, 128], text=tmp_path / "t.txt")
    for kind, opts, points in (("model-speed", speed, 2), ("eval-model", evals, 5)):
        cmd = command(kind)
        assert options_from_json(cmd.options, options_to_json(opts)) == opts
        plan = cmd.plan(opts, None)
        assert plan.num_points == points
    assert plan.out.parent.name == "_scratch"  # no GPU: a scratch run directory


def test_a_bad_cache_is_refused_before_loading_anything(capsys):
    code, _, err = run_main(capsys, "model-speed", "--smoke", "--warmup", "-1")
    assert code == 2 and "--warmup" in err
    code, _, err = run_main(capsys, "model-speed", "--smoke", "--group-size", "48")  # every FOSCAR point would fail
    assert code == 2 and "--group-size 48: expected one of 32, 64, 128" in err
    # one FOSCAR takes, but not on this model's head_dim (tiny-qwen3: 64): refused once the config is read
    code, _, err = run_main(capsys, "model-speed", "--smoke", "--group-size", "128", "--format", "quiet")
    assert code == 2 and "--group-size 128 on random-init:" in err and "multiple of group_size=128, got 64" in err


def test_model_speed_smoke_uses_the_flags_given():
    # --smoke used to force group size 64, 1 warm-up/profile step, at most 3 timed steps and its own config, whatever
    # was passed (`--group-size 48` exited 0 and recorded 64)
    from bench.model_speed_study import DEFAULT_RANDOM_INIT, SMOKE_RANDOM_INIT, ModelSpeedOptions

    smoke = ModelSpeedOptions(smoke=True).config()
    assert (smoke["group_size"], smoke["decode"], smoke["warmup"], smoke["profile_steps"]) == (64, 3, 1, 1)
    assert smoke["random_init"] == SMOKE_RANDOM_INIT
    given = ModelSpeedOptions(smoke=True, group_size=32, decode=5, warmup=0, profile_steps=2,
                              random_init="my.json").config()
    assert (given["group_size"], given["decode"], given["warmup"], given["profile_steps"]) == (32, 5, 0, 2)
    assert given["random_init"] == "my.json"
    full = ModelSpeedOptions().config()
    assert (full["group_size"], full["decode"], full["warmup"], full["profile_steps"]) == (128, 64, 3, 8)
    assert full["random_init"] == DEFAULT_RANDOM_INIT


def test_a_value_given_twice_gives_each_point_once():
    """model-speed --context 16 --context 16 gave two BF16 rows a point (one the other's reference: 0.900x), and
    eval-model --bits 2 --bits 2 ran the cache twice."""
    from bench.eval_model import CacheConfig, grid_points
    from bench.model_speed_study import ModelSpeedOptions

    cfg = ModelSpeedOptions(smoke=True, batch=[2, 1, 2], context=[16, 16], cache=["int4", "bf16"]).config()
    assert cfg["batch"] == [2, 1] and cfg["context"] == [16]
    assert grid_points([2, 4, 2], [64, 64]) == [CacheConfig("bf16"), CacheConfig("foscar", 2, 64),
                                                CacheConfig("foscar", 4, 64)]
