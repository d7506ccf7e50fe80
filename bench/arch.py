"""Which GPU is here, and which preset (``configs/<arch>.toml``) it runs.

Detection is split from the decision so the decision can be tested with fake
device info: :func:`detect_device` reads the real GPU (or returns ``None``),
:func:`resolve_arch` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.choice import Choice
from bench.errors import FoscarError


class Arch(Choice):
    """``--arch`` choices. ``auto`` picks from the GPU's name and compute capability."""

    auto = "auto"
    h100 = "h100"
    h200 = "h200"
    b200 = "b200"


# compute capability major each preset needs, and how to say it
ARCH_NEEDS: dict[Arch, tuple[int, str]] = {
    Arch.h100: (9, "an sm_90 (Hopper) GPU such as the H100"),
    Arch.h200: (9, "an sm_90 (Hopper) GPU such as the H200"),
    Arch.b200: (10, "an sm_100 (Blackwell) GPU such as the B200"),
}

CPU_ARCH = "cpu"  # label of a --smoke run with no GPU

# device memory of each preset's GPU, bytes, for a dry run without a GPU (a run goes by the free memory, less):
# torch's total_memory as the stored runs recorded it (meta.json) for the H200 and the H100 80GB HBM3 (SXM; session
# 48's run, results/2026-12-05-h100-s48: 85017493504, where nvidia-smi says 81559 MiB); the B200's (180 GB) is
# nvidia-smi's total, which is ~0.5-0.6 GiB above torch's (the H200: 143771 MiB against 143156, the H100 81559 against
# 81078). Other SKUs differ (H100 NVL: 94 GB).
NOMINAL_MEMORY: dict[str, int] = {
    Arch.h100.value: 85017493504,
    Arch.h200.value: 150109880320,
    Arch.b200.value: 183359 << 20,
}


@dataclass(frozen=True)
class DeviceInfo:
    """What the harness needs to know about a CUDA device."""

    name: str  # e.g. "NVIDIA H200"
    capability: tuple[int, int]  # (major, minor)
    sm_count: int
    total_memory: int  # bytes
    uuid: str | None = None  # "GPU-xxxxxxxx-...", as NVML and nvidia-smi print it; None if torch does not say

    @property
    def sm(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def describe(self) -> str:
        return f"{self.name} ({self.sm})"


def detect_device() -> DeviceInfo | None:
    """The current CUDA device, or ``None`` when torch sees no GPU.

    Imports torch but not triton (so the caller can still choose the Triton
    interpreter afterwards).
    """
    import torch

    if not torch.cuda.is_available():
        return None
    idx = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(idx)
    uuid = getattr(props, "uuid", None)  # torch >= 2.1; lets NVML find this device whatever CUDA_VISIBLE_DEVICES says
    return DeviceInfo(
        name=props.name,
        capability=(props.major, props.minor),
        sm_count=props.multi_processor_count,
        total_memory=props.total_memory,
        uuid=_gpu_uuid(uuid),
    )


def _gpu_uuid(uuid) -> str | None:
    """torch's device UUID as NVML writes it: ``GPU-`` + the 8-4-4-4-12 hex form."""
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith("GPU-") else f"GPU-{text}"


def arch_of(device: DeviceInfo) -> Arch | None:
    """The preset a device matches, or ``None`` if no preset fits it.

    sm_90 devices whose name says H200 (also GH200) are ``h200``, other sm_90
    devices ``h100``; sm_100 devices are ``b200``.
    """
    major = device.capability[0]
    if major == 9:
        return Arch.h200 if "H200" in device.name.upper() else Arch.h100
    if major == 10:
        return Arch.b200
    return None


def nearest_arch(device: DeviceInfo) -> Arch:
    """The preset closest to a GPU no preset names: ``b200`` from sm_100 up, else ``h100``."""
    return Arch.b200 if device.capability[0] >= 10 else Arch.h100


def resolve_arch(
    requested: Arch | str,
    device: DeviceInfo | None,
    smoke: bool,
    custom_config: bool = False,
    nearest_preset: bool = False,
) -> str:
    """Decide the run's arch label (``h100``/``h200``/``b200``, or ``cpu`` for a CPU smoke run).

    Args:
        requested: the ``--arch`` value.
        device: the detected GPU, or ``None``.
        smoke: ``--smoke`` (tiny grid): it runs anywhere, nothing is enforced, and
            the label is what is here (``cpu``, the detected preset, or ``sm_XY``).
        custom_config: ``--config FILE`` was given: with ``--arch auto`` a GPU that
            no preset names is allowed (labelled by its ``sm_XY``).
        nearest_preset: ``--nearest-preset``: with ``--arch auto`` a GPU that no preset
            names runs the nearest one (:func:`nearest_arch`); only when asked.

    Raises:
        FoscarError: no GPU without ``--smoke``; a GPU no preset supports; an
            explicit ``--arch`` whose compute capability the GPU does not have; an explicit ``--arch`` with
            ``--smoke`` (which runs its own grid).
    """
    requested = Arch(requested)
    if smoke and requested is not Arch.auto:  # it was dropped without a word
        raise FoscarError(f"--smoke runs the tiny grid (configs/smoke.toml, or --config FILE) on whatever is here; "
                          f"--arch {requested.value} picks configs/{requested.value}.toml: pass one of them")
    if smoke:  # the tiny grid runs anywhere; label the run by what is here
        if device is None:
            return CPU_ARCH
        detected = arch_of(device)
        return detected.value if detected is not None else device.sm.replace("_", "")
    if device is None:
        need = "an sm_90 (H100/H200) or sm_100 (B200) CUDA GPU" if requested is Arch.auto else ARCH_NEEDS[requested][1]
        raise FoscarError(
            f"no CUDA GPU detected; --arch {requested.value} needs {need}. "
            "Use --smoke for the tiny interpreter sweep on CPU."
        )
    detected = arch_of(device)
    if requested is Arch.auto:
        if detected is not None:
            return detected.value
        if custom_config:
            return device.sm.replace("_", "")
        if nearest_preset:
            return nearest_arch(device).value
        raise FoscarError(
            f"detected {device.describe()}; foscar bench has presets for sm_90 (h100, h200) and "
            f"sm_100 (b200) only. Pass --config FILE to run a grid on another GPU, or --nearest-preset "
            f"to run the nearest preset ({nearest_arch(device).value})."
        )
    major, need = ARCH_NEEDS[requested]
    if device.capability[0] != major:
        raise FoscarError(
            f"--arch {requested.value} needs {need}; detected {device.describe()}. "
            "Use --arch auto to pick the preset for this GPU."
        )
    return requested.value
