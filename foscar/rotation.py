"""Randomized Hadamard rotation of head vectors, applied before quantization.

On row vectors ``x: [..., n]``, with ``R = diag(s) H / sqrt(n)``::

    rotate(x)   = x @ R   = (x * s) @ H / sqrt(n)
    unrotate(y) = y @ R.T = (y @ H / sqrt(n)) * s

with ``H`` the n x n Sylvester-Walsh-Hadamard matrix (symmetric, ``H @ H = n I``)
and ``s`` a fixed random sign vector. The map is orthogonal, so rotating q and K
the same way keeps every score ``q . k``; the attention output over rotated V is
the rotated output, and :func:`unrotate` brings it back. Rotation spreads an
outlier channel over all ``n`` channels, which shrinks the min-max range of each
quantization group (QuaRot / QuIP# style incoherence processing); the sign vector
keeps structured inputs (e.g. a constant vector) from collapsing onto one
Hadamard basis vector.

How a serving system would use it with FOSCAR (what ``foscar accuracy`` measures):
K and V are rotated per head before they are written to the cache (then quantized),
the query is rotated the same way (and rounded to BF16, as the kernel takes), and
the kernel's output is unrotated.
"""

from __future__ import annotations

import functools
import math

import torch

from foscar._validate import check_reference_dtype, check_tensor, is_int


def _check_pow2(n: int) -> None:
    if not is_int(n) or n < 1 or n & (n - 1):
        raise ValueError(f"head_dim: the Walsh-Hadamard transform needs a power of two (an int), got {n!r}")


@functools.lru_cache(maxsize=8)
def _hadamard_cpu(n: int) -> torch.Tensor:
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], dim=1), torch.cat([h, -h], dim=1)], dim=0)
    return h


@functools.lru_cache(maxsize=32)
def _hadamard_on(n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The cached matrix on ``device`` in ``dtype``, read-only (:func:`rotate`, :func:`unrotate`): one host-to-device
    copy per (n, dtype, device), not one per call (a copy from pageable memory waits for the stream and cannot be
    captured in a CUDA graph)."""
    return _hadamard_cpu(n).to(device=device, dtype=dtype)


def hadamard_matrix(n: int, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> torch.Tensor:
    """The unnormalized Sylvester Hadamard matrix ``[n, n]`` (entries +-1, ``H @ H.T = n I``), a new
    tensor the caller may modify: a copy of the cached one (:func:`rotate` and :func:`unrotate` read a cached copy
    per device and dtype).

    Raises:
        ValueError: ``n`` not a power of two.
    """
    _check_pow2(n)
    return _hadamard_cpu(n).to(device=device, dtype=dtype, copy=True)


def random_signs(head_dim: int, seed: int = 0) -> torch.Tensor:
    """A fixed random sign vector ``[head_dim]`` float64 with entries +-1, from ``seed`` (CPU).

    Raises:
        ValueError: ``head_dim`` not a power of two.
    """
    _check_pow2(head_dim)
    g = torch.Generator().manual_seed(seed)
    return torch.where(torch.rand(head_dim, generator=g, dtype=torch.float64) < 0.5, -1.0, 1.0)


def rotate(x: torch.Tensor, signs: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``(x * signs) @ H / sqrt(n)`` over the last dimension.

    Args:
        x: ``[..., n]`` any float dtype, ``n`` a power of two.
        signs: ``[n]`` +-1 (from :func:`random_signs`).
        dtype: arithmetic and result dtype (float32 or float64).

    Returns:
        ``[..., n]`` tensor of ``dtype`` on ``x``'s device.

    Raises:
        ValueError: ``x`` without a dimension, ``n`` not a power of two, ``signs`` not ``[n]``, ``dtype`` not
            float32 / float64.
        TypeError: ``x`` or ``signs`` not a tensor.
    """
    n = _check_rotation("x", x, signs, dtype)
    h = _hadamard_on(n, dtype, x.device)
    return (x.to(dtype) * signs.to(device=x.device, dtype=dtype)) @ h / math.sqrt(n)


def unrotate(y: torch.Tensor, signs: torch.Tensor, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Inverse of :func:`rotate`: ``(y @ H / sqrt(n)) * signs``. Same arguments and errors."""
    n = _check_rotation("y", y, signs, dtype)
    h = _hadamard_on(n, dtype, y.device)
    return (y.to(dtype) @ h / math.sqrt(n)) * signs.to(device=y.device, dtype=dtype)


def _check_rotation(name: str, x: torch.Tensor, signs: torch.Tensor, dtype: torch.dtype) -> int:
    """``x``'s last dimension, once ``x``, ``signs`` and ``dtype`` are what :func:`rotate` takes."""
    check_tensor(name, x)
    if x.dim() == 0:
        raise ValueError(f"{name}: expected at least one dimension ([..., n]), got a 0-dim tensor")
    check_reference_dtype(dtype)
    n = x.shape[-1]
    _check_pow2(n)
    check_tensor("signs", signs, shape=(n,))
    return n
