"""Flags that can never run are refused before any work (issue 13 item 8): one-line
errors (exit 2) in one wording across bench, ablate and accuracy, before torch is
imported, with the allowed values taken from the backend registry and from what the
kernels take; a run that timed no FOSCAR row exits 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench.config import (
    SUPPORTED_BITS,
    SUPPORTED_GROUP_SIZES,
    SUPPORTED_HEAD_DIMS,
    SUPPORTED_OPERANDS,
    UNBUILT_OPERANDS,
)
from bench.errors import EXIT_RUN_PROBLEM, EXIT_USAGE
from tests.cli_helpers import run_main

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "foscar-triton, foscar-cuda, foscar-cuda-per-value, foscar-cuda-paged, flashinfer-fa2"

# main(argv) in a fresh interpreter; prints the exit code and whether torch got imported
_PROBE = """
import json, sys
import foscar_cli
code = 0
try:
    foscar_cli.main(sys.argv[1:])
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else 1
print(json.dumps({"code": code, "torch": "torch" in sys.modules}))
"""


def _probe(*args: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["bench", "--kernel", "nope"], f"--kernel 'nope': expected one of {KERNELS}"),
        (["bench", "--group-size", "48"], "--group-size 48: expected one of 32, 64, 128"),
        (["bench", "--operand", "fp4"], "--operand 'fp4': FP4 tensor-core operands need sm_100 (Blackwell) and are "
                                        "not implemented in FOSCAR yet; expected one of bf16, fp8"),
        (["bench", "--arch", "h100", "--dry-run", "--head-dim", "96"], "--head-dim 96: expected one of 64, 128, 256"),
        (["bench", "--page-order", "random"], "--page-order 'random': expected one of shuffled, in-order"),
        (["ablate", "--axis", "k_blocks"], "--axis 'k_blocks': expected one of reconstruction, group_size, split_kv"),
        (["accuracy", "--kernel", "nope"], "--kernel 'nope': expected one of fp64-dequant, foscar-cuda"),
        (["accuracy", "--group-size", "48"], "--group-size 48: expected one of 32, 64, 128"),
    ],
)
def test_bad_choice_is_one_line_before_torch(args, message):
    result, err = _probe(*args)
    assert result == {"code": EXIT_USAGE, "torch": False}, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert message in lines[0] and "--debug" in lines[0]


def test_a_head_dim_off_the_group_size_names_the_group_sizes_that_fit(capsys):
    """The h200 preset's group size is 128: --head-dim 64 alone is refused with the group sizes that would fit."""
    code, _, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--head-dim", "64")
    assert code == EXIT_USAGE
    assert "expected a multiple of group_size=128, got 64; group_size 32 or 64 fits it (--group-size)" in err


def test_config_file_with_what_cannot_run_is_refused(tmp_path, capsys):
    for body, needle in (
        ("[shape]\nhead_dim = 96\n", "head_dim 96: expected one of 64, 128, 256"),
        ("# nothing but a comment\n", "empty; expected at least one table such as [sweep]"),
        ('[sweep]\noperand = ["fp4"]\n', "operand 'fp4': FP4 tensor-core operands need sm_100"),
        ('[sweep]\nkernels = ["nope"]\n', "kernels 'nope': expected one of foscar-triton"),
    ):
        cfg = tmp_path / "c.toml"
        cfg.write_text(body)
        code, _, err = run_main(capsys, "bench", "--config", cfg, "--arch", "h100", "--dry-run")
        assert code == EXIT_USAGE and needle in err, err


