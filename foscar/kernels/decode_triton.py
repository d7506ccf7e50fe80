"""Folded INT2/INT4 split-KV decode attention in Triton (the portable path).

One program handles all ``GQA = num_qo_heads // num_kv_heads`` query heads of one
KV head over one split's token range, tile by tile (DESIGN §5):

    load packed K -> build raw operand (bit ops) -> QK dot -> fold scale/offset
    -> online softmax -> scale P per token and group -> build V operand -> PV dot
    -> offset correction (per tile) -> running output.

Per quantization group one 2D ``tl.dot`` (QK: ``[BLOCK_H, G] x [G, BLOCK_N]``; PV:
``[BLOCK_H, BLOCK_N] x [BLOCK_N, G]``). A group is ``G / W`` whole planes of the
plane-split packing (``foscar.quant``; ``W = head_dim / P``, ``P = 8 // bits``) or
one ``G``-byte chunk of a plane; its planes are interleaved with ``tl.join`` into
"join order" columns, and the same joins applied to channel indices
(:func:`_group_channels`, :func:`_tile_channels`) give the matching query columns and
output channels, so no data moves between lanes to unpack. Each group's scale
multiplies its fp32 partial product (K) or the probabilities (V). (A first version
with 3D batched dots over channel segments compiled to 4x the instructions and was
dropped: bench/NOTES.md §1.) With ``PAGED`` the token rows are looked up through a
FlashInfer-style page table (:mod:`foscar.paged`).

Channel-wise K (``K_BLOCK > 0``, a constexpr: the token-wise kernel compiles to the
same code as without it): K's scales and offsets are per (block of ``K_BLOCK`` tokens,
channel). The tile is ``min(BLOCK_N, K_BLOCK)`` tokens and never straddles two blocks,
so per tile and channel group the query is scaled once (DESIGN §3),
``Q' = fp16(Q * s_blk * sm_scale * log2(e) / f)`` with ``f`` per query head bringing
``max |Q'|`` to 2^14, the dot runs on the unbiased FP16 operand ``code * 2^-24`` (the
code's bits are the FP16 subnormal's: one mask, no bias to cancel, like DESIGN §4's
FP8 codes), and the score is ``f * 2^24 * (Q' . v) + (Q . z_blk) * sm_scale *
log2(e)``. FP16, not BF16: the scaled query is a new rounded value (the token-wise
path dots the caller's BF16 query exactly), and BF16's 2^-9 rounding moved the LSE by
up to 7e-3 against the fp64 reference, FP16's 2^-11 by about 1e-3 (up to 1.4e-3 in
tests/test_channel_k.py), at the same MMA cost. FP16 subnormal inputs to the tensor
cores are assumed exact (as FP8's are on the H200): tests/test_channel_k.py's gpu
tests check it. V stays token-wise (BF16). Paged caches hold whole K blocks per page (the block of a
tile is the one of its first token, on its page).

Operand: BF16 ``1 + code/128`` built as ``0x3F80 | code`` (exact), four codes per
32-bit register with inline PTX (shr + 2 prmt + 2 lop3, :data:`_PLANE_ASM`). Numerics
follow DESIGN §9's two rules: the bias is cancelled with the sums of exactly the
BF16 values the dot consumed (the BF16 query; the BF16-rounded scaled
probabilities), and the PV bias is cancelled per tile in a fresh accumulator.

Under ``TRITON_INTERPRET=1`` the same kernel builds the operand arithmetically in
fp32 (``1 + code / 128``, identical values) and rounds the scaled probabilities
through BF16, because the interpreter's dot on bitcast BF16 tensors is unreliable
(DESIGN §5).

Outputs per split: fp32 partial output ``[batch, num_qo_heads, num_splits,
head_dim]`` (normalized) and base-2 LSE ``[batch, num_qo_heads, num_splits]``
(``-inf`` for an empty split and only then; NaN where the query row holds a NaN);
:mod:`foscar.kernels.merge_triton` merges them. Each sequence's length is clamped to
its rows (``max_seq_len``; paged: its listed pages, the range ``kv_indptr`` gives clipped to
``kv_indices``), so no length makes it read another sequence's tokens; a page id outside the
pool reads its last page (``plan.run`` checks no value on the host; the CUDA kernel does not
clamp ids yet).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from foscar.kernels.splits import choose_num_splits, device_sm_count, split_tokens

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

    Triton reads ``TRITON_INTERPRET`` when it decorates a function: its own
    library functions (``tl.cdiv``) when ``triton`` is imported, this module's
    kernels when it is imported. A variable set later leaves them built for the
    GPU, and the interpreter then fails inside the kernel.

    Raises:
        ValueError: triton < 3.7 together with numpy >= 2.4; ``TRITON_INTERPRET=1``
            set after Triton or this module was imported.
    """
    import numpy
    from triton.runtime.interpreter import InterpretedFunction

    if not all(isinstance(fn, InterpretedFunction) for fn in (tl.cdiv, _folded_decode_split_kernel)):
        raise ValueError(
            "TRITON_INTERPRET=1 was set after triton was imported, so Triton's functions were built for the GPU; "
            "set it in the environment before Python starts (or before anything imports triton or foscar.kernels)"
        )

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


