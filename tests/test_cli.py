"""The `foscar` command line: help, argument errors, the no-GPU message, and a smoke run end to end."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

import bench.run
import foscar_cli
from bench.results import COLUMNS
from tests.cli_helpers import run_main, H200

REPO = Path(__file__).resolve().parent.parent






def test_help():
    runner = CliRunner()
    top = runner.invoke(foscar_cli.app, ["--help"])
    assert top.exit_code == 0
    assert "bench" in top.output
    sub = runner.invoke(foscar_cli.app, ["bench", "--help"])
    assert sub.exit_code == 0
    for flag in ("--arch", "--bits", "--batch", "--context", "--config", "--out", "--smoke"):
        assert flag in sub.output


@pytest.mark.parametrize(
    "args, needle",
    [
        (["bench", "--bits", "3"], "'3' is not one of"),
        (["bench", "--arch", "x100"], "'x100' is not one of"),
        (["bench", "--batch", "0"], "--batch"),
    ],
)
def test_bad_arguments_are_usage_errors(args, needle):
    result = CliRunner().invoke(foscar_cli.app, args)
    assert result.exit_code == 2
    assert needle in result.output


def _one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


def test_no_gpu_without_smoke_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, out, err = run_main(capsys, "bench", "--out", str(tmp_path / "run"))
    _one_line_error(code, err, "no CUDA GPU detected", "--smoke")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "nope"], "unknown model 'nope'; known: "),
        (["--config", "does-not-exist.toml"], "config file not found: does-not-exist.toml"),
    ],
)
def test_a_bad_model_or_config_is_named_before_the_gpu_check(capsys, monkeypatch, tmp_path, args, needle):
    """Without a GPU, --arch h100 with a bad --model or --config reports that, not "no CUDA GPU detected"."""
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, out, err = run_main(capsys, "bench", "--arch", "h100", "--out", str(tmp_path / "run"), *args)
    _one_line_error(code, err, needle)
    assert "no CUDA GPU" not in err
    assert not (tmp_path / "run").exists()


def test_b200_on_hopper_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(bench.run, "detect_device", lambda: H200)
    code, out, err = run_main(capsys, "bench", "--arch", "b200", "--out", str(tmp_path / "run"))
    _one_line_error(code, err, "--arch b200 needs an sm_100", "detected NVIDIA H200 (sm_90)")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--config", "does-not-exist.toml"], "config file not found: does-not-exist.toml"),
        (["--group-size", "48"], "--group-size 48: expected one of 32, 64, 128"),
        (["--kernel", "nope"], "--kernel 'nope': expected one of foscar-triton"),
        (["--operand", "int8"], "--operand 'int8': expected one of bf16, fp8"),
    ],
)
def test_config_errors_are_one_line(capsys, monkeypatch, tmp_path, args, needle):
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, out, err = run_main(capsys, "bench", "--smoke", "--out", str(tmp_path / "run"), *args)
    _one_line_error(code, err, needle)


def test_bad_config_key_is_one_line(capsys, monkeypatch, tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[sweep]\nbatchs = [1]\n")
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, out, err = run_main(capsys, "bench", "--smoke", "--config", str(cfg), "--out", str(tmp_path / "run"))
    _one_line_error(code, err, "unknown key [sweep].batchs")


def test_debug_shows_the_exception(capsys, monkeypatch, tmp_path):
    from bench.errors import FoscarError

    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    with pytest.raises(FoscarError, match="no CUDA GPU detected"):
        foscar_cli.main(["bench", "--debug", "--out", str(tmp_path / "run")])


def test_debug_is_per_invocation(capsys, tmp_path):
    """--debug (on the root or the command) lives in the invocation's typer context, not in the module."""
    from bench.errors import FoscarError

    missing = tmp_path / "missing"
    with pytest.raises(FoscarError, match="run directory not found"):
        foscar_cli.main(["--debug", "compare", str(missing), str(missing)])
    code, _, err = run_main(capsys, "compare", missing, missing)  # the next call: one line again
    assert code == 2 and err.startswith("error: run directory not found")


