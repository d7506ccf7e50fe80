"""`foscar report`, `foscar compare` and `foscar export-gab` on small synthetic run directories (no GPU)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from bench.compare import MATCH_KEYS, verdict
from bench.results import add_speedups, new_row, summarize, to_frame, write_csv, write_json
from bench.workload import Point
from tests.cli_helpers import run_main

HBM = 4.0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLOTS = ("speedup.png", "bandwidth.png", "heatmap.png", "error_vs_speed.png")


def make_run(
    path: Path,
    *,
    slow: float = 1.0,
    spread: float = 0.01,
    failed: bool = False,
    drop_xqa: bool = False,
    interpreter: bool = False,
    baseline_slow: float = 1.0,
) -> Path:
    """A run directory: batch {1, 8} x context {8K, 32K} x bits {2, 4}; FOSCAR rows take ``slow`` x their time, the
    FlashInfer rows ``baseline_slow`` x theirs."""
    rows = []
    for batch in (1, 8):
        for context in (8192, 32768):
            for bits in (2, 4):
                p = Point(batch, context, bits, 128, 32, 8, 128, 16)
                base_us = 10.0 + batch * context / 2000.0
                specs = [("foscar-triton", bits, "bf16", False, base_us * (0.85 if bits == 2 else 0.95) * slow)]
                if not interpreter:
                    specs += [("flashinfer-fa2", None, None, True, base_us * 1.3 * baseline_slow),
                              ("flashinfer-xqa", None, None, True, base_us * baseline_slow)]
                for kernel, b, op, is_base, us in specs:
                    if drop_xqa and kernel == "flashinfer-xqa" and batch == 8 and context == 32768:
                        continue
                    r = new_row(p, kernel, b, op, is_base)
                    nbytes = batch * context * 8 * 128 * 2 * 2 // (1 if is_base else 16 // bits)
                    r.update(median_us=us, p20_us=us * (1 - spread), p80_us=us * (1 + spread), reps=15,
                             bytes=nbytes, max_rel_err=4e-3 if is_base else 5e-3 * bits / 2, checked_rows="all",
                             status="ok", timing_mode="interpreter" if interpreter else "cuda_graph")  # fmt: skip
                    if not interpreter:
                        r["tbps"] = nbytes / (us * 1e-6) / 1e12
                        r["sol_fraction"] = r["tbps"] / HBM
                        if r["sol_fraction"] > 1:
                            r["status"], r["error"] = "suspect", "implied TB/s exceeds the ceiling"
                    if failed and kernel == "foscar-triton" and bits == 4 and batch == 8 and context == 8192:
                        r.update(status="failed", median_us=None, p20_us=None, p80_us=None, tbps=None,
                                 sol_fraction=None, max_rel_err=0.5, error="max_rel_err 5.0e-01 > tolerance 2.0e-02")  # fmt: skip
                    rows.append(r)
    df = add_speedups(to_frame(rows))
    path.mkdir(parents=True)
    write_csv(df, path / "results.csv")
    meta = {
        "date": "2026-11-30T00:00:00+00:00",
        "command": "foscar bench --arch h200 --out " + str(path),
        "timing_mode": "interpreter" if interpreter else "cuda_graph",
        "hbm_ceiling_tbps": None if interpreter else HBM,
        "hbm_ceiling_method": "synthetic",
        "gpu": None if interpreter else {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132},
        "versions": {"torch": "2.x", "triton": "3.x"},
        "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "short": "0123456", "dirty": False},
        "config": {"tolerance": 0.02},
    }
    write_json(meta, path / "meta.json")
    write_json(summarize(df), path / "summary.json")
    return path






def _one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


# ---------------------------------------------------------------------------
# report


def test_report_writes_plots_and_markdown(capsys, tmp_path):
    run = make_run(tmp_path / "run-a", failed=True)
    code, out, err = run_main(capsys, "report", run)
    assert code == 0, err
    assert "report.md" in out
    md = (run / "report.md").read_text()
    for name in PLOTS:
        png = run / name
        assert png.is_file() and png.stat().st_size > 1000, name
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert f"]({name})" in md  # relative path
    for needle in ("NVIDIA H200", "0123456789abcdef", "foscar bench --arch h200", "4.00 TB/s",
                   "`foscar-triton/int2/bf16`", "`foscar-triton/int4/bf16`", "TB/s", "(log"):  # fmt: skip
        assert needle in md, needle
    # the failed row is left out of the plots and listed with its error
    not_measured = md.split("## Not measured", 1)[1].split("## Suspect rows", 1)[0]
    assert "b8 x 8K" in not_measured and "failed" in not_measured and "tolerance 2.0e-02" in not_measured


def test_report_overlays_several_runs(capsys, tmp_path):
    a = make_run(tmp_path / "a" / "run")
    b = make_run(tmp_path / "b" / "run", slow=1.1)  # same directory name: labels get the parent
    code, out, err = run_main(capsys, "report", a, b)
    _one_line_error(code, err, "pass --out DIR")

    out_dir = tmp_path / "combined"
    code, out, err = run_main(capsys, "report", a, b, "--out", out_dir)
    assert code == 0, err
    md = (out_dir / "report.md").read_text()
    assert "](speedup.png)" in md
    for label in ("a_run", "b_run"):
        for kind in ("bandwidth", "heatmap", "error_vs_speed"):
            name = f"{kind}-{label}.png"
            assert (out_dir / name).stat().st_size > 1000
            assert f"]({name})" in md
    assert "`a/run`" in md and "`b/run`" in md


def test_report_without_baselines_or_bandwidth(capsys, tmp_path):
    """An interpreter run (no FlashInfer, no TB/s) still gives a report: what cannot be drawn is said."""
    run = make_run(tmp_path / "smoke", interpreter=True)
    code, out, err = run_main(capsys, "report", run)
    assert code == 0, err
    md = (run / "report.md").read_text()
    assert "not a performance number" in md
    assert "No speed-ups to plot" in md and "No bandwidth to plot" in md
    assert "](error_vs_speed.png)" in md  # against median time instead of speed-up
    assert not (run / "speedup.png").exists()


# ---------------------------------------------------------------------------
# compare


def test_verdicts():
    assert verdict((100, 99, 101), (100.5, 99.5, 101.5), 0.05) == "same"
    assert verdict((100, 99, 101), (110, 109, 111), 0.05) == "slower"
    assert verdict((100, 90, 120), (110, 100, 125), 0.05) == "noisy"
    assert verdict((100, 99, 101), (90, 89, 91), 0.05) == "faster"
    assert verdict((100, 80, 101), (90, 89, 91), 0.05) == "noisy"
    assert verdict((100, math.nan, math.nan), (110, math.nan, math.nan), 0.05) == "slower"  # no spread: threshold only


def test_compare_equal_runs_is_same(capsys, tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b")
    code, out, err = run_main(capsys, "compare", a, b)
    assert code == 0, err
    assert "verdict: same" in out
    code, out, err = run_main(capsys, "compare", a, b, "--format", "quiet")
    assert (code, out.strip()) == (0, "same")


def test_compare_flags_a_regression(capsys, tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", slow=1.10)  # +10 %, spreads +-1 %: no overlap
    code, out, err = run_main(capsys, "compare", a, b)
    assert code == 1, err
    assert "slower" in out and "REGRESSION" in out

    report_file = tmp_path / "cmp" / "compare.json"
    code, out, err = run_main(capsys, "compare", a, b, "--json", "--out", report_file)
    assert code == 1
    result = json.loads(out)
    assert json.loads(report_file.read_text()) == result
    assert result["verdict"] == "slower" and result["regression"] is True
    ours = [r for r in result["rows"] if r["kernel"] == "foscar-triton"]
    assert len(ours) == 8 and all(r["verdict"] == "slower" for r in ours)
    assert all(r["ratio"] == pytest.approx(1.10) for r in ours)
    assert all(r["verdict"] == "same" for r in result["rows"] if r["kernel"] != "foscar-triton")
    gm = {g["series"]: g for g in result["geomeans"]}
    assert gm["foscar-triton/int2/bf16"]["verdict"] == "slower"
    assert gm["foscar-triton/int2/bf16"]["ratio"] == pytest.approx(1.10)
    assert gm["flashinfer-xqa"]["verdict"] == "same"
    assert set(MATCH_KEYS) <= set(ours[0])

    # the same change the other way round is an improvement, not a failure
    code, out, err = run_main(capsys, "compare", b, a, "--format", "quiet")
    assert (code, out.strip()) == (0, "faster")


def test_compare_overlapping_spreads_are_noisy(capsys, tmp_path):
    a = make_run(tmp_path / "a", spread=0.2)
    b = make_run(tmp_path / "b", slow=1.10, spread=0.2)
    code, out, err = run_main(capsys, "compare", a, b, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["verdict"] == "noisy" and result["regression"] is False
    assert {r["verdict"] for r in result["rows"] if r["kernel"] == "foscar-triton"} == {"noisy"}


def test_compare_threshold(capsys, tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", slow=1.10)
    code, out, err = run_main(capsys, "compare", a, b, "--threshold", "0.2", "--format", "quiet")
    assert (code, out.strip()) == (0, "same")


def test_compare_of_runs_that_share_no_row_fails(capsys, tmp_path):
    # a gate pointed at two runs with no point in common must not pass as "same"
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b")
    df = pd.read_csv(b / "results.csv")
    df["batch"] = df["batch"] * 100
    df.to_csv(b / "results.csv", index=False)
    code, out, err = run_main(capsys, "compare", a, b, "--format", "quiet")
    assert (code, out.strip()) == (2, "none")
    code, out, err = run_main(capsys, "compare", a, b)
    assert code == 2 and "verdict: none" in out and "nothing compared" in out


def test_a_slower_baseline_is_reported_not_a_regression(capsys, tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", baseline_slow=1.2)
    code, out, err = run_main(capsys, "compare", a, b, "--json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "same" and result["baseline_verdict"] == "slower"
    assert not result["regression"]
    assert {r["verdict"] for r in result["rows"] if r["series"].startswith("flashinfer")} == {"slower"}
    assert result["counts"]["rows"]["slower"] == 0 and result["counts"]["baseline_rows"]["slower"] == 16
    code, out, err = run_main(capsys, "compare", a, b)
    assert code == 0 and "baseline rows: 16 slower (not gating" in out
    b2 = make_run(tmp_path / "b2", slow=1.2, baseline_slow=1.2)  # FOSCAR slower too: the gate fails
    code, out, err = run_main(capsys, "compare", a, b2, "--format", "quiet")
    assert (code, out.strip()) == (1, "slower")


def test_no_foscar_row_matched_is_nothing_compared_even_with_baselines(capsys, tmp_path):
    # every FOSCAR row failed in new: the baselines alone must not pass (or fail) the gate
    a = make_run(tmp_path / "a")
    for name, baseline_slow in (("b", 1.0), ("b2", 1.2)):
        b = make_run(tmp_path / name, baseline_slow=baseline_slow)
        df = pd.read_csv(b / "results.csv")
        mine = df["kernel"].str.startswith("foscar")
        df.loc[mine, ["status", "median_us", "p20_us", "p80_us"]] = ["failed", None, None, None]
        df.to_csv(b / "results.csv", index=False)
        code, out, err = run_main(capsys, "compare", a, b, "--format", "quiet")
        assert (code, out.strip()) == (2, "none"), name
    # runs of baselines only are gated on them
    for run in (a, b):
        df = pd.read_csv(run / "results.csv")
        df[~df["kernel"].str.startswith("foscar")].to_csv(run / "results.csv", index=False)
    code, out, err = run_main(capsys, "compare", a, b, "--format", "quiet")
    assert (code, out.strip()) == (1, "slower")


def test_compare_threshold_is_a_fraction_shown_unrounded(capsys, tmp_path):
    from bench.errors import FoscarError
    from bench.study import compare_paths

    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", slow=1.10)
    code, out, err = run_main(capsys, "compare", a, b, "--threshold", "0.025")
    assert "threshold 2.5%" in out
    code, out, err = run_main(capsys, "compare", a, b, "--threshold", "5")  # 5 meant as 5%: refused, not 500%
    assert code == 2 and "--threshold" in err
    for bad in (5.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(FoscarError, match="threshold: expected a fraction from 0 to 1"):
            compare_paths(a, b, bad)


def test_compare_lists_unmatched_rows(capsys, tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", failed=True, drop_xqa=True)
    code, out, err = run_main(capsys, "compare", a, b, "--json")
    assert code == 0, err
    unmatched = json.loads(out)["unmatched"]
    reasons = {(u["series"], u["point"]): u["reason"] for u in unmatched}
    assert "failed in new" in reasons[("foscar-triton/int4/bf16", "b8 x 8K")]
    assert reasons[("flashinfer-xqa", "b8 x 32K")] == "not in new"
    code, out, err = run_main(capsys, "compare", a, b, "--strict", "--format", "quiet")
    assert (code, out.strip()) == (1, "same") and "--strict: " in err and "measured in one run only" in err


def test_strict_passes_rows_untimed_in_both_runs(capsys, tmp_path):
    """A row skipped or failed in both runs (a point the kernel does not support) compares nothing: listed as
    unmatched, but --strict fails only on rows timed in one run. A run with failed rows against itself passes."""
    a = make_run(tmp_path / "a", failed=True)
    code, out, err = run_main(capsys, "compare", a, a, "--json")
    unmatched = json.loads(out)["unmatched"]
    assert code == 0 and unmatched and not any(u["one_sided"] for u in unmatched)
    code, out, err = run_main(capsys, "compare", a, a, "--strict", "--format", "quiet")
    assert (code, out.strip(), err) == (0, "same", "")
    b = make_run(tmp_path / "b", failed=True, drop_xqa=True)  # two XQA rows (cache bits 2, 4) not in b: they fail
    code, out, err = run_main(capsys, "compare", a, b, "--strict", "--format", "quiet")
    assert code == 1 and "--strict: 2 row(s) measured in one run only" in err
    code, out, err = run_main(capsys, "compare", a, b, "--strict")  # the tables too say why on stderr
    assert code == 1 and "--strict: 2 row(s) measured in one run only" in err


def test_compare_groups_many_unmatched_rows_by_series(capsys, tmp_path, monkeypatch):
    import bench.compare

    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", failed=True, drop_xqa=True)
    code, out, err = run_main(capsys, "compare", a, b)
    assert "Unmatched rows (not compared)" in out and "by series" not in out  # few: one line each
    monkeypatch.setattr(bench.compare, "UNMATCHED_ROWS_SHOWN", 1)
    code, out, err = run_main(capsys, "compare", a, b)
    assert "by series" in out and "flashinfer-xqa" in out


@pytest.mark.parametrize("command", [("compare", "{run}", "{bad}"), ("report", "{bad}"), ("export-gab", "{bad}")])
def test_missing_run_dir_is_one_line(capsys, tmp_path, command):
    run = make_run(tmp_path / "run")
    args = [c.format(run=run, bad=tmp_path / "nope") for c in command]
    code, out, err = run_main(capsys, *args)
    _one_line_error(code, err, "run directory not found", "nope")


def test_dir_without_results_is_one_line(capsys, tmp_path):
    run = make_run(tmp_path / "run")
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_main(capsys, "compare", empty, run)
    _one_line_error(code, err, "has no results.csv; pass a run directory written by a foscar command (bench, ablate")
    code, out, err = run_main(capsys, "report", tmp_path)  # a folder of runs (a session's): the runs are named
    _one_line_error(code, err, "has no results.csv; it holds run directories: run;")
    (empty / "results.csv").write_text("a,b\n1,2\n")
    code, out, err = run_main(capsys, "report", empty)
    _one_line_error(code, err, "lacks the column(s)")


# ---------------------------------------------------------------------------
# github-action-benchmark export


def test_export_gab(capsys, tmp_path):
    run = make_run(tmp_path / "run", failed=True)
    code, out, err = run_main(capsys, "export-gab", run)
    assert code == 0, err
    entries = json.loads(out)
    assert len(entries) == 8 * 3 - 1  # 8 FOSCAR rows + 16 baseline rows, one FOSCAR row failed
    for e in entries:
        assert set(e) == {"name", "unit", "value", "range", "extra"}
        assert e["unit"] == "us" and isinstance(e["value"], float) and e["value"] > 0
        assert e["range"].startswith("± ")
    assert len({e["name"] for e in entries}) == len(entries)  # names are unique (charts keyed by name)
    assert any(e["name"].startswith("foscar-triton/int2/bf16 b1 x 8K") for e in entries)

    target = tmp_path / "gab" / "out.json"
    code, out, err = run_main(capsys, "export-gab", run, "--out", target)
    assert code == 0 and json.loads(target.read_text()) == entries


def test_config_note_names_read_floor_apart_as_columns_only():
    """``read_floor`` adds columns and changes no row's measurement: ``foscar compare`` says so instead of calling the
    runs different configurations; with another difference it is named after it."""
    from bench.compare import _config_note

    assert _config_note({"page_size": 16}, {"page_size": 16, "read_floor": True}) == \
        "read_floor differs (it adds columns; the rows are measured the same way)"
    note = _config_note({"page_size": 16}, {"page_size": 64, "read_floor": True})
    assert note.startswith("different configurations: page_size 16 -> 64;") and "read_floor differs too" in note
    assert _config_note({"page_size": 16}, {"page_size": 16}) is None


def _with_floors(run: Path, floor_of_row) -> None:
    """Add ``read_floor_us`` (a ``foscar bench --read-floor`` run's column) to every timed row of ``run``."""
    import pandas as pd

    df = pd.read_csv(run / "results.csv")
    df["read_floor_us"] = [floor_of_row(r) if pd.notna(r.median_us) else None for r in df.itertuples()]
    write_csv(df, run / "results.csv")


def test_compare_floor_ratio_takes_each_runs_read_floor(capsys, tmp_path):
    """Base on one GPU; new on a GPU whose memory reads every row's bytes 10% slower, FOSCAR's rows 10% slower with
    it and FlashInfer's not: the ratio says FOSCAR slower, the ratio over each run's read floor says level."""
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", slow=1.10)
    floors = {}
    _with_floors(a, lambda r: floors.setdefault((r.kernel, r.batch, r.context, r.cache_bits), 0.8 * r.median_us))
    _with_floors(b, lambda r: 1.10 * floors[(r.kernel, r.batch, r.context, r.cache_bits)])
    code, out, err = run_main(capsys, "compare", a, b, "--json")
    result = json.loads(out)
    assert code == 1 and result["verdict"] == "slower"  # judged on the times alone, as before
    ours = [r for r in result["rows"] if r["kernel"] == "foscar-triton"]
    assert all(r["ratio"] == pytest.approx(1.10) and r["floor_ratio"] == pytest.approx(1.0) for r in ours)
    theirs = [r for r in result["rows"] if r["kernel"] != "foscar-triton"]
    assert all(r["floor_ratio"] == pytest.approx(1 / 1.10) for r in theirs)
    assert all(r["new_read_floor_us"] == pytest.approx(1.10 * r["base_read_floor_us"]) for r in result["rows"])
    gm = {g["series"]: g for g in result["geomeans"]}
    assert gm["foscar-triton/int2/bf16"]["floor_ratio"] == pytest.approx(1.0)
    code, out, err = run_main(capsys, "compare", a, b)
    assert "vs floor" in out and "shown, not judged" in out

    # one side without floors: no floor ratio, no column
    c = make_run(tmp_path / "c", slow=1.10)
    code, out, err = run_main(capsys, "compare", a, c, "--json")
    result = json.loads(out)
    assert all(r["floor_ratio"] is None and r["new_read_floor_us"] is None for r in result["rows"])
    assert all(g["floor_ratio"] is None for g in result["geomeans"])
    code, out, err = run_main(capsys, "compare", a, c)
    assert "vs floor" not in out


def test_console_width_of_a_pipe_follows_columns(monkeypatch):
    from bench.tables import PIPE_WIDTH, make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console().width == PIPE_WIDTH  # (pytest's stdout is not a terminal)
    monkeypatch.setenv("COLUMNS", "220")
    assert make_console().width == 220
    monkeypatch.setenv("COLUMNS", "wide")
    assert make_console().width == PIPE_WIDTH


def test_an_empty_speedup_table_says_why():
    from rich.console import Console

    from bench.tables import summary_table

    console = Console(record=True, width=300)
    console.print(summary_table({"geomean_speedup": {"foscar-triton/int2/bf16": None},
                                 "num_points": {"foscar-triton/int2/bf16": 0}}, interpreter=True))
    assert "no point has both a FOSCAR row and a FlashInfer BF16 row timed: no speed-up to take (FlashInfer needs a " \
           "CUDA GPU)" in " ".join(console.export_text().split())  # (the caption wraps at the table's width)
    console = Console(record=True, width=300)
    console.print(summary_table({"geomean_speedup": {"foscar-triton/int2/bf16": 2.0},
                                 "num_points": {"foscar-triton/int2/bf16": 3}}, interpreter=False))
    assert "no point has" not in console.export_text()


def test_compare_table_in_a_narrow_terminal_keeps_ratio_and_verdict(tmp_path):
    """Down to 80 columns the tables are compact (no vertical rules, no "time" column, medians only): the labels wrap,
    the ratio, "vs floor" and the verdict stay whole. FOSCAR's rows come before the baselines', and the baselines'
    ambiguous rows are left to --all (counted in the caption). At 160 columns the full table has the spreads."""
    from rich.console import Console

    from bench.compare import compare_runs, render
    from bench.rundir import load_run

    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b", slow=1.2, baseline_slow=1.2)
    result = compare_runs(load_run(a), load_run(b))
    for r in result["rows"]:
        r["floor_ratio"] = r["ratio"]  # as if both runs had read floors
    foscar_rows = [r for r in result["rows"] if not r["baseline"]]
    foscar_rows[0]["verdict"] = "ambiguous"  # the widest verdict
    for width in (80, 100):
        console = Console(record=True, width=width)
        render(result, console)
        text = console.export_text()
        rows = text[text.index("Rows (FOSCAR's first"):]
        assert "vs floor" in rows and "ambiguous" in rows and "1.200" in rows and "…" not in rows, (width, rows)
        assert "medians only" in " ".join(rows.split())
        assert all(len(line) <= width for line in text.splitlines())
    body = [line for line in rows.splitlines() if line.startswith(" f")]
    kernels = [line.split()[0] for line in body]
    assert kernels[0].startswith("foscar") and any(k.startswith("flashinfer") for k in kernels)
    assert max(i for i, k in enumerate(kernels) if k.startswith("foscar")) < \
        min(i for i, k in enumerate(kernels) if k.startswith("flashinfer"))
    console = Console(record=True, width=160)
    render(result, console)
    assert "base us (p20-p80)" in console.export_text() and "medians only" not in console.export_text()
    result["rows"][-1].update(verdict="ambiguous", baseline=True)  # a baseline row timed at a held-down clock
    console = Console(record=True, width=100)
    render(result, console)
    assert "1 of the baselines' ambiguous; --all lists them" in " ".join(console.export_text().split())


def test_a_run_without_meta_json_takes_its_timing_mode_from_its_rows(tmp_path):
    """compare noted "different timing modes: base cuda_graph, new None" for a run whose meta.json was lost, although
    every row records its timing mode."""
    import shutil

    from bench.compare import compare_runs
    from bench.rundir import load_run

    src = Path(__file__).resolve().parent.parent / "results/2026-12-07-s76/bench-74c6649"
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(src / "results.csv", bare / "results.csv")
    assert load_run(bare).timing_mode == "cuda_graph" == load_run(src).timing_mode
    result = compare_runs(load_run(src), load_run(bare))
    assert not [n for n in result["notes"] if "timing mode" in n], result["notes"]


def test_a_run_without_meta_json_is_the_kind_its_columns_say(tmp_path):
    """foscar report took every run without meta.json for a bench run ("lacks the column(s) kernel; is it a foscar
    bench results.csv?" for an ablation); the results.csv header names the kind."""
    import bench.ablate
    import bench.accuracy
    import bench.eval_model
    import bench.model_speed_study
    from bench.kinds import run_kind
    from bench.results import COLUMNS

    for kind, columns in (("ablate", bench.ablate.COLUMNS), ("accuracy", bench.accuracy.COLUMNS),
                          ("eval-model", bench.eval_model.COLUMNS), ("model-speed", bench.model_speed_study.COLUMNS),
                          ("bench", COLUMNS)):
        run = tmp_path / kind
        run.mkdir()
        (run / "results.csv").write_text(",".join(columns) + "\n")
        assert run_kind(run) == kind
    (tmp_path / "empty").mkdir()
    assert run_kind(tmp_path / "empty") == "bench"