# One PTX block per (bits, plane): 4 packed bytes in one 32-bit register -> the
# BF16 operands 1 + code/128 of that plane for the 4 bytes, as two registers of
# two BF16 each. shr (plane select, omitted for plane 0), then per output register
# one prmt (bytes 0,1 or 2,3 into the low byte of each 16-bit half) and one lop3
# ((x & mask) | 0x3F80 in both halves; immLut 0xEA = (a & b) | c): 5 instructions
# per 4 values (DESIGN §4, §5). The FP16 variant ORs in 0 instead: the code itself
# is the FP16 bit pattern, the subnormal code * 2^-24 (exact, unbiased); it is the K
# operand of channel-wise K, whose scaled query needs FP16's 11-bit significand (see
# _folded_decode_split_kernel).
_PLANE_ASM = (
    "{{ .reg .b32 t, lo, hi;\n"
    "{shift}"
    "prmt.b32 lo, t, 0, 0x4140;\n"
    "prmt.b32 hi, t, 0, 0x4342;\n"
    "lop3.b32 $0, lo, {mask}, {one}, 0xEA;\n"
    "lop3.b32 $1, hi, {mask}, {one}, 0xEA; }}"
)
_PLANE_ASM_TABLE = {
    (bits, shift, one): _PLANE_ASM.format(
        shift="mov.b32 t, $2;\n" if shift == 0 else f"shr.b32 t, $2, {shift};\n",
        mask="0x00030003" if bits == 2 else "0x000F000F",
        one=one,
    )
    for bits, shifts in ((2, (0, 2, 4, 6)), (4, (0, 4)))
    for shift in shifts
    for one in ("0x3F803F80", "0x00000000")  # BF16 1.0 in both halves; nothing (FP16 subnormal)
}
_ASM_2_0 = tl.constexpr(_PLANE_ASM_TABLE[(2, 0, "0x3F803F80")])
_ASM_2_2 = tl.constexpr(_PLANE_ASM_TABLE[(2, 2, "0x3F803F80")])
_ASM_2_4 = tl.constexpr(_PLANE_ASM_TABLE[(2, 4, "0x3F803F80")])
_ASM_2_6 = tl.constexpr(_PLANE_ASM_TABLE[(2, 6, "0x3F803F80")])
_ASM_4_0 = tl.constexpr(_PLANE_ASM_TABLE[(4, 0, "0x3F803F80")])
_ASM_4_4 = tl.constexpr(_PLANE_ASM_TABLE[(4, 4, "0x3F803F80")])
_ASM16_2_0 = tl.constexpr(_PLANE_ASM_TABLE[(2, 0, "0x00000000")])
_ASM16_2_2 = tl.constexpr(_PLANE_ASM_TABLE[(2, 2, "0x00000000")])
_ASM16_2_4 = tl.constexpr(_PLANE_ASM_TABLE[(2, 4, "0x00000000")])
_ASM16_2_6 = tl.constexpr(_PLANE_ASM_TABLE[(2, 6, "0x00000000")])
_ASM16_4_0 = tl.constexpr(_PLANE_ASM_TABLE[(4, 0, "0x00000000")])
_ASM16_4_4 = tl.constexpr(_PLANE_ASM_TABLE[(4, 4, "0x00000000")])


