"""Public decode-attention entry points over a quantized KV cache: :func:`decode`, and
the same split in two, :func:`plan_decode` + :meth:`DecodePlan.run`."""

from __future__ import annotations

import torch

from foscar._validate import check_choice, check_flag, check_tensor, is_int, same_device, softmax_scale
from foscar.paged import PagedQuantizedKVCache
from foscar.quant import CACHE_TENSORS, QuantizedKVCache
from foscar.reference import gqa_ratio

OPERAND_MODES = ("bf16", "fp8")
BACKENDS = ("auto", "triton", "cuda")
METHODS = ("folded", "per-value")


def decode(
    q: torch.Tensor,
    cache: QuantizedKVCache | PagedQuantizedKVCache,
    *,
    operand: str = "bf16",
    sm_scale: float | None = None,
    num_splits: int | None = None,
    return_lse: bool = False,
    backend: str = "auto",
    method: str = "folded",
):
    """Folded decode attention: one query token per sequence over an INT2/INT4 cache.

    Computes ``softmax(q . k_hat^T * sm_scale) . v_hat`` for every sequence ``b``
    over its first ``cache.seq_lens[b]`` tokens, where ``k_hat, v_hat`` are the
    dequantized cache (:mod:`foscar.quant`) — without dequantizing: scales and
    offsets are folded into the products (DESIGN §3). Split-KV with an fp32
    partial-output + LSE merge. ``cache.validate()`` reads the lengths (or the page
    table) on the host once per call to check them, except while a CUDA graph is being
    captured, where only shapes, dtypes and contiguity are checked (capturable then; a
    decode loop should use :func:`plan_decode`, whose ``run`` never syncs). The CUDA kernel's
    split-KV partials are merged here by the merge kernel after it (``FOSCAR_MERGE=fused`` to
    merge in the decode kernel, where the kernel instance holds that merge:
    :func:`foscar.kernels.decode_cuda.fused_merge_in`, and no sequence may take more than 32 chunks, or
    ``FOSCAR_MERGE_TREE=0``, or the operands are folded BF16 with ``FOSCAR_MERGE_LEVELS=1``:
    :func:`foscar.kernels.decode_cuda.merge_tree_choice`, :func:`foscar.kernels.decode_cuda.merge_levels_choice`;
    and not where few merging CTAs take two passes over their partials, gqa 8 at head_dim 128 or 4-8 at 256 and at
    most 16 (sequence, KV head) pairs, unless ``FOSCAR_MERGE_WIDE=0``:
    :func:`foscar.kernels.decode_cuda.merge_kernel_preferred`);
    :func:`plan_decode`'s plans merge in the decode kernel by
    default, whose arrival counters a plan zeroes once (a one-shot call would zero them every
    time: one more launch, bench/NOTES.md §80).

    Args:
        q: ``[batch, num_qo_heads, head_dim]`` bfloat16, last dim contiguous, on
            the cache's device. ``num_qo_heads`` any multiple of ``num_kv_heads``
            (GQA); query head ``h`` reads KV head ``h // (num_qo_heads // num_kv_heads)``.
        cache: :class:`~foscar.quant.QuantizedKVCache` (contiguous) or
            :class:`~foscar.paged.PagedQuantizedKVCache` (FlashInfer-style page table;
            the CUDA kernel takes page sizes that are powers of two), ``head_dim`` in
            {64, 128, 256}. Token-wise or channel-wise K
            (``quantize_kv(..., k_layout="channel")``) on every kernel and operand mode.
        operand: tensor-core operand mode: ``"bf16"`` (codes as ``1 + code/128``) or
            ``"fp8"`` (codes' bytes as e4m3 ``code * 2^-9``, query and probabilities in
            e4m3 with per-head / per-tile scaling; CUDA kernel only, head_dim * bits / 128
            even). On sm_90 ``mma.sync`` runs e4m3 by unpacking to f16, so ``"fp8"`` is
            slower than ``"bf16"`` there, and less accurate (bench/NOTES.md §8 has the
            measured speed and error: ~4e-2 relative L2 against ~5e-3).
        sm_scale: softmax scale, default ``1 / sqrt(head_dim)``.
        num_splits: split-KV count per sequence (default: CUDA kernel, chunks sized on the
            device from the actual lengths so that every SM gets about the same number of
            tokens, ``foscar.kernels.splits.plan_work``; Triton kernel, a heuristic from batch x
            num_kv_heads against the SM count, ``choose_num_splits``).
        return_lse: also return the natural-log LSE ``[batch, num_qo_heads]`` fp32
            (``-inf`` for a sequence of length 0 and only then; NaN for a row whose
            query holds a NaN, like its output row).
        backend: ``"cuda"`` (the sm_90 CUDA C++ kernel, compiled at first use;
            GQA <= 8), ``"triton"`` (portable), or ``"auto"``: CUDA where it can run
            (sm_90 GPU, GQA <= 8, nvcc present, code tensors 16-byte aligned:
            :func:`foscar.kernels.decode_cuda.misaligned`), else Triton.
        method: ``"folded"`` (scales and offsets folded into the other operand, codes
            turned into operands by bit operations) or ``"per-value"`` (the same CUDA
            kernel reconstructing every value as ``bf16(s * code + z)`` before the
            mma: the ablation baseline; CUDA backend only).

    Returns:
        ``[batch, num_qo_heads, head_dim]`` bfloat16 (a length-0 sequence gives a
        zero row; batch 0 gives empty tensors), and the LSE if asked.

    Raises:
        ValueError: wrong shapes/dtypes/devices, unsupported head_dim or operand
            mode, ``num_qo_heads`` not a multiple of ``num_kv_heads``, an ``sm_scale`` that is
            not a finite float (a tensor, NaN, Inf), a ``num_splits`` that is not a positive int, a CPU tensor
            without ``TRITON_INTERPRET=1``, ``backend="cuda"`` where it cannot run
            (the message says why); everything ``cache.validate()`` raises: a cache or
            index tensor that is not contiguous, a length the cache cannot hold
            (``seq_lens[b]`` outside ``[0, max_seq_len]``, a page table that breaks
            FlashInfer's rules; the message names the tensor and the sequence); a bad
            ``FOSCAR_MERGE`` or ``FOSCAR_MERGE_SPECULATE`` for the CUDA kernel (:func:`plan_decode`);
            a ``return_lse`` that is not a bool.
        TypeError: ``q`` (or a cache tensor) is not a ``torch.Tensor``.

    Example (CPU through the Triton interpreter, ``TRITON_INTERPRET=1``; on an H100/H200 the
    same call with CUDA tensors runs the CUDA kernel)::

        >>> import torch, foscar
        >>> k, v = torch.randn(2, 2, 64, 64), torch.randn(2, 2, 64, 64)
        >>> cache = foscar.quantize_kv(k, v, bits=2, group_size=32, seq_lens=torch.tensor([64, 40], dtype=torch.int32))
        >>> q = torch.randn(2, 8, 64, dtype=torch.bfloat16)  # 8 query heads over 2 KV heads (GQA 4)
        >>> out = foscar.decode(q, cache)
        >>> out.shape, out.dtype
        (torch.Size([2, 8, 64]), torch.bfloat16)
        >>> ref = foscar.reference_decode(q, cache)  # fp64, over the dequantized cache
        >>> bool((out.double() - ref).norm() / ref.norm() < 1e-2)
        True
        >>> paged = foscar.paginate(cache, page_size=16)  # the same tokens in pages
        >>> torch.equal(foscar.decode(q, paged), out)
        True
    """
    check_flag("return_lse", return_lse)
    _check_cache(cache)
    cache.validate()
    check_tensor("q", q, shape=(cache.batch_size, None, cache.head_dim), dtypes=(torch.bfloat16,), device=cache.device)
    if q.stride(-1) != 1:
        raise ValueError(f"q: expected the last dimension contiguous (stride 1), got strides {q.stride()}")
    # a plan for this one call: the CUDA kernel's split merge in the merge kernel unless FOSCAR_MERGE says otherwise
    # (the fused merge's counters would need a memset at every call, bench/NOTES.md §80)
    plan = _plan(cache, q.shape[1], operand, sm_scale, num_splits, backend, method, merge_default="kernel")
    return plan.run(q, cache, return_lse=return_lse)


