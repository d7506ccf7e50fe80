"""One validator for every public entry point: "expected X, got Y" errors.

Every check raises :class:`ValueError` (or :class:`TypeError` for a non-tensor)
with a message that names the argument, what was expected and what was given,
so that bad input never reaches a kernel.

Contiguity: the kernels index every cache tensor (codes, scales, offsets) and every
index tensor (``seq_lens``, ``kv_indptr``, ``kv_indices``, ``kv_last_page_len``) as a
dense row-major array, so each must be contiguous (``t.is_contiguous()``; a view with
a storage offset is fine, a strided view is not; the CUDA kernel also needs the code
tensors, and a channel-wise K's scales, 16-byte aligned: where a view at a storage
offset is not, ``backend='auto'`` takes the Triton kernel and ``backend='cuda'`` is
refused, :func:`foscar.kernels.decode_cuda.misaligned`). A strided view is refused with a
``ValueError`` naming the tensor, never copied behind the caller's back: a copy would
detach the cache from the tensors the caller updates (``append_kv``, a serving
engine's page table) and would not be CUDA-graph safe. Call ``.contiguous()`` first.
"""

from __future__ import annotations

import math
import numbers
from typing import Iterable, Sequence

import numpy as np
import torch


def check_tensor(
    name: str,
    t: object,
    *,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    dtypes: Iterable[torch.dtype] | None = None,
    device: torch.device | None = None,
    contiguous: bool = False,
) -> torch.Tensor:
    """Check a tensor argument and return it.

    Args:
        name: the argument's name, used in the message.
        t: the value to check.
        ndim: required number of dimensions.
        shape: required shape; ``None`` entries match any size.
        dtypes: allowed dtypes.
        device: required device (compared by type and index).
        contiguous: require ``t.is_contiguous()`` (module docstring).

    Raises:
        TypeError: ``t`` is not a tensor.
        ValueError: wrong ``ndim``, shape, dtype or device; not contiguous.
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
    if contiguous and not t.is_contiguous():
        raise ValueError(
            f"{name}: expected a contiguous tensor, got a strided view (shape {list(t.shape)}, "
            f"strides {list(t.stride())}); pass {name}.contiguous()"
        )
    return t


def host_checks(check_values: bool | None, device: torch.device) -> bool:
    """Whether a validator may read tensor values on the host (a device sync).

    ``check_values`` ``True``/``False`` decides; ``None`` (the default of every
    ``validate``) means yes unless the current CUDA stream is capturing a graph, where
    a sync would break the capture.
    """
    if check_values is not None:
        return bool(check_values)
    return not (device.type == "cuda" and torch.cuda.is_current_stream_capturing())


def same_device(a: torch.device, b: torch.device) -> bool:
    """True when two devices are the same (``cuda`` and ``cuda:0`` count as one on GPU 0)."""
    if a.type != b.type:
        return False
    if a.type != "cuda":
        return True
    ia = a.index if a.index is not None else torch.cuda.current_device()
    ib = b.index if b.index is not None else torch.cuda.current_device()
    return ia == ib


def is_int(value: object) -> bool:
    """Whether ``value`` is a Python ``int`` and not a ``bool`` (a float, a bool, a numpy or torch integer is not: each
    would fail later, deep inside a kernel's arguments or the packing; callers say "pass int(x)")."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_flag(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is ``True`` or ``False`` (a numpy bool too): ``None``, ``0`` or ``"no"``
    would otherwise switch a check or an output on or off by truthiness, silently."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: expected True or False, got {value!r}")


def check_reference_dtype(dtype: object) -> None:
    """Raise ``ValueError`` unless ``dtype`` is ``torch.float64`` or ``torch.float32``, the dtypes the fp64/fp32
    references compute in (an integer dtype or a string fails deep inside torch; float16 would round the
    reference itself)."""
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype: expected torch.float64 or torch.float32, got {dtype!r}")


def check_choice(name: str, value: object, allowed: Sequence[object]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``.

    Where every allowed value is an ``int``, ``value`` must be a Python ``int`` too: ``2.0 in (2, 4)`` and
    ``True in (1, 2)`` hold in Python, but a float or bool bit width or group size would fail later, deep inside
    the packing or a kernel (a numpy integer is refused as well: pass ``int(x)``).
    """
    if all(is_int(a) for a in allowed) and not is_int(value):
        raise ValueError(f"{name}: expected one of {list(allowed)} (a Python int), got {value!r} "
                         f"({type(value).__name__})")
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {list(allowed)}, got {value!r}")


def softmax_scale(sm_scale: object, head_dim: int) -> float:
    """The softmax scale as a Python float: ``sm_scale``, or ``1 / sqrt(head_dim)`` where it is ``None``.

    Raises:
        ValueError: ``sm_scale`` is not a finite real number or ``None``: a tensor (model code often keeps the scale
            as one) would reach the kernels' scalar arguments, a bool or string is a mistake, and NaN or Inf makes every
            output NaN.
    """
    if sm_scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, numbers.Real):
        raise ValueError(f"sm_scale: expected a finite float or None, got {sm_scale!r} ({type(sm_scale).__name__}); "
                         "pass float(sm_scale)")
    if not math.isfinite(sm_scale):  # (float() would not help: NaN or Inf makes every output NaN)
        raise ValueError(f"sm_scale: expected a finite float or None, got {sm_scale!r}")
    return float(sm_scale)
