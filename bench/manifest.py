"""``meta.json``: everything needed to trust (or redo) a run (DESIGN §6).

GPU name, SM count, driver, CUDA, torch, triton, flashinfer versions, the
project's git commit and dirty flag, the command line, the resolved config, the
date, the measured HBM ceiling and how times were taken.

The GPU machine may run a copy of the tree without ``.git`` (or without git), with
the project on ``PYTHONPATH`` rather than pip-installed (``scripts/gpu_offline.sh``).
Then the commit comes from ``FOSCAR_GIT_COMMIT`` / ``FOSCAR_GIT_DIRTY`` (which that
script exports) and the foscar version from ``foscar.__version__``; ``git.source``
in the manifest says where the commit came from.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench import SCHEMA_VERSION

REPO_ROOT = Path(__file__).resolve().parent.parent


def package_version(dist: str) -> str | None:
    """Installed version of a distribution (without importing it), or ``None``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def foscar_version() -> str | None:
    """The installed distribution's version, else the imported package's ``__version__``.

    On the GPU machine the project usually runs from ``PYTHONPATH`` without being
    pip-installed, so there is no distribution metadata.
    """
    version = package_version("foscar")
    if version is not None:
        return version
    try:
        import foscar
    except Exception:
        return None
    return getattr(foscar, "__version__", None)


GIT_COMMIT_ENV = "FOSCAR_GIT_COMMIT"
GIT_DIRTY_ENV = "FOSCAR_GIT_DIRTY"


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    """``{"commit", "short", "dirty", "source"}`` of the project tree at ``root``.

    ``source`` is ``"git"`` when git answered for ``root`` itself; ``"env"`` when git
    is missing or ``root`` is not the top of a git work tree (a copy without
    ``.git``, possibly inside some other repository) and ``FOSCAR_GIT_COMMIT`` is
    set, with ``dirty`` from ``FOSCAR_GIT_DIRTY`` ("1" dirty, "0" clean, otherwise
    ``None``); ``None`` when neither gives a commit (then every field is ``None``).

    Dirty (from git) means the working tree differs from the commit: a modified
    tracked file, or an untracked file that git does not ignore, outside
    ``results/`` (the run's own output must not count).
    """

    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    toplevel = git("rev-parse", "--show-toplevel")
    commit = git("rev-parse", "HEAD") if toplevel and Path(toplevel).resolve() == Path(root).resolve() else None
    if commit is not None:
        status = git("status", "--porcelain", "--", ".", ":(exclude)results")
        dirty = bool(status) if status is not None else None
        return {"commit": commit, "short": commit[:7], "dirty": dirty, "source": "git"}
    commit = os.environ.get(GIT_COMMIT_ENV, "").strip() or None
    if commit is None:
        return {"commit": None, "short": None, "dirty": None, "source": None}
    dirty = {"1": True, "0": False}.get(os.environ.get(GIT_DIRTY_ENV, "").strip())
    return {"commit": commit, "short": commit[:7], "dirty": dirty, "source": "env"}


def driver_version() -> str | None:
    """NVIDIA driver version via NVML (nvidia-ml-py) or ``nvidia-smi``; ``None`` if neither answers."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    try:
        res = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if res.returncode == 0 and res.stdout.strip():
            return res.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def build_manifest(
    *,
    arch: str,
    device,  # bench.arch.DeviceInfo | None
    config: dict[str, Any],
    config_source: str,
    hbm_tbps: float | None,
    timing_mode: str,
    timing_label: str,
    smoke: bool,
    interpreter: bool,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """The run's manifest as a JSON-ready dict."""
    import torch

    gpu = None
    if device is not None:
        gpu = {
            "name": device.name,
            "compute_capability": f"{device.capability[0]}.{device.capability[1]}",
            "sm_count": device.sm_count,
            "total_memory_bytes": device.total_memory,
            "driver": driver_version(),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(argv if argv is not None else sys.argv),
        "arch": arch,
        "smoke": smoke,
        "triton_interpreter": interpreter,
        "timing_mode": timing_mode,
        "timing": timing_label,
        "hbm_ceiling_tbps": hbm_tbps,
        "hbm_ceiling_method": "max of a 1 GiB device-to-device copy (bytes read + written) and a read-only stream of the same buffer, do_bench medians (bench/hbm.py)"
        if hbm_tbps
        else None,
        "gpu": gpu,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "triton": package_version("triton"),
            "flashinfer": package_version("flashinfer-python"),
            "foscar": foscar_version(),
        },
        "git": git_state(),
        "config_source": config_source,
        "config": config,
    }