@pytest.mark.parametrize("table, line, needle", [
    ("sweep", "group_size = [64, 128]", "group_size: expected one value, got [64, 128] (a config sweeps batch"),
    ("shape", 'page_order = ["in-order"]', "page_order: expected one value, got ['in-order']"),
    ("shape", "num_qo_heads = [4]", "num_qo_heads: expected one value, got [4]"),
    ("timing", 'warmup_ms = "25"', "warmup_ms: expected a positive finite number, got '25'"),
    ("timing", "rep_ms = nan", "rep_ms: expected a positive finite number, got nan"),
    ("check", "tolerance = inf", "tolerance: expected a positive finite number, got inf"),
    ("timing", 'cpu_reps = "3"', "cpu_reps: expected an integer >= 1, got '3'"),
    ("timing", "cpu_reps = 1.5", "cpu_reps: expected an integer >= 1, got 1.5"),
    ("timing", 'seed = "x"', "seed: expected an integer >= 0, got 'x'"),
    ("check", "full_check_max_tokens = -5", "full_check_max_tokens: expected an integer >= 0, got -5"),
    ("sweep", "operand = []", "operand: expected at least one of bf16, fp8, got none"),
    ("", "name = 5", "name: expected a non-empty string, got 5"),
])
def test_a_config_value_of_the_wrong_kind_is_one_line(tmp_path, capsys, table, line, needle):
    """Each of these crashed with a traceback (a list where one value belongs: unhashable; a string compared with a
    number; NaN in the JSON of the config hash), or passed the dry run and failed every point (seed "x"), or ran a
    grid without FOSCAR rows (operand = [])."""
    cfg = tmp_path / "c.toml"
    body = f"{line}\n" if not table else f"[{table}]\n{line}\n"
    cfg.write_text(body + ("[sweep]\nbatch = [1]\n" if table != "sweep" else ""))
    code, _, err = run_main(capsys, "bench", "--config", cfg, "--dry-run")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == EXIT_USAGE and len(lines) == 1 and needle in lines[0], err


def test_a_model_preset_given_as_the_config_is_refused_with_the_model_flag(capsys):
    """A model preset (name and [shape]) as --config ran the default grid under the model's name."""
    preset = Path(__file__).resolve().parent.parent / "configs/models/llama-3.1-70b-tp8.toml"
    code, _, err = run_main(capsys, "bench", "--config", preset, "--dry-run")
    assert code == EXIT_USAGE and "a model preset's format" in err
    assert f"foscar bench --arch h200 --model {preset}" in err


def test_the_bench_lists_agree_with_foscar():
    """bench.config repeats what the kernels take (to check flags without torch): it must agree."""
    import foscar
    from foscar import quant
    from foscar.kernels import decode_triton

    assert SUPPORTED_OPERANDS == tuple(foscar.OPERAND_MODES)
    assert not set(UNBUILT_OPERANDS) & set(foscar.OPERAND_MODES)
    assert SUPPORTED_HEAD_DIMS == tuple(decode_triton.SUPPORTED_HEAD_DIMS)
    assert SUPPORTED_GROUP_SIZES == tuple(quant.SUPPORTED_GROUP_SIZES)
    assert SUPPORTED_BITS == tuple(quant.SUPPORTED_BITS)


def _help(command: str, flag: str) -> str:
    import typer

    import foscar_cli

    cmd = typer.main.get_command(foscar_cli.app).commands[command]
    return next(p.help for p in cmd.params if flag in p.opts)


def test_help_lists_the_registry_and_the_axes():
    from bench.ablate import AXES
    from bench.accuracy import VARIANT_NAMES
    from bench.backends import kernel_names

    assert ", ".join(kernel_names()) in _help("bench", "--kernel")
    assert ", ".join(SUPPORTED_OPERANDS) in _help("bench", "--operand") and "fp4" not in _help("bench", "--operand")
    assert ", ".join(AXES) in _help("ablate", "--axis")
    assert ", ".join(VARIANT_NAMES) in _help("accuracy", "--kernel")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs foscar-cuda to be unavailable (no GPU)")
def test_run_that_timed_no_foscar_row_exits_3(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_main(capsys, "bench", "--smoke", "--kernel", "foscar-cuda", "--bits", "2", "--batch", "1",
                            "--context", "17", "--out", out, "--format", "quiet")  # fmt: skip
    assert code == EXIT_RUN_PROBLEM
    assert "no FOSCAR row was timed (2 skipped)" in err or "no FOSCAR row was timed (1 skipped)" in err
    assert json.loads((out / "summary.json").read_text())["problems"]
