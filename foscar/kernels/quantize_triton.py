"""Quantize-on-append: new tokens' K/V into the packed cache, bit for bit as ``foscar.quant``.

One program per (sequence, KV head, new token) quantizes that token's K and V head
vectors (``head_dim`` channels, groups of ``group_size``) with exactly the arithmetic
of :func:`foscar.quant.quantize_groups`: fp32 min and max per group, IEEE division
(``tl.math.div_rn``, not Triton's default approximate ``/``) for the scale and for
``(x - min) / scale``, round half to even (the ``1.5 * 2^23`` add-subtract, exact in
fp32 for the values ``0 .. 2^b - 1`` seen here), clamp, then plane-split packing, and
writes codes, scale and offset at position ``seq_lens[b] + t``. A group whose range
passes fp32's largest value is computed on halved operands, as in ``foscar.quant``
(finite scale and codes; bit for bit ``quantize_kv`` there too).

The grid is ``(batch * num_kv_heads, tokens)``; CUDA caps a grid's axis 1 at 65535, so a
longer append (a long prefill) is launched in pieces of at most :data:`MAX_TOKENS_PER_LAUNCH`
tokens, piece ``i`` covering tokens ``t0 = i * MAX_TOKENS_PER_LAUNCH ..`` (every token is
quantized on its own: the result is the one launch's, bit for bit), and ``seq_lens``
advances once, after the last piece.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_TOKENS_PER_LAUNCH = 65535  # CUDA's limit on a grid's axis 1 (gridDim.y)
RNE_MAGIC = 12582912.0  # 1.5 * 2^23: x + M - M rounds x (0 <= x < 2^22) to the nearest integer, ties to even


@triton.jit
def _quantize_vector(x, BITS: tl.constexpr, HEAD_DIM: tl.constexpr, GROUP: tl.constexpr):
    """``x``: ``[HEAD_DIM]`` fp32 -> (packed ``[HEAD_DIM * BITS // 8]`` uint8, scale ``[NG]``, offset ``[NG]``)."""
    NG: tl.constexpr = HEAD_DIM // GROUP
    P: tl.constexpr = 8 // BITS
    W: tl.constexpr = HEAD_DIM // P
    QMAX: tl.constexpr = (1 << BITS) - 1
    xg = tl.reshape(x, [NG, GROUP])
    lo = tl.min(xg, axis=1)
    hi = tl.max(xg, axis=1)
    qmax = tl.full([NG], QMAX, tl.float32)
    rng = hi - lo
    scale = tl.math.div_rn(rng, qmax)
    # a range past fp32's largest value (finite |x| > 1.7e38): halved operands, as quant._minmax_codes
    over = (rng == float("inf")) & (hi < float("inf")) & (lo > float("-inf"))
    scale = tl.where(over, tl.math.div_rn(hi * 0.5 - lo * 0.5, qmax) * 2.0, scale)
    flat = scale == 0.0
    denom = tl.where(flat, 1.0, scale)
    denom_b = tl.broadcast_to(denom[:, None], [NG, GROUP])
    ratio = tl.math.div_rn(xg - lo[:, None], denom_b)
    ratio = tl.where(over[:, None], tl.math.div_rn(xg * 0.5 - lo[:, None] * 0.5, denom_b * 0.5), ratio)
    q = (ratio + 12582912.0) - 12582912.0  # round half to even
    q = tl.where(flat[:, None], 0.0, q)
    q = tl.minimum(tl.maximum(q, 0.0), QMAX)
    codes = tl.reshape(q.to(tl.int32), [P, W])  # channel p * W + j -> plane p, byte j
    shifts = (tl.arange(0, P) * BITS)[:, None]
    packed = tl.sum(codes << shifts, axis=0)  # disjoint bits: the sum is the OR
    return packed.to(tl.uint8), scale, lo


@triton.jit
def _append_kernel(
    K_new, V_new,  # [batch, num_kv_heads, n_new, HEAD_DIM] any float dtype
    K_codes, V_codes,  # [batch, num_kv_heads, max_seq_len, W] uint8
    K_scale, K_offset, V_scale, V_offset,  # [batch, num_kv_heads, max_seq_len, NG] fp32
    Seq_lens,  # [batch] int32, lengths before the append
    num_kv_heads, t0, max_seq_len,  # t0: the first new token of this launch (a piece of a long append)
    stride_nb, stride_nh, stride_nt,  # of K_new / V_new (last dim contiguous)
    BITS: tl.constexpr, HEAD_DIM: tl.constexpr, GROUP: tl.constexpr,
):
    NG: tl.constexpr = HEAD_DIM // GROUP
    W: tl.constexpr = HEAD_DIM * BITS // 8
    bh = tl.program_id(0)
    t = t0 + tl.program_id(1)
    b = bh // num_kv_heads
    h = bh % num_kv_heads
    pos = tl.sum(tl.load(Seq_lens + b + tl.arange(0, 1)), axis=0) + t
    if (pos >= 0) & (pos < max_seq_len):  # a negative length (unchecked with check_capacity=False) writes nothing
        src = b.to(tl.int64) * stride_nb + h.to(tl.int64) * stride_nh + t.to(tl.int64) * stride_nt + tl.arange(0, HEAD_DIM)
        row = bh.to(tl.int64) * max_seq_len + pos
        kq, ks, kz = _quantize_vector(tl.load(K_new + src).to(tl.float32), BITS, HEAD_DIM, GROUP)
        tl.store(K_codes + row * W + tl.arange(0, W), kq)
        tl.store(K_scale + row * NG + tl.arange(0, NG), ks)
        tl.store(K_offset + row * NG + tl.arange(0, NG), kz)
        vq, vs, vz = _quantize_vector(tl.load(V_new + src).to(tl.float32), BITS, HEAD_DIM, GROUP)
        tl.store(V_codes + row * W + tl.arange(0, W), vq)
        tl.store(V_scale + row * NG + tl.arange(0, NG), vs)
        tl.store(V_offset + row * NG + tl.arange(0, NG), vz)


def append_kv_(cache, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
    """Launch the append kernel (inputs validated by :func:`foscar.append_kv`; in pieces of at
    most :data:`MAX_TOKENS_PER_LAUNCH` tokens), then advance ``cache.seq_lens`` by ``n_new``
    on the device (stream-ordered, no sync)."""
    batch, hkv, n_new, head_dim = k_new.shape
    if batch * hkv == 0 or n_new == 0:
        return
    piece = MAX_TOKENS_PER_LAUNCH
    for t0 in range(0, n_new, piece):  # every piece reads the lengths before the append
        _append_kernel[(batch * hkv, min(piece, n_new - t0))](
            k_new, v_new, cache.k_codes, cache.v_codes, cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset,
            cache.seq_lens, hkv, t0, cache.max_seq_len,
            k_new.stride(0), k_new.stride(1), k_new.stride(2),
            BITS=cache.bits, HEAD_DIM=head_dim, GROUP=cache.group_size,
            num_warps=1,
        )
    cache.seq_lens.add_(n_new)
