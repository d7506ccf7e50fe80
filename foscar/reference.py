"""Reference attention in fp64/fp32, and the folding algebra written out in torch.

* :func:`attention_reference` — softmax attention of one decode query per sequence
  over plain K/V tensors (the ground truth).
* :func:`reference_decode` — the same over the dequantized quantized cache: what
  every FOSCAR kernel must reproduce up to BF16 operand rounding.
* :func:`folded_decode_torch` — DESIGN §3's folded formulas, evaluated in torch
  with an operand encoding ``v = a * code + c``; in exact arithmetic (and in fp64
  to rounding) it equals :func:`reference_decode`. The tests use it to check the
  algebra the kernels implement.

GQA convention (FlashInfer's): query head ``h`` reads KV head
``h // (num_qo_heads // num_kv_heads)``.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from foscar._validate import check_choice, check_flag, check_reference_dtype, check_tensor, is_int, softmax_scale
from foscar.quant import QuantizedKVCache, check_contiguous_cache, check_lengths, dequantize_kv, unpack_codes

# Operand encodings (DESIGN §4): code q -> operand value a * q + c.
OPERAND_ENCODINGS: dict[str, tuple[float, float]] = {
    "bf16": (1.0 / 128.0, 1.0),  # bits 0x3F80 | q  ->  1 + q/128, exact in BF16
    "fp8": (2.0**-9, 0.0),  # e4m3 byte q       ->  q * 2^-9 (subnormals, exact)
}


def gqa_ratio(num_qo_heads: int, num_kv_heads: int) -> int:
    """Query heads per KV head.

    Raises:
        ValueError: ``num_qo_heads`` is not a positive multiple of ``num_kv_heads``.
    """
    if num_kv_heads <= 0 or num_qo_heads <= 0 or num_qo_heads % num_kv_heads != 0:
        raise ValueError(
            f"num_qo_heads: expected a positive multiple of num_kv_heads={num_kv_heads}, got {num_qo_heads}"
        )
    return num_qo_heads // num_kv_heads


def attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_lens: torch.Tensor,
    sm_scale: float | None = None,
    dtype: torch.dtype = torch.float64,
    return_lse: bool = False,
):
    """Decode attention (one query token per sequence) in ``dtype``.

    Args:
        q: ``[batch, num_qo_heads, head_dim]`` any float dtype.
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` (HND).
        seq_lens: ``[batch]`` integer valid lengths; a length 0 gives a zero row.
        sm_scale: softmax scale, default ``1 / sqrt(head_dim)``.
        dtype: float64 (default) or float32.
        return_lse: also return the natural-log LSE ``[batch, num_qo_heads]``
            (``-inf`` for length 0).

    Returns:
        ``[batch, num_qo_heads, head_dim]`` in ``dtype`` (and the LSE).

    Raises:
        ValueError: ``k`` / ``v`` not ``[batch, *, *, head_dim]`` of ``q``'s batch and head_dim, or of
            different shapes; ``seq_lens`` not ``[batch]`` integers in ``[0, max_seq_len]`` (a reference
            must not cut a sequence or leave one out silently); ``num_qo_heads`` not a multiple of
            ``num_kv_heads``; ``sm_scale`` not a finite float or ``None``; ``dtype`` not float64 / float32;
            ``return_lse`` not a bool.
    """
    check_reference_dtype(dtype)
    check_flag("return_lse", return_lse)
    check_tensor("q", q, ndim=3)
    batch, num_qo_heads, head_dim = q.shape
    check_tensor("k", k, shape=(batch, None, None, head_dim))
    num_kv_heads, max_seq_len = k.shape[1], k.shape[2]
    check_tensor("v", v, shape=tuple(k.shape))
    check_tensor("seq_lens", seq_lens, shape=(batch,))
    if seq_lens.dtype.is_floating_point or seq_lens.dtype == torch.bool:
        raise ValueError(f"seq_lens: expected an integer dtype, got {str(seq_lens.dtype).replace('torch.', '')}")
    check_lengths("seq_lens", seq_lens.cpu(), max_seq_len, hint=" (k's rows per sequence)")
    gqa_ratio(num_qo_heads, num_kv_heads)  # raises unless num_qo_heads is a multiple of num_kv_heads
    scale = softmax_scale(sm_scale, head_dim)
    out = torch.zeros(batch, num_qo_heads, head_dim, dtype=dtype, device=q.device)
    lse = torch.full((batch, num_qo_heads), -math.inf, dtype=dtype, device=q.device)
    lens = [int(x) for x in seq_lens.tolist()]
    for b, length in enumerate(lens):
        if length == 0:
            continue
        o, l = _attend(q[b], k[b, :, :length], v[b, :, :length], scale, dtype)
        out[b], lse[b] = o, l
    return (out, lse) if return_lse else out


def _attend(qb, kb, vb, scale, dtype):
    # qb: [num_qo_heads, D]; kb, vb: [num_kv_heads, L, D] (the GQA group: num_qo_heads / num_kv_heads)
    o, lse = attend_all(qb[None], kb[None], vb[None], scale, dtype)
    return o[0], lse[0]


def attend_all(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
               dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of ``q`` ``[batch, num_qo_heads, head_dim]`` over every token of ``k``, ``v``
    ``[batch, num_kv_heads, tokens, head_dim]`` (tokens >= 1; GQA: query head h reads KV head h // gqa), in ``dtype``,
    batched: no lengths, so nothing read on the host (:func:`attention_reference` takes lengths and reads them). No
    input checks: for callers whose shapes are their own (:class:`foscar.hf.FoscarLayer`'s sinks and recent window).

    Returns:
        ``(out, lse)``: ``[batch, num_qo_heads, head_dim]`` and the natural-log LSE ``[batch, num_qo_heads]``,
        both ``dtype``.
    """
    batch, num_qo_heads, head_dim = q.shape
    qg = q.to(dtype).reshape(batch, k.shape[1], -1, head_dim)  # [batch, Hkv, group, D]
    s = torch.einsum("bhgd,bhld->bhgl", qg, k.to(dtype)) * scale
    lse = torch.logsumexp(s, dim=-1)  # [batch, Hkv, group]
    p = torch.exp(s - lse.unsqueeze(-1))
    o = torch.einsum("bhgl,bhld->bhgd", p, v.to(dtype))
    return o.reshape(batch, num_qo_heads, head_dim), lse.reshape(batch, num_qo_heads)


def reference_decode(
    q: torch.Tensor,
    cache: QuantizedKVCache,
    sm_scale: float | None = None,
    dtype: torch.dtype = torch.float64,
    batch_indices: Sequence[int] | None = None,
    return_lse: bool = False,
    k_operand_dtype: torch.dtype | None = None,
):
    """Decode attention over the dequantized cache (``x_hat = s * q + z``) in ``dtype``.

    Dequantizes one sequence at a time, so memory stays at one sequence's fp64 K/V.

    Args:
        q: ``[batch, num_qo_heads, head_dim]`` (any float dtype; used as given,
            upcast to ``dtype``).
        cache: the quantized cache; a ``PagedQuantizedKVCache`` is gathered into a
            contiguous one first (``to_contiguous``, one device sync).
        sm_scale: default ``1 / sqrt(head_dim)``.
        dtype: float64 or float32.
        batch_indices: sequences to compute (default all); the other rows are zero.
        return_lse: also return the LSE ``[batch, num_qo_heads]`` (natural log).
        k_operand_dtype: round the dequantized K to this dtype before the fp64 math, as
            the per-value kernel's BF16 K operand does (``torch.bfloat16``): the exact
            answer for that kernel's operands. Default: no rounding.

    Returns:
        ``[batch, num_qo_heads, head_dim]`` of ``dtype`` (and the LSE).

    Raises:
        ValueError: everything ``cache.validate(check_values=True)`` raises (a length the cache cannot
            hold); ``q`` not ``[batch, *, head_dim]``; a batch index that is not an int in ``[0, batch)``;
            ``sm_scale`` not a finite float or ``None``; ``dtype`` not float64 / float32; ``return_lse`` not a
            bool; ``k_operand_dtype`` not ``None``, bfloat16, float16 or float32.
    """
    check_reference_dtype(dtype)
    check_flag("return_lse", return_lse)
    if k_operand_dtype not in (None, torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"k_operand_dtype: expected None, torch.bfloat16, torch.float16 or torch.float32 (an "
                         f"operand dtype K is rounded to), got {k_operand_dtype!r}")
    if hasattr(cache, "to_contiguous"):  # paged: its page table validated before the gather
        cache = cache.to_contiguous()
    cache.validate(check_values=True)
    check_tensor("q", q, shape=(cache.batch_size, None, cache.head_dim))
    gqa_ratio(q.shape[1], cache.num_kv_heads)  # raises unless num_qo_heads is a multiple of num_kv_heads
    scale = softmax_scale(sm_scale, cache.head_dim)
    out = torch.zeros(q.shape, dtype=dtype, device=q.device)
    lse = torch.full(q.shape[:2], -math.inf, dtype=dtype, device=q.device)
    rows = range(cache.batch_size) if batch_indices is None else list(batch_indices)
    for b in rows:
        if not is_int(b) or not 0 <= b < cache.batch_size:
            hint = "" if is_int(b) else f" ({type(b).__name__}); pass int(x)"
            raise ValueError(f"batch_indices: expected Python ints in [0, {cache.batch_size}), got {b!r}{hint}")
    for b in rows:
        if int(cache.seq_lens[b]) == 0:
            continue
        kb, vb = dequantize_kv(cache, dtype=dtype, batch_index=b)
        if k_operand_dtype is not None:
            kb = kb.to(k_operand_dtype).to(dtype)
        out[b], lse[b] = _attend(q[b].to(q.device), kb.to(q.device), vb.to(q.device), scale, dtype)
    return (out, lse) if return_lse else out


def folded_decode_torch(
    q: torch.Tensor,
    cache: QuantizedKVCache,
    operand: str = "bf16",
    sm_scale: float | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """DESIGN §3's folded decode, token-wise V and token- or channel-wise K, in torch.

    The raw operand ``v = a * code + c`` enters the products; each group's scale
    is applied to the partial product (K) or to the probabilities (V), and each
    group's offset as one correction term::

        S_t = sum_g (s_tg / a) * (Q_g . v_tg)  +  sum_g (z_tg - s_tg * c / a) * sum(Q_g)
        O_g = (P * s_g / a) . v_g  +  sum_t P_t * (z_tg - s_tg * c / a)

    Channel-wise K (``cache.k_block`` set; ``s, z`` per channel of token ``t``'s
    block): the query is scaled per block, the offset is one constant per block::

        S_t = (Q * s_blk / a) . v_t  +  Q . (z_blk - s_blk * c / a)

    Args:
        q: ``[batch, num_qo_heads, head_dim]``.
        cache: quantized cache.
        operand: ``"bf16"`` (a = 1/128, c = 1) or ``"fp8"`` (a = 2^-9, c = 0).
        sm_scale: default ``1 / sqrt(head_dim)``.
        dtype: arithmetic dtype, float64 (to check the identity to rounding) or float32.

    Returns:
        ``[batch, num_qo_heads, head_dim]`` of ``dtype``.

    Raises:
        ValueError: an ``operand`` other than ``"bf16"`` / ``"fp8"``; a cache that is not a contiguous
            :class:`QuantizedKVCache` (a paged one: take ``to_contiguous()``) or fails its ``validate``;
            ``q`` not ``[batch, *, head_dim]``; ``num_qo_heads`` not a multiple of ``num_kv_heads``; ``sm_scale``
            not a finite float or ``None``; ``dtype`` not float64 / float32.
    """
    check_choice("operand", operand, tuple(OPERAND_ENCODINGS))
    check_reference_dtype(dtype)
    check_contiguous_cache(cache)
    cache.validate(check_values=True)
    check_tensor("q", q, shape=(cache.batch_size, None, cache.head_dim))
    a, c = OPERAND_ENCODINGS[operand]
    batch, num_qo_heads, head_dim = q.shape
    hkv, gs, ng = cache.num_kv_heads, cache.group_size, cache.num_groups
    group = gqa_ratio(num_qo_heads, hkv)
    scale = softmax_scale(sm_scale, head_dim)
    out = torch.zeros(q.shape, dtype=dtype, device=q.device)
    for b in range(batch):
        length = int(cache.seq_lens[b])
        if length == 0:
            continue
        qg = q[b].to(dtype).reshape(hkv, group, ng, gs)  # [Hkv, group, NG, G]
        kop = a * unpack_codes(cache.k_codes[b, :, :length], cache.bits).to(dtype) + c
        vop = a * unpack_codes(cache.v_codes[b, :, :length], cache.bits).to(dtype) + c
        vop = vop.reshape(hkv, length, ng, gs)
        vs, vz = cache.v_scale[b, :, :length].to(dtype), cache.v_offset[b, :, :length].to(dtype)
        if cache.k_block is None:
            kop = kop.reshape(hkv, length, ng, gs)
            ks, kz = cache.k_scale[b, :, :length].to(dtype), cache.k_offset[b, :, :length].to(dtype)
            # scores: per-group raw dots, scaled per (token, group), plus the offset term
            dots = torch.einsum("hqgd,hlgd->hqlg", qg, kop)  # [Hkv, group, L, NG]
            qsum = qg.sum(-1)  # [Hkv, group, NG]
            s = (dots * (ks / a).unsqueeze(1)).sum(-1)
            s = s + torch.einsum("hqg,hlg->hql", qsum, kz - ks * c / a)
        else:
            # scores: query scaled per (block, channel), raw dot, plus one constant per block
            kb = cache.k_block
            nb = -(-length // kb)
            ks, kz = cache.k_scale[b, :, :nb].to(dtype), cache.k_offset[b, :, :nb].to(dtype)  # [Hkv, NB, D]
            qf = qg.reshape(hkv, group, head_dim)
            q_scaled = torch.einsum("hqd,hnd->hnqd", qf, ks / a)  # [Hkv, NB, group, D]
            const = torch.einsum("hqd,hnd->hnq", qf, kz - ks * c / a)  # [Hkv, NB, group]
            blk = torch.arange(length, device=q.device) // kb
            s = torch.einsum("hlqd,hld->hql", q_scaled[:, blk], kop) + const[:, blk].permute(0, 2, 1)
        s = s * scale
        p = torch.softmax(s, dim=-1)  # [Hkv, group, L]
        # output: probabilities scaled per (token, group) into the raw V operand
        pv = torch.einsum("hql,hlg,hlgd->hqgd", p, vs / a, vop)
        pv = pv + torch.einsum("hql,hlg->hqg", p, vz - vs * c / a).unsqueeze(-1)
        out[b] = pv.reshape(num_qo_heads, head_dim)
    return out
