"""A packaged (non-editable) install has the presets (issue 13 item 10).

Builds the project from a copy of its sources with pip (no dependencies, no build
isolation, no index: no network; the ``test`` extra brings setuptools >= 70.1, and
the test venv has the runtime deps), installs it into a temporary ``--target``, and runs
``foscar bench --dry-run --arch h100`` from a directory outside the repository with
only that target on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "foscar_cli.py", "foscar", "bench", "configs")

_CHECK = """
import json, sys
import bench.config, foscar_cli
codes = []
for argv in (["bench", "--dry-run", "--arch", "h100", "--format", "quiet"],
             ["bench", "--dry-run", "--arch", "h200", "--model", "qwen3-8b", "--format", "quiet"],
             ["bench", "--dry-run", "--smoke", "--format", "quiet"]):
    try:
        foscar_cli.main(argv)
        codes.append(0)
    except SystemExit as e:
        codes.append(e.code)
print(json.dumps({"cli": foscar_cli.__file__, "config_dir": str(bench.config.CONFIG_DIR),
                  "models": bench.config.model_names(), "codes": codes}))
"""


def test_installed_package_finds_its_presets(tmp_path):
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    assert (major, minor) >= (70, 1), (
        f"setuptools {setuptools.__version__} cannot build a wheel offline; pip install -e '.[test]' brings >= 70.1"
    )
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
           "--target", str(target), str(src)]  # fmt: skip
    built = subprocess.run(pip, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert (target / "bench" / "presets" / "h100.toml").is_file()
    assert (target / "bench" / "presets" / "models" / "qwen3-8b.toml").is_file()
    assert (target / "bench" / "presets" / "hf" / "tiny-qwen3.json").is_file()  # model-speed --smoke's model

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", _CHECK], cwd=outside, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(got["cli"]).parent == target  # the installed copy, not this checkout
    assert Path(got["config_dir"]) == target / "bench" / "presets"
    assert "qwen3-8b" in got["models"]
    assert got["codes"] == [0, 0, 0], run.stdout + run.stderr