@triton.jit
def _plane_operand(x, BITS: tl.constexpr, PLANE: tl.constexpr, INTERPRET: tl.constexpr,
                   FP16: tl.constexpr = False):
    """BF16 operand ``1 + code/128`` (``FP16``: the FP16 subnormal ``code * 2^-24``)
    of plane ``PLANE`` of packed bytes ``x`` (uint8).

    GPU: the PTX above, 4 bytes per call. Interpreter (no inline asm there): the
    same values by arithmetic, in fp32."""
    if INTERPRET:
        codes = (x.to(tl.int32) >> (BITS * PLANE)) & ((1 << BITS) - 1)
        if FP16:
            return codes.to(tl.float32) * (2.0**-24)
        else:
            return 1.0 + codes.to(tl.float32) * (1.0 / 128.0)
    elif FP16:
        SHIFT16: tl.constexpr = BITS * PLANE
        if BITS == 2:
            if SHIFT16 == 0:
                asm16: tl.constexpr = _ASM16_2_0
            elif SHIFT16 == 2:
                asm16: tl.constexpr = _ASM16_2_2
            elif SHIFT16 == 4:
                asm16: tl.constexpr = _ASM16_2_4
            else:
                asm16: tl.constexpr = _ASM16_2_6
        else:
            if SHIFT16 == 0:
                asm16: tl.constexpr = _ASM16_4_0
            else:
                asm16: tl.constexpr = _ASM16_4_4
        return tl.inline_asm_elementwise(asm16, "=r,=r,r", [x], dtype=tl.float16, is_pure=True, pack=4)
    else:
        SHIFT: tl.constexpr = BITS * PLANE
        if BITS == 2:
            if SHIFT == 0:
                asm: tl.constexpr = _ASM_2_0
            elif SHIFT == 2:
                asm: tl.constexpr = _ASM_2_2
            elif SHIFT == 4:
                asm: tl.constexpr = _ASM_2_4
            else:
                asm: tl.constexpr = _ASM_2_6
        else:
            if SHIFT == 0:
                asm: tl.constexpr = _ASM_4_0
            else:
                asm: tl.constexpr = _ASM_4_4
        return tl.inline_asm_elementwise(asm, "=r,=r,r", [x], dtype=tl.bfloat16, is_pure=True, pack=4)


