"""bench.ab_rounds: a whole A/B probe (builds side by side, alternated rounds, the table) with a stand-in for the
subprocesses; the builds and rounds themselves run on the GPU machine."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from bench import ab_rounds
from bench.ab_rounds import (RoundResult, Variant, add_run_env, add_run_flags, parse_order, parse_variant,
                             rounds)


def test_parse_variant_forms_and_errors():
    assert parse_variant("t:") == Variant("t")
    assert parse_variant("l:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_L2_ONLY=1") == Variant(
        "l", ("FOSCAR_ONLY_HEAD_DIM=128", "FOSCAR_L2_ONLY=1"))
    assert parse_variant("old:@old/csrc") == Variant("old", (), "old/csrc")
    assert parse_variant("s3:FOSCAR_STAGES=3@x").env({})["FOSCAR_NVCC_DEFINES"] == "FOSCAR_STAGES=3"
    for bad, words in [("t", "expected NAME:DEFINES"), (":X=1", "the name must be"), ("a/b:", "the name must be"),
                       ("t:A=1,,B=2", "empty define")]:
        with pytest.raises(ValueError, match=words):
            parse_variant(bad)


def test_run_flags_go_to_their_variant_only():
    s, o = Variant("s"), Variant("o")
    assert add_run_flags([s, o], ["o:--no-sampler", "o:--no-sampler"]) == [s, Variant("o", run_flags=("--no-sampler",))]
    for bad, words in [("o", "expected NAME:FLAG"), ("x:--no-sampler", "x not among the variants s, o"),
                       ("o:--limit-s", "not one of bench.ab run's per-round flags --no-sampler, --query-copy")]:
        with pytest.raises(ValueError, match=words):
            add_run_flags([s, o], [bad])


def test_run_env_goes_to_its_variant_only_and_keeps_the_build():
    s, o = Variant("s", ("A=1",)), Variant("o", ("A=1",), run_flags=("--no-sampler",))
    got = add_run_env([s, o], ["o:FOSCAR_SHORT_CHUNKS=1", "o:FOSCAR_SHORT_CHUNKS=0", "o:FOSCAR_MAX_CTAS_PER_SM=2"])
    assert got[0] == s and got[1].run_flags == ("--no-sampler",) and got[1].build == s.build
    assert got[1].run_env == (("FOSCAR_SHORT_CHUNKS", "0"), ("FOSCAR_MAX_CTAS_PER_SM", "2"))
    env = got[1].env({"FOSCAR_SHORT_CHUNKS": "1"})
    assert env["FOSCAR_SHORT_CHUNKS"] == "0" and env["FOSCAR_NVCC_DEFINES"] == "A=1"
    assert "FOSCAR_SHORT_CHUNKS" not in got[0].env({})
    for bad, words in [("o", "expected NAME:VAR=VALUE"), ("o:FOSCAR_X", "expected NAME:VAR=VALUE"),
                       ("x:FOSCAR_X=1", "x not among the variants s, o"), ("o:PATH=/", "a FOSCAR_\\* setting"),
                       ("o:FOSCAR_NVCC_DEFINES=B=1", "not FOSCAR_NVCC_DEFINES or FOSCAR_NVCC_FLAGS or FOSCAR_CSRC"),
                       ("o:FOSCAR_NVCC_FLAGS=-DX", "a variant's build comes from its defines and @source")]:
        with pytest.raises(ValueError, match=words):
            add_run_env([s, o], [bad])


def test_order_and_rounds():
    assert parse_order("t l, l t", ["t", "l"]) == ["t", "l", "l", "t"]
    assert rounds(["t", "l", "l", "t", "t", "l"]) == [("t", 0), ("l", 0), ("l", 1), ("t", 1), ("t", 2), ("l", 2)]
    with pytest.raises(ValueError, match="x not among the variants t, l"):
        parse_order("t x", ["t", "l"])
    with pytest.raises(ValueError, match="no labels"):
        parse_order(" ", ["t"])


class FakeRun:
    """``subprocess.run`` stand-in: builds fail for the names in ``fail_builds``; a round writes one row of
    ``bench.ab run``'s columns whose time is ``us[label]`` and takes ``seconds`` of the fake clock."""

    def __init__(self, us: dict[str, float], fail_builds=(), seconds: float = 10.0):
        self.us, self.fail_builds, self.seconds = us, set(fail_builds), seconds
        self.now = 0.0
        self.calls: list[tuple[list[str], dict]] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, cmd, env=None, stdout=None, stderr=None, timeout=None):
        self.calls.append((cmd, env))
        if cmd[1] == "-c":  # a build
            name = next(n for n in self.us if f"build-{n}.log" in stdout.name)
            return subprocess.CompletedProcess(cmd, 1 if name in self.fail_builds else 0)
        label, rnd, out = cmd[4], int(cmd[5]), cmd[6]
        self.now += self.seconds
        if timeout is not None and self.seconds > timeout:
            raise subprocess.TimeoutExpired(cmd, timeout)
        pd.DataFrame([dict(bits=2, batch=8, context=32768, workload="uniform", paged=0, group_size=128, m=label,
                           rnd=rnd, median_us=self.us[label], err=1e-3, sha="abc", nan=False, error="")]
                     ).to_csv(out, index=False)
        return subprocess.CompletedProcess(cmd, 0)


