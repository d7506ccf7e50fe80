"""Switches read from the environment at call time: the kernels' A/B knobs (bench/NOTES.md says what each measured).

Each returns a bool and refuses anything but its two values, so that a mistyped knob fails loudly instead of
silently timing the default."""

from __future__ import annotations

import os

FLAG_CHOICES = ("1", "0")


def pdl_capable(device) -> bool:
    """Whether ``device`` (a ``torch.device``) can launch kernels with programmatic dependent launch: a CUDA device of
    compute capability 9.0 or later (``griddepcontrol``, PTX ISA 7.8); what ``FOSCAR_PDL`` and ``FOSCAR_MERGE_PDL``
    need besides being on."""
    import torch

    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= (9, 0)


def env_flag(name: str, default: str) -> bool:
    """The environment variable ``name`` as a bool: ``"1"`` or ``"0"`` (``default`` where unset).

    Raises:
        ValueError: any other value (the message names the variable and the allowed values).
    """
    value = os.environ.get(name, default)
    if value not in FLAG_CHOICES:
        raise ValueError(f"{name}: expected '1' or '0', got {value!r}")
    return value == "1"


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """The environment variable ``name``, one of ``choices`` (``choices[0]`` where unset).

    Raises:
        ValueError: any other value (the message names the variable and the allowed values).
    """
    value = os.environ.get(name, choices[0])
    if value not in choices:
        raise ValueError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value
