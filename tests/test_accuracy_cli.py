"""`foscar accuracy` (bench/accuracy.py) end to end on CPU, and folded vs per-value on GPU."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

import foscar
import foscar_cli
from bench import accuracy as acc
from foscar import attention_reference, quantize_kv, reference_decode
from foscar.accuracy import output_errors
from foscar.data import DATA_KINDS, make_kv
from tests.cli_helpers import run_main


def test_data_kind_names_match_the_library():
    assert list(DATA_KINDS) == list(acc.DATA_KIND_NAMES)


# ---------------------------------------------------------------------------
# folded vs per-value (CUDA kernel only)


@pytest.mark.gpu
@pytest.mark.skipif(acc.per_value_unavailable() is not None, reason=str(acc.per_value_unavailable()))
def test_folded_and_per_value_errors_agree_within_rounding():
    dev = torch.device("cuda")
    from foscar.kernels import decode_cuda

    why = decode_cuda.unavailable(dev, 4)
    if why:
        pytest.skip(why)
    for kind in DATA_KINDS:
        d = make_kv(kind, 2, 16, 4, 2048, 128, seed=11, device=dev)
        ref = attention_reference(d.q, d.k, d.v, d.seq_lens)
        for bits in (2, 4):
            cache = quantize_kv(d.k, d.v, bits=bits, group_size=64)
            deq = reference_decode(d.q, cache)
            e = {}
            for method in ("folded", "per-value"):
                out = foscar.decode(d.q, cache, backend="cuda", method=method)
                e[method] = (output_errors(out, ref).rel_l2.max().item(), output_errors(out, deq).rel_l2.max().item())
            # each is within BF16 rounding of the dequantized reference, so their totals agree to that rounding
            assert e["folded"][1] < 2e-2 and e["per-value"][1] < 2e-2, (kind, bits, e)
            assert abs(e["folded"][0] - e["per-value"][0]) <= 2e-2 * max(1.0, e["folded"][0]), (kind, bits, e)


# ---------------------------------------------------------------------------
# foscar accuracy end to end




@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One `foscar accuracy --smoke` run, shared by the tests below: (run directory, its stdout)."""
    out = tmp_path_factory.mktemp("accuracy") / "acc"
    code, stdout = 0, io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            foscar_cli.main(["accuracy", "--smoke", "--out", str(out)])
    except SystemExit as e:
        code = e.code
    assert code in (0, None)
    return out, stdout.getvalue()


def test_cli_accuracy_smoke_writes_its_files(smoke_run):
    out, stdout = smoke_run
    for name in ("results.csv", "meta.json", "summary.json", "accuracy.md", "accuracy_error.png",
                 "accuracy_rotation.png", "accuracy_kernels.png"):  # fmt: skip
        assert (out / name).is_file(), name
    df = pd.read_csv(out / "results.csv")
    assert list(df.columns) == acc.COLUMNS
    configs = 3 * 2 * 1 * 2 * 2  # data x bits x group (smoke: 128) x rotation x layout
    assert len(df) == configs * len(acc.VARIANTS)
    assert set(df["layout"]) == {"quantized", "sink8+recent16"} and set(df["rotation"]) == {"none", "hadamard"}
    ok = df[df["status"] == "ok"]
    assert set(ok["kernel"]) >= {"fp64-dequant", "foscar-triton"}
    assert (ok["rel_l2_vs_deq_max"] < acc.TOLERANCE).all()
    assert (ok.loc[ok["kernel"] == "fp64-dequant", "rel_l2_vs_deq_max"] < 1e-12).all()
    assert (ok["rel_l2_vs_bf16_max"] > 0).all() and (ok["attn_kl_mean"] >= 0).all()
    if not torch.cuda.is_available():
        skipped = df[df["status"] == "skipped"]
        assert set(skipped["kernel"]) == {"foscar-cuda", "foscar-cuda-per-value", "foscar-cuda-fp8"}
        assert skipped["error"].str.len().gt(0).all()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["kind"] == "accuracy" and meta["smoke"] is True and meta["config"]["shape"]["context"] == 64
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kernel_max_rel_l2_vs_deq"]["foscar-triton"]["max"] < acc.TOLERANCE
    assert "Accuracy vs exact attention" in stdout
    assert len(summary["quantization_error"]) == configs
    assert set(summary["rotation_gain"]) == {f"{d}/int{b}/g128/{lay}" for d in acc.DATA_KIND_NAMES for b in (2, 4)
                                             for lay in ("quantized", "sink8+recent16")}  # fmt: skip
    assert "![" in (out / "accuracy.md").read_text()
    # rebuilding from results.csv + meta.json gives the same summary
    (out / "summary.json").unlink()
    acc.rebuild(out)
    assert json.loads((out / "summary.json").read_text()) == summary