def test_builds_share_the_cpus_and_name_the_failures(tmp_path):
    fake = FakeRun({"t": 1.0, "l": 1.0}, fail_builds={"l"})
    variants = [Variant("t", ("FOSCAR_ONLY_HEAD_DIM=128",)), Variant("l", ("FOSCAR_L2_ONLY=1",))]
    assert ab_rounds.build_all(variants, tmp_path, run=fake, jobs=16) == ["l"]
    envs = {env["FOSCAR_NVCC_DEFINES"]: env["MAX_JOBS"] for _, env in fake.calls}
    assert envs == {"FOSCAR_ONLY_HEAD_DIM=128": "8", "FOSCAR_L2_ONLY=1": "8"}
    assert (tmp_path / "build-t.log").exists() and (tmp_path / "build-l.log").exists()


def test_variants_of_one_build_are_built_once(tmp_path):
    fake = FakeRun({"s": 1.0, "o": 1.0, "l": 1.0}, fail_builds={"s"})
    variants = [Variant("s", ("A=1",)), Variant("o", ("A=1",), run_flags=("--no-sampler",)), Variant("l", ("B=1",))]
    assert ab_rounds.build_all(variants, tmp_path, run=fake, jobs=16) == ["s", "o"]
    assert sorted(env["FOSCAR_NVCC_DEFINES"] for _, env in fake.calls) == ["A=1", "B=1"]
    assert "the build of variant s" in (tmp_path / "build-o.log").read_text()


def test_a_variants_run_flags_reach_its_rounds_only(tmp_path):
    fake = FakeRun({"s": 46.0, "o": 46.0}, seconds=1.0)
    variants = add_run_flags([Variant("s"), Variant("o")], ["o:--no-sampler", "s:--query-copy", "o:--query-copy"])
    ab_rounds.run_rounds(variants, ["s", "o"], ["2x8x32768"], tmp_path, limit_s=100, round_s=20,
                         run=fake.__call__, clock=fake.clock, start=0.0)
    assert [c[7:] for c, _ in fake.calls] == [["--point", "2x8x32768", "--query-copy"],
                                             ["--point", "2x8x32768", "--no-sampler", "--query-copy"]]


