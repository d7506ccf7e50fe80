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

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from foscar.kernels.knobs import env_choice, env_flag, pdl_capable

LN2 = 0.6931471805599453
MAX_BLOCK_ELEMS = 8192  # fp32 partial values merged per round and program by merge_slots (64 chunks at head_dim 128)
# ... and by one program of several rows (merge_slots' rows > 1): 8 chunks of 4 rows at head_dim 128, 128
# registers a thread at 4 warps, so that 4 programs share an SM (bench/NOTES.md §61)
MAX_ROWS_BLOCK_ELEMS = 4096
MAX_DERIVE_BATCH = 1024  # merge_slots derives the chunk ranges from the lengths for batches up to this many


class ChunkLengths(NamedTuple):
    """What :func:`merge_slots` needs to derive each sequence's chunk range from the lengths (as the CUDA kernel's
    ``find_work`` does) instead of reading the kernel's chunk table: the decode's ``lens`` (``seq_lens``, or
    ``kv_last_page_len`` with ``kv_indptr`` for a paged cache; int32, contiguous), the cache's ``max_seq_len``
    (contiguous; unused when paged), ``num_indices`` (``kv_indices.numel()``; paged) and ``page_size`` (a power
    of two; paged, else 0), the plan's ``target_chunks`` (:func:`foscar.kernels.splits.plan_work`, length-aware
    plans only), its least chunk, ``min_chunk`` tokens (512, or 256 where the plan's CTAs fit one an SM:
    :func:`foscar.kernels.splits.plan_min_chunk`), its long chunk, ``long_chunk`` tokens (0: none;
    :func:`foscar.kernels.splits.plan_long_chunk`), and its short-batch bound, ``short_tokens`` tokens (0: never;
    :func:`foscar.kernels.splits.plan_short_tokens`)."""
    lens: torch.Tensor
    kv_indptr: torch.Tensor | None
    max_seq_len: int
    num_indices: int
    page_size: int
    target_chunks: int
    min_chunk: int = 512
    long_chunk: int = 0
    short_tokens: int = 0


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
def _merge_round(m, den, num, lse, o):
    """One online-softmax step over a block of chunks: ``lse [BLOCK]`` (base 2, ``-inf`` for none),
    ``o [BLOCK, HEAD_DIM]`` (0 for none) into the running ``(m, den, num)``."""
    m_new = tl.maximum(m, tl.max(lse, axis=0))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m - m_safe)
    w = tl.exp2(lse - m_safe)
    num = num * alpha + tl.sum(o * w[:, None], axis=0)
    den = den * alpha + tl.sum(w, axis=0)
    return m_new, den, num


@triton.jit
def _load_partials(O_part, Lse_part, slot, mask, h, num_qo_heads, offs_d, HEAD_DIM: tl.constexpr):
    """The base-2 LSEs ``[BLOCK]`` and the partial rows' columns ``offs_d`` ``[BLOCK, len(offs_d)]`` of query head
    ``h`` in the slots ``slot`` (``-inf`` and 0 where ``mask`` is false)."""
    lse = tl.load(Lse_part + slot * num_qo_heads + h, mask=mask, other=float("-inf"))
    o = tl.load(O_part + (slot[:, None] * num_qo_heads + h) * HEAD_DIM + offs_d[None, :],
                mask=mask[:, None], other=0.0)
    return lse, o


@triton.jit
def _merge_loop(O_part, Lse_part, first, count, h, num_qo_heads, m, den, num, offs_d,
                HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr):
    """The ``count`` chunks of slots ``first..`` merged into ``(m, den, num)`` over the columns ``offs_d``
    of each partial row, ``BLOCK_S`` per round (each round's loads depend on the table load that gave
    ``first`` and ``count``)."""
    for s0 in range(0, count, BLOCK_S):  # online over blocks of chunks
        offs_s = s0 + tl.arange(0, BLOCK_S)
        mask = offs_s < count
        lse, o = _load_partials(O_part, Lse_part, first + offs_s, mask, h, num_qo_heads, offs_d, HEAD_DIM)
        m, den, num = _merge_round(m, den, num, lse, o)
    return m, den, num


@triton.jit
def _merge_result(m, den, num):
    """The merged row and its natural-log LSE from ``(m, den, num)``: den 0 (no token) a zero row and
    ``-inf``; NaN (a NaN LSE) a NaN row and NaN."""
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    good = den > 0
    out = tl.where(good, num / tl.where(good, den, 1.0), tl.where(den == 0, 0.0, float("nan")))
    lse_out = tl.where(good, (m_safe + tl.log2(tl.where(good, den, 1.0))) * 0.6931471805599453,
                       tl.where(den == 0, float("-inf"), float("nan")))
    return out, lse_out


@triton.jit
def _store_merged(Out, Lse_out, row, dj, offs_d, m, den, num, HEAD_DIM: tl.constexpr):
    """Row ``row``'s merged columns ``offs_d`` into ``Out`` and, from the row's first program (``dj == 0``), its
    natural-log LSE into ``Lse_out`` (:func:`_merge_result`)."""
    out, lse_out = _merge_result(m, den, num)
    tl.store(Out + row * HEAD_DIM + offs_d, out.to(Out.dtype.element_ty))
    if dj == 0:
        tl.store(Lse_out + row, lse_out)


