"""Folded INT2/INT4 split-KV decode attention in Triton (the portable path).

One program handles all ``GQA = num_qo_heads // num_kv_heads`` query heads of one
KV head over one split's token range, tile by tile (DESIGN §5):

    load packed K -> build raw operand (bit ops) -> QK dot -> fold scale/offset
    -> online softmax -> scale P per token and group -> build V operand -> PV dot
    -> offset correction (per tile) -> running output.

The channels are handled as ``NSEG`` segments of ``SEGB = min(head_dim / P,
group_size)`` contiguous channels (``P = 8 // bits`` planes). Thanks to the
plane-split packing (``foscar.quant``), segment ``i`` covers channels
``[i * SEGB, (i + 1) * SEGB)``, lives in plane ``i // C`` of byte chunk ``i % C``
(``C = (head_dim / P) / SEGB``) and belongs to group ``i * SEGB // group_size``.
The QK and PV products are batched dots over the segment axis, so no data moves
between lanes to unpack, and each segment's scale is applied to its fp32 partial
product (K) or to the probabilities (V).

Operand: BF16 ``1 + code/128`` built as ``0x3F80 | code`` (exact). Numerics
follow DESIGN §9's two rules: the bias is cancelled with the sums of exactly the
BF16 values the dot consumed (the BF16 query; the BF16-rounded scaled
probabilities), and the PV bias is cancelled per tile in a fresh accumulator.

Under ``TRITON_INTERPRET=1`` the same kernel builds the operand arithmetically in
fp32 (``1 + code / 128``, identical values) and rounds the scaled probabilities
through BF16, because the interpreter's dot on bitcast BF16 tensors is unreliable
(DESIGN §5).

Outputs per split: fp32 partial output ``[batch, num_qo_heads, num_splits,
head_dim]`` (normalized) and base-2 LSE ``[batch, num_qo_heads, num_splits]``
(``-inf`` for an empty split); :mod:`foscar.kernels.merge_triton` merges them.
"""

from __future__ import annotations

import functools
import math
import os

import torch
import triton
import triton.language as tl

KERNEL_NAME = "foscar-triton"
SUPPORTED_HEAD_DIMS = (64, 128, 256)
LOG2E = 1.4426950408889634


def interpreter_enabled() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_interpreter_support() -> None:
    """Raise a clear error where Triton's interpreter is known to break.

    Triton 3.6's interpreter turns a loaded scalar (a 1-element array) into a
    Python int with ``int(array)``, which numpy 2.4 and newer refuse; newer Triton
    releases squeeze the array first.

    Raises:
        ValueError: triton < 3.7 together with numpy >= 2.4.
    """
    import numpy

    def _ver(s: str) -> tuple[int, int]:
        major, minor = s.split(".")[:2]
        return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)

    if _ver(triton.__version__) < (3, 7) and _ver(numpy.__version__) >= (2, 4):
        raise ValueError(
            f"TRITON_INTERPRET=1: triton {triton.__version__}'s interpreter fails with numpy "
            f"{numpy.__version__}; install 'numpy<2.4' (or a newer triton) to run kernels on the CPU"
        )