@triton.jit
def _group_operand(x, g, BITS: tl.constexpr, CW: tl.constexpr, C: tl.constexpr, PPG: tl.constexpr,
                   INTERPRET: tl.constexpr, FP16: tl.constexpr = False):
    """Raw operand ``[R, group_size]`` of group ``g`` from a ``[R, CW]`` uint8 byte chunk.

    ``x`` holds, for each row, the bytes ``[c * CW, (c + 1) * CW)`` of one packed
    row (``c = g % C``). Group ``g`` spans planes ``p0 .. p0 + PPG - 1``
    (``p0 = (g // C) * PPG``). Planes are interleaved with ``tl.join`` (no data
    moves between lanes), giving the columns in "join order";
    :func:`_group_channels` applies the same joins to channel indices, so
    operands, queries and outputs always agree on the order. ``FP16``: see
    :func:`_plane_operand`.
    """
    p0: tl.constexpr = (g // C) * PPG
    c0 = _plane_operand(x, BITS, p0, INTERPRET, FP16)
    if PPG == 1:
        return c0
    else:
        c1 = _plane_operand(x, BITS, p0 + 1, INTERPRET, FP16)
        if PPG == 2:
            return tl.reshape(tl.join(c0, c1), [x.shape[0], 2 * CW])
        else:
            c2 = _plane_operand(x, BITS, p0 + 2, INTERPRET, FP16)
            c3 = _plane_operand(x, BITS, p0 + 3, INTERPRET, FP16)
            return tl.reshape(tl.join(tl.join(c0, c1), tl.join(c2, c3)), [x.shape[0], 4 * CW])


@triton.jit
def _group_channels(g, W: tl.constexpr, CW: tl.constexpr, C: tl.constexpr, PPG: tl.constexpr):
    """``[1, group_size]`` channel indices of group ``g`` in :func:`_group_operand`'s order."""
    p0 = (g // C) * PPG
    j = ((g % C) * CW + tl.arange(0, CW))[None, :]
    if PPG == 1:
        return p0 * W + j
    else:
        if PPG == 2:
            return tl.reshape(tl.join(p0 * W + j, (p0 + 1) * W + j), [1, 2 * CW])
        else:
            return tl.reshape(tl.join(tl.join(p0 * W + j, (p0 + 1) * W + j),
                                      tl.join((p0 + 2) * W + j, (p0 + 3) * W + j)), [1, 4 * CW])


@triton.jit
def _pv_group(p, g, v_bytes, vs, vz, BITS: tl.constexpr, W: tl.constexpr, CW: tl.constexpr,
              C: tl.constexpr, PPG: tl.constexpr, INTERPRET: tl.constexpr):
    """One group's folded PV for one tile: ``[BLOCK_H, group_size]`` fp32.

    ``(P * s / a) . v  -  c * sum(P')  +  sum_t P_t * z_t`` with the BF16-rounded
    ``P'`` in both the dot and the bias (DESIGN §9, rule 1); a fresh accumulator
    per tile (rule 2)."""
    p_scaled = p * (vs * 128.0)[None, :]
    if INTERPRET:
        p_op = _round_to_bf16_as_fp32(p_scaled)
    else:
        p_op = p_scaled.to(tl.bfloat16)
    vop = _group_operand(v_bytes, g, BITS, CW, C, PPG, INTERPRET)  # [BLOCK_N, G]
    pv = tl.dot(p_op, vop)
    corr = tl.sum(p * vz[None, :] - p_op.to(tl.float32), axis=1)  # offset minus bias
    return pv + corr[:, None]


# the page-table bounds change with every step's kv_indices: not specialized on (no new compile when one becomes
# 1 or a multiple of 16)
@triton.jit(do_not_specialize=["num_pages", "num_indices"])
def _folded_decode_split_kernel(
    # pointers
    Q,  # [batch, num_qo_heads, head_dim] bf16
    K_codes, V_codes,  # [batch, num_kv_heads, max_seq_len, PACKED] uint8
    K_scale, K_offset, V_scale, V_offset,  # [batch, num_kv_heads, max_seq_len, NG] fp32
    Seq_lens,  # [batch] int32
    # (K_BLOCK > 0: K_scale, K_offset are [batch, num_kv_heads, cdiv(max_seq_len, K_BLOCK), HEAD_DIM] fp32;
    #  PAGED: [num_pages, num_kv_heads, PAGE // K_BLOCK, HEAD_DIM])
    Kv_indptr, Kv_indices,  # PAGED: [batch + 1], [num_used_pages] int32 (else unused)
    O_part,  # [batch, num_qo_heads, num_splits, HEAD_DIM] fp32
    Lse_part,  # [batch, num_qo_heads, num_splits] fp32 (base 2)
    # sizes and strides (elements)
    num_kv_heads, num_splits, tokens_per_split,
    num_pages, num_indices,  # PAGED: the pool's pages and kv_indices' length (bounds of every page-table read)
    stride_qb, stride_qh,
    stride_cb, stride_ch,  # codes: sequence (PAGED: page) and head strides (token stride is PACKED)
    stride_sb, stride_sh,  # V (and token-wise K) scales/offsets: the same (token stride is NG)
    qk_scale_log2,  # sm_scale * log2(e)
    # meta-parameters
    GQA: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr, BITS: tl.constexpr, GROUP: tl.constexpr,
    INTERPRET: tl.constexpr, PAGED: tl.constexpr = False, PAGE: tl.constexpr = 1,
    K_BLOCK: tl.constexpr = 0,  # > 0: channel-wise K over blocks of K_BLOCK tokens (BLOCK_N divides it)
):
    # plane-split geometry (foscar.quant): P planes of W channels; a group is PPG
    # whole planes (GROUP >= W) or one chunk of CW bytes of a plane (GROUP < W)
    P: tl.constexpr = 8 // BITS
    W: tl.constexpr = HEAD_DIM // P
    PACKED: tl.constexpr = W
    NG: tl.constexpr = HEAD_DIM // GROUP
    CW: tl.constexpr = W if GROUP >= W else GROUP
    C: tl.constexpr = W // CW
    PPG: tl.constexpr = GROUP // CW

    pid_bh = tl.program_id(0)
    split = tl.program_id(1)
    b = pid_bh // num_kv_heads
    hkv = pid_bh % num_kv_heads
    seq_len = tl.load(Seq_lens + b)
    # never past the sequence's rows, whatever the lengths say (plan.run does not check them;
    # append_kv(check_capacity=False) may advance seq_lens past max_seq_len)
    if PAGED:  # the sequence's range of kv_indices clipped to it, as the CUDA kernel's paged_length does
        page_lo = tl.minimum(tl.maximum(tl.load(Kv_indptr + b), 0), num_indices)
        page_hi = tl.minimum(tl.maximum(tl.load(Kv_indptr + b + 1), page_lo), num_indices)
        seq_len = tl.minimum(seq_len, (page_hi - page_lo) * PAGE)
    else:
        seq_len = tl.minimum(seq_len, stride_ch // PACKED)  # max_seq_len (contiguous rows)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    if PAGED:  # a sequence whose pages pass the planned capacity (run checks no lengths): the last split reads the
        # rest, as the CUDA kernel, whose chunks come from the lengths, does
        end = tl.where(split == tl.num_programs(1) - 1, seq_len, end)

    offs_h = tl.arange(0, BLOCK_H)
    h_mask = offs_h < GQA
    q_rows = Q + b.to(tl.int64) * stride_qb + (hkv * GQA + offs_h)[:, None] * stride_qh  # [BLOCK_H, 1]
    if PAGED:  # [num_pages, num_kv_heads, PAGE, ...]: a page per PAGE tokens, looked up per token
        code_base = hkv.to(tl.int64) * stride_ch
        scale_base = hkv.to(tl.int64) * stride_sh
        page_base = page_lo
    else:  # [batch, num_kv_heads, max_seq_len, ...]
        code_base = b.to(tl.int64) * stride_cb + hkv.to(tl.int64) * stride_ch
        scale_base = b.to(tl.int64) * stride_sb + hkv.to(tl.int64) * stride_sh
    if K_BLOCK > 0 and not PAGED:  # channel-wise K scales/offsets, contiguous: max_seq_len = stride_ch / PACKED
        k_blocks = tl.cdiv(stride_ch // PACKED, K_BLOCK)
        kmeta_base = (b.to(tl.int64) * num_kv_heads + hkv) * k_blocks * HEAD_DIM

    if NG == 1:  # loop-invariant query and its sum, loaded once
        q_all = tl.load(q_rows + _group_channels(0, W, CW, C, PPG), mask=h_mask[:, None], other=0.0)
        q_sum_all = tl.sum(q_all.to(tl.float32), axis=1)
        if INTERPRET:
            q_all = q_all.to(tl.float32)

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], tl.float32)  # columns in _pv_group join order

    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        tok = offs_n.to(tl.int64)
        if PAGED:
            page = tl.load(Kv_indices + page_base + offs_n // PAGE, mask=n_mask, other=0).to(tl.int64)
            page = tl.where((page < 0) | (page >= num_pages), num_pages - 1, page)  # outside the pool: its last page
            slot = tok % PAGE
            crow = code_base + (page * stride_cb + slot * PACKED)[:, None]  # [BLOCK_N, 1]: code rows
            srow = scale_base + page * stride_sb + slot * NG  # [BLOCK_N]: scale/offset rows
        else:
            crow = code_base + tok[:, None] * PACKED
            srow = scale_base + tok * NG

        if K_BLOCK > 0:  # ---- scores, channel-wise K: the query scaled per block, one constant per head
            if PAGED:  # pages hold whole blocks (K_BLOCK divides PAGE): the block of the tile's first token
                kpage = tl.load(Kv_indices + page_base + n0 // PAGE).to(tl.int64)
                kpage = tl.where((kpage < 0) | (kpage >= num_pages), num_pages - 1, kpage)
                kmeta = ((kpage * num_kv_heads + hkv) * (PAGE // K_BLOCK) + (n0 % PAGE) // K_BLOCK) * HEAD_DIM
            else:
                kmeta = kmeta_base + (n0 // K_BLOCK) * HEAD_DIM  # the tile's block (BLOCK_N divides K_BLOCK)
            scores = tl.zeros([BLOCK_H, BLOCK_N], tl.float32)
            q_const = tl.zeros([BLOCK_H], tl.float32)
            for g in tl.static_range(NG):
                kb = tl.load(K_codes + crow + (g % C) * CW + tl.arange(0, CW)[None, :],
                             mask=n_mask[:, None], other=0)
                kop = _group_operand(kb, g, BITS, CW, C, PPG, INTERPRET, True)  # [BLOCK_N, G] fp16 code * 2^-24
                chans = _group_channels(g, W, CW, C, PPG)  # [1, G]
                q_f = tl.load(q_rows + chans, mask=h_mask[:, None], other=0.0).to(tl.float32)
                ks = tl.load(K_scale + kmeta + chans)  # [1, G] per channel of this block
                kz = tl.load(K_offset + kmeta + chans)
                # Q' = Q * s * sm_scale * log2(e) / f, f per row bringing max |Q'| to 2^14 (FP16
                # range; products Q' * code * 2^-24 stay far above fp32 underflow), rounded to FP16
                q_scaled = q_f * (ks * qk_scale_log2)
                row_max = tl.max(tl.abs(q_scaled), axis=1)
                f = tl.where(row_max > 0, row_max * (1.0 / 16384.0), 1.0)
                q_n = q_scaled * (1.0 / f)[:, None]
                if INTERPRET:
                    q_op = q_n.to(tl.float16).to(tl.float32)
                else:
                    q_op = q_n.to(tl.float16)
                # f * 2^24 * (Q' . code * 2^-24) + (Q.z) sm_scale log2(e) = Q.(s code + z) sm_scale log2(e)
                scores += tl.dot(q_op, tl.trans(kop)) * (f * 16777216.0)[:, None]
                q_const += tl.sum(q_f * kz, axis=1) * qk_scale_log2
            scores += q_const[:, None]
        else:  # ---- scores: per group, raw dot on tensor cores, then scale and offset per token
            scores = tl.zeros([BLOCK_H, BLOCK_N], tl.float32)
            for g in tl.static_range(NG):
                kb = tl.load(K_codes + crow + (g % C) * CW + tl.arange(0, CW)[None, :],
                             mask=n_mask[:, None], other=0)
                kop = _group_operand(kb, g, BITS, CW, C, PPG, INTERPRET)  # [BLOCK_N, G]
                if NG == 1:
                    q_g = q_all
                    q_sum = q_sum_all
                else:
                    q_g = tl.load(q_rows + _group_channels(g, W, CW, C, PPG), mask=h_mask[:, None], other=0.0)
                    q_sum = tl.sum(q_g.to(tl.float32), axis=1)  # of the BF16 values the dot reads
                    if INTERPRET:
                        q_g = q_g.to(tl.float32)
                dots = tl.dot(q_g, tl.trans(kop))  # [BLOCK_H, BLOCK_N] = Q_g . (1 + code/128)
                ks = tl.load(K_scale + srow + g, mask=n_mask, other=0.0)
                kz = tl.load(K_offset + srow + g, mask=n_mask, other=0.0)
                # s*128*(Q.v) + (z - s*128)*sum(Q) = s*(Q.code) + z*sum(Q), times sm_scale*log2(e)
                a_t = ks * (128.0 * qk_scale_log2)
                b_t = (kz - ks * 128.0) * qk_scale_log2
                scores += dots * a_t[None, :] + q_sum[:, None] * b_t[None, :]
        scores = tl.where(n_mask[None, :], scores, float("-inf"))

        # ---- online softmax (base 2)
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new

        # ---- PV per group, joined into the accumulator's column order
        v_rows = V_codes + crow  # [BLOCK_N, 1] pointers
        if NG == 1:
            vb = tl.load(v_rows + tl.arange(0, W)[None, :], mask=n_mask[:, None], other=0)
            vs = tl.load(V_scale + srow, mask=n_mask, other=0.0)
            vz = tl.load(V_offset + srow, mask=n_mask, other=0.0)
            tile = _pv_group(p, 0, vb, vs, vz, BITS, W, CW, C, PPG, INTERPRET)
        else:
            tile = _pv_tile_groups(p, v_rows, V_scale, V_offset, srow, n_mask,
                                   NG, BITS, W, CW, C, PPG, INTERPRET)
        acc = acc * alpha[:, None] + tile

    # ---- partial output (normalized) and base-2 LSE; an empty split gives 0 and -inf. Only
    # l_i == 0 is empty: a NaN l_i (a NaN in the query row or its scores) gives NaN, not -inf
    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    out = acc / l_safe[:, None]
    lse = tl.where(empty, float("-inf"), m_i + tl.log2(l_safe))
    row = (b * num_kv_heads + hkv).to(tl.int64) * GQA + offs_h  # flat (batch, qo_head)
    cols = _tile_channels(NG, W, CW, C, PPG)
    o_ptrs = O_part + (row[:, None] * num_splits + split) * HEAD_DIM + cols
    tl.store(o_ptrs, out, mask=h_mask[:, None])
    tl.store(Lse_part + row * num_splits + split, lse, mask=h_mask)


@triton.jit
def _pv_tile_groups(p, vb, V_scale, V_offset, srow, n_mask, NG: tl.constexpr,
                    BITS: tl.constexpr, W: tl.constexpr, CW: tl.constexpr, C: tl.constexpr,
                    PPG: tl.constexpr, INTERPRET: tl.constexpr):
    """PV of a tile for NG in {2, 4, 8} groups (``vb``: ``[BLOCK_N, 1]`` row pointers),
    joined like :func:`_tile_channels`."""
    t0 = _pv_one(p, 0, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
    t1 = _pv_one(p, 1, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
    if NG == 2:
        return tl.reshape(tl.join(t0, t1), [p.shape[0], 2 * t0.shape[1]])
    else:
        t2 = _pv_one(p, 2, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
        t3 = _pv_one(p, 3, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
        lo = tl.reshape(tl.join(tl.join(t0, t1), tl.join(t2, t3)), [p.shape[0], 4 * t0.shape[1]])
        if NG == 4:
            return lo
        else:
            t4 = _pv_one(p, 4, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
            t5 = _pv_one(p, 5, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
            t6 = _pv_one(p, 6, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
            t7 = _pv_one(p, 7, vb, V_scale, V_offset, srow, n_mask, NG, BITS, W, CW, C, PPG, INTERPRET)
            hi = tl.reshape(tl.join(tl.join(t4, t5), tl.join(t6, t7)), [p.shape[0], 4 * t0.shape[1]])
            return tl.reshape(tl.join(lo, hi), [p.shape[0], 8 * t0.shape[1]])


@triton.jit
def _pv_one(p, g: tl.constexpr, vb, V_scale, V_offset, srow, n_mask, NG: tl.constexpr,
            BITS: tl.constexpr, W: tl.constexpr, CW: tl.constexpr, C: tl.constexpr,
            PPG: tl.constexpr, INTERPRET: tl.constexpr):
    vs = tl.load(V_scale + srow + g, mask=n_mask, other=0.0)
    vz = tl.load(V_offset + srow + g, mask=n_mask, other=0.0)
    chunk = tl.load(vb + (g % C) * CW + tl.arange(0, CW)[None, :], mask=n_mask[:, None], other=0)
    return _pv_group(p, g, chunk, vs, vz, BITS, W, CW, C, PPG, INTERPRET)


@triton.jit
def _tile_channels(NG: tl.constexpr, W: tl.constexpr, CW: tl.constexpr, C: tl.constexpr, PPG: tl.constexpr):
    """``[1, HEAD_DIM]`` channel of each accumulator column (the joins of :func:`_pv_tile_groups`)."""
    c0 = _group_channels(0, W, CW, C, PPG)
    if NG == 1:
        return c0
    else:
        c1 = _group_channels(1, W, CW, C, PPG)
        if NG == 2:
            return tl.reshape(tl.join(c0, c1), [1, 2 * c0.shape[1]])
        else:
            c2 = _group_channels(2, W, CW, C, PPG)
            c3 = _group_channels(3, W, CW, C, PPG)
            lo = tl.reshape(tl.join(tl.join(c0, c1), tl.join(c2, c3)), [1, 4 * c0.shape[1]])
            if NG == 4:
                return lo
            else:
                c4 = _group_channels(4, W, CW, C, PPG)
                c5 = _group_channels(5, W, CW, C, PPG)
                c6 = _group_channels(6, W, CW, C, PPG)
                c7 = _group_channels(7, W, CW, C, PPG)
                hi = tl.reshape(tl.join(tl.join(c4, c5), tl.join(c6, c7)), [1, 4 * c0.shape[1]])
                return tl.reshape(tl.join(lo, hi), [1, 8 * c0.shape[1]])


def launch_config(head_dim: int, bits: int, group_size: int, gqa: int, k_block: int | None = None) -> dict[str, int]:
    """Tile shape and launch parameters of the split kernel for one format.

    ``BLOCK_H``: the query heads of one KV head, padded to Triton's 16-row dot
    minimum (a power of two). ``BLOCK_N``: tokens per tile. ``num_warps`` and
    ``num_stages`` (software-pipelining depth). Chosen by measurement on the H200
    (bench/NOTES.md, "Triton tile sweep"); ``bench/kernel_sweep.py`` re-measures.
    With channel-wise K (``k_block``), ``BLOCK_N`` is at most ``k_block`` so that a
    tile never straddles two K blocks, and 8 warps: compiled for sm_90 (Triton 3.6),
    4 warps spilled registers at GQA 16 (168 bytes per thread, INT4, D=128), 8 warps
    did not spill in any format tried. Not timed yet; k_block=32 runs 32-token tiles.
    """
    block_n = 64 if head_dim > 128 else 128
    num_warps = 4
    if k_block is not None:
        block_n = min(block_n, k_block)
        num_warps = 8
    return dict(
        BLOCK_H=max(16, triton.next_power_of_2(gqa)),
        BLOCK_N=block_n,
        num_warps=num_warps,
        num_stages=3,
    )


def plan_launch(
    batch: int,
    num_qo_heads: int,
    cache,
    device: torch.device,
    num_splits: int | None = None,
    config: dict[str, int] | None = None,
) -> tuple[dict[str, int], int, int]:
    """The launch of :func:`launch` for this cache: ``(meta, num_splits, tokens_per_split)``.

    ``meta`` is :func:`launch_config` updated with ``config``; the split count is the
    heuristic's (:func:`~foscar.kernels.splits.choose_num_splits`) or ``num_splits``
    rounded to whole tiles. Host-side only (no device sync).

    Raises:
        ValueError: a ``config`` ``BLOCK_N`` that does not divide ``k_block``.
    """
    hkv = cache.num_kv_heads
    k_block = cache.k_block
    meta = launch_config(cache.head_dim, cache.bits, cache.group_size, num_qo_heads // hkv, k_block)
    meta.update(config or {})
    if k_block is not None:  # (a paged cache holds whole K blocks per page: PagedQuantizedKVCache.validate)
        if k_block % meta["BLOCK_N"]:
            raise ValueError(f"config: BLOCK_N={meta['BLOCK_N']} must divide k_block={k_block} (a tile in one K block)")
    if num_splits is None:
        splits, per = choose_num_splits(batch, hkv, cache.max_seq_len, meta["BLOCK_N"], device_sm_count(device))
    else:
        splits, per = split_tokens(cache.max_seq_len, num_splits, meta["BLOCK_N"])
    return meta, splits, per


def launch(q: torch.Tensor, cache, sm_scale: float, o_part: torch.Tensor, lse_part: torch.Tensor,
           tokens_per_split: int, meta: dict[str, int]) -> None:
    """Launch the split kernel into ``o_part`` ``[batch, num_qo_heads, num_splits, head_dim]``
    and ``lse_part`` ``[batch, num_qo_heads, num_splits]`` (fp32; base-2 LSE), with the
    ``meta`` and ``tokens_per_split`` of :func:`plan_launch`. Inputs are assumed validated."""
    batch, num_qo_heads, head_dim = q.shape
    hkv = cache.num_kv_heads
    paged = hasattr(cache, "kv_indptr")
    seq_lens = cache.lengths() if paged else cache.seq_lens
    splits = o_part.shape[2]
    _folded_decode_split_kernel[(batch * hkv, splits)](
        q, cache.k_codes, cache.v_codes,
        cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset,
        seq_lens,
        cache.kv_indptr if paged else seq_lens, cache.kv_indices if paged else seq_lens,
        o_part, lse_part,
        hkv, splits, tokens_per_split,
        cache.k_codes.shape[0] if paged else 0, cache.kv_indices.numel() if paged else 0,
        q.stride(0), q.stride(1),
        cache.k_codes.stride(0), cache.k_codes.stride(1),
        cache.v_scale.stride(0), cache.v_scale.stride(1),  # = k_scale's for token-wise K
        sm_scale * LOG2E,
        GQA=num_qo_heads // hkv, HEAD_DIM=head_dim, BITS=cache.bits, GROUP=cache.group_size,
        INTERPRET=interpreter_enabled(), PAGED=paged, PAGE=cache.page_size if paged else 1,
        K_BLOCK=cache.k_block or 0,
        **meta,
    )


def folded_decode_partial(
    q: torch.Tensor,
    cache,
    sm_scale: float,
    num_splits: int | None = None,
    config: dict[str, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Plan, allocate and launch the split kernel. Inputs are assumed validated (see :func:`foscar.decode`).

    ``cache`` is a contiguous :class:`~foscar.quant.QuantizedKVCache` or a
    :class:`~foscar.paged.PagedQuantizedKVCache` (pages looked up per token through
    ``kv_indptr``/``kv_indices``; ``max_seq_len`` bounds the splits).
    ``config`` overrides entries of :func:`launch_config` (for tile sweeps).
    A channel-wise K cache (``cache.k_block`` set) runs with ``K_BLOCK = k_block``.

    Returns:
        ``(o_part, lse_part)``: ``[batch, num_qo_heads, num_splits, head_dim]`` fp32
        and ``[batch, num_qo_heads, num_splits]`` fp32 (base-2 LSE).

    Raises:
        ValueError: as :func:`plan_launch`.
    """
    batch, num_qo_heads, head_dim = q.shape
    meta, splits, per = plan_launch(batch, num_qo_heads, cache, q.device, num_splits, config)
    o_part = torch.empty(batch, num_qo_heads, splits, head_dim, dtype=torch.float32, device=q.device)
    lse_part = torch.empty(batch, num_qo_heads, splits, dtype=torch.float32, device=q.device)
    launch(q, cache, sm_scale, o_part, lse_part, per, meta)
    return o_part, lse_part