_LAYOUT_FIELDS = ("cache type", "bits", "group_size", "head_dim", "max_seq_len", "k_block", *CACHE_TENSORS,
                  "seq_lens / kv_indptr", "kv_indices / kv_last_page_len")
_INDEX_TENSORS = ("seq_lens", "kv_indptr", "kv_indices", "kv_last_page_len")


def _layout(cache) -> tuple:
    """What a plan depends on (names in ``_LAYOUT_FIELDS``): the cache's format and its
    tensors' shapes, dtypes, devices and contiguity (not their contents, not the lengths;
    ``kv_indices``' length may change between runs)."""
    tensors = [getattr(cache, n) for n in CACHE_TENSORS]
    paged = hasattr(cache, "kv_indptr")
    tensors.append(cache.kv_indptr if paged else cache.seq_lens)
    index = (cache.kv_indices, cache.kv_last_page_len) if paged else ()
    return (type(cache).__name__, cache.bits, cache.group_size, cache.head_dim, cache.max_seq_len,
            getattr(cache, "k_block", None),
            *((tuple(t.shape), t.dtype, t.device, t.is_contiguous()) for t in tensors),
            tuple(((t.dtype, t.device, t.is_contiguous()) if i == 0 else (tuple(t.shape), t.dtype, t.device,
                   t.is_contiguous())) for i, t in enumerate(index)))  # kv_indices: any length


