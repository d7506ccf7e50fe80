"""bench/manifest.py: where the git commit and the foscar version come from.

The GPU machine runs a copy of the tree without ``.git`` and without pip-installing
the project, so both have fallbacks: ``FOSCAR_GIT_COMMIT``/``FOSCAR_GIT_DIRTY`` and
``foscar.__version__``.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

import foscar
from bench import manifest

SHA = "0123456789abcdef0123456789abcdef01234567"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git executable")


@pytest.fixture(autouse=True)
def _no_git_env(monkeypatch):
    monkeypatch.delenv(manifest.GIT_COMMIT_ENV, raising=False)
    monkeypatch.delenv(manifest.GIT_DIRTY_ENV, raising=False)


def _git(cwd, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _no_git_executable(monkeypatch):
    def run(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(manifest.subprocess, "run", run)


@pytest.mark.parametrize("dirty, expected", [("0", False), ("1", True), ("", None), ("yes", None)])
def test_git_from_env_when_git_is_missing(monkeypatch, tmp_path, dirty, expected):
    _no_git_executable(monkeypatch)
    monkeypatch.setenv(manifest.GIT_COMMIT_ENV, SHA)
    monkeypatch.setenv(manifest.GIT_DIRTY_ENV, dirty)
    assert manifest.git_state(tmp_path) == {"commit": SHA, "short": SHA[:7], "dirty": expected, "source": "env"}


def test_git_unknown_without_git_or_env(monkeypatch, tmp_path):
    _no_git_executable(monkeypatch)
    assert manifest.git_state(tmp_path) == {"commit": None, "short": None, "dirty": None, "source": None}


@needs_git
def test_git_from_env_in_a_tree_without_dot_git(monkeypatch, tmp_path):
    monkeypatch.setenv(manifest.GIT_COMMIT_ENV, SHA)
    monkeypatch.setenv(manifest.GIT_DIRTY_ENV, "0")
    state = manifest.git_state(tmp_path)  # tmp_path is not a repository
    assert state == {"commit": SHA, "short": SHA[:7], "dirty": False, "source": "env"}


@needs_git
def test_a_copy_inside_another_repository_does_not_take_its_commit(monkeypatch, tmp_path):
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "outer")
    tree = tmp_path / "copy"
    tree.mkdir()
    assert manifest.git_state(tree)["commit"] is None
    monkeypatch.setenv(manifest.GIT_COMMIT_ENV, SHA)
    assert manifest.git_state(tree)["source"] == "env"


@needs_git
def test_git_wins_over_env_in_a_repository(monkeypatch, tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    monkeypatch.setenv(manifest.GIT_COMMIT_ENV, SHA)
    monkeypatch.setenv(manifest.GIT_DIRTY_ENV, "1")
    assert manifest.git_state(tmp_path) == {"commit": head, "short": head[:7], "dirty": False, "source": "git"}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.csv").write_text("x\n")  # the run's own output is not dirt
    assert manifest.git_state(tmp_path)["dirty"] is False
    (tmp_path / "a.txt").write_text("b\n")
    assert manifest.git_state(tmp_path)["dirty"] is True


def test_foscar_version_falls_back_to_the_package(monkeypatch):
    monkeypatch.setattr(manifest, "package_version", lambda dist: None)
    assert manifest.foscar_version() == foscar.__version__
    meta = manifest.build_manifest(
        arch="h100",
        device=None,
        config={},
        config_source="test",
        hbm_tbps=None,
        timing_mode="interpreter",
        timing_label="test",
        smoke=True,
        interpreter=True,
        argv=["foscar", "bench", "--smoke"],
    )
    assert meta["versions"]["foscar"] == foscar.__version__
    assert meta["git"]["source"] in ("git", "env", None)


def test_foscar_version_prefers_the_installed_distribution(monkeypatch):
    monkeypatch.setattr(manifest, "package_version", lambda dist: "9.9.9" if dist == "foscar" else None)
    assert manifest.foscar_version() == "9.9.9"
