"""`foscar report` / `foscar compare` dispatch on the study kind in meta.json (bench/kinds.py,
bench/study.py): the kind of old runs, refused mixed pairs and kinds that are not compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.errors import FoscarError
from bench.kinds import ABLATE, ACCURACY, BENCH, EVAL_MODEL, run_kind
from tests.cli_helpers import run_main


def run_dir(path: Path, meta: dict | None) -> Path:
    """A directory with only a meta.json (the kind is read before anything else)."""
    path.mkdir(parents=True)
    if meta is not None:
        (path / "meta.json").write_text(json.dumps(meta))
    return path


def test_kind_of_new_and_old_runs(tmp_path):
    assert run_kind(run_dir(tmp_path / "acc", {"kind": "accuracy"})) == ACCURACY
    assert run_kind(run_dir(tmp_path / "abl", {"kind": "ablate"})) == ABLATE
    # runs from before the field: an ablation lists its settings and points, anything else is a bench run
    assert run_kind(run_dir(tmp_path / "old-abl", {"settings": [{"axis": "split_kv"}], "points": [[1, 64, 2]]})) == ABLATE
    assert run_kind(run_dir(tmp_path / "old-bench", {"config": {}})) == BENCH
    assert run_kind(run_dir(tmp_path / "no-meta", None)) == BENCH


def test_kind_of_committed_runs():
    results = Path(__file__).resolve().parent.parent / "results"
    assert run_kind(results / "2026-11-30-h200-ablate") == ABLATE
    assert run_kind(results / "2026-11-30-h200-accuracy") == ACCURACY
    assert run_kind(results / "2026-11-30-h200-bench") == BENCH


def test_unknown_kind_and_bad_meta_are_errors(tmp_path):
    with pytest.raises(FoscarError, match=r"unknown study kind 'sweep'; expected one of bench, ablate, accuracy"):
        run_kind(run_dir(tmp_path / "x", {"kind": "sweep"}))
    bad = run_dir(tmp_path / "y", None)
    (bad / "meta.json").write_text("{not json")
    with pytest.raises(FoscarError, match="cannot parse"):
        run_kind(bad)


def test_compare_refuses_a_mixed_pair(tmp_path, capsys):
    acc = run_dir(tmp_path / "acc", {"kind": "accuracy"})
    bench = run_dir(tmp_path / "bench", None)
    code, _, err = run_main(capsys, "compare", acc, bench)
    assert code == 2 and err.count("\n") == 1
    assert f"BASE {acc} is an accuracy run (foscar accuracy), NEW {bench} is a bench run (foscar bench)" in err


def test_compare_refuses_kinds_it_does_not_compare(tmp_path, capsys):
    a = run_dir(tmp_path / "a", {"kind": EVAL_MODEL})
    b = run_dir(tmp_path / "b", {"kind": EVAL_MODEL})
    code, _, err = run_main(capsys, "compare", a, b)
    assert code == 2 and "compare takes two bench, ablate or accuracy runs" in err and "eval-model runs" in err


def test_report_draws_only_bench_runs_together(tmp_path, capsys):
    acc = run_dir(tmp_path / "acc", {"kind": "accuracy"})
    bench = run_dir(tmp_path / "bench", None)
    code, _, err = run_main(capsys, "report", bench, acc, "--out", tmp_path / "rep")
    assert code == 2 and f"only bench runs are drawn together; {acc} is an accuracy run" in err


def test_report_draws_a_model_speed_run(tmp_path, capsys):
    import pandas as pd

    from bench.model_speed_study import COLUMNS

    run = run_dir(tmp_path / "speed", {"kind": "model-speed", "model": "configs/hf/tiny-qwen3.json", "note": "",
                                       "shape": {"num_layers": 2}, "device": "NVIDIA H200", "command": "x"})  # fmt: skip
    rows = [{"batch": 1, "context": 8192, "cache": c, "decode_tokens_per_s": t, "speedup_vs_bf16": t / 40.0,
             "status": "ok"} for c, t in (("int2", 60.0), ("int4", 55.0), ("bf16", 40.0))]  # fmt: skip
    pd.DataFrame(rows, columns=COLUMNS).to_csv(run / "results.csv", index=False)
    code, out, err = run_main(capsys, "report", run)
    assert code == 0 and "1 plot (model-speed run)" in out, err
    assert (run / "model_speed.png").read_bytes()[:4] == b"\x89PNG"
    assert "](model_speed.png)" in (run / "report.md").read_text()
