"""``meta.json``: everything needed to trust (or redo) a run (DESIGN §6).

GPU name, SM count, driver, CUDA, torch, triton, flashinfer versions, the
project's git commit and dirty flag, the command line, the resolved config, the
date, the measured HBM ceiling and how times were taken; the GPU's UUID, its SM and
memory clocks and temperature at the start and at the end of the sweep (NVML); and
``config_hash``, the sha256 of the resolved config's canonical JSON
(:func:`bench.config.config_hash`), which decides whether a rerun into the same run
directory may resume it.

NVML comes from the optional ``nvidia-ml-py`` package (module ``pynvml``). Without it
(or without a GPU, or when NVML fails) ``gpu.uuid`` and the readings are ``null``
and ``gpu_state.reason`` says why.

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import SCHEMA_VERSION
from bench.kinds import BENCH

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
GIT_FROM_FETCH_ENV = "FOSCAR_GIT_FROM_FETCH"  # set (not "0"): the env commit wins over the tree's own .git


def software_versions(flashinfer: bool = True) -> dict[str, str | None]:
    """Python, torch, CUDA (torch's), triton, flashinfer (if asked) and foscar versions."""
    import torch

    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": package_version("triton"),
    }
    if flashinfer:
        out["flashinfer"] = package_version("flashinfer-python")
    out["foscar"] = foscar_version()
    return out


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    """``{"commit", "short", "dirty", "source"}`` of the project tree at ``root``.

    ``source`` is ``"git"`` when git answered for ``root`` itself; ``"env"`` when git
    is missing or ``root`` is not the top of a git work tree (a copy without
    ``.git``, possibly inside some other repository) and ``FOSCAR_GIT_COMMIT`` is
    set, with ``dirty`` from ``FOSCAR_GIT_DIRTY`` ("1" dirty, "0" clean, otherwise
    ``None``); ``None`` when neither gives a commit (then every field is ``None``).
    With ``FOSCAR_GIT_FROM_FETCH`` set (not "0") and ``FOSCAR_GIT_COMMIT`` given, the
    environment wins even where git answers: a copy that ships a stale ``.git``.

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

    env_commit = os.environ.get(GIT_COMMIT_ENV, "").strip() or None
    if env_commit is not None and os.environ.get(GIT_FROM_FETCH_ENV, "").strip() not in ("", "0"):
        # the tree's own .git is a stale snapshot (scripts/gpu_offline.sh FOSCAR_GIT_FROM_FETCH)
        dirty = {"1": True, "0": False}.get(os.environ.get(GIT_DIRTY_ENV, "").strip())
        return {"commit": env_commit, "short": env_commit[:7], "dirty": dirty, "source": "env"}
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


NVML_MISSING = "pynvml not installed (pip install nvidia-ml-py)"


@contextmanager
def _nvml():
    """``pynvml``, initialized for the block and shut down after it.

    Raises:
        ImportError: the package is not installed.
        Exception: whatever NVML raises (``pynvml.NVMLError``: no driver, ...).
    """
    import pynvml

    pynvml.nvmlInit()
    try:
        yield pynvml
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _handle(nvml, uuid: str | None, index: int):
    """The NVML handle of the run's GPU: by UUID when torch told it (right under any
    ``CUDA_VISIBLE_DEVICES``), else by index."""
    if uuid:
        return nvml.nvmlDeviceGetHandleByUUID(uuid.encode() if isinstance(uuid, str) else uuid)
    return nvml.nvmlDeviceGetHandleByIndex(index)


def _nvml_reason(e: BaseException) -> str:
    if isinstance(e, ImportError):
        return NVML_MISSING
    msg = " ".join(str(e).split())
    return f"NVML: {type(e).__name__}: {msg}" if msg else f"NVML: {type(e).__name__}"


def gpu_reading(uuid: str | None = None, index: int = 0) -> tuple[dict[str, Any] | None, str | None]:
    """``(reading, reason)``: the GPU's UUID, SM and memory clocks (MHz) and temperature
    (deg C) now, via NVML; ``(None, why)`` when NVML cannot say.

    A reading is ``{"time", "uuid", "sm_clock_mhz", "memory_clock_mhz", "temperature_c"}``.
    """
    try:
        with _nvml() as nvml:
            h = _handle(nvml, uuid, index)
            reading = {
                "time": _now(),
                "uuid": _text(nvml.nvmlDeviceGetUUID(h)),
                "sm_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                "memory_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
                "temperature_c": int(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)),
            }
    except Exception as e:  # ImportError, NVMLError, a driver without the query
        return None, _nvml_reason(e)
    return reading, None


def record_gpu_state(meta: dict[str, Any], when: str, device=None, index: int = 0) -> None:
    """Put a :func:`gpu_reading` into ``meta["gpu_state"][when]`` (``"start"`` or ``"end"``).

    ``meta["gpu_state"]`` is ``{"start", "end", "reason"}``; ``reason`` (null when
    both readings were taken) says why a reading is missing. The first reading that
    gets a UUID also fills ``meta["gpu"]["uuid"]``. A CPU run records no reading.
    """
    state = meta.setdefault("gpu_state", {"start": None, "end": None, "reason": None})
    if device is None:
        state[when], state["reason"] = None, "no GPU (CPU run)"
        return
    reading, reason = gpu_reading(getattr(device, "uuid", None), index)
    state[when] = reading
    if reason is not None and not state.get("reason"):  # keep the first reason
        state["reason"] = reason
    if reading is not None and meta.get("gpu") is not None and not meta["gpu"].get("uuid"):
        meta["gpu"]["uuid"] = reading["uuid"]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def _cuda_kernel_build() -> dict[str, Any] | None:
    """The CUDA extension's build settings (``decode_cuda.build_settings``), or None without its sources."""
    try:
        from foscar.kernels.decode_cuda import build_settings

        return build_settings()
    except (ImportError, OSError) as e:  # a wheel without the CUDA sources
        return {"error": f"{type(e).__name__}: {e}"}


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
    config_hash: str | None = None,
    device_index: int = 0,
) -> dict[str, Any]:
    """The run's manifest as a JSON-ready dict, with the GPU's state now as ``gpu_state.start``.

    ``config_hash`` defaults to :func:`bench.config.config_hash` of ``config``;
    ``device_index`` is the CUDA device, used to find it in NVML when ``device`` has no UUID.
    """
    from bench.config import config_hash as hash_config

    gpu = None
    if device is not None:
        gpu = {
            "name": device.name,
            "uuid": getattr(device, "uuid", None),
            "compute_capability": f"{device.capability[0]}.{device.capability[1]}",
            "sm_count": device.sm_count,
            "total_memory_bytes": device.total_memory,
            "driver": driver_version(),
        }
    meta = {
        "schema_version": SCHEMA_VERSION,
        "kind": BENCH,  # foscar report / compare dispatch on it (bench.kinds)
        "date": _now(),
        "command": shlex.join(argv if argv is not None else sys.argv),
        "arch": arch,
        "smoke": smoke,
        "triton_interpreter": interpreter,
        "timing_mode": timing_mode,
        "timing": timing_label,
        "hbm_ceiling_tbps": hbm_tbps,
        "hbm_ceiling_method": "max of a read-only stream of a buffer of hbm_bytes (16 GiB where half the free memory holds it) and a device-to-device copy of its first half into its second (bytes read + written), do_bench medians (bench/hbm.py)"
        if hbm_tbps
        else None,
        "gpu": gpu,
        "versions": software_versions(),
        "git": git_state(),
        "config_source": config_source,
        "config_hash": config_hash if config_hash is not None else hash_config(config),
        "config": config,
        "cuda_kernel_build": _cuda_kernel_build(),
    }
    record_gpu_state(meta, "start", device, device_index)
    return meta