@triton.jit
def _derived_chunks(Lens, Kv_indptr, b, batch, max_seq_len, num_indices, page_shift, target_chunks, min_chunk,
                    long_chunk, short_tokens, num_slots, BATCH_P2: tl.constexpr, PAGED: tl.constexpr):
    """Sequence ``b``'s first slot and chunk count under the CUDA kernel's length-aware schedule, derived from the
    lengths as ``find_work`` (csrc/folded_decode_sm90.cuh) derives them, not read from the table it writes: the lengths
    are inputs, so a merge program launched with PDL loads them before it waits for the decode kernel (bench/NOTES.md
    §61). The same clamps: contiguous, ``seq_lens`` to ``0..max_seq_len``; paged, ``kv_indptr`` to ``0..num_indices``
    and ``kv_last_page_len`` to ``0..page``. Chunk ``C = ceil(T / target_chunks)`` of the batch's ``T`` tokens, at most
    32768, at least ``min_chunk`` (the plan's, 512 or 256; 256 where ``T <= short_tokens``, the plan's
    :func:`foscar.kernels.splits.plan_short_tokens`, 0: never, and the longest sequence is past ``min_chunk``), rounded
    up to 256, at least ``min(ceil(longest / 32)`` rounded up to 256, 32768), or ``long_chunk`` where that is less and
    not 0 (``longest_chunk_floor``), grown until the chunks fit the slots; ``ceil(len / C)`` chunks a sequence (1 for an
    empty one), slots in sequence order (:func:`foscar.kernels.splits.schedule` is the host mirror)."""
    offs = tl.arange(0, BATCH_P2)
    live = offs < batch
    if PAGED:
        lo = tl.load(Kv_indptr + offs, mask=live, other=0)
        hi = tl.load(Kv_indptr + offs + 1, mask=live, other=0)
        last = tl.load(Lens + offs, mask=live, other=0)
        lo = tl.minimum(tl.maximum(lo, 0), num_indices)
        hi = tl.minimum(tl.maximum(hi, lo), num_indices)
        last = tl.minimum(tl.maximum(last, 0), 1 << page_shift)
        pages = tl.minimum(hi - lo, ((1 << 30) >> page_shift) + 1)
        length = tl.where(pages > 0, ((pages - 1) << page_shift) + last, 0)
    else:
        length = tl.load(Lens + offs, mask=live, other=0)
        length = tl.minimum(tl.maximum(length, 0), tl.minimum(max_seq_len, 1 << 30))
    length = tl.where(live, length, 0)
    total = tl.sum(length.to(tl.int64), axis=0)
    chunk = tl.minimum((total + target_chunks - 1) // target_chunks, 32768)
    longest = tl.max(length, axis=0)  # at most 32 chunks a sequence, or chunks of long_chunk (longest_chunk_floor)
    # a short batch whose longest sequence is past min_chunk: chunks of 256 (as find_work)
    least = tl.where((total <= short_tokens) & (longest > min_chunk), 256, min_chunk)
    chunk = ((tl.maximum(chunk, least) + 255) // 256 * 256).to(tl.int32)
    floor = tl.minimum(((longest + 31) // 32 + 255) // 256 * 256, 32768).to(tl.int32)
    floor = tl.where(long_chunk > 0, tl.minimum(floor, long_chunk), floor)
    chunk = tl.maximum(chunk, floor)
    n = tl.where(live, tl.where(length > 0, (length + chunk - 1) // chunk, 1), 0)
    chunks = tl.sum(n, axis=0)
    while (chunks > num_slots) & (chunk < (1 << 30)):  # a ragged batch: grow the chunk until they fit
        grown = chunk.to(tl.int64) * chunks // num_slots + 256
        chunk = tl.minimum(grown // 256 * 256, 1 << 30).to(tl.int32)
        n = tl.where(live, tl.where(length > 0, (length + chunk - 1) // chunk, 1), 0)
        chunks = tl.sum(n, axis=0)
    first = tl.sum(tl.where(offs < b, n, 0), axis=0)
    count = tl.sum(tl.where(offs == b, n, 0), axis=0)
    return first.to(tl.int64), count.to(tl.int32)


@triton.jit
def _chunk_range(Seq_chunks, b, Lens, Kv_indptr, batch, max_seq_len, num_indices, page_shift, target_chunks, min_chunk,
                 long_chunk, short_tokens, num_slots, PDL: tl.constexpr, WAITED: tl.constexpr, DERIVE: tl.constexpr,
                 BATCH_P2: tl.constexpr, PAGED: tl.constexpr):
    """Sequence ``b``'s first slot (int64) and chunk count (int32). ``DERIVE``: from the lengths
    (:func:`_derived_chunks`), before the PDL wait, which only a sequence of several chunks then makes (one chunk:
    nothing to wait for, NOTES §61). Else from the decode kernel's table after the wait (made here unless
    ``WAITED``): both entries in one 64-bit load, first slot in the low half (as two loads, ptxas sank the first
    slot's behind the caller's `count > 1` exit, an L1 hit there, NOTES §32)."""
    if DERIVE:
        first, count = _derived_chunks(Lens, Kv_indptr, b, batch, max_seq_len, num_indices, page_shift,
                                       target_chunks, min_chunk, long_chunk, short_tokens, num_slots, BATCH_P2, PAGED)
        if PDL:
            if count > 1:
                tl.extra.cuda.gdc_wait()
    else:
        if PDL and not WAITED:
            tl.extra.cuda.gdc_wait()
        pair = tl.load(Seq_chunks + b)
        first = pair & 0xFFFFFFFF
        count = (pair >> 32).to(tl.int32)
    return first, count


@triton.jit
def _merge_slots_kernel(
    O_part,  # [num_slots, num_qo_heads, HEAD_DIM] fp32
    Lse_part,  # [num_slots, num_qo_heads] fp32, base 2
    Seq_chunks,  # [batch] int64: the kernel's int32 pairs (first slot, chunk count), one load each
    Out,  # [batch, num_qo_heads, HEAD_DIM] bf16
    Lse_out,  # [batch, num_qo_heads] fp32, natural log
    num_qo_heads, num_slots, predicted,
    Lens, Kv_indptr, batch, max_seq_len, num_indices, page_shift, target_chunks, min_chunk, long_chunk,  # DERIVE
    short_tokens,  # DERIVE
    HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_W: tl.constexpr, SPECULATE: tl.constexpr,
    BLOCK_D: tl.constexpr, PDL: tl.constexpr, FIXED: tl.constexpr,
    DERIVE: tl.constexpr, BATCH_P2: tl.constexpr, PAGED: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)  # (sequence, query head)
    dj = tl.program_id(1)  # which BLOCK_D columns of the row (every program of a row merges the same LSEs)
    b = row // num_qo_heads
    h = row % num_qo_heads
    offs_d = dj * BLOCK_D + tl.arange(0, BLOCK_D)
    m = tl.full((), float("-inf"), tl.float32)
    den = tl.zeros((), tl.float32)
    num = tl.zeros((BLOCK_D,), tl.float32)
    if PDL and not DERIVE:  # launched before the decode kernel has finished: wait for it (its writes visible)
        tl.extra.cuda.gdc_wait()  # before any load
    # No griddepcontrol.launch_dependents: a next kernel launched with PDL starts when this one has finished.
    # Triggered here, our own decode kernel launched with PDL behind it was placed so badly that batch 1 and 8
    # ran 8-38% slower (bench/NOTES.md §45); a user's kernel after the merge could meet the same.
    if FIXED:
        # A fixed-path plan (the kernel's fixed_window): sequence b's chunks are the slots [b * predicted, +
        # predicted), and the decode kernel wrote every one of them in this launch (a sequence of one chunk
        # too; an empty chunk's LSE as -inf, its row not written): no table, one L2 round (bench/NOTES.md §58)
        offs_w = tl.arange(0, BLOCK_W)
        lse_w, o_w = _load_partials(O_part, Lse_part, b * predicted + offs_w, offs_w < predicted, h, num_qo_heads,
                                    offs_d, HEAD_DIM)
        m, den, num = _merge_round(m, den, num, lse_w, tl.where((lse_w == float("-inf"))[:, None], 0.0, o_w))
        _store_merged(Out, Lse_out, row, dj, offs_d, m, den, num, HEAD_DIM)
        return
    first, count = _chunk_range(Seq_chunks, b, Lens, Kv_indptr, batch, max_seq_len, num_indices, page_shift,
                                target_chunks, min_chunk, long_chunk, short_tokens, num_slots, PDL, True, DERIVE,
                                BATCH_P2, PAGED)
    if SPECULATE:
        # The partials of the predicted window [b * predicted, + BLOCK_W) (a uniform batch's chunks) are
        # loaded with the table, not after it: one dependent L2 round, not two (bench/NOTES.md §32). No branch
        # before their use: ptxas sinks a load that only a branch uses past the branch (measured in the
        # SASS: the first slot's load went behind the `count > 1` exit), which would make it dependent again.
        w0 = b * predicted
        offs_w = tl.arange(0, BLOCK_W)
        slot_w = w0 + offs_w
        lse_w, o_w = _load_partials(O_part, Lse_part, slot_w, slot_w < num_slots, h, num_qo_heads, offs_d, HEAD_DIM)
        rel = first - w0
        hit = (rel >= 0) & (rel + count <= BLOCK_W) & (first + count <= num_slots)
        # the sequence's chunks where they lie in the window; the rest (stale, NaN or not) never counts.
        # A miss merges nothing here ((m, den, num) stay at their start) and the loop below takes it all.
        mine = hit & (offs_w >= rel) & (offs_w < rel + count)
        m, den, num = _merge_round(m, den, num, tl.where(mine, lse_w, float("-inf")),
                                   tl.where(mine[:, None], o_w, 0.0))
        todo = tl.where(hit | (count <= 1), 0, count)  # a miss (a ragged batch): the table, then the partials
        m, den, num = _merge_loop(O_part, Lse_part, first, todo, h, num_qo_heads, m, den, num, offs_d,
                                  HEAD_DIM, BLOCK_S)
        out, lse_out = _merge_result(m, den, num)
        several = count > 1  # one chunk: the decode kernel wrote the output itself
        tl.store(Out + row * HEAD_DIM + offs_d, out.to(Out.dtype.element_ty), mask=several & (offs_d < HEAD_DIM))
        tl.store(Lse_out + row, lse_out, mask=several & (dj == 0))
    else:  # the default: the table, then the partials
        if count > 1:  # one chunk: the decode kernel wrote the output itself
            if count <= BLOCK_W:
                # up to a uniform batch's chunk count (expected, a power of two): one round over BLOCK_W slots,
                # not BLOCK_S (up to MAX_BLOCK_ELEMS values a program, masked or not; INT4 64 x 8K 3.6% faster,
                # NOTES §60)
                offs_w = tl.arange(0, BLOCK_W)
                lse_w, o_w = _load_partials(O_part, Lse_part, first + offs_w, offs_w < count, h, num_qo_heads,
                                            offs_d, HEAD_DIM)
                m, den, num = _merge_round(m, den, num, lse_w, o_w)
            else:
                m, den, num = _merge_loop(O_part, Lse_part, first, count, h, num_qo_heads, m, den, num, offs_d,
                                          HEAD_DIM, BLOCK_S)
            _store_merged(Out, Lse_out, row, dj, offs_d, m, den, num, HEAD_DIM)


@triton.jit
def _load_partials_rows(O_part, Lse_part, slot, mask, h, num_qo_heads, offs_d, HEAD_DIM: tl.constexpr):
    """:func:`_load_partials` for the query heads ``h [ROWS]``: LSEs ``[ROWS, BLOCK]`` and columns ``[ROWS, BLOCK,
    len(offs_d)]`` (the heads of one slot are adjacent rows: one contiguous run a slot)."""
    lse = tl.load(Lse_part + slot[None, :] * num_qo_heads + h[:, None], mask=mask[None, :], other=float("-inf"))
    o = tl.load(O_part + (slot[None, :, None] * num_qo_heads + h[:, None, None]) * HEAD_DIM + offs_d[None, None, :],
                mask=mask[None, :, None], other=0.0)
    return lse, o


@triton.jit
def _merge_round_rows(m, den, num, lse, o):
    """:func:`_merge_round` for several rows: ``m, den [ROWS, 1]``, ``num [ROWS, D]``, ``lse [ROWS, BLOCK]``,
    ``o [ROWS, BLOCK, D]``."""
    m_new = tl.maximum(m, tl.max(lse, axis=1, keep_dims=True))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2(m - m_safe)
    w = tl.exp2(lse - m_safe)
    num = num * alpha + tl.sum(o * w[:, :, None], axis=1)
    den = den * alpha + tl.sum(w, axis=1, keep_dims=True)
    return m_new, den, num


@triton.jit
def _merge_rows_kernel(
    O_part,  # [num_slots, num_qo_heads, HEAD_DIM] fp32
    Lse_part,  # [num_slots, num_qo_heads] fp32, base 2
    Seq_chunks,  # [batch] int64: the kernel's int32 pairs (first slot, chunk count)
    Out,  # [batch, num_qo_heads, HEAD_DIM] bf16
    Lse_out,  # [batch, num_qo_heads] fp32, natural log
    num_qo_heads, num_slots,
    Lens, Kv_indptr, batch, max_seq_len, num_indices, page_shift, target_chunks, min_chunk, long_chunk,  # DERIVE
    short_tokens,  # DERIVE
    HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_W: tl.constexpr, BLOCK_D: tl.constexpr,
    ROWS: tl.constexpr, PDL: tl.constexpr, DERIVE: tl.constexpr, BATCH_P2: tl.constexpr, PAGED: tl.constexpr,
):
    """The table path of :func:`_merge_slots_kernel` for ``ROWS`` query heads of one sequence a program: one
    table load for them all, a fourth of the programs at ``ROWS`` 4 (bench/NOTES.md §61)."""
    pid = tl.program_id(0).to(tl.int64)  # (sequence, block of ROWS query heads)
    dj = tl.program_id(1)
    groups = num_qo_heads // ROWS
    b = pid // groups
    h = (pid % groups) * ROWS + tl.arange(0, ROWS)
    offs_d = dj * BLOCK_D + tl.arange(0, BLOCK_D)
    m = tl.full((ROWS, 1), float("-inf"), tl.float32)
    den = tl.zeros((ROWS, 1), tl.float32)
    num = tl.zeros((ROWS, BLOCK_D), tl.float32)
    first, count = _chunk_range(Seq_chunks, b, Lens, Kv_indptr, batch, max_seq_len, num_indices, page_shift,
                                target_chunks, min_chunk, long_chunk, short_tokens, num_slots, PDL, False, DERIVE,
                                BATCH_P2, PAGED)
    if count > 1:  # one chunk: the decode kernel wrote the rows itself
        if count <= BLOCK_W:  # up to a uniform batch's chunk count: one round
            offs_w = tl.arange(0, BLOCK_W)
            lse, o = _load_partials_rows(O_part, Lse_part, first + offs_w, offs_w < count, h, num_qo_heads, offs_d,
                                         HEAD_DIM)
            m, den, num = _merge_round_rows(m, den, num, lse, o)
        else:
            for s0 in range(0, count, BLOCK_S):
                offs_s = s0 + tl.arange(0, BLOCK_S)
                lse, o = _load_partials_rows(O_part, Lse_part, first + offs_s, offs_s < count, h, num_qo_heads,
                                             offs_d, HEAD_DIM)
                m, den, num = _merge_round_rows(m, den, num, lse, o)
        out, lse_out = _merge_result(m, den, num)
        row = b * num_qo_heads + h
        tl.store(Out + row[:, None] * HEAD_DIM + offs_d[None, :], out.to(Out.dtype.element_ty))
        if dj == 0:
            tl.store(Lse_out + row[:, None], lse_out)


# the on/off knobs FOSCAR_MERGE_SPECULATE, FOSCAR_MERGE_PDL, FOSCAR_MERGE_FIXED_WINDOW and FOSCAR_MERGE_FROM_LENGTHS
# take "1" / "0" (foscar.kernels.knobs.env_flag); FOSCAR_MERGE_D_SLICES one of these
D_SLICES_CHOICES = ("auto", "1", "2", "4", "8")
ROWS_CHOICES = ("auto", "1", "2", "4", "8")
ROWS_AUTO_MAX = 4  # rows_choice's "auto": at most this many rows a program
MIN_D_COLUMNS = 16  # columns of a row one merge program takes, at least


def d_slices_setting() -> str:
    """``FOSCAR_MERGE_D_SLICES`` as set (``"auto"`` where unset), for :func:`d_slices_choice` and a run's
    ``meta.json`` (:func:`foscar.kernels.decode_cuda.build_settings`).

    Raises:
        ValueError: anything but ``"auto"``, ``"1"``, ``"2"``, ``"4"`` or ``"8"``.
    """
    return env_choice("FOSCAR_MERGE_D_SLICES", D_SLICES_CHOICES)


def rows_setting() -> str:
    """``FOSCAR_MERGE_ROWS`` as set (``"auto"`` where unset), for :func:`rows_choice` and a run's ``meta.json``.

    Raises:
        ValueError: anything but ``"auto"``, ``"1"``, ``"2"``, ``"4"`` or ``"8"``.
    """
    return env_choice("FOSCAR_MERGE_ROWS", ROWS_CHOICES)


def d_slices_choice(rows: int, num_sms: int, head_dim: int) -> int:
    """Programs per (sequence, query head) of :func:`merge_slots`, each merging ``head_dim / d_slices``
    columns of the row (every one loads the row's LSEs): ``FOSCAR_MERGE_D_SLICES`` (read when a plan is
    made), ``"auto"`` by default: 4 where ``4 * rows`` programs still fit one per SM, else 1; at most
    ``head_dim /`` :data:`MIN_D_COLUMNS` either way.

    Measured on the H200 (bench/NOTES.md §42, ``foscar bench``, 32 query heads): 4 programs a row are
    0.22-0.44 us (1-4%) faster at batch 1 (8K and 32K tokens: 32 rows, 128 programs), and 0.1-0.5 us
    slower at batch 8 (<= 1%) and 1.6-3.5 us at batch 64 x 8K (1-2%), where the rows alone fill the GPU.

    Args:
        rows: ``batch * num_qo_heads``; num_sms: multiprocessors of the device; head_dim: the row's
            columns (a power of two, >= 16).

    Raises:
        ValueError: ``FOSCAR_MERGE_D_SLICES`` is set to anything but ``"auto"``, ``"1"``, ``"2"``, ``"4"``
            or ``"8"``.
    """
    value = d_slices_setting()
    wanted = (4 if 4 * rows <= num_sms else 1) if value == "auto" else int(value)
    return min(wanted, head_dim // MIN_D_COLUMNS)


def rows_choice(rows: int, num_sms: int, num_qo_heads: int) -> int:
    """Rows (query heads of one sequence) per program of :func:`merge_slots`' table path:
    ``FOSCAR_MERGE_ROWS`` (read when a plan is made), ``"auto"`` by default: the fewest (1, 2 or 4) that leave
    at most one program per SM, 4 where even that leaves more (on 132 SMs at 32 query heads: batch <= 4 one
    row, 5-8 two, 9 and more four); capped to the largest power of two that divides ``num_qo_heads``.

    A program of several rows loads the chunk table once for them all, and the grid has that many times fewer
    programs. A one-row program takes 168-178 registers a thread at 4 warps (2-3 fit an SM; beside the decode
    kernel's 2-3 CTAs, one or none), so presumably (not measured) many of batch 8's 256 and batch 64's 2048
    programs start only after the decode kernel has ended, each with two dependent L2 rounds (the table, then the
    partials). Measured on the H200 (bench/NOTES.md §61, one process, 3 rounds each): 4 rows a program at batch
    64, 2.3-2.7% faster on 64 lognormal lengths (32K cache, INT2), 1.1-2.5% at INT4 64 x 8K and 1.5-2.2% at
    64 x 32K; 2 rows at batch 8 (128 programs), 2.0% faster at INT2 8 x 8K (paged too), 3.1% on 8 x 4K in a 128K
    cache, 1.7% at INT4 8 x 8K, 0.8% at INT4 8 x 32K and on 8 lognormal lengths, 0.5% slower on one 128K sequence
    among seven of 4K. Batches of 9-32 take 4 by the same rule, not measured there.

    Args:
        rows: ``batch * num_qo_heads``; num_sms: multiprocessors of the device; num_qo_heads: query heads.

    Raises:
        ValueError: ``FOSCAR_MERGE_ROWS`` is set to anything but ``"auto"``, ``"1"``, ``"2"``, ``"4"`` or ``"8"``.
    """
    value = rows_setting()
    if value == "auto":
        wanted = 1
        while wanted < ROWS_AUTO_MAX and rows > wanted * num_sms:  # more programs than SMs
            wanted *= 2
    else:
        wanted = int(value)
    while num_qo_heads % wanted:
        wanted //= 2
    return wanted

def pdl_choice(device: torch.device) -> bool:
    """Whether a plan made now launches :func:`merge_slots` with programmatic dependent launch
    (``FOSCAR_MERGE_PDL``, read at every call as ``FOSCAR_MERGE_SPECULATE``): ``"1"`` (the default) on
    a CUDA device of compute capability 9.0 or later (``griddepcontrol``, PTX ISA 7.8), ``"0"`` never.

    With it the merge kernel's launch overlaps the decode kernel's tail: its programs may be scheduled
    once every CTA of the decode kernel has passed ``griddepcontrol.launch_dependents`` and wait in
    ``griddepcontrol.wait`` (the decode kernel complete, its writes visible) before their first load.

    Raises:
        ValueError: ``FOSCAR_MERGE_PDL`` is set to anything but ``"1"`` or ``"0"``.
    """
    return pdl_wanted() and pdl_capable(device)


def pdl_wanted() -> bool:
    """``FOSCAR_MERGE_PDL`` as a bool (``"1"``, the default, or ``"0"``), whatever the device.

    Raises:
        ValueError: ``FOSCAR_MERGE_PDL`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_MERGE_PDL", "1")


def fixed_window_choice() -> bool:
    """Whether a plan made now whose chunks are fixed (a batch of one, an explicit ``num_splits``; 2 or more a
    sequence) runs the decode kernel with ``fixed_window`` and :func:`merge_slots` with ``fixed=True``: every
    slot written by the decode kernel, merged in one L2 round without the chunk table
    (``FOSCAR_MERGE_FIXED_WINDOW``, read at every call as ``FOSCAR_MERGE_SPECULATE``; ``"1"`` by default,
    ``"0"`` the table first; bench/NOTES.md §58). Unlike the speculation, it never misses: the decode kernel
    writes the window it reads.

    Raises:
        ValueError: ``FOSCAR_MERGE_FIXED_WINDOW`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_MERGE_FIXED_WINDOW", "1")


def from_lengths_choice() -> bool:
    """Whether a plan made now has :func:`merge_slots` derive each sequence's chunk range from the lengths
    (``lengths=``, :func:`_derived_chunks`) instead of reading the decode kernel's chunk table
    (``FOSCAR_MERGE_FROM_LENGTHS``, read at every call as ``FOSCAR_MERGE_SPECULATE``; ``"0"``, the table, by
    default). Only length-aware plans without the speculation of up to :data:`MAX_DERIVE_BATCH` sequences take
    it. Measured on the H200 (bench/NOTES.md §61, one row a program, against the table): 0.8-2.1% faster with
    one 128K sequence among seven of 4K, 0.6% on 64 lognormal lengths, 1.8-2.3% slower on uniform INT2 batches
    of 8 at 4K-8K (not explained); with 2 rows a program at batch 8 (the default there), the table was faster at
    5 of the 7 points measured (the lengths at INT4 8 x 8K and 8 x 32K). So it is not the default.

    Raises:
        ValueError: ``FOSCAR_MERGE_FROM_LENGTHS`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_MERGE_FROM_LENGTHS", "0")


def speculate_choice() -> bool:
    """Whether a plan made now lets :func:`merge_slots` speculate (``FOSCAR_MERGE_SPECULATE``).

    Read at every call (plans call it when they are made, as ``FOSCAR_MERGE``), so that one process
    can time both merges: ``"0"`` (the default) loads the chunk table (one 64-bit load), then the
    partials: two dependent rounds; ``"1"`` also loads the predicted window of partials in the table's
    round. Measured on the H200 (bench/NOTES.md §32): "1" is 0.1-1.3 us faster on uniform batches at the
    capacity they were planned for (1 x 8K: ~0.1 us), but where a sequence has one chunk (empty sequences,
    batch 64) every program still loads its window and merges it before it can tell: the empty decode
    +0.8-1.3 us at batch <= 32 and +5.6 us at 64 x 128K (2048 programs); on the ragged grid (§36) 1.5-3%
    faster on uniform 8 x 4K, 0.7-1.2% slower with one long sequence, 2.7-3.4% slower on 8 lognormal
    lengths. So it is not the default.

    Raises:
        ValueError: ``FOSCAR_MERGE_SPECULATE`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_MERGE_SPECULATE", "0")


def predicted_chunks(batch: int, fixed_splits: int, target_chunks: int) -> int:
    """Chunks per sequence of a uniform batch under the CUDA kernel's schedule
    (:func:`foscar.kernels.splits.schedule`): ``fixed_splits`` where it is fixed, else
    ``target_chunks // batch`` (sequence ``b`` then starts at slot ``b * predicted``); 0 at batch 0.

    Exact where every sequence has that many chunks (uniform lengths at the capacity the plan was
    sized for: the bench's uniform points); shorter uniform lengths (fewer, larger-than-target
    chunks) and ragged batches miss from some sequence on, and :func:`merge_slots` falls back.

    Args:
        batch: sequences (>= 0); ``fixed_splits``, ``target_chunks``: from
            :func:`foscar.kernels.splits.plan_work`.

    Raises:
        ValueError: a negative ``batch`` or ``fixed_splits``, or ``target_chunks < 1``.
    """
    if batch < 0 or fixed_splits < 0 or target_chunks < 1:
        raise ValueError(f"predicted_chunks: expected batch >= 0, fixed_splits >= 0, target_chunks >= 1, "
                         f"got {batch}, {fixed_splits}, {target_chunks}")
    if batch == 0:
        return 0
    return fixed_splits if fixed_splits > 0 else target_chunks // batch


def speculation_window(predicted: int, head_dim: int) -> int:
    """Slots :func:`merge_slots` loads ahead per program for ``predicted`` chunks per sequence: the
    next power of two ``>= predicted``, or 0 (no speculation) where ``predicted < 2`` (one chunk is
    written by the decode kernel: nothing to merge) or the window holds more than
    :data:`MAX_BLOCK_ELEMS` values."""
    if predicted < 2:
        return 0
    window = triton.next_power_of_2(predicted)
    return window if window * head_dim <= MAX_BLOCK_ELEMS else 0


def merge_slots(o_part: torch.Tensor, lse_part: torch.Tensor, seq_chunks: torch.Tensor, out: torch.Tensor,
                lse_out: torch.Tensor, predicted: int = 0, d_slices: int = 1, pdl: bool = False,
                fixed: bool = False, expected: int = 0, rows: int = 1, lengths: ChunkLengths | None = None) -> None:
    """Merge the CUDA kernel's split-KV partials of sequences of several chunks.

    ``o_part [num_slots, num_qo_heads, head_dim]`` / ``lse_part [num_slots, num_qo_heads]`` fp32
    (base-2 LSE) in the kernel's slot order, ``seq_chunks [batch, 2]`` int32 (each sequence's
    first slot and chunk count, written by the kernel) into ``out [batch, num_qo_heads,
    head_dim]`` (bf16, contiguous) and ``lse_out [batch, num_qo_heads]`` fp32 (natural log);
    rows of one-chunk sequences are left as the kernel wrote them. A NaN LSE gives a NaN row.

    ``predicted`` (:func:`predicted_chunks`; 0: none): each program loads the partials of slots
    ``[b * predicted, b * predicted + window)`` (:func:`speculation_window`) together with the
    table, and uses them where the sequence's chunks lie inside (a uniform batch: one dependent L2
    round instead of two: the table, then the partials); elsewhere, and where ``window`` is 0, the
    table first and then the partials. Slots outside the sequence's range never contribute (NaN and
    inf included), so any value is correct; a wrong prediction only costs the loads. The table is read
    as one int64 per sequence (first slot in the low half: little-endian, as on every CUDA device).

    ``d_slices`` (:func:`d_slices_choice`): programs per row, each merging ``head_dim / d_slices``
    columns; the grid is ``[batch * num_qo_heads, d_slices]``.

    ``pdl`` (:func:`pdl_choice`; a CUDA device of compute capability >= 9.0): launch with programmatic
    dependent launch, so that the programs may start before the kernel that wrote the partials has
    finished (they wait for it, ``griddepcontrol.wait``, before their first load).

    ``fixed`` (:func:`fixed_window_choice`): the partials of a fixed-path plan whose decode kernel ran with
    ``fixed_window`` (every slot written: a one-chunk sequence's partial too, an empty chunk's LSE as
    ``-inf``): sequence ``b``'s chunks are the slots ``[b * predicted, b * predicted + predicted)``, merged in
    one round without reading ``seq_chunks``, and every row is written. Needs ``predicted >= 2`` and a
    :func:`speculation_window` for it.

    ``expected`` (:func:`predicted_chunks`; 0: none): without ``predicted``, a sequence of at most
    ``speculation_window(expected)`` chunks (2 where that is 0) is merged in one round of that many slots
    after the table; a longer one in rounds of up to ``MAX_BLOCK_ELEMS / head_dim`` slots. Every program
    computes over its round's whole block, masked slots too. Measured on the H200 against rounds of up to 64
    slots for every sequence (bench/NOTES.md §60): INT4 64 x 8K (2 chunks a sequence) 3.6% faster, batches of 8
    0.5-2%; ragged batches of 8 with a long sequence 1-1.5% slower (not explained).

    ``rows`` (:func:`rows_choice`; 1, 2, 4 or 8 dividing ``num_qo_heads``; with neither ``predicted`` nor
    ``fixed``): query heads of one sequence per program, which load the chunk table once; the grid is ``[batch *
    num_qo_heads / rows, d_slices]``, and a round holds up to :data:`MAX_ROWS_BLOCK_ELEMS` values (a
    sequence's chunks in rounds of ``MAX_ROWS_BLOCK_ELEMS / (rows * head_dim)`` slots, in one round where
    ``expected``'s window fits that).

    ``lengths`` (:class:`ChunkLengths`; a length-aware plan, with neither ``predicted`` nor ``fixed``, batch at
    most :data:`MAX_DERIVE_BATCH`): each program derives its sequence's chunk range from the lengths
    (:func:`_derived_chunks`, ``find_work``'s rule) instead of loading ``seq_chunks``; launched with ``pdl``, it does
    so before it waits for the decode kernel, and a sequence of one chunk exits without waiting. ``seq_chunks`` is
    then not read.

    Raises:
        ValueError: a negative ``predicted`` or ``expected``; ``d_slices`` not 1, 2, 4 or 8, or leaving fewer than 16
            columns a program; ``seq_chunks`` not a contiguous int32 ``[batch, 2]`` tensor on ``out``'s
            device; ``fixed`` with ``predicted < 2``, a window of more than :data:`MAX_BLOCK_ELEMS` values,
            or ``batch * predicted`` more than the buffers' slots; ``rows`` not 1, 2, 4 or 8, not dividing
            ``num_qo_heads``, or above 1 with ``predicted`` or ``fixed``; ``lengths`` with ``predicted`` or
            ``fixed``, for more than :data:`MAX_DERIVE_BATCH` sequences, or with ``lens`` / ``kv_indptr`` not
            contiguous int32 ``[batch]`` / ``[batch + 1]`` tensors on ``out``'s device, a ``page_size`` that is not a
            power of two with ``kv_indptr``, ``target_chunks < 1``, a ``min_chunk`` other than 256 or 512, a
            ``long_chunk`` other than 0 or a multiple of 256 up to 32768, or a ``short_tokens`` outside 0 to 2^31 - 1.
    """
    if predicted < 0:
        raise ValueError(f"predicted: expected a chunk count >= 0 (0: no speculation), got {predicted}")
    if expected < 0:
        raise ValueError(f"expected: a chunk count >= 0 (0: none), got {expected}")
    batch, heads, head_dim = out.shape
    if d_slices not in (1, 2, 4, 8) or head_dim % d_slices or head_dim // d_slices < MIN_D_COLUMNS:
        raise ValueError(f"d_slices: expected 1, 2, 4 or 8 with at least 16 of head_dim {head_dim} columns a "
                         f"program, got {d_slices!r}")
    if (seq_chunks.dtype != torch.int32 or tuple(seq_chunks.shape) != (batch, 2) or not seq_chunks.is_contiguous()
            or seq_chunks.device != out.device):
        raise ValueError(f"seq_chunks: expected a contiguous int32 [{batch}, 2] tensor on {out.device}, got "
                         f"{seq_chunks.dtype} {list(seq_chunks.shape)} (contiguous: {seq_chunks.is_contiguous()}) "
                         f"on {seq_chunks.device}")
    if fixed and (predicted < 2 or speculation_window(predicted, head_dim) == 0
                  or batch * predicted > o_part.shape[0]):
        raise ValueError(f"fixed: expected predicted >= 2 chunks a sequence with a window of at most "
                         f"{MAX_BLOCK_ELEMS} values and batch * predicted <= num_slots {o_part.shape[0]}, got "
                         f"predicted {predicted} at head_dim {head_dim}, batch {batch}")
    if rows not in (1, 2, 4, 8) or heads % rows or (rows > 1 and (predicted or fixed)):
        raise ValueError(f"rows: expected 1, 2, 4 or 8 dividing num_qo_heads {heads}, and 1 with predicted or fixed "
                         f"(got rows {rows!r}, predicted {predicted}, fixed {fixed})")
    derive = _derive_args(lengths, batch, out.device, predicted, fixed, seq_chunks)
    if batch * heads == 0:
        return
    num_slots = o_part.shape[0]
    if rows > 1:
        per_slot = rows * head_dim  # values of one slot in a program's round
        window = speculation_window(expected, head_dim)
        _merge_rows_kernel[(batch * heads // rows, d_slices)](
            o_part, lse_part, seq_chunks.view(torch.int64), out, lse_out, heads, num_slots, *derive[0],
            HEAD_DIM=head_dim, BLOCK_S=max(2, min(MAX_ROWS_BLOCK_ELEMS // per_slot, triton.next_power_of_2(num_slots))),
            BLOCK_W=max(2, window if window * per_slot <= MAX_ROWS_BLOCK_ELEMS else 0), BLOCK_D=head_dim // d_slices,
            ROWS=rows, PDL=pdl, **derive[1], num_warps=4, **({"launch_pdl": True} if pdl else {}),
        )
        return
    # one round over every chunk a sequence can have (up to MAX_BLOCK_ELEMS values; a loop beyond): the
    # loop's rounds are dependent loads (bench/NOTES.md §18)
    block_s = max(2, min(MAX_BLOCK_ELEMS // head_dim, triton.next_power_of_2(num_slots)))
    window = speculation_window(predicted, head_dim)
    block_w = window if predicted else speculation_window(expected, head_dim)
    _merge_slots_kernel[(batch * heads, d_slices)](
        o_part, lse_part, seq_chunks.view(torch.int64), out, lse_out, heads, num_slots, predicted, *derive[0],
        HEAD_DIM=head_dim, BLOCK_S=block_s, BLOCK_W=max(2, block_w), SPECULATE=window > 0 and not fixed,
        BLOCK_D=head_dim // d_slices, PDL=pdl, FIXED=fixed, **derive[1], num_warps=4, **({"launch_pdl": True} if pdl else {}),
    )


def _derive_args(lengths: ChunkLengths | None, batch: int, device: torch.device, predicted: int, fixed: bool,
                 unused: torch.Tensor) -> tuple[tuple, dict]:
    """The merge kernels' length arguments and constexprs for ``lengths`` (``None``: the table; the pointers are
    then ``unused``, never read).

    Raises:
        ValueError: as :func:`merge_slots` for ``lengths``.
    """
    if lengths is None:
        return (unused, unused, 0, 0, 0, 0, 1, 512, 0, 0), dict(DERIVE=False, BATCH_P2=1, PAGED=False)
    lens, indptr = lengths.lens, lengths.kv_indptr
    paged = indptr is not None
    if (predicted or fixed or batch > MAX_DERIVE_BATCH or lengths.target_chunks < 1
            or lengths.min_chunk not in (256, 512) or not 0 <= lengths.long_chunk <= 32768
            or lengths.long_chunk % 256 or not 0 <= lengths.short_tokens < 1 << 31):
        raise ValueError(f"lengths: expected a length-aware plan (no predicted, no fixed) of at most {MAX_DERIVE_BATCH} "
                         f"sequences, target_chunks >= 1, min_chunk 256 or 512, long_chunk 0 or a multiple of 256 "
                         f"up to 32768 and short_tokens 0 to 2^31 - 1, got predicted {predicted}, fixed {fixed}, "
                         f"batch {batch}, target_chunks {lengths.target_chunks}, min_chunk {lengths.min_chunk}, "
                         f"long_chunk {lengths.long_chunk}, short_tokens {lengths.short_tokens}")
    for name, t, n in (("lens", lens, batch), ("kv_indptr", indptr, batch + 1)):
        if t is not None and (t.dtype != torch.int32 or tuple(t.shape) != (n,) or not t.is_contiguous()
                              or t.device != device):
            raise ValueError(f"lengths.{name}: expected a contiguous int32 [{n}] tensor on {device}, got {t.dtype} "
                             f"{list(t.shape)} (contiguous: {t.is_contiguous()}) on {t.device}")
    page = lengths.page_size
    if paged and (page < 1 or page & (page - 1)):
        raise ValueError(f"lengths.page_size: expected a power of two with kv_indptr, got {page}")
    return ((lens, indptr if paged else lens, batch, lengths.max_seq_len, lengths.num_indices,
             page.bit_length() - 1 if paged else 0, lengths.target_chunks, lengths.min_chunk, lengths.long_chunk,
             lengths.short_tokens),
            dict(DERIVE=True, BATCH_P2=max(2, triton.next_power_of_2(batch)), PAGED=paged))
