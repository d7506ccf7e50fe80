"""The mixed-precision cache layout serving systems use: sinks and recent tokens exact.

Per sequence of length ``L``: the first ``num_sink`` tokens (attention sinks) and the
last ``num_recent`` tokens stay in BF16; the tokens between them (the "middle") are
quantized to INT2/INT4. With ``ns = min(num_sink, L)`` and
``rs = max(ns, L - num_recent)``::

    sinks  = tokens [0, ns)      BF16
    middle = tokens [ns, rs)     quantized (a QuantizedKVCache of its own)
    recent = tokens [rs, L)      BF16

A sequence no longer than ``num_sink + num_recent`` has no middle and is exact.

Decode (:func:`mixed_decode`) runs FOSCAR's kernel on the middle with
``return_lse=True`` and an exact attention pass (torch, fp32 by default) over
sinks + recent, then merges the two partial results through their log-sum-exps
(:func:`merge_states`): with ``w_i = exp(lse_i - max(lse))``,
``out = (w_a out_a + w_b out_b) / (w_a + w_b)`` and
``lse = max(lse) + log(w_a + w_b)``. An empty part has LSE ``-inf`` and weight 0;
both empty gives a zero row and LSE ``-inf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from foscar._validate import check_tensor, is_int
from foscar.quant import FLOAT_DTYPES, QuantizedKVCache, check_finite_kv, dequantize_kv, quantize_kv
from foscar.reference import attention_reference

DEFAULT_NUM_SINK = 64
DEFAULT_NUM_RECENT = 256


@dataclass
class MixedKVCache:
    """Sinks + recent tokens in BF16, the middle quantized. Layout in the module docstring.

    Attributes:
        middle: the quantized middle; ``middle.seq_lens[b]`` = its length for row ``b``
            (``max_seq_len`` may be 0 when no row has a middle).
        exact_k, exact_v: ``[batch, num_kv_heads, num_sink + num_recent, head_dim]``
            bfloat16: row ``b``'s sinks then its recent tokens, zero padding after.
        exact_lens: ``[batch]`` int32: sinks + recent tokens of each row.
        sink_lens: ``[batch]`` int32: sinks of each row (``min(num_sink, L)``).
        seq_lens: ``[batch]`` int32: the full lengths ``L``.
        num_sink, num_recent: the layout's parameters.
        max_seq_len: the dense cache's ``max_seq_len`` (for :func:`dequantize_mixed`).
    """

    middle: QuantizedKVCache
    exact_k: torch.Tensor
    exact_v: torch.Tensor
    exact_lens: torch.Tensor
    sink_lens: torch.Tensor
    seq_lens: torch.Tensor
    num_sink: int
    num_recent: int
    max_seq_len: int

    @property
    def batch_size(self) -> int:
        return self.exact_k.shape[0]

    @property
    def head_dim(self) -> int:
        return self.exact_k.shape[-1]

    @property
    def device(self) -> torch.device:
        return self.exact_k.device

    def layout_label(self) -> str:
        """``"sink<num_sink>+recent<num_recent>"``, e.g. ``"sink64+recent256"``."""
        return f"sink{self.num_sink}+recent{self.num_recent}"


def split_points(length: int, num_sink: int, num_recent: int) -> tuple[int, int]:
    """``(ns, rs)``: the middle of a length-``length`` sequence is tokens ``[ns, rs)``."""
    ns = min(num_sink, length)
    rs = max(ns, length - num_recent)
    return ns, rs


def build_mixed_cache(
    k: torch.Tensor,
    v: torch.Tensor,
    bits: int = 2,
    group_size: int = 128,
    seq_lens: torch.Tensor | None = None,
    num_sink: int = DEFAULT_NUM_SINK,
    num_recent: int = DEFAULT_NUM_RECENT,
) -> MixedKVCache:
    """Split a dense cache into BF16 sinks + recent and a quantized middle.

    Args:
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` float16/bfloat16/float32
            (the exact part is stored rounded to bfloat16).
        bits, group_size: the middle's format (as :func:`foscar.quantize_kv`).
        seq_lens: ``[batch]`` int32 valid lengths (default: all ``max_seq_len``).
        num_sink: leading tokens kept exact (>= 0).
        num_recent: trailing tokens kept exact (>= 0).

    Returns:
        A :class:`MixedKVCache` on ``k``'s device.

    Raises:
        ValueError: bad shapes/dtypes, negative ``num_sink``/``num_recent``, lengths
            out of range, or what :func:`foscar.quantize_kv` raises for the middle.
    """
    check_tensor("k", k, ndim=4, dtypes=FLOAT_DTYPES)
    check_tensor("v", v, shape=tuple(k.shape), dtypes=FLOAT_DTYPES, device=k.device)
    for name, x in (("num_sink", num_sink), ("num_recent", num_recent)):
        if not is_int(x) or x < 0:
            raise ValueError(f"{name}: expected a non-negative int, got {x!r}")
    batch, hkv, max_seq_len, head_dim = k.shape
    if seq_lens is None:
        seq_lens = torch.full((batch,), max_seq_len, dtype=torch.int32, device=k.device)
    check_tensor("seq_lens", seq_lens, shape=(batch,), dtypes=(torch.int32,), device=k.device)
    lens = [int(x) for x in seq_lens.tolist()]
    if any(not 0 <= n <= max_seq_len for n in lens):
        raise ValueError(f"seq_lens: expected values in [0, max_seq_len={max_seq_len}], got {lens}")
    check_finite_kv(k, v, seq_lens)  # every valid token, sinks and recent too, at the caller's positions
    splits = [split_points(n, num_sink, num_recent) for n in lens]
    mid_lens = [rs - ns for ns, rs in splits]
    max_mid = max(mid_lens, default=0)
    n_exact = num_sink + num_recent
    mid_k = k.new_zeros(batch, hkv, max_mid, head_dim)
    mid_v = v.new_zeros(batch, hkv, max_mid, head_dim)
    ex_k = torch.zeros(batch, hkv, n_exact, head_dim, dtype=torch.bfloat16, device=k.device)
    ex_v = torch.zeros_like(ex_k)
    ex_lens = []
    for b, (n, (ns, rs)) in enumerate(zip(lens, splits)):
        mid_k[b, :, : rs - ns] = k[b, :, ns:rs]
        mid_v[b, :, : rs - ns] = v[b, :, ns:rs]
        nr = n - rs
        ex_k[b, :, :ns], ex_k[b, :, ns : ns + nr] = k[b, :, :ns], k[b, :, rs:n]
        ex_v[b, :, :ns], ex_v[b, :, ns : ns + nr] = v[b, :, :ns], v[b, :, rs:n]
        ex_lens.append(ns + nr)
    as_i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=k.device)  # noqa: E731
    middle = quantize_kv(mid_k, mid_v, bits=bits, group_size=group_size, seq_lens=as_i32(mid_lens), check_finite=False)
    return MixedKVCache(
        middle=middle,
        exact_k=ex_k,
        exact_v=ex_v,
        exact_lens=as_i32(ex_lens),
        sink_lens=as_i32([ns for ns, _ in splits]),
        seq_lens=seq_lens.clone(),
        num_sink=num_sink,
        num_recent=num_recent,
        max_seq_len=max_seq_len,
    )


def dequantize_mixed(cache: MixedKVCache, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The dense cache the mixed layout represents, tokens in their original order.

    Sinks and recent tokens are the stored BF16 values; the middle is dequantized.

    Args:
        cache: the mixed cache.
        dtype: float32 or float64.

    Returns:
        ``(k, v)``, each ``[batch, num_kv_heads, max_seq_len, head_dim]`` of ``dtype``
        (zero beyond ``seq_lens``).
    """
    batch, hkv, _, head_dim = cache.exact_k.shape
    k = torch.zeros(batch, hkv, cache.max_seq_len, head_dim, dtype=dtype, device=cache.device)
    v = torch.zeros_like(k)
    mk, mv = dequantize_kv(cache.middle, dtype=dtype) if cache.middle.max_seq_len else (None, None)
    for b in range(batch):
        n, ns = int(cache.seq_lens[b]), int(cache.sink_lens[b])
        nm = int(cache.middle.seq_lens[b])
        rs = ns + nm
        for dst, ex, mid in ((k, cache.exact_k, mk), (v, cache.exact_v, mv)):
            dst[b, :, :ns] = ex[b, :, :ns].to(dtype)
            if nm:
                dst[b, :, ns:rs] = mid[b, :, :nm]
            dst[b, :, rs:n] = ex[b, :, ns : ns + n - rs].to(dtype)
    return k, v


def merge_states(
    out_a: torch.Tensor,
    lse_a: torch.Tensor,
    out_b: torch.Tensor,
    lse_b: torch.Tensor,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two attention results over disjoint token sets through their LSEs.

    Args:
        out_a, out_b: ``[batch, num_qo_heads, head_dim]`` any float dtype, each
            normalized over its own tokens.
        lse_a, lse_b: ``[batch, num_qo_heads]`` natural-log LSE of the scaled scores
            (``-inf`` for an empty part).
        dtype: arithmetic and result dtype.

    Returns:
        ``(out, lse)``: ``[batch, num_qo_heads, head_dim]`` and ``[batch, num_qo_heads]``
        of ``dtype``; formula in the module docstring (both parts empty: zero, ``-inf``).

    Raises:
        ValueError: shapes that do not match.
    """
    check_tensor("out_a", out_a, ndim=3)
    check_tensor("out_b", out_b, shape=tuple(out_a.shape))
    check_tensor("lse_a", lse_a, shape=tuple(out_a.shape[:2]))
    check_tensor("lse_b", lse_b, shape=tuple(out_a.shape[:2]))
    la, lb = lse_a.to(dtype), lse_b.to(dtype)
    m = torch.maximum(la, lb)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)  # both empty: weights exp(-inf) = 0
    wa, wb = torch.exp(la - m), torch.exp(lb - m)
    den = wa + wb
    safe = torch.where(den == 0, torch.ones_like(den), den)
    out = (wa.unsqueeze(-1) * out_a.to(dtype) + wb.unsqueeze(-1) * out_b.to(dtype)) / safe.unsqueeze(-1)
    return out, m + torch.log(den)


MiddleDecode = Callable[[torch.Tensor, QuantizedKVCache, float], "tuple[torch.Tensor, torch.Tensor]"]


def mixed_decode(
    q: torch.Tensor,
    cache: MixedKVCache,
    *,
    sm_scale: float | None = None,
    backend: str = "auto",
    middle_decode: MiddleDecode | None = None,
    dtype: torch.dtype = torch.float32,
    return_lse: bool = False,
):
    """Decode over a :class:`MixedKVCache`: kernel on the middle, exact pass on the rest, LSE merge.

    Args:
        q: ``[batch, num_qo_heads, head_dim]`` bfloat16 (what :func:`foscar.decode` takes).
        cache: the mixed cache.
        sm_scale: softmax scale, default ``1 / sqrt(head_dim)``.
        backend: :func:`foscar.decode`'s backend for the middle.
        middle_decode: replaces the kernel: ``f(q, middle, sm_scale) -> (out, lse)``
            with ``out [batch, num_qo_heads, head_dim]`` and natural-log ``lse
            [batch, num_qo_heads]`` (e.g. the fp64 reference, in tests). Not called
            when no row has a middle.
        dtype: the exact pass's and the merge's arithmetic dtype, and the result's.
        return_lse: also return the merged LSE.

    Returns:
        ``[batch, num_qo_heads, head_dim]`` of ``dtype`` (and the LSE
        ``[batch, num_qo_heads]``).

    Raises:
        ValueError: ``cache`` not a :class:`MixedKVCache`, bad shapes/dtypes, and whatever :func:`foscar.decode`
            raises.
    """
    if not isinstance(cache, MixedKVCache):
        hint = " (a quantized cache alone: foscar.decode)" if hasattr(cache, "bits") else ""
        raise ValueError(f"cache: expected a MixedKVCache (foscar.mixed.build_mixed_cache), "
                         f"got {type(cache).__name__}{hint}")
    check_tensor("q", q, shape=(cache.batch_size, None, cache.head_dim), device=cache.device,
                 dtypes=(torch.bfloat16,) if middle_decode is None else None)  # the kernel's, whatever the lengths
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(cache.head_dim)
    middle = cache.middle
    if middle.max_seq_len and int(middle.seq_lens.max()) > 0:
        if middle_decode is None:
            from foscar.decode import decode

            out_m, lse_m = decode(q, middle, sm_scale=scale, return_lse=True, backend=backend)
        else:
            out_m, lse_m = middle_decode(q, middle, scale)
    else:
        out_m = torch.zeros(q.shape, dtype=dtype, device=q.device)
        lse_m = torch.full(q.shape[:2], -math.inf, dtype=dtype, device=q.device)
    out_e, lse_e = attention_reference(
        q, cache.exact_k, cache.exact_v, cache.exact_lens, sm_scale=scale, dtype=dtype, return_lse=True
    )
    out, lse = merge_states(out_m, lse_m, out_e, lse_e, dtype)
    return (out, lse) if return_lse else out
