"""Synthetic K/V caches with the shapes of real ones, for accuracy measurements.

Three kinds (:data:`DATA_KINDS`), each a generator returning a :class:`KVData` with a
human-readable ``label``:

* ``gaussian``: K, V, q i.i.d. N(0, 1) — the easy case every quantizer looks good on.
* ``outlier-rope``: K as in real LLMs before and after rotary encoding. A few
  channels per KV head carry a large per-channel mean (10-50x the other channels'
  standard deviation, random sign) plus unit noise; then rotary position encoding
  (RoPE, rotate-half convention: channel ``i`` pairs with ``i + head_dim/2``,
  frequency ``base ** (-2i / head_dim)``, ``base = 10000``) is applied at positions
  ``0 .. max_seq_len - 1``, so each outlier oscillates between its channel and its
  partner at its pair's frequency. The query is N(0, 1) with RoPE at position
  ``max_seq_len`` (the token being decoded). V is N(0, 1).
* ``student-t``: K and q N(0, 1), V heavy-tailed: Student-t with 3 degrees of
  freedom (finite variance, rare values 10-30x the typical one).

Everything is drawn on the CPU from a seeded ``torch.Generator`` (the same numbers
on every machine), then rounded to BF16 — the "unquantized cache" of a serving
system — and moved to ``device``.

No real K/V captured from a trained model is shipped: no small transformer with
weights is available offline here (see bench/README.md, ``foscar accuracy``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from foscar.reference import gqa_ratio

ROPE_BASE = 10000.0
NUM_OUTLIER_CHANNELS = 4
OUTLIER_RANGE = (10.0, 50.0)
STUDENT_T_DF = 3


@dataclass
class KVData:
    """One synthetic decode problem.

    Attributes:
        name: the kind (a key of :data:`DATA_KINDS`).
        label: what the data is, in words (goes into result rows and plots).
        q: ``[batch, num_qo_heads, head_dim]`` bfloat16.
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` bfloat16 (HND).
        seq_lens: ``[batch]`` int32, all ``max_seq_len``.
        sm_scale: the softmax scale the data belongs with (a captured model's own attention scale),
            ``None``: ``1 / sqrt(head_dim)``.
    """

    name: str
    label: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    seq_lens: torch.Tensor
    sm_scale: float | None = None


def rope_tables(positions: torch.Tensor, head_dim: int, base: float = ROPE_BASE) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos, sin`` tables ``[len(positions), head_dim]`` float64 (rotate-half layout).

    Raises:
        ValueError: ``head_dim`` odd or not positive.
    """
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim: expected a positive even number, got {head_dim}")
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # [D/2]
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]  # [L, D/2]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = ROPE_BASE) -> torch.Tensor:
    """Rotary position encoding, rotate-half convention, in float64.

    Args:
        x: ``[..., len(positions), head_dim]`` any float dtype.
        positions: ``[L]`` integer positions.
        base: RoPE base.

    Returns:
        float64 tensor of ``x``'s shape: ``x * cos + rotate_half(x) * sin`` with
        ``rotate_half([a, b]) = [-b, a]`` on the two halves of the last dimension.
    """
    cos, sin = rope_tables(positions, x.shape[-1], base)
    x = x.to(torch.float64)
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos.to(x.device) + rot * sin.to(x.device)


def _finish(name, label, q, k, v, device) -> KVData:
    batch, _, seq, _ = k.shape
    bf = torch.bfloat16
    return KVData(
        name=name,
        label=label,
        q=q.to(bf).to(device),
        k=k.to(bf).to(device),
        v=v.to(bf).to(device),
        seq_lens=torch.full((batch,), seq, dtype=torch.int32, device=device),
    )


def _integral(x) -> bool:
    """An integer (Python's or numpy's), not a bool or a float."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _shapes(batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim):
    for name, x in (("batch", batch), ("num_qo_heads", num_qo_heads), ("num_kv_heads", num_kv_heads),
                    ("max_seq_len", max_seq_len), ("head_dim", head_dim)):
        if not _integral(x) or x < 1:
            raise ValueError(f"{name}: expected a positive int, got {x!r}")
    gqa_ratio(num_qo_heads, num_kv_heads)
    return (batch, num_qo_heads, head_dim), (batch, num_kv_heads, max_seq_len, head_dim)


def gaussian_kv(batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim, *, seed=0, device="cpu") -> KVData:
    """K, V and q i.i.d. N(0, 1), rounded to BF16. Shapes in :class:`KVData`.

    Raises:
        ValueError: non-positive sizes, ``num_qo_heads`` not a multiple of ``num_kv_heads``.
    """
    qs, ks = _shapes(batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim)
    g = torch.Generator().manual_seed(seed)
    k, v, q = torch.randn(ks, generator=g), torch.randn(ks, generator=g), torch.randn(qs, generator=g)
    return _finish("gaussian", "K, V ~ N(0,1)", q, k, v, device)


def outlier_rope_kv(
    batch,
    num_qo_heads,
    num_kv_heads,
    max_seq_len,
    head_dim,
    *,
    seed=0,
    device="cpu",
    num_outliers: int = NUM_OUTLIER_CHANNELS,
    outlier_range: tuple[float, float] = OUTLIER_RANGE,
) -> KVData:
    """K with a few large outlier channels, then RoPE over positions; V, q N(0, 1).

    Per KV head, ``num_outliers`` distinct channels get a mean drawn uniformly from
    ``outlier_range`` (times a random sign) on top of N(0, 1) noise; every sequence
    shares the heads' outlier channels (they are a property of the model). RoPE is
    applied to K at positions ``0 .. max_seq_len - 1`` and to q at ``max_seq_len``.

    Raises:
        ValueError: as :func:`gaussian_kv`; ``head_dim`` odd; ``num_outliers`` not in
            ``[0, head_dim]``.
    """
    qs, ks = _shapes(batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim)
    if not _integral(num_outliers) or not 0 <= num_outliers <= head_dim:
        raise ValueError(f"num_outliers: expected a value in [0, {head_dim}], got {num_outliers}")
    g = torch.Generator().manual_seed(seed)
    lo, hi = outlier_range
    k = torch.randn(ks, generator=g)
    for h in range(num_kv_heads):
        chans = torch.randperm(head_dim, generator=g)[:num_outliers]
        mag = lo + (hi - lo) * torch.rand(num_outliers, generator=g)
        sign = torch.where(torch.rand(num_outliers, generator=g) < 0.5, -1.0, 1.0)
        k[:, h, :, chans] += mag * sign
    v = torch.randn(ks, generator=g)
    q = torch.randn(qs, generator=g)
    k = apply_rope(k, torch.arange(max_seq_len))
    q = apply_rope(q.unsqueeze(-2), torch.tensor([max_seq_len])).squeeze(-2)
    label = f"K: {num_outliers} outlier channels x{lo:g}-{hi:g} + RoPE; V ~ N(0,1)"
    return _finish("outlier-rope", label, q, k, v, device)


def student_t_kv(
    batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim, *, seed=0, device="cpu", df: int = STUDENT_T_DF
) -> KVData:
    """K and q N(0, 1); V heavy-tailed, Student-t with ``df`` (integer) degrees of freedom.

    Drawn as ``z / sqrt(chi2 / df)`` with ``chi2`` a sum of ``df`` squared N(0, 1).

    Raises:
        ValueError: as :func:`gaussian_kv`; ``df`` not a positive int.
    """
    qs, ks = _shapes(batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim)
    if not _integral(df) or df < 1:
        raise ValueError(f"df: expected a positive int, got {df!r}")
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(ks, generator=g)
    z = torch.randn(ks, generator=g)
    chi2 = torch.zeros(ks)
    for _ in range(df):
        chi2 += torch.randn(ks, generator=g) ** 2
    v = z / torch.sqrt(chi2 / df)
    q = torch.randn(qs, generator=g)
    return _finish("student-t", f"K ~ N(0,1); V ~ Student-t (df={df:g})", q, k, v, device)


DATA_KINDS: dict[str, Callable[..., KVData]] = {
    "gaussian": gaussian_kv,
    "outlier-rope": outlier_rope_kv,
    "student-t": student_t_kv,
}


def make_kv(
    kind: str,
    batch: int,
    num_qo_heads: int,
    num_kv_heads: int,
    max_seq_len: int,
    head_dim: int,
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> KVData:
    """One of :data:`DATA_KINDS` by name (shapes and dtypes in :class:`KVData`).

    Raises:
        ValueError: unknown ``kind``, or what the generator raises.
    """
    if kind not in DATA_KINDS:
        raise ValueError(f"kind: expected one of {list(DATA_KINDS)}, got {kind!r}")
    return DATA_KINDS[kind](batch, num_qo_heads, num_kv_heads, max_seq_len, head_dim, seed=seed, device=device)