def test_rounds_in_order_with_each_variants_environment_until_time_runs_out(tmp_path):
    fake = FakeRun({"t": 46.0, "l": 41.0}, seconds=10.0)
    variants = [Variant("t", ("A=1",)), Variant("l", ("A=1", "FOSCAR_L2_ONLY=1"))]
    res = ab_rounds.run_rounds(variants, ["t", "l", "l", "t", "t", "l"], ["2x8x32768"], tmp_path, limit_s=65,
                               round_s=20, run=fake.__call__, clock=fake.clock, start=0.0)
    # 10 s a round: rounds start with 65, 55, 45, 35, 25 s left; the sixth would have 15 < 20
    assert [(r.label, r.rnd, r.status) for r in res] == [("t", 0, 0), ("l", 0, 0), ("l", 1, 0), ("t", 1, 0),
                                                         ("t", 2, 0), ("l", 2, "not run")]
    assert not res[-1].ok and "not run" in res[-1].line()
    cmd, env = fake.calls[1]
    assert cmd[1:7] == ["-m", "bench.ab", "run", "l", "0", str(tmp_path / "ab-l-0.csv")]
    assert cmd[7:] == ["--point", "2x8x32768"] and env["FOSCAR_NVCC_DEFINES"] == "A=1 FOSCAR_L2_ONLY=1"
    text, ok = ab_rounds.write_table(tmp_path, "t")
    assert ok and "l/t" in text and "0.891" in text
    assert (tmp_path / "ab-table.txt").read_text().startswith(text.splitlines()[0])


def test_a_round_past_its_timeout_is_recorded_and_the_rest_go_on(tmp_path):
    fake = FakeRun({"t": 46.0}, seconds=100.0)
    res = ab_rounds.run_rounds([Variant("t")], ["t", "t"], ["2x8x32768"], tmp_path, limit_s=90, round_s=20,
                               run=fake.__call__, clock=fake.clock, start=0.0)
    assert [r.status for r in res] == ["timeout", "not run"]
    assert ab_rounds.write_table(tmp_path, "t") == ("no table: ab table: no rows", False)


def test_main_builds_runs_and_writes_the_table(tmp_path, monkeypatch, capsys):
    fake = FakeRun({"t": 46.0, "l": 41.0}, seconds=0.0)
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    out = tmp_path / "o"
    rc = ab_rounds.main([str(out), "--variant", "t:FOSCAR_ONLY_HEAD_DIM=128", "--variant",
                         "l:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_L2_ONLY=1", "--order", "t l l t", "--point", "2x8x32768"])
    text = capsys.readouterr().out
    assert rc == 0 and "built 2 of 2 variants" in text and "l round 1: rc=0" in text and "0.891" in text
    assert sorted(f.name for f in out.glob("ab-*.csv")) == ["ab-l-0.csv", "ab-l-1.csv", "ab-t-0.csv", "ab-t-1.csv"]
    assert all(c[0][0] == sys.executable for c in fake.calls)


def test_main_query_copy_reaches_every_variant_once(tmp_path, monkeypatch):
    fake = FakeRun({"s": 46.0, "o": 46.0}, seconds=0.0)
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    assert ab_rounds.main([str(tmp_path), "--variant", "s:", "--variant", "o:", "--order", "s o", "--point",
                           "2x8x32768", "--query-copy", "--run-flag", "o:--query-copy",
                           "--run-flag", "o:--no-sampler"]) == 0
    rounds_ = [c for c, _ in fake.calls if c[1] == "-m"]
    assert [c[7:] for c in rounds_] == [["--point", "2x8x32768", "--query-copy"],
                                        ["--point", "2x8x32768", "--query-copy", "--no-sampler"]]


def test_main_leaves_out_a_variant_whose_build_failed(tmp_path, monkeypatch, capsys):
    fake = FakeRun({"t": 46.0, "l": 41.0}, fail_builds={"t"}, seconds=0.0)
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    rc = ab_rounds.main([str(tmp_path), "--variant", "t:", "--variant", "l:FOSCAR_L2_ONLY=1", "--order", "t l",
                         "--point", "2x8x32768"])
    text = capsys.readouterr().out
    assert rc == 1 and "failed: t (see build-NAME.log)" in text and "l round 0: rc=0" in text
    assert "t round" not in text and not (tmp_path / "ab-t-0.csv").exists()


