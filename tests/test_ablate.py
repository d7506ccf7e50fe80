"""foscar ablate: the CPU smoke run writes its files; speed-ups are relative to each axis' reference."""

import json
import shutil

import pandas as pd
import pytest
import torch

from bench.ablate import SETTINGS, add_reference_speedups, summarize_ablation
from tests.cli_helpers import run_main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_reference_speedups_and_summary():
    rows = []
    for batch, t_pv, t_fold in ((1, 30.0, 10.0), (8, 90.0, 45.0)):
        for s, t in (("per-value", t_pv), ("folded", t_fold)):
            rows.append(dict(axis="reconstruction", setting=s, is_reference=s == "per-value", bits=2, batch=batch,
                             context=1024, median_us=t, status="ok"))
    rows.append(dict(axis="reconstruction", setting="folded", is_reference=False, bits=4, batch=1, context=1024,
                     median_us=5.0, status="ok"))  # no reference at this point: no speed-up
    df = add_reference_speedups(pd.DataFrame(rows).assign(speedup_vs_reference=float("nan")))
    fold = df[(df["setting"] == "folded") & (df["bits"] == 2)]["speedup_vs_reference"].tolist()
    assert fold == [3.0, 2.0]
    summary = summarize_ablation(df)
    v = summary["ablation"]["reconstruction"]["int2"]["folded"]
    assert v["geomean_speedup"] == pytest.approx(6 ** 0.5) and (v["min"], v["max"], v["points"]) == (2.0, 3.0, 2)
    assert "int4" not in summary["ablation"]["reconstruction"]
    assert summary["reference"] == {"reconstruction": "per-value", "group_size": "G=128", "split_kv": "off",
                                    "operand": "bf16", "cache": "contiguous", "k_layout": "token"}


