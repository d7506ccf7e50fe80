"""The sweep engine (bench/engine.py) on a toy study, without torch: the run directory and its
meta.json, failure rows, resume (kept rows, failures included), shards, output formats, the GPU
stamped on every row."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.config import config_hash
from bench.engine import OutputFormat, Site, Study, emit, finish_run, run_study, start_run
from bench.errors import FoscarError
from bench.shard import Shard

COLUMNS = ["point", "variant", "value", "status", "error", "gpu_uuid", "hbm_ceiling_tbps"]


class Toy(Study):
    """Points 0..4 x variants a, b; point ``fail`` raises; every value is point * 10 + variant."""

    kind = "toy"

    def __init__(self, fail: int | None = None):
        self.fail, self.measured = fail, []

    def points(self):
        return list(range(5))

    def point_columns(self, point):
        return {"point": point}

    def row_keys(self, point):
        return [("a",), ("b",)]

    def row_key(self, row):
        return (row["variant"],)

    def measure(self, point):
        self.measured.append(point)
        if point == self.fail:
            raise RuntimeError(f"point {point}\n  broke")
        return [dict(point=point, variant=v, value=point * 10 + i, status="ok") for i, v in enumerate("ab")]

    def failure_rows(self, point, reason):
        return [dict(point=point, variant=v, status="error", error=reason) for v in "ab"]

    def frame(self, rows):
        return pd.DataFrame(rows, columns=COLUMNS)

    @staticmethod
    def read(path):
        return pd.read_csv(path)

    def summarize(self, df):
        return {"rows": len(df), "ok": int((df["status"] == "ok").sum())}

    def problems(self, df):
        return [f"{n} row(s) raised" for n in [int((df["status"] == "error").sum())] if n]


CONFIG = {"points": 5, "variants": ["a", "b"]}


def manifest(config=CONFIG) -> dict:
    return {"command": "toy", "config": config, "config_hash": config_hash(config), "gpu": None}


def run_toy(study, out, shard=None, site=None):
    run = start_run(study, out, manifest(), shard, site=site)
    df = run_study(study, run)
    return run, df, finish_run(study, run, df)


def test_a_point_that_raises_gets_failure_rows_and_the_sweep_goes_on(tmp_path):
    study = Toy(fail=2)
    run, df, summary = run_toy(study, tmp_path / "run")
    assert study.measured == [0, 1, 2, 3, 4]
    failed = df[df["point"] == 2]
    assert list(failed["status"]) == ["error"] * 2 and list(failed["error"]) == ["RuntimeError: point 2 broke"] * 2
    assert summary == {"rows": 10, "ok": 8, "problems": ["2 row(s) raised"]}
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert (meta["kind"], meta["grid_points"], meta["shard"], meta["config_hash"]) == ("toy", 5, None, config_hash(CONFIG))
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == summary
    written = pd.read_csv(tmp_path / "run" / "results.csv")
    site = ["gpu_uuid", "hbm_ceiling_tbps"]  # a CPU session: empty (None in df, NaN read back)
    assert written[site].isna().all().all() and df[site].isna().all().all()
    pd.testing.assert_frame_equal(written.drop(columns=site), df.reset_index(drop=True).drop(columns=site),
                                  check_dtype=False)  # fmt: skip


def test_resume_keeps_finished_points_and_failures_and_runs_the_rest(tmp_path):
    out = tmp_path / "run"
    _, first, _ = run_toy(Toy(fail=2), out)
    partial = first[first["point"] != 3]  # point 3 lost: as after a crash
    partial.to_csv(out / "results.csv", index=False)
    again = Toy()
    run, df, _ = run_toy(again, out)
    assert again.measured == [3]  # the failure rows of point 2 are a result too
    assert list(df["point"]) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    meta = json.loads((out / "meta.json").read_text())
    assert [r["points_done_before"] for r in meta["resumes"]] == [4]


def test_every_row_records_the_gpu_of_the_session_that_measured_it(tmp_path):
    """Measured and failure rows get the session's GPU; rows kept on resume keep their own; the
    ceiling only where the study asks for it (bench's sol_fraction); a CPU session leaves them empty."""
    out = tmp_path / "run"
    _, first, _ = run_toy(Toy(fail=2), out, site=Site("GPU-aaaa", 4.0))
    assert set(first["gpu_uuid"]) == {"GPU-aaaa"} and first["hbm_ceiling_tbps"].isna().all()
    first[first["point"] != 3].to_csv(out / "results.csv", index=False)
    _, df, _ = run_toy(Toy(), out, site=Site("GPU-bbbb"))
    assert list(df["gpu_uuid"]) == ["GPU-aaaa"] * 6 + ["GPU-bbbb"] * 2 + ["GPU-aaaa"] * 2
    assert list(pd.read_csv(out / "results.csv")["gpu_uuid"]) == list(df["gpu_uuid"])

    class WithCeiling(Toy):
        site_columns = ("gpu_uuid", "hbm_ceiling_tbps")

    _, df, _ = run_toy(WithCeiling(fail=1), tmp_path / "ceiling", site=Site("GPU-cccc", 4.5))
    assert set(df["gpu_uuid"]) == {"GPU-cccc"} and set(df["hbm_ceiling_tbps"]) == {4.5}
    _, df, _ = run_toy(WithCeiling(), tmp_path / "cpu")
    assert df["gpu_uuid"].isna().all() and df["hbm_ceiling_tbps"].isna().all()


def test_a_shard_runs_its_points_and_resumes_only_as_that_shard(tmp_path):
    study = Toy()
    run, df, _ = run_toy(study, tmp_path / "s1", Shard(1, 2))
    assert study.measured == [1, 3] and run.indices == [1, 3]
    assert json.loads((tmp_path / "s1" / "meta.json").read_text())["shard"] == {"k": 1, "n": 2, "grid_points": 5,
                                                                               "points": [1, 3]}  # fmt: skip
    with pytest.raises(FoscarError, match="holds shard 1/2, this command runs shard 0/2"):
        start_run(Toy(), tmp_path / "s1", manifest(), Shard(0, 2))
    with pytest.raises(FoscarError, match="shard 6 would run none"):
        start_run(Toy(), tmp_path / "s6", manifest(), Shard(6, 7))


def test_another_config_is_refused(tmp_path):
    run_toy(Toy(), tmp_path / "run")
    other = {**CONFIG, "points": 4}
    with pytest.raises(FoscarError, match=r"another config: .*\(differs in: points\)"):
        start_run(Toy(), tmp_path / "run", manifest(other))


def test_output_formats(tmp_path, capsys):
    summary = {"rows": 2, "problems": ["one"]}
    shown = []
    emit(OutputFormat.json, tmp_path, summary, object(), lambda: shown.append(1))
    out, err = capsys.readouterr()
    assert json.loads(out) == summary and "problem: one (exit code 3)" in err
    emit(OutputFormat.quiet, tmp_path, summary, None)
    assert capsys.readouterr().out.strip() == str(tmp_path)
    emit(OutputFormat.table, tmp_path, {"problems": []}, object(), lambda: shown.append(1))
    assert shown == [1] and capsys.readouterr() == ("", "")