@pytest.mark.parametrize("args, words", [
    (["--variant", "t:", "--variant", "t:X=1", "--order", "t", "--point", "2x8x32768"], "names must differ"),
    (["--variant", "t:", "--order", "t l", "--point", "2x8x32768"], "l not among the variants t"),
    (["--variant", "t:", "--order", "t", "--point", "3x8x32768"], "bits 3, expected 2 or 4"),
    (["--variant", "t", "--order", "t", "--point", "2x8x32768"], "expected NAME:DEFINES"),
    (["--variant", "t:", "--order", "t", "--point", "2x8x32768", "--limit-s", "-5"], "expected 0 < round-s <= limit-s"),
    (["--variant", "t:", "--order", "t", "--point", "2x8x32768", "--limit-s", "20"], "expected 0 < round-s <= limit-s"),
    (["--variant", "t:", "--order", "t", "--point", "2x8x32768", "--run-flag", "t:--fast"], "per-round flags"),
])
def test_main_refuses_bad_arguments_before_any_build(tmp_path, monkeypatch, capsys, args, words):
    fake = FakeRun({"t": 1.0})
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    assert ab_rounds.main([str(tmp_path / "o"), *args]) == 2
    assert words in capsys.readouterr().err and fake.calls == [] and not (tmp_path / "o").exists()


def test_main_refuses_a_folder_with_earlier_rounds(tmp_path, monkeypatch, capsys):
    fake = FakeRun({"t": 1.0})
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    (tmp_path / "ab-old-0.csv").write_text("m\n")
    assert ab_rounds.main([str(tmp_path), "--variant", "t:", "--order", "t", "--point", "2x8x32768"]) == 2
    assert "already holds ab-old-0.csv" in capsys.readouterr().err and fake.calls == []


def test_a_define_that_is_no_knob_of_the_kernel_is_refused_before_any_build(tmp_path, monkeypatch, capsys):
    """A misspelt knob (FOSCAR_WAVE_FI) built an extension of its own from the default kernel: the A/B timed the
    default against itself. Every define must be a knob of the variant's source (decode_cuda.kernel_knobs)."""
    fake = FakeRun({"off": 46.0, "rot": 46.0}, seconds=0.0)
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    rc = ab_rounds.main([str(tmp_path / "o"), "--variant", "off:FOSCAR_ONLY_HEAD_DIM=128", "--variant",
                         "rot:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_WAVE_FI=1", "--order", "off rot",
                         "--point", "2x8x32768"])
    err = capsys.readouterr().err
    assert rc == 2 and "--variant rot: FOSCAR_WAVE_FI is no knob of the kernel in" in err and not fake.calls
    assert "FOSCAR_WAVE_FIT" in err  # the knobs are listed
    other = tmp_path / "csrc"
    other.mkdir()
    (other / "k.cuh").write_text("#ifndef FOSCAR_OLD_KNOB\n#define FOSCAR_OLD_KNOB 0\n#endif\n")
    ab_rounds.check_defines([Variant("old", ("FOSCAR_OLD_KNOB=1",), str(other))])  # another tree's own knobs
    with pytest.raises(ValueError, match="FOSCAR_WAVE_FIT is no knob of the kernel in"):
        ab_rounds.check_defines([Variant("old", ("FOSCAR_WAVE_FIT=1",), str(other))])


def test_odd_rounds_time_the_points_in_reverse(tmp_path, monkeypatch):
    """Every round timed the points in the given order, so a capacity variant always ran right after its base: a
    label's odd rounds reverse it (rounds of one number, which the table pairs, keep one order)."""
    fake = FakeRun({"off": 46.0, "rot": 46.0}, seconds=0.0)
    monkeypatch.setattr(ab_rounds.subprocess, "run", fake)
    assert ab_rounds.main([str(tmp_path), "--variant", "off:", "--variant", "rot:", "--order", "off rot rot off",
                           "--point", "2x8x32768", "--point", "2x8x32768:cap33024"]) == 0
    points = [[a for a in c[7:] if a != "--point"] for c, _ in fake.calls if c[1] == "-m"]
    labels = [c[4:6] for c, _ in fake.calls if c[1] == "-m"]
    assert labels == [["off", "0"], ["rot", "0"], ["rot", "1"], ["off", "1"]]
    forward, backward = ["2x8x32768", "2x8x32768:cap33024"], ["2x8x32768:cap33024", "2x8x32768"]
    assert points == [forward, forward, backward, backward]
