"""One validator for every public entry point: "expected X, got Y" errors.

Every check raises :class:`ValueError` (or :class:`TypeError` for a non-tensor)
with a message that names the argument, what was expected and what was given,
so that bad input never reaches a kernel.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch


def check_tensor(
    name: str,
    t: object,
    *,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    dtypes: Iterable[torch.dtype] | None = None,
    device: torch.device | None = None,
) -> torch.Tensor:
    """Check a tensor argument and return it.

    Args:
        name: the argument's name, used in the message.
        t: the value to check.
        ndim: required number of dimensions.
        shape: required shape; ``None`` entries match any size.
        dtypes: allowed dtypes.
        device: required device (compared by type and index).

    Raises:
        TypeError: ``t`` is not a tensor.
        ValueError: wrong ``ndim``, shape, dtype or device.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(t.shape)}")
    if shape is not None:
        want = tuple(shape)
        ok = len(want) == t.dim() and all(w is None or w == s for w, s in zip(want, t.shape))
        if not ok:
            pretty = "[" + ", ".join("*" if w is None else str(w) for w in want) + "]"
            raise ValueError(f"{name}: expected shape {pretty}, got {list(t.shape)}")
    if dtypes is not None:
        allowed = tuple(dtypes)
        if t.dtype not in allowed:
            names = ", ".join(str(d).replace("torch.", "") for d in allowed)
            raise ValueError(
                f"{name}: expected dtype in {{{names}}}, got {str(t.dtype).replace('torch.', '')}"
            )
    if device is not None and not same_device(t.device, device):
        raise ValueError(f"{name}: expected device {device}, got {t.device}")
    return t


def same_device(a: torch.device, b: torch.device) -> bool:
    """True when two devices are the same (``cuda`` and ``cuda:0`` count as one on GPU 0)."""
    if a.type != b.type:
        return False
    if a.type != "cuda":
        return True
    ia = a.index if a.index is not None else torch.cuda.current_device()
    ib = b.index if b.index is not None else torch.cuda.current_device()
    return ia == ib


def check_choice(name: str, value: object, allowed: Sequence[object]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {value!r}")