class DecodePlan:
    """:func:`foscar.decode` split in two, FlashInfer-style: everything decided and checked
    once for a cache layout and a query shape (:func:`plan_decode`), then :meth:`run`
    launches only (the kernel and the split merge) into buffers the plan owns.

    ``foscar.decode`` spends ~180 us of Python per call validating its inputs (measured
    with the launches stubbed out, bench/NOTES.md §3); ``run`` checks the query and the
    cache layout by comparing them with the plan's. The plan reads the cache's lengths
    on the host once (``cache.validate()``, one sync; skipped while a CUDA graph is being
    captured); ``run`` never syncs and is CUDA-graph capturable.

    What a plan depends on: the cache's layout (type, format, ``max_seq_len``, tensor shapes,
    dtypes, devices), the query shape and the options; ``run`` checks these and raises on a
    change (make a new plan then). It does not depend on the sequence lengths or the page table's
    contents: the CUDA kernel sizes its split-KV chunks from the lengths on the device at every
    ``run`` (DESIGN §10), so one plan serves every decode step of a batch whose lengths grow, and a
    CUDA graph captured over ``run`` stays right. The Triton kernel's splits come from
    ``max_seq_len``. One plan must not run on two CUDA streams at once (its buffers are shared);
    give each stream its own plan.

    Attributes:
        kernel: ``"cuda"`` or ``"triton"`` (what ``backend="auto"`` resolved to).
        num_splits: the fixed split-KV count per sequence, or ``None`` for the CUDA kernel's
            length-aware chunks (``num_splits=None``); 1 also where the CUDA plan gives every sequence
            one chunk by itself (one work slot per sequence, bench/NOTES.md §48), and the plan's count for a
            batch of one, which the CUDA kernel cuts by its own length (bench/NOTES.md §54).
        out: ``[batch, num_qo_heads, head_dim]`` bfloat16, the output buffer ``run`` returns.
        lse: ``[batch, num_qo_heads]`` fp32 natural-log LSE buffer.
        merge: the CUDA kernel's split merge, ``"fused"`` (in the decode kernel, the default) or ``"kernel"``
            (a merge kernel after the decode kernel; ``FOSCAR_MERGE=kernel`` when the plan was made,
            :func:`foscar.kernels.decode_cuda.merge_choice`, and always for a kernel instance built without the
            in-kernel merge, :func:`foscar.kernels.decode_cuda.fused_merge_in`: INT2 head_dim 128 group_size 32
            ``"bf16"`` on a paged cache, bench/NOTES.md §81; and where a sequence may take more than 32 chunks, unless
            ``FOSCAR_MERGE_TREE=0`` (one merging CTA) or, for folded BF16 operands, ``FOSCAR_MERGE_LEVELS=1`` (the
            in-kernel merge's two levels, which the FP8 and per-value instances lack; bench/NOTES.md §110-§111); and
            where few merging CTAs would take two passes over their ``gqa x head_dim`` partials (gqa 8 at head_dim 128,
            gqa 4-8 at 256, batch x num_kv_heads <= 16), unless ``FOSCAR_MERGE_WIDE=0``,
            :func:`foscar.kernels.decode_cuda.merge_kernel_preferred`, bench/NOTES.md §116-§117: that rule comes
            first, so there ``FOSCAR_MERGE_TREE=0`` / ``FOSCAR_MERGE_LEVELS=1`` need ``FOSCAR_MERGE_WIDE=0`` too);
            ``None`` for the Triton kernel.
        merge_predicted: the chunks per sequence the merge kernel predicts for a uniform batch and
            loads with its chunk table (:func:`foscar.kernels.merge_triton.predicted_chunks`; one
            dependent round instead of two, bench/NOTES.md §32). 0 unless ``FOSCAR_MERGE_SPECULATE=1``
            when the plan was made (always 0 with the fused merge or the Triton kernel); below 2 (one
            chunk per sequence) the merge loads no window either. With :attr:`merge_fixed_window` the
            plan's split count, exact (no table read at all).
        merge_expected: the chunks per sequence of a uniform batch at the planned capacity
            (:func:`foscar.kernels.merge_triton.predicted_chunks`; 0 without the merge kernel): a sequence
            of at most that many (rounded up to a power of two, 2 at least) is merged in one round of that
            many slots, a longer one in rounds of up to 8192 / head_dim (bench/NOTES.md §60).
        merge_d_slices: programs per (sequence, query head) of the merge kernel, each merging
            ``head_dim / merge_d_slices`` columns (:func:`foscar.kernels.merge_triton.d_slices_choice`,
            ``FOSCAR_MERGE_D_SLICES`` when the plan was made, by default 4 where the rows are at most a
            quarter of the SMs, else 1; bench/NOTES.md §42).
        merge_rows: query heads of one sequence per merge program (one chunk-table load for them all;
            :func:`foscar.kernels.merge_triton.rows_choice`, ``FOSCAR_MERGE_ROWS`` when the plan was made, by
            default the fewest of 1, 2, 4 that leave at most one program per SM, else 4; always 1 with
            :attr:`merge_predicted`; bench/NOTES.md §61).
        merge_from_lengths: whether the merge kernel derives each sequence's chunk range from the lengths of the
            cache passed to :meth:`run` (the decode kernel's rule) instead of reading the kernel's chunk table, before
            it waits for the decode kernel (:func:`foscar.kernels.merge_triton.from_lengths_choice`,
            ``FOSCAR_MERGE_FROM_LENGTHS=1`` when the plan was made, off by default; length-aware plans without the
            speculation, of at most 1024 sequences, in a build with the 32-chunk bound (or long chunks),
            :data:`foscar.kernels.decode_cuda.SEQ_CHUNK_CAP_BUILT`, and not a ``FOSCAR_KEEP_SHORT=1`` or
            ``FOSCAR_WAVE_FIT=1`` A/B build, :data:`foscar.kernels.decode_cuda.KEEP_SHORT_BUILT`,
            :data:`foscar.kernels.decode_cuda.WAVE_FIT_BUILT`; bench/NOTES.md §61, §101, §119, §121).
        merge_pdl: whether the merge kernel is launched with programmatic dependent launch, its launch
            overlapping the decode kernel's tail (:func:`foscar.kernels.merge_triton.pdl_choice`,
            ``FOSCAR_MERGE_PDL`` when the plan was made; bench/NOTES.md §43).
        merge_fixed_window: whether the plan's chunks are fixed (2 or more a sequence) and the decode kernel
            writes every slot's partial, so that the merge kernel takes each sequence's chunks without reading
            the chunk table (one L2 round instead of two; ``FOSCAR_MERGE_FIXED_WINDOW`` when the plan was
            made, :func:`foscar.kernels.merge_triton.fixed_window_choice`, bench/NOTES.md §58).
        pv_pack: whether the CUDA kernel may take the integer PV with packed columns where a KV head has at most
            4 query heads (:func:`foscar.kernels.decode_cuda.pv_pack_choice`, ``FOSCAR_PV_PACK`` when the plan was
            made, on by default; False for the Triton kernel; bench/NOTES.md §62).
        max_ctas_per_sm: at most this many CTAs of the CUDA kernel share an SM, 0 as many as fit
            (:func:`foscar.kernels.splits.max_ctas_per_sm_choice`, ``FOSCAR_MAX_CTAS_PER_SM`` when the plan was
            made: 2 where a head_dim-128 grid of 513..8192-token chunks (contiguous INT2: up to 32768) would end,
            at 3 an SM, in a wave of single CTAs
            (:func:`foscar.kernels.splits.holds_two_ctas`), and at most one wave spread evenly; 0 for the Triton
            kernel; bench/NOTES.md §67, §73).
        pdl: whether the CUDA decode kernel is launched with programmatic dependent launch, its launch overlapping
            the previous kernel's tail (:func:`foscar.kernels.decode_cuda.pdl_choice`, ``FOSCAR_PDL`` when the plan
            was made, on by default on sm_90; False for the Triton kernel; bench/NOTES.md §73).
        min_chunk: the CUDA kernel's least length-aware chunk, tokens: 256 (one CTA iteration) where the plan's
            chunk target fits one CTA an SM, else 512 (:func:`foscar.kernels.splits.plan_min_chunk`,
            ``FOSCAR_SHORT_CHUNKS`` when the plan was made; bench/NOTES.md §103); 512 for the Triton kernel.
        long_chunk: tokens; the CUDA kernel gives a sequence more than 32 chunks only of at least this many tokens
            (a batch of one cut in more than 32: chunks of at least ``min(long_chunk, ceil(length / 32))``; a
            length-aware plan: a least chunk of ``min(ceil(longest / 32), long_chunk)``), so a sequence at the
            capacity runs on up to one CTA an SM. Where the plan chose the split count
            (:func:`foscar.kernels.splits.plan_long_chunk`, ``FOSCAR_LONG_CHUNKS`` when the plan was made;
            bench/NOTES.md §105, §106; ``FOSCAR_LONG_CHUNK_TOKENS`` in place of 512 for A/B, §114; 4096 in sessions
            60-69, §115; 256 in a cache of at most 16K, :func:`foscar.kernels.splits.long_chunk_floor`): 512 for a
            batch of one (fixed plans), 512 or more for length-aware plans at
            one or two KV heads (up to four with ``FOSCAR_LONG_CHUNK_PROGRAMS=2``, §108; longer where
            ``FOSCAR_LONG_CHUNK_ROOM``, on by default, leaves one program an SM for each other sequence of a batch of
            up to 17 sequences at one KV head, 9 at two, §112, §113); else 0, as for a fixed ``num_splits`` (cut as
            asked) and the Triton kernel.
        short_tokens: tokens; where the batch's tokens (read by the CUDA kernel) are at most this and its longest
            sequence is past ``min_chunk``, its length-aware chunks take 256 as their least instead of ``min_chunk``
            (:func:`foscar.kernels.splits.plan_short_tokens`: ``256 * (SMs // num_kv_heads)`` where ``min_chunk`` is
            512 and ``FOSCAR_SHORT_TOKENS``, on by default, was on when the plan was made); 0 (never) where it was
            off, where ``min_chunk`` is 256, for a fixed ``num_splits`` and for the Triton kernel.
        merge_launched: whether :meth:`run` launches the merge kernel after the decode kernel: False
            where the plan gives every sequence exactly one chunk (one work slot per sequence,
            :func:`foscar.kernels.splits.merges`), so the decode kernel writes every output row itself
            (one launch instead of two, bench/NOTES.md §48); False for the fused merge and the Triton
            kernel too.
    """

    def __init__(self, *, q_shape, device, layout, kernel, mode, sm_scale, schedule, meta,
                 o_part, lse_part, out, lse, counters=None, seq_chunks=None, num_splits=None,
                 merge_predicted=0, merge_d_slices=1, merge_pdl=False, merge_fixed_window=False, merge_expected=0,
                 merge_rows=1, merge_from_lengths=False, pv_pack=False, max_ctas_per_sm=0, pdl=False,
                 min_chunk=512, long_chunk=0, short_tokens=0):
        from foscar.kernels.splits import merges

        self._q_shape, self._device, self._layout = q_shape, device, layout
        self.kernel, self._mode, self._sm_scale = kernel, mode, sm_scale
        self._schedule, self._meta = schedule, meta
        self._o_part, self._lse_part, self.out, self.lse = o_part, lse_part, out, lse
        self._counters = counters
        self._seq_chunks = seq_chunks
        self.num_splits = num_splits
        self.merge = None if kernel != "cuda" else "kernel" if seq_chunks is not None else "fused"
        self.merge_predicted = merge_predicted
        self.merge_d_slices = merge_d_slices
        self.merge_rows = merge_rows
        self.merge_from_lengths = merge_from_lengths
        self.pv_pack = pv_pack
        self.max_ctas_per_sm = max_ctas_per_sm
        self.pdl = pdl
        self.min_chunk = min_chunk
        self.long_chunk = long_chunk
        self.short_tokens = short_tokens
        self.merge_pdl = merge_pdl
        self.merge_fixed_window = merge_fixed_window
        self.merge_expected = merge_expected
        # one work slot per sequence: every sequence is one chunk and its CTA writes the row (NOTES §48)
        self.merge_launched = seq_chunks is not None and merges(q_shape[0], o_part.shape[0])

    def run(self, q: torch.Tensor, cache, *, return_lse: bool = False):
        """Decode ``q`` over ``cache`` with the plan.

        Args:
            q: ``[batch, num_qo_heads, head_dim]`` bfloat16, last dim contiguous, the
                planned shape and device.
            cache: a cache of the planned layout (same type, format, shapes, dtypes and
                device; its contents and sequence lengths may differ).
            return_lse: also return the LSE buffer.

        Returns:
            :attr:`out` (and :attr:`lse`): the plan's buffers, overwritten by the next
            ``run`` (clone to keep a result); empty at batch 0.

        ``run`` reads no tensor values on the host, so it does not check the lengths
        (``cache.validate()`` does); both kernels clamp each length to the sequence's
        rows: ``max_seq_len`` on a contiguous cache, its listed pages on a paged one, which
        they read whole even where they pass the planned ``max_seq_len``. Nor does it check the
        page ids: the Triton kernel reads an id outside the pool as its last page, the CUDA kernel
        reads out of bounds (docs/DESIGN.md §10); ``cache.validate()`` refuses such ids.

        Raises:
            ValueError: ``q`` or ``cache`` differs from what was planned (the message
                says how; a strided index tensor is named as not contiguous), or ``cache``
                is not a FOSCAR cache; a ``return_lse`` that is not a bool.
            TypeError: ``q`` is not a ``torch.Tensor``.
        """
        from foscar.kernels import decode_cuda, decode_triton, merge_triton

        check_flag("return_lse", return_lse)
        if not (isinstance(q, torch.Tensor) and q.shape == self._q_shape and q.dtype == torch.bfloat16
                and q.stride(-1) == 1 and (q.device == self._device or same_device(q.device, self._device))):
            check_tensor("q", q, shape=self._q_shape, dtypes=(torch.bfloat16,), device=self._device)
            raise ValueError(f"q: expected the last dimension contiguous (stride 1), got strides {q.stride()}")
        _check_cache(cache)
        layout = _layout(cache)
        if layout != self._layout:
            for name in (*CACHE_TENSORS, *_INDEX_TENSORS):  # (the plan's were contiguous: plan_decode validated them)
                if hasattr(cache, name):
                    check_tensor(name, getattr(cache, name), contiguous=True)
            name, want, got = next((n, w, g) for n, w, g in zip(_LAYOUT_FIELDS, self._layout, layout) if w != g)
            raise ValueError(f"cache: {name} differs from the plan's (planned {want}, got {got}); "
                             "make a new plan (foscar.plan_decode) for this cache")
        if q.shape[0] == 0:  # batch 0: nothing to launch (a grid of 0 programs is an invalid CUDA launch)
            return (self.out, self.lse) if return_lse else self.out
        if self.kernel == "cuda":  # chunks from the lengths; the merge inside the kernel or after it
            decode_cuda.launch(q, cache, self._sm_scale, self._o_part, self._lse_part, self.out, self.lse,
                               self._counters, *self._schedule, self._mode, self._seq_chunks,
                               self.merge_fixed_window, self.pv_pack, self.max_ctas_per_sm, self.pdl,
                               self.min_chunk, self.long_chunk, self.short_tokens)
            if self.merge_launched:
                # the run's cache: the lengths the decode kernel has just read
                lengths = (decode_cuda.chunk_lengths(cache, self._schedule[1], self.min_chunk, self.long_chunk,
                                                     self.short_tokens)
                           if self.merge_from_lengths else None)
                merge_triton.merge_slots(self._o_part, self._lse_part, self._seq_chunks, self.out, self.lse,
                                         self.merge_predicted, self.merge_d_slices, self.merge_pdl,
                                         self.merge_fixed_window, self.merge_expected, self.merge_rows, lengths)
        else:
            decode_triton.launch(q, cache, self._sm_scale, self._o_part, self._lse_part, self._schedule, self._meta)
            merge_triton.merge_splits(self._o_part, self._lse_part, self.out, self.lse)
        return (self.out, self.lse) if return_lse else self.out


