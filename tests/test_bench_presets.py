"""Model presets (configs/models/) over arch presets, the config hash, and `foscar bench --dry-run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import bench.run
from bench.arch import Arch, DeviceInfo
from bench.config import (
    apply_model,
    apply_overrides,
    config_hash,
    load_config,
    load_model,
    model_names,
    preset_path,
)
from bench.errors import FoscarError
from bench.plan import GRAPH_REPLAYS, REPLAY_S, call_bytes, format_duration, plan_points, row_seconds
from bench.run import BenchOptions, OutputFormat, resolve_config
from bench.sweep import grid
from bench.workload import Point
from tests.cli_helpers import run_main







# ---------------------------------------------------------------------------
# model presets


@pytest.mark.parametrize(
    "name, shape",
    [("qwen3-8b", (32, 8, 128)), ("llama-3.1-8b", (32, 8, 128)), ("llama-3.1-70b-tp8", (8, 1, 128))],
)
def test_model_presets(name, shape):
    m = load_model(name)
    assert m.name == name
    assert (m.num_qo_heads, m.num_kv_heads, m.head_dim) == shape
    assert name in model_names()


def test_model_overlays_only_the_shape():
    arch = load_config(preset_path("h200"))
    cfg = apply_model(arch, load_model("llama-3.1-70b-tp8"))
    assert (cfg.num_qo_heads, cfg.num_kv_heads, cfg.head_dim) == (8, 1, 128)
    assert cfg.model == "llama-3.1-70b-tp8"
    for keep in ("batch", "context", "bits", "group_size", "operand", "kernels", "page_size", "tolerance", "name"):
        assert getattr(cfg, keep) == getattr(arch, keep), keep


def test_flags_override_arch_and_model():
    opts = BenchOptions(arch=Arch.h200, model="llama-3.1-70b-tp8", batch=[4], num_kv_heads=2, num_qo_heads=16)
    cfg, path = resolve_config(opts, "h200")
    assert path == preset_path("h200")
    assert (cfg.batch, cfg.num_qo_heads, cfg.num_kv_heads, cfg.head_dim) == ([4], 16, 2, 128)
    assert cfg.model == "llama-3.1-70b-tp8 (shape overridden by flags)"  # the label does not claim the model's shape
    cfg2, _ = resolve_config(BenchOptions(arch=Arch.h200, model="qwen3-8b", bits=[2]), "h200")
    assert cfg2.model == "qwen3-8b" and cfg2.bits == [2]


def test_unknown_model_lists_the_known_ones():
    with pytest.raises(FoscarError, match=r"unknown model 'gpt-5'; known: .*llama-3.1-70b-tp8.*qwen3-8b"):
        load_model("gpt-5")


@pytest.mark.parametrize(
    "text, needle",
    [
        ('name = "m"\n[shape]\nnum_qo_heads = 8\nnum_kv_heads = 1\nhead_dim = 128\npage_size = 16\n', "[shape].page_size"),
        ('[shape]\nnum_qo_heads = 8\nnum_kv_heads = 1\nhead_dim = 128\n[sweep]\nbatch = [1]\n', "unknown key 'sweep'"),
        ("[shape]\nnum_qo_heads = 8\nhead_dim = 128\n", "lacks num_kv_heads"),
        ("[shape]\nnum_qo_heads = 8\nnum_kv_heads = 0\nhead_dim = 128\n", "expected a positive integer, got 0"),
    ],
)
def test_model_file_errors(tmp_path, text, needle):
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(FoscarError) as e:
        load_model(str(path))
    assert needle in str(e.value)


def test_model_shape_must_fit_the_grid(tmp_path):
    path = tmp_path / "odd.toml"
    path.write_text("[shape]\nnum_qo_heads = 8\nnum_kv_heads = 3\nhead_dim = 128\n")
    with pytest.raises(FoscarError, match="model odd: num_qo_heads: expected a multiple of num_kv_heads=3"):
        apply_model(load_config(preset_path("h200")), load_model(str(path)))


# ---------------------------------------------------------------------------
# config hash


def test_config_hash_is_canonical():
    cfg = load_config(preset_path("h200"))
    d = cfg.to_dict()
    assert config_hash(cfg) == config_hash(d) == config_hash(dict(reversed(list(d.items()))))
    assert len(config_hash(cfg)) == 64
    assert config_hash(apply_overrides(cfg, batch=[1])) != config_hash(cfg)
    assert config_hash(apply_model(cfg, load_model("qwen3-8b"))) != config_hash(cfg)  # same shape, model recorded


# ---------------------------------------------------------------------------
# the run-time model


def test_estimate_model():
    p = Point(batch=64, context=131072, bits=4, group_size=128, num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16)
    io = 2 * 64 * 32 * 128 * 2
    assert call_bytes(p, quantized=False) == 64 * 131072 * 8 * 128 * 2 * 2 + io
    assert call_bytes(p, quantized=True) == 64 * 131072 * 8 * (2 * 64 + 16) + io
    small = row_seconds(1000, interpreter=False, cpu_reps=3)
    big = row_seconds(call_bytes(p, False), interpreter=False, cpu_reps=3)
    assert small == pytest.approx(0.5 + GRAPH_REPLAYS * REPLAY_S)  # a short call: replays of ~10 ms
    assert big > small  # a 34 GB call outlasts a 10 ms replay
    assert format_duration(45) == "45 s" and format_duration(600) == "10 min" and format_duration(7500) == "2 h 05 min"


def test_plan_counts_rows_and_memory():
    cfg = load_config(preset_path("smoke"))
    from bench.backends import select_backends

    backends = select_backends(cfg.kernels)
    plans = plan_points(cfg, backends, interpreter=True, runnable={"foscar-cuda": False})
    ragged = sum(len(e.batch) * len(e.context) for e in cfg.ragged)
    assert len(plans) == (len(cfg.batch) * len(cfg.context) + ragged) * len(cfg.bits)
    assert all(p.rows == len(cfg.kernels) for p in plans)
    assert all(p.runnable_rows == len(cfg.kernels) - 1 for p in plans)
    assert all(p.device_bytes > 0 and p.seconds > 0 for p in plans)


# ---------------------------------------------------------------------------
# foscar bench --dry-run


@pytest.fixture
def no_gpu_calls(monkeypatch):
    """Any attempt to look at or use a GPU fails the test."""

    def forbidden(*args, **kwargs):
        raise AssertionError("--dry-run touched the GPU")

    monkeypatch.setattr(bench.run, "detect_device", forbidden)
    for name in ("is_available", "get_device_properties", "mem_get_info", "current_device", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, forbidden)


def test_dry_run_prints_the_grid(capsys, tmp_path, no_gpu_calls):
    out = tmp_path / "run"
    code, stdout, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--out", str(out))
    assert code == 0, err
    points = grid(load_config(preset_path("h200")))
    assert f"dry run: {len(points)} points x" in stdout  # the [sweep] grid and the [[ragged]] grid
    assert {p.grid for p in points} == {"sweep", "ragged"}
    assert "one-long" in stdout and "131072,4096x7" in stdout  # the ragged points' workload and lengths
    assert "32 qo / 8 kv heads, head_dim 128" in stdout
    assert "estimated run time" in stdout and "an estimate" in stdout
    assert "131072" in stdout and "GiB" in stdout
    assert not out.exists()  # nothing written


def test_dry_run_json_with_model(capsys, tmp_path, no_gpu_calls):
    code, stdout, err = run_main(
        capsys, "bench", "--arch", "h200", "--model", "llama-3.1-70b-tp8", "--batch", "8", "--dry-run", "--json"
    )
    assert code == 0, err
    plan = json.loads(stdout)
    assert plan["dry_run"] is True
    assert plan["config"]["model"] == "llama-3.1-70b-tp8"
    assert (plan["config"]["num_qo_heads"], plan["config"]["num_kv_heads"]) == (8, 1)
    assert plan["num_points"] == 1 * 3 * 2  # --batch 8 x the preset's 3 contexts x 2 bit widths
    # a FOSCAR kernel gives one row per operand mode (bf16, fp8 on the Hopper presets), a baseline one row
    foscar_kernels = [k for k in plan["kernels"] if k.startswith("foscar-")]
    per_point = len(foscar_kernels) * len(plan["config"]["operand"]) + len(plan["kernels"]) - len(foscar_kernels)
    assert plan["num_rows"] == plan["num_points"] * per_point
    assert [p["batch"] for p in plan["points"]] == [8] * 6
    assert plan["estimated_seconds"] > 0 and "estimate" in plan["estimate"]
    assert plan["peak_device_bytes"] == max(p["device_bytes"] for p in plan["points"])
    assert plan["config_hash"] == config_hash(plan["config"])


def test_dry_run_marks_points_that_do_not_fit(capsys, monkeypatch):
    small = DeviceInfo(name="NVIDIA H200", capability=(9, 0), sm_count=132, total_memory=16 << 30)
    monkeypatch.setattr(bench.run, "detect_device", lambda: small)
    code, stdout, err = run_main(capsys, "bench", "--dry-run", "--json")  # --arch auto: the GPU picks the preset
    assert code == 0, err
    plan = json.loads(stdout)
    assert plan["config"]["name"] == "h200"
    fits = {(p["batch"], p["context"]): p["fits"] for p in plan["points"]}
    assert fits[(1, 8192)] is True and fits[(64, 131072)] is False


def test_dry_run_without_gpu_judges_against_the_presets_memory(capsys, no_gpu_calls):
    # --arch h200 asks no GPU: a point larger than an H200's memory is marked, takes no time in the estimate,
    # and a line says how many a run would skip
    code, stdout, err = run_main(capsys, "bench", "--arch", "h200", "--batch", "64", "--context", "8192",
                                 "--context", "300000000", "--bits", "2", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(stdout)
    assert plan["device_total_memory_bytes"] == 150109880320
    assert plan["device_total_memory_source"] == "nominal for the H200"
    by_context = {p["context"]: p for p in plan["points"]}
    assert by_context[8192]["fits"] is True and by_context[8192]["estimated_seconds"] > 0
    assert by_context[300000000]["fits"] is False and by_context[300000000]["estimated_seconds"] == 0
    code, stdout, err = run_main(capsys, "bench", "--arch", "h200", "--batch", "64", "--context", "8192",
                                 "--context", "300000000", "--bits", "2", "--dry-run")
    assert code == 0, err
    assert "1 of 2 points need more device memory than 139.8 GiB: a run skips them" in stdout
    assert "(nominal for the H200)" in stdout


def test_dry_run_auto_without_gpu_says_what_to_pass(capsys, monkeypatch):
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, stdout, err = run_main(capsys, "bench", "--dry-run")
    assert code == 2
    assert "--dry-run with --arch auto needs a GPU" in err and "--arch h100/h200/b200" in err


def test_dry_run_smoke_on_cpu(capsys):
    bench.run.dry_run(BenchOptions(smoke=True, dry_run=True, output=OutputFormat.json), device=None)
    plan = json.loads(capsys.readouterr().out)
    points = grid(load_config(preset_path("smoke")))
    assert plan["num_points"] == len(points) and {p.grid for p in points} == {"sweep", "ragged"}
    assert "interpreter" in plan["estimate"]
    assert all(p["runnable_rows"] == 1 for p in plan["points"])  # only foscar-triton runs on the CPU


def test_page_size_flag_overrides_the_preset():
    # --page-size reaches the config that both the FOSCAR paged cache and FlashInfer's pages are built from
    cfg, _ = resolve_config(BenchOptions(arch=Arch.h200, page_size=1, page_order="in-order"), "h200")
    assert (cfg.page_size, cfg.page_order) == (1, "in-order")
    assert resolve_config(BenchOptions(arch=Arch.h200), "h200")[0].page_size == load_config(preset_path("h200")).page_size


@pytest.mark.parametrize("value, ok", [("0", True), ("2.5", True), ("60", True), ("-1", False), ("61", False),
                                       ("nan", False), ("inf", False), ("true", False)])
def test_sustain_s_from_the_timing_table(tmp_path, value, ok):
    """``[timing] sustain_s`` (``--sustain-s``): seconds from 0 to 60, else a one-line error naming the key."""
    text = preset_path("smoke").read_text()
    assert "sustain_s" not in text.split("[timing]")[1].split("\n[")[0]  # the presets leave the default, 0
    path = tmp_path / "t.toml"
    path.write_text(text.replace("[timing]", f"[timing]\nsustain_s = {value}", 1))
    if ok:
        cfg = load_config(path)
        assert cfg.sustain_s == float(value) and isinstance(cfg.sustain_s, float)  # TOML's 60 as 60.0: one hash
    else:
        with pytest.raises(FoscarError, match=r"sustain_s: expected seconds from 0 to 60, got"):
            load_config(path)
    assert load_config(preset_path("smoke")).sustain_s == 0


def test_sustain_s_flag_overrides_the_preset_and_adds_to_the_estimate():
    cfg, _ = resolve_config(BenchOptions(arch="h200", sustain_s=1.5), "h200")
    assert cfg.sustain_s == 1.5
    assert resolve_config(BenchOptions(arch="h200"), "h200")[0].sustain_s == 0
    assert row_seconds(10**9, False, 3, 1.5) == pytest.approx(row_seconds(10**9, False, 3) + 1.5)


def test_older_runs_configs_still_hash_as_recorded():
    """``sustain_s`` came after runs were recorded: at its default it is left out of the config dict and hash, so a
    recorded run's meta.json (without it) still rebuilds to its own hash (resume, foscar merge, foscar compare);
    set, it is in both."""
    import dataclasses

    from bench.config import config_from_meta, config_hash

    root = Path(__file__).resolve().parent.parent
    meta = json.loads((root / "results/2026-12-04-h200-s37/bench-fd1ad9f/meta.json").read_text())
    assert "sustain_s" not in meta["config"]
    cfg = config_from_meta(meta)
    assert config_hash(cfg) == meta["config_hash"] and cfg.sustain_s == 0
    sustained = dataclasses.replace(cfg, sustain_s=2.0)
    assert sustained.to_dict()["sustain_s"] == 2.0 and config_hash(sustained) != meta["config_hash"]
    assert resolve_config(BenchOptions(arch="h200", sustain_s=2), "h200")[0].to_dict() == \
        resolve_config(BenchOptions(arch="h200", sustain_s=2.0), "h200")[0].to_dict()


def test_shipped_configs_resolve_from_any_directory(tmp_path, monkeypatch):
    # model-speed's --random-init defaults (configs/hf/*.json) worked only from the repository root
    from bench.config import CONFIG_DIR, shipped_file

    monkeypatch.chdir(tmp_path)
    assert shipped_file("configs/hf/tiny-qwen3.json") == CONFIG_DIR / "hf" / "tiny-qwen3.json"
    assert shipped_file("configs/hf/tiny-qwen3.json").is_file()
    assert shipped_file("configs/hf/nope.json") == Path("configs/hf/nope.json")  # (load_model's error names it)
    (tmp_path / "configs" / "hf").mkdir(parents=True)
    (tmp_path / "configs" / "hf" / "tiny-qwen3.json").write_text("{}")  # a path that exists is taken as given
    assert shipped_file("configs/hf/tiny-qwen3.json") == Path("configs/hf/tiny-qwen3.json")