@triton.jit
def _round_to_bf16_as_fp32(x):
    """fp32 -> nearest BF16 (ties to even), returned as fp32: the GPU's ``cvt.rn.bf16.f32``.

    The interpreter's own fp32 -> bf16 conversion truncates, which biases the
    scaled probabilities; this keeps the interpreter path's numerics the GPU's."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _folded_decode_split_kernel(
    # pointers
    Q,  # [batch, num_qo_heads, head_dim] bf16
    K_codes, V_codes,  # [batch, num_kv_heads, max_seq_len, PACKED] uint8
    K_scale, K_offset, V_scale, V_offset,  # [batch, num_kv_heads, max_seq_len, NUM_GROUPS] fp32
    Seq_lens,  # [batch] int32
    O_part,  # [batch, num_qo_heads, num_splits, head_dim] fp32
    Lse_part,  # [batch, num_qo_heads, num_splits] fp32 (base 2)
    # sizes and strides (elements)
    num_kv_heads, num_splits, tokens_per_split,
    stride_qb, stride_qh,
    stride_cb, stride_ch,  # codes (token stride is PACKED)
    stride_sb, stride_sh,  # scales/offsets (token stride is NUM_GROUPS)
    qk_scale_log2,  # sm_scale * log2(e)
    # meta-parameters
    GQA: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    BITS: tl.constexpr, PACKED: tl.constexpr, NUM_GROUPS: tl.constexpr,
    SEGB: tl.constexpr, NSEG: tl.constexpr, CHUNKS: tl.constexpr, SEG_PER_GROUP: tl.constexpr,
    INTERPRET: tl.constexpr,
):
    pid_bh = tl.program_id(0)
    split = tl.program_id(1)
    b = pid_bh // num_kv_heads
    hkv = pid_bh % num_kv_heads
    seq_len = tl.load(Seq_lens + b)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)

    offs_seg = tl.arange(0, NSEG)
    offs_h = tl.arange(0, BLOCK_H)
    offs_j = tl.arange(0, SEGB)
    h_mask = offs_h < GQA
    mask_bits = (1 << BITS) - 1
    seg_shift = ((offs_seg // CHUNKS) * BITS).to(tl.int32)  # plane of each segment
    seg_byte = (offs_seg % CHUNKS) * SEGB  # byte chunk of each segment
    seg_group = offs_seg // SEG_PER_GROUP

    # query as [NSEG, BLOCK_H, SEGB]: channel = seg * SEGB + j
    q_ptrs = (Q + b.to(tl.int64) * stride_qb + (hkv * GQA + offs_h)[None, :, None] * stride_qh
              + (offs_seg[:, None, None] * SEGB + offs_j[None, None, :]))
    q = tl.load(q_ptrs, mask=h_mask[None, :, None], other=0.0)
    q_sum = tl.sum(q.to(tl.float32), axis=2)  # [NSEG, BLOCK_H], sums of the BF16 values the dot reads
    if INTERPRET:
        q = q.to(tl.float32)

    code_base = b.to(tl.int64) * stride_cb + hkv.to(tl.int64) * stride_ch
    scale_base = b.to(tl.int64) * stride_sb + hkv.to(tl.int64) * stride_sh

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([NSEG, BLOCK_H, SEGB], tl.float32)

    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        tok = offs_n.to(tl.int64)

        # ---- K: raw operand [NSEG, SEGB, BLOCK_N] straight from packed bytes
        kb = tl.load(K_codes + code_base + tok[None, None, :] * PACKED
                     + (seg_byte[:, None, None] + offs_j[None, :, None]),
                     mask=n_mask[None, None, :], other=0)
        kcode = (kb.to(tl.int32) >> seg_shift[:, None, None]) & mask_bits
        if INTERPRET:
            kop = 1.0 + kcode.to(tl.float32) * (1.0 / 128.0)
        else:
            kop = (kcode.to(tl.int16) | 0x3F80).to(tl.bfloat16, bitcast=True)
        dots = tl.dot(q, kop)  # [NSEG, BLOCK_H, BLOCK_N] fp32: Q_seg . (1 + code/128)

        s_ptrs = scale_base + tok[None, :] * NUM_GROUPS + seg_group[:, None]
        ks = tl.load(K_scale + s_ptrs, mask=n_mask[None, :], other=0.0)  # [NSEG, BLOCK_N]
        kz = tl.load(K_offset + s_ptrs, mask=n_mask[None, :], other=0.0)
        # S = sum_seg s*128*(Q.v - sum Q) + z*sum Q   (= sum_seg s * Q.code + z * sum Q)
        qk = (dots - q_sum[:, :, None]) * (ks * 128.0)[:, None, :] + kz[:, None, :] * q_sum[:, :, None]
        scores = tl.sum(qk, axis=0) * qk_scale_log2  # [BLOCK_H, BLOCK_N], log2 domain
        scores = tl.where(n_mask[None, :], scores, float("-inf"))

        # ---- online softmax (base 2)
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new

        # ---- V: P scaled per (token, segment) into the raw operand; bias and offset per tile
        vs = tl.load(V_scale + s_ptrs, mask=n_mask[None, :], other=0.0)  # [NSEG, BLOCK_N]
        vz = tl.load(V_offset + s_ptrs, mask=n_mask[None, :], other=0.0)
        p_scaled = p[None, :, :] * (vs * 128.0)[:, None, :]  # [NSEG, BLOCK_H, BLOCK_N]
        vb = tl.load(V_codes + code_base + tok[None, :, None] * PACKED
                     + (seg_byte[:, None, None] + offs_j[None, None, :]),
                     mask=n_mask[None, :, None], other=0)
        vcode = (vb.to(tl.int32) >> seg_shift[:, None, None]) & mask_bits
        if INTERPRET:
            vop = 1.0 + vcode.to(tl.float32) * (1.0 / 128.0)
            p_op = _round_to_bf16_as_fp32(p_scaled)
        else:
            vop = (vcode.to(tl.int16) | 0x3F80).to(tl.bfloat16, bitcast=True)
            p_op = p_scaled.to(tl.bfloat16)
        pv = tl.dot(p_op, vop)  # fresh accumulator: [NSEG, BLOCK_H, SEGB]
        bias = tl.sum(p_op.to(tl.float32), axis=2)  # sum of the rounded P' the dot consumed
        offset = tl.sum(p[None, :, :] * vz[:, None, :], axis=2)  # sum_t P_t * z_t per segment
        acc = acc * alpha[None, :, None] + pv + (offset - bias)[:, :, None]

    # ---- partial output (normalized) and base-2 LSE; an empty split gives 0 and -inf
    has = l_i > 0
    l_safe = tl.where(has, l_i, 1.0)
    out = acc / l_safe[None, :, None]
    lse = tl.where(has, m_i + tl.log2(l_safe), float("-inf"))
    row = (b * num_kv_heads + hkv).to(tl.int64) * GQA + offs_h  # flat (batch, qo_head) index
    o_ptrs = (O_part + (row[None, :, None] * num_splits + split) * (NSEG * SEGB)
              + offs_seg[:, None, None] * SEGB + offs_j[None, None, :])
    tl.store(o_ptrs, out, mask=h_mask[None, :, None])
    tl.store(Lse_part + row * num_splits + split, lse, mask=h_mask)


@functools.lru_cache(maxsize=None)
def _num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def device_sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA device; 4 for the CPU interpreter (so splits still get exercised)."""
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    return _num_sms(idx)