def plan_decode(
    cache: QuantizedKVCache | PagedQuantizedKVCache,
    num_qo_heads: int,
    *,
    operand: str = "bf16",
    sm_scale: float | None = None,
    num_splits: int | None = None,
    backend: str = "auto",
    method: str = "folded",
) -> DecodePlan:
    """Check and plan a decode over caches laid out like ``cache`` (:class:`DecodePlan`).

    Arguments as :func:`decode` (``num_qo_heads`` is ``q.shape[1]``). The plan allocates
    the split partials and the output; its :meth:`DecodePlan.run` takes any query of
    shape ``[cache.batch_size, num_qo_heads, cache.head_dim]`` and any cache of the same
    layout. A CUDA plan that would merge in the kernel asks the CUDA extension whether the
    kernel instance holds that merge (:func:`foscar.kernels.decode_cuda.fused_merge_in`), so
    the first such plan of a process builds or loads the extension (about a minute on a cold
    build cache; a compile error surfaces here, not at the first ``run``).

    Raises:
        ValueError: everything :func:`decode` raises for the cache and the options; for the CUDA
            kernel, a ``FOSCAR_MERGE`` other than ``"kernel"`` / ``"fused"``, or ``FOSCAR_MERGE=fused`` in a
            process whose build lacks the fused merge (unset, such a build takes the merge kernel;
            :func:`foscar.kernels.decode_cuda.merge_choice`,
            read when the plan is made); a ``FOSCAR_MERGE_SPECULATE`` other than ``"1"`` / ``"0"``
            (:func:`foscar.kernels.merge_triton.speculate_choice`, read when the plan is made); a
            ``FOSCAR_MERGE_D_SLICES`` other than ``"auto"`` / ``"1"`` / ``"2"`` / ``"4"`` / ``"8"``
            (:func:`foscar.kernels.merge_triton.d_slices_choice`, read when the plan is made); a
            ``FOSCAR_MERGE_PDL`` other than ``"1"`` / ``"0"`` (:func:`foscar.kernels.merge_triton.pdl_choice`,
            read when the plan is made); a ``FOSCAR_MERGE_ROWS`` other than ``"auto"`` / ``"1"`` / ``"2"`` /
            ``"4"`` / ``"8"`` (:func:`foscar.kernels.merge_triton.rows_choice`, read when the plan is made); a
            ``FOSCAR_MERGE_FROM_LENGTHS`` other than ``"1"`` / ``"0"``
            (:func:`foscar.kernels.merge_triton.from_lengths_choice`, read when the plan is made); a
            ``FOSCAR_PV_PACK`` other than ``"1"`` / ``"0"`` (:func:`foscar.kernels.decode_cuda.pv_pack_choice`, read
            when the plan is made); a ``FOSCAR_MAX_CTAS_PER_SM`` other than ``"auto"`` or an integer 0..32
            (:func:`foscar.kernels.splits.max_ctas_per_sm_choice`, read when the plan is made); a ``FOSCAR_PDL``
            other than ``"1"`` / ``"0"`` (:func:`foscar.kernels.decode_cuda.pdl_choice`, read when the plan is made);
            a ``FOSCAR_MERGE_WIDE``, ``FOSCAR_MERGE_TREE`` or ``FOSCAR_MERGE_LEVELS`` other than ``"1"`` / ``"0"``
            (:func:`foscar.kernels.decode_cuda.merge_wide_choice`, ``merge_tree_choice``, ``merge_levels_choice``;
            read when the plan is made).

    Example (a decode loop: plan once, then ``run`` every step; capturable in a CUDA graph)::

        >>> import torch, foscar
        >>> cache = foscar.quantize_kv(torch.randn(1, 2, 128, 64), torch.randn(1, 2, 128, 64), bits=4, group_size=64)
        >>> plan = foscar.plan_decode(cache, num_qo_heads=4)
        >>> out, lse = plan.run(torch.randn(1, 4, 64, dtype=torch.bfloat16), cache, return_lse=True)
        >>> out.shape, lse.shape, lse.dtype  # natural-log LSE per query head
        (torch.Size([1, 4, 64]), torch.Size([1, 4]), torch.float32)
    """
    _check_cache(cache)
    cache.validate()
    if not is_int(num_qo_heads) or num_qo_heads < 1:
        raise ValueError(f"num_qo_heads: expected a positive int, got {num_qo_heads!r}")
    return _plan(cache, num_qo_heads, operand, sm_scale, num_splits, backend, method)


