"""Merge split-KV partial outputs through their LSE (flash-decoding's second pass).

For each (sequence, query head) with splits ``i``::

    m   = max_i lse_i                      (base 2)
    w_i = 2 ** (lse_i - m)
    out = sum_i w_i * o_i / sum_i w_i
    lse = (m + log2(sum_i w_i)) * ln 2     (natural log, FlashInfer's convention)

Empty splits carry ``lse_i = -inf`` and weigh zero. A sequence of length 0 has
every split empty: its output row is all zeros and its LSE is ``-inf`` (no NaN). A
NaN split LSE (a NaN in the query row) gives a NaN output row and a NaN LSE: ``-inf``
means "no tokens" and nothing else.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

LN2 = 0.6931471805599453
MAX_BLOCK_ELEMS = 8192  # fp32 partial values merged per round and program by merge_slots (64 chunks at head_dim 128)


@triton.jit
def _merge_splits_kernel(
    O_part,  # [rows, num_splits, HEAD_DIM] fp32
    Lse_part,  # [rows, num_splits] fp32, base 2
    Out,  # [rows, HEAD_DIM] bf16 (rows = batch * num_qo_heads, row stride stride_out)
    Lse_out,  # [rows] fp32, natural log
    num_splits, stride_out,
    HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    s_mask = offs_s < num_splits
    lse = tl.load(Lse_part + row * num_splits + offs_s, mask=s_mask, other=float("-inf"))
    m = tl.max(lse, axis=0)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse - m_safe)  # 0 for empty splits
    o = tl.load(O_part + (row * num_splits + offs_s[:, None]) * HEAD_DIM + offs_d[None, :],
                mask=s_mask[:, None], other=0.0)
    den = tl.sum(w, axis=0)
    num = tl.sum(o * w[:, None], axis=0)
    empty = den == 0.0  # every split empty; a NaN den (a NaN split LSE) stays NaN, not -inf
    den_safe = tl.where(empty, 1.0, den)
    out = num / den_safe
    tl.store(Out + row * stride_out + offs_d, out.to(Out.dtype.element_ty))
    tl.store(Lse_out + row, tl.where(empty, float("-inf"), (m_safe + tl.log2(den_safe)) * 0.6931471805599453))


def merge_splits(o_part: torch.Tensor, lse_part: torch.Tensor, out: torch.Tensor, lse_out: torch.Tensor) -> None:
    """Merge ``o_part [batch, num_qo_heads, num_splits, head_dim]`` fp32 and
    ``lse_part [batch, num_qo_heads, num_splits]`` fp32 (base 2) into ``out
    [batch, num_qo_heads, head_dim]`` (its dtype, e.g. bf16; contiguous) and
    ``lse_out [batch, num_qo_heads]`` fp32 (natural log)."""
    batch, heads, splits, head_dim = o_part.shape
    rows = batch * heads
    if rows == 0:
        return
    _merge_splits_kernel[(rows,)](
        o_part, lse_part, out, lse_out,
        splits, head_dim,
        HEAD_DIM=head_dim, BLOCK_S=max(2, triton.next_power_of_2(splits)),
        num_warps=4,
    )


@triton.jit
def _merge_slots_kernel(
    O_part,  # [num_slots, num_qo_heads, HEAD_DIM] fp32
    Lse_part,  # [num_slots, num_qo_heads] fp32, base 2
    Seq_chunks,  # [batch, 2] int32: first slot, chunk count
    Out,  # [batch, num_qo_heads, HEAD_DIM] bf16
    Lse_out,  # [batch, num_qo_heads] fp32, natural log
    num_qo_heads,
    HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)  # (sequence, query head)
    b = row // num_qo_heads
    h = row % num_qo_heads
    first = tl.load(Seq_chunks + 2 * b).to(tl.int64)
    count = tl.load(Seq_chunks + 2 * b + 1)
    if count > 1:  # one chunk: the decode kernel wrote the output itself
        offs_d = tl.arange(0, HEAD_DIM)
        m = tl.full((), float("-inf"), tl.float32)
        den = tl.zeros((), tl.float32)
        num = tl.zeros((HEAD_DIM,), tl.float32)
        for s0 in range(0, count, BLOCK_S):  # online over blocks of chunks
            offs_s = s0 + tl.arange(0, BLOCK_S)
            mask = offs_s < count
            slot = first + offs_s
            lse = tl.load(Lse_part + slot * num_qo_heads + h, mask=mask, other=float("-inf"))
            m_new = tl.maximum(m, tl.max(lse, axis=0))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp2(m - m_safe)
            w = tl.exp2(lse - m_safe)
            o = tl.load(O_part + (slot[:, None] * num_qo_heads + h) * HEAD_DIM + offs_d[None, :],
                        mask=mask[:, None], other=0.0)
            num = num * alpha + tl.sum(o * w[:, None], axis=0)
            den = den * alpha + tl.sum(w, axis=0)
            m = m_new
        m_safe = tl.where(m == float("-inf"), 0.0, m)
        good = den > 0
        out = tl.where(good, num / tl.where(good, den, 1.0), tl.where(den == 0, 0.0, float("nan")))
        lse_out = tl.where(good, (m_safe + tl.log2(tl.where(good, den, 1.0))) * 0.6931471805599453,
                           tl.where(den == 0, float("-inf"), float("nan")))
        tl.store(Out + row * HEAD_DIM + offs_d, out.to(Out.dtype.element_ty))
        tl.store(Lse_out + row, lse_out)


def merge_slots(o_part: torch.Tensor, lse_part: torch.Tensor, seq_chunks: torch.Tensor, out: torch.Tensor,
                lse_out: torch.Tensor) -> None:
    """Merge the CUDA kernel's split-KV partials of sequences of several chunks.

    ``o_part [num_slots, num_qo_heads, head_dim]`` / ``lse_part [num_slots, num_qo_heads]`` fp32
    (base-2 LSE) in the kernel's slot order, ``seq_chunks [batch, 2]`` int32 (each sequence's
    first slot and chunk count, written by the kernel) into ``out [batch, num_qo_heads,
    head_dim]`` (bf16, contiguous) and ``lse_out [batch, num_qo_heads]`` fp32 (natural log);
    rows of one-chunk sequences are left as the kernel wrote them. A NaN LSE gives a NaN row.
    """
    batch, heads, head_dim = out.shape
    if batch * heads == 0:
        return
    # one round over every chunk a sequence can have (up to MAX_BLOCK_ELEMS values; a loop beyond): the
    # loop's rounds are dependent loads (bench/NOTES.md §18)
    block_s = max(2, min(MAX_BLOCK_ELEMS // head_dim, triton.next_power_of_2(o_part.shape[0])))
    _merge_slots_kernel[(batch * heads,)](
        o_part, lse_part, seq_chunks, out, lse_out, heads,
        HEAD_DIM=head_dim, BLOCK_S=block_s, num_warps=4,
    )