def test_report_draws_an_accuracy_run(smoke_run, tmp_path, capsys):
    smoke_run = smoke_run[0]
    code, out, err = run_main(capsys, "report", smoke_run, "--out", tmp_path / "rep")
    assert code == 0, err
    assert "3 plots (accuracy run)" in out
    md = (tmp_path / "rep" / "report.md").read_text()
    for name in ("accuracy_error.png", "accuracy_rotation.png", "accuracy_kernels.png"):
        assert (tmp_path / "rep" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"]({name})" in md
    assert md.startswith("# FOSCAR accuracy report") and "accuracy --smoke" in md  # the run's meta.json, read from it


def test_a_nan_error_is_not_hidden_by_the_summarys_max(smoke_run, tmp_path, capsys):
    """A failed row whose error is NaN: the summary's max was pandas' max over the others (1.0e-2, a pass in the
    report's table); it is null, with the count of such rows, and the report says so."""
    run = Path(shutil.copytree(smoke_run[0], tmp_path / "nan"))
    df = pd.read_csv(run / "results.csv")
    row = df.index[(df.kernel == "foscar-triton") & (df.status == "ok")][0]
    df.loc[row, ["rel_l2_vs_deq_max", "status"]] = [float("nan"), "failed"]
    df.to_csv(run / "results.csv", index=False)
    (run / "summary.json").unlink()
    acc.rebuild(run)
    summary = json.loads((run / "summary.json").read_text())["kernel_max_rel_l2_vs_deq"]
    assert summary["foscar-triton"]["max"] is None and summary["foscar-triton"]["non_finite"] == 1
    assert summary["fp64-dequant"]["non_finite"] == 0 and summary["fp64-dequant"]["max"] < 1e-12
    assert "| `foscar-triton` | NaN or Inf in 1 row(s) |" in (run / "accuracy.md").read_text()


def test_compare_accuracy_runs_judges_errors(smoke_run, tmp_path, capsys):
    smoke_run = smoke_run[0]
    code, out, _ = run_main(capsys, "compare", smoke_run, smoke_run, "--format", "quiet")
    assert (code, out.strip()) == (0, "same")
    worse = tmp_path / "worse"
    shutil.copytree(smoke_run, worse)
    df = pd.read_csv(worse / "results.csv")
    df.loc[df["kernel"] == "foscar-triton", "rel_l2_vs_deq_max"] *= 3.0
    df.to_csv(worse / "results.csv", index=False)
    code, out, err = run_main(capsys, "compare", smoke_run, worse, "--json")
    assert code == 1, err
    result = json.loads(out)
    assert result["kind"] == "accuracy" and result["verdict"] == "worse" and result["regression"]
    verdicts = {(m["kernel"], m["metric"]): m["verdict"] for m in result["metrics"]}
    assert verdicts[("foscar-triton", "rel_l2_vs_deq_max")] == "worse"
    assert verdicts[("fp64-dequant", "rel_l2_vs_deq_max")] == "same"  # fp64 rounding, under the error floor
    code, out, _ = run_main(capsys, "compare", worse, smoke_run, "--json")  # the other way round: better
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "better" and not result["regression"]
    assert {(m["kernel"], m["metric"]) for m in result["metrics"] if m["verdict"] == "better"} == {
        ("foscar-triton", "rel_l2_vs_deq_max")}
    other = tmp_path / "other"  # no row in common: nothing compared, exit 2
    shutil.copytree(smoke_run, other)
    df = pd.read_csv(other / "results.csv")
    df["seed"] += 1
    df.to_csv(other / "results.csv", index=False)
    code, out, _ = run_main(capsys, "compare", smoke_run, other)
    assert code == 2 and "verdict: none" in out and "nothing compared" in out


def test_cli_accuracy_errors_are_one_line(capsys, monkeypatch, tmp_path):
    import bench.arch

    monkeypatch.setattr(bench.arch, "detect_device", lambda: None)
    code, _, err = run_main(capsys, "accuracy", "--out", str(tmp_path / "x"))
    assert code == 2 and err.startswith("error: no CUDA GPU") and "--smoke" in err
    code, _, err = run_main(capsys, "accuracy", "--smoke", "--group-size", "48", "--out", str(tmp_path / "y"))
    assert code == 2 and "--group-size 48" in err
    code, _, err = run_main(capsys, "accuracy", "--smoke", "--head-dim", "64", "--group-size", "128")
    assert code == 2 and "does not divide" in err


def test_cli_accuracy_help_lists_choices():
    from typer.testing import CliRunner

    res = CliRunner().invoke(foscar_cli.app, ["accuracy", "--help"])
    assert res.exit_code == 0
    for flag in ("--smoke", "--data", "--kernel", "--rotation", "--num-sink", "--num-recent"):
        assert flag in res.output