def _check_cache(cache) -> None:
    """Raise ``ValueError`` unless ``cache`` is a :class:`QuantizedKVCache` or :class:`PagedQuantizedKVCache`."""
    if not isinstance(cache, (QuantizedKVCache, PagedQuantizedKVCache)):
        raise ValueError(f"cache: expected a QuantizedKVCache or PagedQuantizedKVCache (foscar.quantize_kv, "
                         f"foscar.paginate), got {type(cache).__name__}")


def _plan(cache, num_qo_heads: int, operand: str, sm_scale: float | None, num_splits: int | None,
          backend: str, method: str, merge_default: str = "fused") -> DecodePlan:
    """:func:`plan_decode` for a cache already validated; ``merge_default``: the CUDA kernel's split merge where
    ``FOSCAR_MERGE`` is unset (:func:`foscar.kernels.decode_cuda.merge_choice`)."""
    from foscar.kernels import decode_cuda, decode_triton, merge_triton
    from foscar.kernels.splits import (device_sm_count, max_ctas_per_sm_choice, plan_chunk_tokens,
                                       plan_chunks_per_sequence, plan_merge_groups)

    device = cache.device
    check_choice("head_dim", cache.head_dim, decode_triton.SUPPORTED_HEAD_DIMS)
    check_choice("operand", operand, OPERAND_MODES)
    check_choice("backend", backend, BACKENDS)
    check_choice("method", method, METHODS)
    gqa = gqa_ratio(num_qo_heads, cache.num_kv_heads)
    if num_splits is not None and (not is_int(num_splits) or num_splits < 1):
        raise ValueError(f"num_splits: expected a positive int or None, got {num_splits!r}")
    scale = softmax_scale(sm_scale, cache.head_dim)
    if device.type != "cuda" and backend != "cuda":
        if not decode_triton.interpreter_enabled():
            raise ValueError(
                f"q: the Triton kernel needs a CUDA device, got {device}; "
                "set TRITON_INTERPRET=1 before importing foscar to run it in the CPU interpreter"
            )
        decode_triton.check_interpreter_support()
    paged = hasattr(cache, "kv_indptr")
    if operand == "fp8":
        if method == "per-value":
            raise ValueError("operand='fp8' is a folded mode; method='per-value' reconstructs BF16 operands (use operand='bf16')")
        if backend == "triton":
            raise ValueError("operand='fp8' exists in the CUDA kernel only; use backend='cuda' or 'auto'")
        why_fp8 = decode_cuda.fp8_unsupported(cache.head_dim, cache.bits)
        if why_fp8:
            raise ValueError(why_fp8)
    if backend == "triton":
        why_not_cuda = "not asked for"
    elif paged and cache.page_size & (cache.page_size - 1):
        why_not_cuda = f"the CUDA kernel takes page sizes that are powers of two, got {cache.page_size}"
    elif paged and (rows := cache.k_codes.shape[0] * cache.num_kv_heads * cache.page_size) > decode_cuda.MAX_PAGED_ROWS:
        why_not_cuda = (f"the CUDA kernel takes paged pools of at most 2^32 token rows (num_pages * num_kv_heads * "
                        f"page_size), got {rows}")
    else:
        why_not_cuda = decode_cuda.unavailable(device, gqa) or decode_cuda.misaligned(cache)
    if backend == "cuda" and why_not_cuda:
        raise ValueError(f"backend='cuda': {why_not_cuda}; use backend='triton' or 'auto'")
    if method == "per-value" and why_not_cuda:
        raise ValueError(f"method='per-value' exists in the CUDA kernel only, which cannot run here: {why_not_cuda}")
    if operand == "fp8" and why_not_cuda:
        raise ValueError(f"operand='fp8' exists in the CUDA kernel only, which cannot run here: {why_not_cuda}")
    batch, head_dim = cache.batch_size, cache.head_dim
    f32 = dict(dtype=torch.float32, device=device)
    common = dict(q_shape=torch.Size((batch, num_qo_heads, head_dim)), device=device, layout=_layout(cache),
                  mode="per-value" if method == "per-value" else operand, sm_scale=scale,
                  out=torch.empty(batch, num_qo_heads, head_dim, dtype=torch.bfloat16, device=device),
                  lse=torch.empty(batch, num_qo_heads, **f32))
    if why_not_cuda is None:  # partials per work slot
        slots, fixed, target = decode_cuda.plan_splits(cache, device, num_splits)
        # the split merge: in the kernel (plans' default) or the merge kernel after it (FOSCAR_MERGE, read per plan)
        merge = decode_cuda.merge_choice(merge_default)
        if merge == "fused" and not decode_cuda.fused_merge_in(cache.bits, head_dim, cache.group_size, common["mode"],
                                                               paged, getattr(cache, "k_block", None) is not None):
            merge = "kernel"  # an instance built without the in-kernel merge (NOTES §81)
        # few merging CTAs, each taking two passes over its rows: the merge kernel (FOSCAR_MERGE_WIDE, read now, and
        # before the rules past 32 chunks below; NOTES §116)
        wide = decode_cuda.merge_wide_choice()
        if merge == "fused" and wide and decode_cuda.merge_kernel_preferred(gqa, head_dim, batch, cache.num_kv_heads):
            merge = "kernel"
        long_chunk = decode_cuda.plan_long_chunk_of(cache, device, num_splits, fixed)
        # chunks of one 256-token iteration where the target's CTAs fit one an SM (FOSCAR_SHORT_CHUNKS, read now;
        # NOTES §103)
        min_chunk = decode_cuda.plan_min_chunk_of(cache, device, target)
        # where a sequence may take more than 32 chunks (splits.may_take_more_than_32_chunks; FOSCAR_MERGE_TREE, read
        # now; NOTES §108-§111): the merge kernel (the FP8 and per-value instances merge on one CTA in the kernel; at
        # BF16 it beat the in-kernel merge's two levels, which FOSCAR_MERGE_LEVELS=1 keeps)
        groups = (plan_merge_groups(slots, fixed, long_chunk, cache.max_seq_len, decode_cuda.SEQ_CHUNK_CAP_BUILT)
                  if merge == "fused" and decode_cuda.merge_tree_choice() else 0)
        if groups and (common["mode"] != "bf16" or not decode_cuda.merge_levels_choice()):
            merge, groups = "kernel", 0  # BF16 too unless FOSCAR_MERGE_LEVELS=1 (read now, NOTES §111)
        counters, seq_chunks = decode_cuda.merge_buffers(batch, cache.num_kv_heads, device, merge, groups)
        # a uniform batch's chunks a sequence: the merge's one-round block for such sequences (NOTES §60)
        expected = merge_triton.predicted_chunks(batch, fixed, target) if seq_chunks is not None else 0
        # FOSCAR_MERGE_SPECULATE=1 (read now; off by default, NOTES §32): the merge kernel loads a uniform
        # batch's predicted partials with its chunk table
        predicted = expected if seq_chunks is not None and merge_triton.speculate_choice() else 0
        # fixed chunks (2 or more a sequence): every slot written, merged without the chunk table
        # (FOSCAR_MERGE_FIXED_WINDOW, read now; NOTES §58)
        fixed_window = (seq_chunks is not None and fixed >= 2 and merge_triton.fixed_window_choice()
                        and merge_triton.speculation_window(fixed, head_dim) > 0)
        if fixed_window:
            predicted = fixed
        # (not in a FOSCAR_SEQ_CHUNK_CAP=0 build: the derived ranges assume the kernel's floor of 32 chunks or long
        # chunks, NOTES §101, §106; nor in a FOSCAR_KEEP_SHORT=1 or FOSCAR_WAVE_FIT=1 one, §119, §121)
        from_lengths = (seq_chunks is not None and fixed == 0 and not predicted and decode_cuda.SEQ_CHUNK_CAP_BUILT
                        and not decode_cuda.KEEP_SHORT_BUILT and not decode_cuda.WAVE_FIT_BUILT
                        and batch <= merge_triton.MAX_DERIVE_BATCH
                        and merge_triton.from_lengths_choice())
        return DecodePlan(
            kernel="cuda", schedule=(fixed, target), meta=None, num_splits=fixed or None, **common,
            merge_predicted=predicted,
            # programs per output row of the merge kernel (FOSCAR_MERGE_D_SLICES, read now; NOTES §42)
            merge_d_slices=merge_triton.d_slices_choice(batch * num_qo_heads, device_sm_count(device), head_dim),
            # the merge kernel launched with PDL (FOSCAR_MERGE_PDL, read now; NOTES §43)
            merge_pdl=seq_chunks is not None and merge_triton.pdl_choice(device),
            merge_fixed_window=fixed_window,
            merge_expected=expected,
            # rows of one sequence a merge program (FOSCAR_MERGE_ROWS, read now; NOTES §61); the speculation's and
            # the fixed window's single-row kernel otherwise
            merge_rows=1 if predicted else merge_triton.rows_choice(batch * num_qo_heads, device_sm_count(device),
                                                                    num_qo_heads),
            # chunk ranges from the lengths, not the kernel's table (FOSCAR_MERGE_FROM_LENGTHS, read now; NOTES §61)
            merge_from_lengths=from_lengths,
            # the integer PV's packed columns at gqa <= 4 (FOSCAR_PV_PACK, read now; NOTES §62)
            pv_pack=decode_cuda.pv_pack_choice(),
            # the decode kernel launched with PDL (FOSCAR_PDL, read now; NOTES §73); not behind a merge that derives
            # its ranges from the lengths: its one-chunk programs exit without waiting for the decode kernel, so the
            # merge could end before it and release the next decode early (a review's finding, not seen on the GPU)
            pdl=decode_cuda.pdl_choice(device) and not from_lengths,
            min_chunk=min_chunk,
            # ... and where the batch's tokens, read by the kernel, fit one CTA an SM in chunks of 256 and its longest
            # sequence is past min_chunk (FOSCAR_SHORT_TOKENS, read now, on by default; NOTES §118)
            short_tokens=decode_cuda.plan_short_tokens_of(cache, device, min_chunk),
            # past 32 chunks a sequence only in chunks of at least this, at one or two KV heads (FOSCAR_LONG_CHUNKS,
            # read now; NOTES §105, §106); a fixed num_splits is cut as asked
            long_chunk=long_chunk,
            # 2 CTAs an SM where 3 would end in a wave of single CTAs (FOSCAR_MAX_CTAS_PER_SM, read now; NOTES §67)
            max_ctas_per_sm=max_ctas_per_sm_choice(
                batch * cache.num_kv_heads * plan_chunks_per_sequence(batch, fixed, target), device_sm_count(device),
                head_dim, plan_chunk_tokens(cache.max_seq_len, batch, fixed, target), paged, cache.bits),
            o_part=torch.empty(slots, num_qo_heads, head_dim, **f32),
            lse_part=torch.empty(slots, num_qo_heads, **f32), counters=counters, seq_chunks=seq_chunks)
    meta, splits, per = decode_triton.plan_launch(batch, num_qo_heads, cache, device, num_splits)
    return DecodePlan(
        kernel="triton", schedule=per, meta=meta, num_splits=splits, **common,
        o_part=torch.empty(batch, num_qo_heads, splits, head_dim, **f32),
        lse_part=torch.empty(batch, num_qo_heads, splits, **f32))
