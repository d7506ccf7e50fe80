"""Paged quantized KV caches, FlashInfer-style page tables.

Layout (HND pages; ``W = head_dim * bits // 8``, ``NG = head_dim // group_size``)::

    k_codes, v_codes     [num_pages, num_kv_heads, page_size, W]   uint8
    k_scale ... v_offset [num_pages, num_kv_heads, page_size, NG]  float32
    kv_indptr            [batch + 1]  int32   pages of sequence b: kv_indices[kv_indptr[b]:kv_indptr[b+1]]
    kv_indices           [num_used]   int32   page ids, in token order, any order in memory
    kv_last_page_len     [batch]      int32   tokens in the last page (1..page_size; 0 for no pages)

Channel-wise K (``k_block`` set, :mod:`foscar.quant`): a page holds whole K blocks, so
``k_block`` divides ``page_size`` and ``k_scale, k_offset`` are ``[num_pages, num_kv_heads,
page_size // k_block, head_dim]`` float32 (block ``j`` of a page: its tokens ``j * k_block ..``).

Sequence ``b`` has ``(n_pages - 1) * page_size + kv_last_page_len[b]`` tokens
(0 without pages). ``max_seq_len`` is a host-side upper bound on every sequence's
length (it sizes the split-KV plan without a device sync). Pages that no sequence
lists are never read, whatever they hold. Offsets are computed in 64-bit, so a cache
past 2^31 bytes works.

Page size and speed: the CUDA kernel reads a page's codes of one KV head as one run and
its scales as four more (one per tensor), so small pages cost reads at scattered addresses.
16-token pages took 0.98-1.09x the contiguous cache's time and 64-token pages 0.97-1.04x the
16-token ones; 1-token pages (a token pool) 1.3-1.4x with each sequence's pages in order and
1.1-4.8x with the pages shuffled, on an H200 (bench/NOTES.md §65; `foscar bench --page-size N
--page-order shuffled|in-order` measures it).

Every tensor, the index tensors included, must be contiguous (a strided view is refused
with a ``ValueError`` naming it, :mod:`foscar._validate`). :meth:`PagedQuantizedKVCache.validate`
checks the page table's values on the host (:meth:`~PagedQuantizedKVCache.check_page_table`)
except while a CUDA graph is being captured; ``DecodePlan.run`` never reads them.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from foscar._validate import check_flag, check_tensor, host_checks, is_int
from foscar.quant import (CACHE_TENSORS, QuantizedKVCache, _CacheTensors, check_k_block, check_lengths,
                          num_k_blocks)


@dataclass
class PagedQuantizedKVCache(_CacheTensors):
    """A paged INT2/INT4 cache; shapes and meaning in the module docstring."""

    k_codes: torch.Tensor
    v_codes: torch.Tensor
    k_scale: torch.Tensor
    k_offset: torch.Tensor
    v_scale: torch.Tensor
    v_offset: torch.Tensor
    kv_indptr: torch.Tensor
    kv_indices: torch.Tensor
    kv_last_page_len: torch.Tensor
    bits: int
    group_size: int
    head_dim: int
    max_seq_len: int
    k_block: int | None = None

    @property
    def batch_size(self) -> int:
        return self.kv_indptr.shape[0] - 1

    @property
    def page_size(self) -> int:
        return self.k_codes.shape[2]

    def lengths(self) -> torch.Tensor:
        """``[batch]`` int32 sequence lengths, computed on the device (no sync)."""
        pages = self.kv_indptr[1:] - self.kv_indptr[:-1]
        full = torch.clamp(pages - 1, min=0) * self.page_size
        return torch.where(pages > 0, full + self.kv_last_page_len, torch.zeros_like(pages)).to(torch.int32)

    def validate(self, check_values: bool | None = None) -> "PagedQuantizedKVCache":
        """Check every field: format, shapes, dtypes, devices, contiguity, and the page table.

        Args:
            check_values: also check the page table's values (reads ``kv_indptr``,
                ``kv_last_page_len`` and ``kv_indices``' min and max on the host: one
                device sync; :meth:`check_page_table`). ``None`` (default): unless the
                current CUDA stream is capturing a graph.

        Returns:
            ``self``.

        Raises:
            ValueError: the first inconsistency, as "expected X, got Y" (channel-wise K:
                ``k_block`` not 32, 64 or 128, or not dividing ``page_size``); a cache or
                index tensor that is not contiguous (a strided view; names the tensor);
                with the values checked, what :meth:`check_page_table` raises.
        """
        if self.k_block is not None:
            check_k_block(self.k_block)  # 32, 64 or 128 before asking whether it divides the page
            if self.k_codes.dim() == 4 and self.page_size % self.k_block:
                raise ValueError(f"k_block: a page must hold whole channel-wise K blocks; k_block={self.k_block} "
                                 f"does not divide page_size={self.page_size}")
        self._validate_tensors()
        dev = self.device
        i32 = dict(dtypes=(torch.int32,), device=dev, contiguous=True)
        check_tensor("kv_indptr", self.kv_indptr, ndim=1, **i32)
        if self.kv_indptr.shape[0] < 1:
            raise ValueError("kv_indptr: expected shape [batch + 1] (at least one entry, 0), got [0]")
        check_tensor("kv_indices", self.kv_indices, ndim=1, **i32)
        check_tensor("kv_last_page_len", self.kv_last_page_len, ndim=1, **i32)
        if self.kv_last_page_len.shape[0] != self.batch_size:  # the batch is kv_indptr's, so name both
            raise ValueError(f"kv_last_page_len: expected shape [{self.batch_size}] (the batch that kv_indptr's "
                             f"{self.batch_size + 1} entries give), got {list(self.kv_last_page_len.shape)}; "
                             "kv_indptr and kv_last_page_len disagree on the batch size")
        if not is_int(self.max_seq_len) or self.max_seq_len < 0:
            raise ValueError(f"max_seq_len: expected an int >= 0, got {self.max_seq_len!r}")
        if host_checks(check_values, dev):
            self.check_page_table()
        return self

    def check_page_table(self) -> None:
        """Check the page table's values on the host (one device sync), FlashInfer's rules.

        * ``kv_indptr[0] == 0``, non-decreasing, ``kv_indptr[batch] <= len(kv_indices)``;
        * ``kv_indices[kv_indptr[0]:kv_indptr[batch]]`` (the pages listed) in ``[0, num_pages)``
          (entries past ``kv_indptr[batch]`` are never read and not checked);
        * ``kv_last_page_len[b]`` in ``1..page_size`` for a sequence with pages, ``0`` for one
          without;
        * every sequence's length ``(pages - 1) * page_size + kv_last_page_len[b]`` at most
          ``max_seq_len`` (the split-KV plan covers ``max_seq_len`` tokens).

        Raises:
            ValueError: the first rule broken, naming the tensor, the sequence (or
                position) and the allowed range.
        """
        batch, page, num_pages = self.batch_size, self.page_size, self.k_codes.shape[0]
        used_ids = self.kv_indices
        meta = [self.kv_indptr, self.kv_last_page_len]
        if used_ids.numel():
            meta.append(torch.stack([used_ids.min(), used_ids.max()]))
        host = torch.cat(meta).cpu()  # the one sync
        indptr, last = host[:batch + 1], host[batch + 1:2 * batch + 1]
        if int(indptr[0]) != 0:
            raise ValueError(f"kv_indptr: expected kv_indptr[0] == 0, got {int(indptr[0])}")
        pages = indptr[1:] - indptr[:-1]
        bad = (pages < 0).nonzero()
        if bad.numel():
            b = int(bad[0, 0])
            raise ValueError(f"kv_indptr: expected non-decreasing values, got kv_indptr[{b}]={int(indptr[b])} > "
                             f"kv_indptr[{b + 1}]={int(indptr[b + 1])} (sequence {b})")
        n_listed = int(indptr[batch])
        if n_listed > used_ids.numel():
            b = int((indptr[1:] > used_ids.numel()).nonzero()[0, 0])
            raise ValueError(f"kv_indptr: sequence {b}'s pages end at kv_indptr[{b + 1}]={int(indptr[b + 1])}, "
                             f"past len(kv_indices)={used_ids.numel()}")
        if n_listed and (int(host[-2]) < 0 or int(host[-1]) >= num_pages):  # min/max of all entries: look closer
            listed = used_ids[:n_listed]
            bad = ((listed < 0) | (listed >= num_pages)).nonzero()
            if bad.numel():
                pos = int(bad[0, 0])
                b = int(torch.searchsorted(indptr[1:], pos, right=True))
                raise ValueError(f"kv_indices: entry {pos} (sequence {b}) is page {int(listed[pos])}, expected a "
                                 f"page id in [0, num_pages={num_pages})")
        bad = ((pages > 0) & ((last < 1) | (last > page))).nonzero()
        if bad.numel():
            b = int(bad[0, 0])
            raise ValueError(f"kv_last_page_len: sequence {b} has {int(pages[b])} page(s) and kv_last_page_len "
                             f"{int(last[b])}, expected 1 <= kv_last_page_len <= page_size={page}")
        bad = ((pages == 0) & (last != 0)).nonzero()
        if bad.numel():
            b = int(bad[0, 0])
            raise ValueError(f"kv_last_page_len: sequence {b} has no pages and kv_last_page_len {int(last[b])}, "
                             "expected 0")
        lens = torch.where(pages > 0, (pages - 1) * page + last, torch.zeros_like(pages))
        check_lengths("kv_indptr / kv_last_page_len", lens, self.max_seq_len,
                      what=" ((pages - 1) * page_size + kv_last_page_len)",
                      hint=" (the bound the split-KV plan covers; raise max_seq_len)")

    def to_contiguous(self) -> QuantizedKVCache:
        """The same tokens as a contiguous :class:`QuantizedKVCache` (gathers pages; host reads).

        Raises:
            ValueError: what ``validate(check_values=True)`` raises (a page table that is not monotonic, a page
                index out of range, a ``kv_last_page_len`` outside ``[1, page_size]``, ...): the gather would
                otherwise read the wrong pages or fail inside torch.
        """
        self.validate(check_values=True)
        lens = [int(x) for x in self.lengths().tolist()]
        indptr = [int(x) for x in self.kv_indptr.tolist()]
        max_len = max(lens, default=0)
        out = {}
        for name in CACHE_TENSORS:
            src = getattr(self, name)
            per_block = self.k_block is not None and name in ("k_scale", "k_offset")  # rows are K blocks
            rows_of = (lambda n: num_k_blocks(n, self.k_block)) if per_block else (lambda n: n)
            dst = torch.zeros((self.batch_size, self.num_kv_heads, rows_of(max_len), src.shape[-1]), dtype=src.dtype,
                              device=self.device)
            for b, length in enumerate(lens):
                if length == 0:
                    continue
                pages = self.kv_indices[indptr[b]:indptr[b + 1]].long()
                rows = src[pages].permute(1, 0, 2, 3).reshape(self.num_kv_heads, -1, src.shape[-1])  # [H, pages*rows, .]
                dst[b, :, :rows_of(length)] = rows[:, :rows_of(length)]
            out[name] = dst
        return QuantizedKVCache(
            **out,
            seq_lens=torch.tensor(lens, dtype=torch.int32, device=self.device),
            bits=self.bits, group_size=self.group_size, head_dim=self.head_dim, k_block=self.k_block,
        )


def paginate(
    cache: QuantizedKVCache,
    page_size: int,
    shuffle: bool = False,
    extra_pages: int = 0,
    fill: float | None = None,
    generator: torch.Generator | None = None,
) -> PagedQuantizedKVCache:
    """Copy a contiguous cache into pages (for tests, benchmarks and conversions).

    Args:
        cache: the contiguous cache; sequence ``b`` keeps its first ``seq_lens[b]`` tokens.
        page_size: tokens per page (>= 1).
        shuffle: place the pages in a random order in memory (a non-contiguous page table).
        extra_pages: unused pages appended to the pool (never listed in ``kv_indices``).
        fill: if given, every unused page's codes are 0xFF and its scales/offsets ``fill``
            (e.g. 1e30: a kernel that reads them gives a wrong answer).
        generator: for ``shuffle``.

    A channel-wise K cache keeps its K blocks whole: ``k_block`` must divide ``page_size``.

    Reads ``seq_lens`` on the host. A cache of batch 0 gives a paged cache of batch 0
    (``kv_indptr = [0]``, no pages listed).

    Raises:
        ValueError: ``cache`` not a :class:`QuantizedKVCache` (a paged one: take
            ``to_contiguous()`` first); what ``cache.validate(check_values=True)`` raises;
            ``page_size`` not an int >= 1; ``extra_pages`` not an int >= 0; ``shuffle`` not a bool;
            ``fill`` not ``None`` or a real number; a channel-wise K cache whose ``k_block`` does not
            divide ``page_size``.

    Example (FlashInfer's page-table layout: ``kv_indptr``, ``kv_indices``, ``kv_last_page_len``)::

        >>> import torch, foscar
        >>> k, v = torch.randn(2, 2, 64, 64), torch.randn(2, 2, 64, 64)
        >>> cache = foscar.quantize_kv(k, v, bits=2, group_size=32, seq_lens=torch.tensor([64, 40], dtype=torch.int32))
        >>> paged = foscar.paginate(cache, page_size=16)
        >>> paged.kv_indptr.tolist(), paged.kv_indices.tolist(), paged.kv_last_page_len.tolist()
        ([0, 4, 7], [0, 1, 2, 3, 4, 5, 6], [16, 8])
    """
    if isinstance(cache, PagedQuantizedKVCache):
        raise ValueError(f"cache: expected a contiguous QuantizedKVCache, got {type(cache).__name__} "
                         "(already paged); take cache.to_contiguous() first to page it again")
    if not isinstance(cache, QuantizedKVCache):
        raise ValueError(f"cache: expected a QuantizedKVCache (foscar.quantize_kv), got {type(cache).__name__}")
    cache.validate(check_values=True)
    if not is_int(page_size) or page_size < 1:
        raise ValueError(f"page_size: expected >= 1 (an int), got {page_size!r}")
    if not is_int(extra_pages) or extra_pages < 0:
        raise ValueError(f"extra_pages: expected >= 0 (an int), got {extra_pages!r}")
    check_flag("shuffle", shuffle)  # "no" would shuffle, by truthiness
    if fill is not None and (isinstance(fill, bool) or not isinstance(fill, numbers.Real)):
        raise ValueError(f"fill: expected None or a real number (the unused pages' scales and offsets), got {fill!r}")
    if cache.k_block is not None and page_size % cache.k_block:
        raise ValueError(f"page_size: a page must hold whole channel-wise K blocks; k_block={cache.k_block} "
                         f"does not divide page_size={page_size} (use a multiple of it)")
    lens = [int(x) for x in cache.seq_lens.tolist()]
    counts = [math.ceil(n / page_size) for n in lens]
    used = sum(counts)
    total = used + extra_pages
    order = torch.randperm(total, generator=generator) if shuffle else torch.arange(total)
    ids = order[:used]  # memory slot of the i-th used page (token order)
    dev = cache.device
    # every used page's (sequence, token) rows, gathered at once: page i of the token order
    # is page page_no[i] of sequence page_seq[i]; rows past the sequence's end get the fill
    page_seq = torch.repeat_interleave(torch.arange(len(lens), device=dev),
                                       torch.tensor(counts, dtype=torch.long, device=dev))
    page_no = torch.cat([torch.arange(c, device=dev) for c in counts]) if used else page_seq
    tok = page_no[:, None] * page_size + torch.arange(page_size, device=dev)  # [used, page_size]
    valid = tok < torch.tensor(lens, dtype=torch.long, device=dev)[page_seq][:, None]
    tok = tok.clamp_(max=max(cache.max_seq_len - 1, 0))
    slots = ids.to(dev)
    fields = {}
    for name in CACHE_TENSORS:
        src = getattr(cache, name)
        value = 0 if fill is None else (0xFF if src.dtype == torch.uint8 else fill)
        if cache.k_block is not None and name in ("k_scale", "k_offset"):  # rows are K blocks: k_block tokens each
            r_tok, r_valid, r_per_page = tok[:, ::cache.k_block] // cache.k_block, valid[:, ::cache.k_block], page_size // cache.k_block
        else:
            r_tok, r_valid, r_per_page = tok, valid, page_size
        pool = torch.full((total, cache.num_kv_heads, r_per_page, src.shape[-1]), value, dtype=src.dtype, device=dev)
        if used:
            rows = src[page_seq[:, None], :, r_tok]  # [used, r_per_page, num_kv_heads, W]
            rows = torch.where(r_valid[:, :, None, None], rows, torch.full_like(rows, value))
            pool[slots] = rows.permute(0, 2, 1, 3)
        fields[name] = pool
    indptr = [0]
    for c in counts:
        indptr.append(indptr[-1] + c)
    last = [n - (c - 1) * page_size if c else 0 for n, c in zip(lens, counts)]
    i32 = dict(dtype=torch.int32, device=dev)
    return PagedQuantizedKVCache(
        **fields,
        kv_indptr=torch.tensor(indptr, **i32),
        kv_indices=ids.to(**i32),
        kv_last_page_len=torch.tensor(last, **i32),
        bits=cache.bits, group_size=cache.group_size, head_dim=cache.head_dim,
        max_seq_len=max(lens, default=0), k_block=cache.k_block,
    )