def block_sizes(head_dim: int, bits: int, group_size: int, gqa: int) -> dict[str, int]:
    """Tile shape of the split kernel for one format.

    Returns the constexpr meta-parameters: ``SEGB`` (channels per segment),
    ``NSEG``, ``CHUNKS`` (byte chunks per plane), ``SEG_PER_GROUP``, ``BLOCK_H``
    (query heads padded to Triton's 16-row dot minimum, a power of two) and
    ``BLOCK_N`` (tokens per tile: 128, halved while the fp32 score tile
    ``NSEG x BLOCK_N`` would exceed 512 per row, to bound registers).
    """
    planes = 8 // bits
    width = head_dim // planes
    segb = min(width, group_size)
    nseg = head_dim // segb
    block_n = 128
    while nseg * block_n > 512 and block_n > 32:
        block_n //= 2
    return dict(
        SEGB=segb,
        NSEG=nseg,
        CHUNKS=width // segb,
        SEG_PER_GROUP=group_size // segb,
        BLOCK_H=max(16, triton.next_power_of_2(gqa)),
        BLOCK_N=block_n,
    )


def choose_num_splits(batch: int, num_kv_heads: int, max_seq_len: int, block_n: int, num_sms: int) -> tuple[int, int]:
    """Split-KV heuristic: enough programs for ~4 per SM, each at least 2 tiles long.

    Uses ``max_seq_len`` (a shape, known on the host), so it needs no device sync;
    shorter sequences leave their tail splits empty (LSE ``-inf``, weight zero).

    Returns:
        ``(num_splits, tokens_per_split)``, ``tokens_per_split`` a multiple of ``block_n``.
    """
    if max_seq_len <= 0:
        return 1, block_n
    programs = max(1, batch * num_kv_heads)
    want = max(1, math.ceil(4 * num_sms / programs))
    most = max(1, math.ceil(max_seq_len / (2 * block_n)))
    return split_tokens(max_seq_len, min(want, most), block_n)


def split_tokens(max_seq_len: int, num_splits: int, block_n: int) -> tuple[int, int]:
    """Round a requested split count to whole tiles: ``(num_splits, tokens_per_split)``."""
    per = triton.cdiv(max(1, triton.cdiv(max(max_seq_len, 1), num_splits)), block_n) * block_n
    return max(1, triton.cdiv(max(max_seq_len, 1), per)), per


def folded_decode_partial(
    q: torch.Tensor,
    cache,
    sm_scale: float,
    num_splits: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Launch the split kernel. Inputs are assumed validated (see :func:`foscar.decode`).

    Returns:
        ``(o_part, lse_part)``: ``[batch, num_qo_heads, num_splits, head_dim]`` fp32
        and ``[batch, num_qo_heads, num_splits]`` fp32 (base-2 LSE).
    """
    batch, num_qo_heads, head_dim = q.shape
    hkv = cache.num_kv_heads
    gqa = num_qo_heads // hkv
    meta = block_sizes(head_dim, cache.bits, cache.group_size, gqa)
    if num_splits is None:
        splits, per = choose_num_splits(batch, hkv, cache.max_seq_len, meta["BLOCK_N"], device_sm_count(q.device))
    else:
        splits, per = split_tokens(cache.max_seq_len, num_splits, meta["BLOCK_N"])
    o_part = torch.empty(batch, num_qo_heads, splits, head_dim, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(batch, num_qo_heads, splits, dtype=torch.float32, device=q.device)
    grid = (batch * hkv, splits)
    _folded_decode_split_kernel[grid](
        q, cache.k_codes, cache.v_codes,
        cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset,
        cache.seq_lens, o_part, lse_part,
        hkv, splits, per,
        q.stride(0), q.stride(1),
        cache.k_codes.stride(0), cache.k_codes.stride(1),
        cache.k_scale.stride(0), cache.k_scale.stride(1),
        sm_scale * LOG2E,
        GQA=gqa, BITS=cache.bits, PACKED=cache.k_codes.shape[-1], NUM_GROUPS=cache.num_groups,
        INTERPRET=interpreter_enabled(),
        num_warps=4, num_stages=2,
        **meta,
    )
    return o_part, lse_part