def test_every_axis_has_one_reference():
    axes = {s.axis for s in SETTINGS}
    assert all(sum(s.reference for s in SETTINGS if s.axis == a) == 1 for a in axes)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One `foscar ablate --smoke` run (INT2, batch 1 x 64) shared by the tests below."""
    if torch.cuda.is_available():
        pytest.skip("the CPU smoke path (interpreter)")
    from foscar_cli import main

    out = tmp_path_factory.mktemp("ablate") / "abl"
    try:
        main(["ablate", "--smoke", "--bits", "2", "--batch", "1", "--context", "64", "--out", str(out)])
    except SystemExit as e:
        assert e.code in (0, None)
    return out


def test_ablate_smoke_writes_files(smoke_run):
    out = smoke_run
    for name in ("results.csv", "summary.json", "meta.json", "ablate.md", "ablation.png", "ablation_points.png"):
        assert (out / name).is_file(), name
    df = pd.read_csv(out / "results.csv")
    assert len(df) == len(SETTINGS)
    cuda_only = df[df["setting"].isin(["per-value", "fp8"])]  # per-value reconstruction, FP8 operands
    assert (cuda_only["status"] == "skipped").all() and cuda_only["error"].str.contains("CUDA").all()
    ok = df[df["status"] == "ok"]
    assert len(ok) == len(SETTINGS) - 2 and (ok["max_rel_err"] < 2e-2).all()
    assert set(ok[ok["axis"] == "cache"]["setting"]) == {"contiguous", "paged-16", "paged-64"}
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["ablation"]) == {"group_size", "split_kv", "operand", "cache", "k_layout"}
    kl = ok[ok["axis"] == "k_layout"]
    assert set(kl["setting"]) == {"token", "channel-128", "channel-32"}  # each checked against its own reference
    meta = json.loads((out / "meta.json").read_text())
    assert meta["triton_interpreter"] is True and meta["kind"] == "ablate"
    assert "![Speed-up per point](ablation_points.png)" in (out / "ablate.md").read_text()


def test_report_draws_an_ablation_run(smoke_run, tmp_path, capsys):
    code, out, err = run_main(capsys, "report", smoke_run, "--out", tmp_path / "rep")
    assert code == 0, err
    assert "2 plots (ablate run)" in out
    md = (tmp_path / "rep" / "report.md").read_text()
    for name in ("ablation.png", "ablation_points.png"):
        png = tmp_path / "rep" / name
        assert png.read_bytes()[:8] == PNG_MAGIC and f"]({name})" in md
    assert "| group_size | int2 | G=32 |" in md and "## Not measured" in md and "per-value" in md


def test_compare_ablation_runs_judges_times(smoke_run, tmp_path, capsys):
    code, out, _ = run_main(capsys, "compare", smoke_run, smoke_run, "--format", "quiet")
    assert (code, out.strip()) == (0, "same")
    slower = tmp_path / "slower"
    shutil.copytree(smoke_run, slower)
    df = pd.read_csv(slower / "results.csv")
    g32 = df["setting"] == "G=32"
    # slower beyond any spread: interpreter timings on a loaded CPU can spread more than 2x (p80 / p20),
    # and compare calls a change whose p20-p80 ranges overlap "noisy", not "slower"
    factor = max(2.0, 2.0 * float((df.loc[g32, "p80_us"] / df.loc[g32, "p20_us"]).max()))
    df.loc[g32, ["median_us", "p20_us", "p80_us"]] *= factor
    df.to_csv(slower / "results.csv", index=False)
    for flags in ((), ("--all",)):  # the tables (ablate rows have no baselines), a slower row shown
        code, out, err = run_main(capsys, "compare", smoke_run, slower, *flags)
        assert code == 1 and "Traceback" not in err and "Rows (most alarming first)" in out, err
        assert "G=32" in out and "slower" in out
    code, out, err = run_main(capsys, "compare", smoke_run, slower, "--json")
    assert code == 1, err
    result = json.loads(out)
    assert result["kind"] == "ablate" and result["verdict"] == "slower" and result["regression"]
    assert [g["series"] for g in result["geomeans"] if g["verdict"] == "slower"] == ["group_size/G=32/int2"]
    assert result["counts"]["unmatched"] == 2  # the two CUDA-only settings, skipped in both
    other = tmp_path / "other"  # no point in common: nothing compared, exit 2
    shutil.copytree(smoke_run, other)
    df = pd.read_csv(other / "results.csv")
    df["batch"] += 100
    df.to_csv(other / "results.csv", index=False)
    code, out, _ = run_main(capsys, "compare", smoke_run, other, "--format", "quiet")
    assert (code, out.strip()) == (2, "none")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU smoke path (interpreter)")
def test_ablate_axis_selects_settings_and_rejects_unknown(tmp_path):
    from bench.ablate import run_ablate
    from bench.errors import FoscarError

    with pytest.raises(FoscarError, match="--axis 'k_blocks': expected one of reconstruction, group_size, "
                                          "split_kv, operand, cache, k_layout"):
        run_ablate(tmp_path / "x", [2], [1], [64], True, axes=["k_blocks"])
    out = run_ablate(tmp_path / "kl", [4], [1], [100], True, axes=["k_layout"])
    df = pd.read_csv(out / "results.csv")
    assert list(df["setting"]) == ["token", "channel-128", "channel-32"] and (df["status"] == "ok").all()
    assert list(df["k_block"].fillna(0).astype(int)) == [0, 128, 32]
    assert json.loads((out / "meta.json").read_text())["settings"][1]["k_block"] == 128


def test_summary_names_settings_not_measured(tmp_path):
    # a setting skipped at every point (per-value on the CPU) has no row in the geomean table: say so, with why
    from rich.console import Console

    from bench.ablate import show_summary

    df = pd.DataFrame([
        {"axis": "reconstruction", "setting": "folded", "status": "ok", "error": None},
        {"axis": "reconstruction", "setting": "per-value", "status": "skipped", "error": "CUDA kernel only"},
        {"axis": "reconstruction", "setting": "per-value", "status": "skipped", "error": "CUDA kernel only"},
    ])  # fmt: skip
    console = Console(record=True, width=200)
    show_summary(console, {"ablation": {}}, tmp_path, on_gpu=False, df=df)
    text = console.export_text()
    assert "not measured: reconstruction / per-value at 2 of 2 rows (skipped: CUDA kernel only)" in text
    assert "folded at" not in text


def test_a_value_given_twice_gives_each_point_once():
    """--bits 2 --bits 2 --batch 1 --batch 1 ran one point four times, and the reference setting's speed-up over
    itself came out 0.996 (0.963-1.037) over "4 points"."""
    from bench.ablate import AblateOptions, resolve_ablation

    cfg = resolve_ablation(AblateOptions(smoke=True, bits=[2, 2], batch=[1, 1], context=[64, 64]), None)
    assert cfg.points == [(1, 64, 2)]
    cfg = resolve_ablation(AblateOptions(smoke=True, bits=[4, 2, 4], batch=[2, 1, 2], context=[64]), None)
    assert cfg.points == [(2, 64, 4), (1, 64, 4), (2, 64, 2), (1, 64, 2)]
