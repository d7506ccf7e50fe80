"""Switches read from the environment at call time: the kernels' A/B knobs (bench/NOTES.md says what each measured).

Each returns a bool and refuses anything but its two values, so that a mistyped knob fails loudly instead of
silently timing the default."""

from __future__ import annotations

import os

FLAG_CHOICES = ("1", "0")


def env_flag(name: str, default: str) -> bool:
    """The environment variable ``name`` as a bool: ``"1"`` or ``"0"`` (``default`` where unset).

    Raises:
        ValueError: any other value (the message names the variable and the allowed values).
    """
    value = os.environ.get(name, default)
    if value not in FLAG_CHOICES:
        raise ValueError(f"{name}: expected '1' or '0', got {value!r}")
    return value == "1"