def test_help_choices_come_from_the_presets():
    import typer

    from bench.config import SUPPORTED_GROUP_SIZES, model_names

    commands = typer.main.get_command(foscar_cli.app).commands
    helps = {(c, p.opts[0]): p.help for c in ("bench", "eval-model") for p in commands[c].params if p.opts}
    assert ", ".join(model_names()) in helps[("bench", "--model")] and len(model_names()) >= 3
    assert ", ".join(str(g) for g in SUPPORTED_GROUP_SIZES) in helps[("eval-model", "--group-size")]


def test_refuses_to_overwrite_results(capsys, monkeypatch, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.csv").write_text("kernel\n")
    monkeypatch.setattr(bench.run, "detect_device", lambda: None)
    code, out, err = run_main(capsys, "bench", "--smoke", "--out", str(run))
    _one_line_error(code, err, "already holds results.csv")


def test_smoke_run_writes_results(tmp_path):
    """`foscar bench --smoke` in a fresh process (the interpreter must be chosen before triton loads)."""
    out = tmp_path / "smoke"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, "-m", "foscar_cli", "bench", "--smoke", "--out", str(out), "--format", "quiet"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == str(out)

    df = pd.read_csv(out / "results.csv")
    assert list(df.columns) == COLUMNS
    ours = df[df["kernel"] == "foscar-triton"]
    assert sorted(ours["bits"].unique().tolist()) == [2, 4]
    assert (ours["grid"] == "sweep").sum() == 2 * 2 * 2  # batch {1, 2} x context {17, 64} x bits {2, 4}
    ragged = ours[ours["grid"] == "ragged"]  # the smoke preset's [[ragged]] point, at int2 and int4
    assert len(ragged) == 2 and set(ragged["lengths"]) == {"64,17"} and set(ragged["capacity"]) == {80}
    assert (ours["status"] == "ok").all(), ours[["status", "error"]]
    assert ours["max_rel_err"].map(math.isfinite).all()
    assert (ours["max_rel_err"] < 2e-2).all()
    assert (ours["median_us"] > 0).all()
    assert (ours["checked_rows"] == "all").all()
    # every FlashInfer row says why it did not run, or ran and was checked
    fi = df[df["kernel"].str.startswith("flashinfer")]
    assert set(fi["status"]) <= {"ok", "failed", "error", "skipped"}
    assert fi.loc[fi["status"] != "ok", "error"].notna().all()

    meta = json.loads((out / "meta.json").read_text())
    assert meta["smoke"] is True
    assert meta["config"]["head_dim"] == 64
    assert {"torch", "triton", "flashinfer", "cuda"} <= set(meta["versions"])
    assert {"commit", "dirty"} <= set(meta["git"])
    assert meta["command"].startswith("foscar bench --smoke")
    build = meta["cuda_kernel_build"]  # how the CUDA kernel is (or would be) built: no experiment knob here
    assert build["default_build"] is True and build["csrc"] is None and build["merge"] == "fused"
    assert "-O3" in build["nvcc_flags"] and len(build["source_hash"]) == 12
    if meta["gpu"] is None:
        assert meta["triton_interpreter"] is True
        assert "not a performance number" in meta["timing"]
        assert (ours["timing_mode"] == "interpreter").all()

    summary = json.loads((out / "summary.json").read_text())
    assert {"foscar-triton/int2/bf16", "foscar-triton/int4/bf16"} <= set(summary["geomean_speedup"])
    cuda = df[df["kernel"] == "foscar-cuda"]
    if meta["gpu"] is None:  # the sm_90 CUDA kernel cannot run here: skipped with the reason
        assert (cuda["status"] == "skipped").all() and cuda["error"].str.contains("CUDA").all()
    assert set(summary["num_points"]) == set(summary["geomean_speedup"])


def test_flags_reach_the_options_dataclasses(monkeypatch, capsys, tmp_path):
    """bench, accuracy and eval-model build their options from the parsed flags by name
    (bench.cli.options.build_options): renamed parameters, list flags, enum choices and defaults."""
    import bench.accuracy
    import bench.eval_model
    from bench.run import BenchOptions, OutputFormat

    seen = {}

    def keep(name):
        return lambda opts: seen.setdefault(name, opts) and None  # the options; returns None (nothing ran)

    monkeypatch.setattr(bench.run, "run_bench", keep("bench"))
    monkeypatch.setattr(bench.accuracy, "run_accuracy", keep("accuracy"))
    monkeypatch.setattr(bench.eval_model, "run_eval_model", keep("eval"))

    code, _, err = run_main(capsys, "bench", "--kernel", "foscar-triton", "--bits", "2", "--batch", "8", "--batch", "16",
                            "--grid", "sweep", "--num-qo-heads", "16", "--workload-seed", "3", "--json")  # fmt: skip
    assert code == 0, err
    opts = seen["bench"]
    assert (opts.kernels, opts.bits, opts.batch, opts.grids) == (["foscar-triton"], [2], [8, 16], ["sweep"])
    assert (opts.num_qo_heads, opts.workload_seed, opts.output) == (16, 3, OutputFormat.json)
    assert (opts.operand, opts.context, opts.group_size, opts.shard) == ([], [], None, None)
    assert opts.argv[:2] == ["foscar", "bench"] and isinstance(opts, BenchOptions)
    assert opts.read_floor is None  # neither flag: the config's [timing] read_floor
    for flag, want in (("--read-floor", True), ("--no-read-floor", False)):
        seen.clear()
        code, _, err = run_main(capsys, "bench", "--smoke", flag)
        assert code == 0 and seen["bench"].read_floor is want, (flag, err)
    code, _, err = run_main(capsys, "bench", "--smoke", "--read-floor", "--no-read-floor")
    assert code == 2 and "--read-floor and --no-read-floor: pass one of them" in err

    code, _, err = run_main(capsys, "accuracy", "--group-size", "32", "--rotation", "hadamard", "--data", "gaussian",
                            "--kernel", "foscar-triton", "--num-sink", "0", "--no-plots", "--out", tmp_path / "a")  # fmt: skip
    assert code == 0, err
    acc = seen["accuracy"]
    assert (acc.group_sizes, acc.rotations, acc.data, acc.kernels) == ([32], ["hadamard"], ["gaussian"], ["foscar-triton"])
    assert (acc.num_sink, acc.num_recent, acc.plots, acc.bits, acc.out) == (0, None, False, [], tmp_path / "a")

    code, _, err = run_main(capsys, "eval-model", "--model", "m", "--sink", "4", "--rotation", "hadamard")
    assert code == 0, err
    ev = seen["eval"]
    assert (ev.bits, ev.group_sizes, ev.num_sink, ev.num_recent) == ([4], [32], 4, 0)
    assert (ev.rotation, ev.backend, ev.model, ev.plots) == ("hadamard", "auto", "m", True)


def test_smoke_with_an_explicit_arch_is_refused(capsys):
    # --smoke runs its own grid: an --arch beside it was dropped without a word (a newcomer review)
    for extra in (["--dry-run"], []):
        code, out, err = run_main(capsys, "bench", "--smoke", "--arch", "h200", *extra)
        assert code == 2 and "--arch h200 picks configs/h200.toml: pass one of them" in err


def test_out_of_another_commands_run_and_a_directory_as_config_say_so(capsys, tmp_path):
    run = tmp_path / "acc"
    run.mkdir()
    (run / "results.csv").write_text("a\n1\n")
    (run / "meta.json").write_text('{"kind": "accuracy", "config_hash": "x"}')
    code, out, err = run_main(capsys, "bench", "--smoke", "--dry-run", "--out", run)
    assert code == 2 and "holds a foscar accuracy run, not a foscar bench one: pass a new --out DIR" in err
    code, out, err = run_main(capsys, "bench", "--config", tmp_path, "--dry-run")
    assert code == 2 and "a directory; expected a TOML file" in err


def test_command_help_is_reflowed_for_rich():
    """typer's rich help keeps a docstring's line breaks (at 80 columns: "(--grid" / "picks)" on two half-filled
    lines); every command's help is its docstring with each paragraph on one line, examples and blank lines kept."""
    from bench.cli.app import app, reflow

    assert reflow("""One
    two three.

    Para two
    goes on.

        indented example
        second example
    Tail\f
    hidden
    part""") == "One two three.\n\nPara two goes on.\n\n    indented example\n    second example\nTail\f\nhidden part"
    assert reflow("Items:\n- one\n  more\n- two") == "Items:\n- one\n  more\n- two"
    for info in app.registered_commands:
        lines = info.help.split("\n")
        for prev, line in zip(lines, lines[1:]):
            assert not (prev.strip() and line.strip() and not prev.startswith(" ") and not line.startswith((" ", "- ", "* "))
                        and "\f" not in prev + line), (info.callback.__name__, prev, line)


def _enum_options():
    """(command, flag, enum) for every option of every command whose values are an Enum's (one or a list)."""
    import typing
    from enum import Enum

    from bench.cli.app import app

    found = []
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        hints = typing.get_type_hints(info.callback)
        command = typer.main.get_command(app).commands[name]
        for param in command.params:
            inner = hints.get(param.name)
            while typing.get_args(inner) and not (isinstance(inner, type) and issubclass(inner, Enum)):
                inner = next(a for a in typing.get_args(inner) if a is not type(None))
            if isinstance(inner, type) and issubclass(inner, Enum):
                found.append((name, param.opts[0], inner))
    return found


def test_every_choice_option_refuses_a_bad_value_in_clicks_words():
    """typer coerces an Enum option through pydantic, whose message reads "Value error, 'h300' is not one of ...";
    every choice option of every command takes :func:`bench.cli.options.enum_parser` instead, and a good value
    still parses."""
    from bench.cli.app import app

    found = _enum_options()
    flags = {(c, f) for c, f, _ in found}
    assert {("bench", "--arch"), ("bench", "--bits"), ("compare", "--format"), ("accuracy", "--rotation")} <= flags
    runner = CliRunner()
    for command, flag, enum in found:
        result = runner.invoke(app, [command, flag, "zz-bad"], terminal_width=200, env={"COLUMNS": "200"})
        allowed = ", ".join(repr(m.value) for m in enum)
        assert result.exit_code == 2, (command, flag, result.output)
        assert f"'zz-bad' is not one of {allowed}." in result.output, (command, flag, result.output)
        assert "Value error" not in result.output, (command, flag, result.output)
        helped = runner.invoke(app, [command, "--help"], terminal_width=200, env={"COLUMNS": "200"})
        assert "<" + "|".join(m.value for m in enum) + ">" in helped.output, (command, flag)


def test_a_choice_option_parses_to_its_enum_members(capsys):
    from bench.cli.options import Bits, enum_parser
    from bench.engine import OutputFormat

    assert enum_parser(Bits)("4") is Bits.int4
    assert enum_parser(OutputFormat)(OutputFormat.json) is OutputFormat.json
    with pytest.raises(typer.BadParameter, match=r"'8' is not one of '2', '4'\."):
        enum_parser(Bits)("8")


def test_every_choice_option_survives_typers_enum_conversion_by_str():
    """typer 0.26-0.28 (no pydantic: the GPU machine's image) passes the parser's result through its Enum
    convertor, ``{str(m.value): m for m in enum}.get(str(value))``; for a plain ``(str, Enum)`` member ``str()`` is
    ``"Bits.int2"``, so ``--bits 2`` became ``None`` and ``foscar bench --bits 2`` failed (session 79). Every choice
    option's Enum is a :class:`bench.choice.Choice`, whose members ``str()`` to their values: that convertor, applied
    here as typer 0.26.8 wrote it, gives each member back."""
    from bench.choice import Choice
    from bench.cli.options import enum_parser

    found = _enum_options()
    assert found
    for command, flag, enum in found:
        assert issubclass(enum, Choice), (command, flag, enum)
        by_str = {str(m.value): m for m in enum}
        for member in enum:
            parsed = enum_parser(enum)(member.value)
            assert by_str.get(str(parsed)) is member, (command, flag, member)
            assert f"{member}" == member.value  # messages print the value, not "Bits.int2"


def test_build_options_makes_a_path_of_a_string_for_a_path_field():
    """typer 0.26-0.28 hand an ``Optional[Path]`` option (``--out``, ``--config``) over as ``str`` (session 79: the
    accuracy command's ``out`` arrived as a string under 0.27.3); the options dataclasses get a ``Path`` either way."""
    from types import SimpleNamespace

    from bench.accuracy import AccuracyOptions
    from bench.cli.options import build_options

    ctx = SimpleNamespace(params={"out": "runs/a", "kv_file": None})
    opts = build_options(AccuracyOptions, ctx)
    assert opts.out == Path("runs/a") and isinstance(opts.out, Path) and opts.kv_file is None
    assert build_options(AccuracyOptions, SimpleNamespace(params={}), out=Path("b")).out == Path("b")


def test_takes_path_reads_the_fields_type_not_its_spelling():
    """build_options recognised a Path field by its annotation's text (``"Path | None"``) until session 80; an
    ``Optional[Path]`` or ``Union[str, Path]`` field would have kept a string. Now the resolved type decides."""
    import typing

    from bench.cli.options import takes_path

    for hint in (Path, Optional[Path], typing.Union[str, Path], Path | None):
        assert takes_path(hint), hint
    for hint in (str, Optional[str], int, list[Path], typing.Any):
        assert not takes_path(hint), hint
    # every command's options dataclass resolves its types (build_options calls get_type_hints on it), and each
    # field spelled with Path is one that takes a path
    import dataclasses
    import importlib

    for module, name in [("bench.run", "BenchOptions"), ("bench.accuracy", "AccuracyOptions"),
                         ("bench.ablate", "AblateOptions"), ("bench.eval_model", "EvalOptions"),
                         ("bench.model_speed_study", "ModelSpeedOptions")]:
        cls = getattr(importlib.import_module(module), name)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            assert takes_path(hints[f.name]) == ("Path" in str(f.type)), (name, f.name, f.type)


def test_every_commands_help_fits_80_columns_uncut():
    """At 80 columns rich's help cut 11 of ``foscar bench --help``'s values with "…" (a flag pair's second name took
    a column of its own; a 30-character word in --out's help); no command's help cuts a word, and a config key in
    brackets is shown, not read as rich markup."""
    from bench.cli.app import app

    runner = CliRunner()
    names = [info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands]
    assert "bench" in names and "merge" in names
    helps = {}
    for name in names:
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, (name, result.output)
        assert "…" not in result.output, (name, [line for line in result.output.splitlines() if "…" in line])
        helps[name] = result.output
    assert "[timing]" in helps["bench"] and "--no-read-floor" in helps["bench"]


def test_eval_model_refuses_a_group_size_before_loading_transformers(capsys, monkeypatch):
    """--group-size is checked in the command, as bench / accuracy check theirs: no model load, no config name."""
    monkeypatch.setitem(sys.modules, "bench.eval_model", None)  # importing it would fail: the check must come first
    code, _, err = run_main(capsys, "eval-model", "--random-init", "configs/hf/tiny-qwen3.json", "--group-size", "48")
    _one_line_error(code, err, "--group-size 48: expected one of 32, 64, 128")


def test_help_shows_allowed_values_and_no_value_for_flags():
    """Flags with a fixed set of values show it as the metavar; on/off flags show none (typer's "<bool>" read as if
    the flag took a value); model-speed's --group-size and accuracy's --head-dim list what they take."""
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    bench = runner.invoke(foscar_cli.app, ["bench", "--help"], env=env).output
    assert "<shuffled|in-order>" in bench and "<sweep|ragged>" in bench and "<bf16|fp8>" in bench
    for command in ("bench", "compare", "accuracy", "model-speed", "eval-model", "merge"):
        text = runner.invoke(foscar_cli.app, [command, "--help"], env=env).output
        flags = [ln for ln in text.splitlines() if "<bool>" in ln and "--help" not in ln]
        assert not flags, (command, flags)
    assert "32, 64, 128" in runner.invoke(foscar_cli.app, ["model-speed", "--help"], env=env).output
    assert "64, 128, 256" in runner.invoke(foscar_cli.app, ["accuracy", "--help"], env=env).output
