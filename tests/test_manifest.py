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


def test_env_wins_over_a_stale_dot_git_when_asked(monkeypatch, tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    monkeypatch.setenv(manifest.GIT_COMMIT_ENV, SHA)
    monkeypatch.setenv(manifest.GIT_DIRTY_ENV, "0")
    monkeypatch.setenv(manifest.GIT_FROM_FETCH_ENV, "1")
    assert manifest.git_state(tmp_path) == {"commit": SHA, "short": SHA[:7], "dirty": False, "source": "env"}
    monkeypatch.setenv(manifest.GIT_FROM_FETCH_ENV, "0")
    assert manifest.git_state(tmp_path)["source"] == "git"


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


# ---------------------------------------------------------------------------
# NVML: GPU UUID, clocks and temperature at the start and the end of a run


class FakeNvml:
    """A stand-in for the ``pynvml`` module: one GPU whose clocks and temperature change over time."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self, uuid="GPU-11111111-2222-3333-4444-555555555555", fail: str | None = None):
        self.uuid = uuid
        self.fail = fail  # name of a call that raises NVMLError
        self.sm, self.mem, self.temp = 1980, 3201, 35
        self.inits = self.shutdowns = 0
        self.looked_up: list = []

    def _maybe_fail(self, name):
        if self.fail == name:
            raise self.NVMLError("Not Supported")

    def nvmlInit(self):
        self._maybe_fail("nvmlInit")
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return "580.159.03"

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.looked_up.append(("uuid", uuid))
        if (uuid.decode() if isinstance(uuid, bytes) else uuid) != self.uuid:
            raise self.NVMLError("Not Found")
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, index):
        self.looked_up.append(("index", index))
        return "handle"

    def nvmlDeviceGetUUID(self, handle):
        return self.uuid.encode()  # older pynvml returns bytes

    def nvmlDeviceGetClockInfo(self, handle, kind):
        self._maybe_fail("nvmlDeviceGetClockInfo")
        return {self.NVML_CLOCK_SM: self.sm, self.NVML_CLOCK_MEM: self.mem}[kind]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self.temp


def _gpu(uuid=None):
    from bench.arch import DeviceInfo

    return DeviceInfo(name="NVIDIA H200", capability=(9, 0), sm_count=132, total_memory=141 << 30, uuid=uuid)


def _manifest(device, **kw):
    return manifest.build_manifest(
        arch="h200",
        device=device,
        config={"name": "h200", "batch": [1]},
        config_source="test",
        hbm_tbps=4.4,
        timing_mode="cuda_graph",
        timing_label="test",
        smoke=False,
        interpreter=False,
        argv=["foscar", "bench"],
        **kw,
    )


def test_nvml_start_and_end(monkeypatch):
    import sys

    from bench.config import config_hash

    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meta = _manifest(_gpu(fake.uuid))
    assert meta["gpu"]["uuid"] == fake.uuid
    assert meta["gpu"]["driver"] == "580.159.03"
    start = meta["gpu_state"]["start"]
    assert {k: start[k] for k in ("uuid", "sm_clock_mhz", "memory_clock_mhz", "temperature_c")} == {
        "uuid": fake.uuid, "sm_clock_mhz": 1980, "memory_clock_mhz": 3201, "temperature_c": 35,
    }  # fmt: skip
    assert meta["gpu_state"]["end"] is None and meta["gpu_state"]["reason"] is None
    assert ("uuid", fake.uuid.encode()) in fake.looked_up  # found by UUID, whatever CUDA_VISIBLE_DEVICES says
    assert meta["config_hash"] == config_hash({"name": "h200", "batch": [1]})

    fake.sm, fake.temp = 1755, 71  # the sweep heated the GPU; the clocks dropped
    manifest.record_gpu_state(meta, "end", _gpu(fake.uuid))
    end = meta["gpu_state"]["end"]
    assert (end["sm_clock_mhz"], end["temperature_c"]) == (1755, 71)
    assert meta["gpu_state"]["start"]["temperature_c"] == 35
    assert fake.inits == fake.shutdowns  # NVML shut down after every reading


def test_nvml_by_index_when_torch_gives_no_uuid(monkeypatch):
    import sys

    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meta = _manifest(_gpu(None), device_index=3)
    assert fake.looked_up[-1] == ("index", 3)
    assert meta["gpu"]["uuid"] == fake.uuid  # filled from NVML's reading


def test_nvml_missing_is_recorded_with_the_reason(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    meta = _manifest(_gpu(None))
    assert meta["gpu"]["uuid"] is None
    assert meta["gpu_state"] == {"start": None, "end": None, "reason": manifest.NVML_MISSING}
    assert "nvidia-ml-py" in manifest.NVML_MISSING


@pytest.mark.parametrize("fail", ["nvmlInit", "nvmlDeviceGetClockInfo"])
def test_nvml_errors_are_recorded(monkeypatch, fail):
    import sys

    fake = FakeNvml(fail=fail)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meta = _manifest(_gpu(fake.uuid))
    assert meta["gpu_state"]["start"] is None
    assert meta["gpu_state"]["reason"] == "NVML: NVMLError: Not Supported"


def test_cpu_run_has_no_gpu_state():
    meta = _manifest(None)
    assert meta["gpu"] is None
    assert meta["gpu_state"] == {"start": None, "end": None, "reason": "no GPU (CPU run)"}
