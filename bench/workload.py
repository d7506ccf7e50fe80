"""One sweep point's inputs, built outside every timed region.

* The sequence lengths and the cache capacity come from the point's workload
  (:class:`bench.lengths.WorkloadSpec`: ``uniform`` = every sequence ``context``
  tokens in a cache of ``context``). The cache is allocated for the capacity
  (``max_seq_len``); ``seq_lens`` holds the lengths.
* K and V are fresh ``torch.randn`` in BF16 (never zeros), generated and quantized
  in chunks of batch rows so a large point never holds its whole BF16 cache plus
  the quantizer's fp32 temporaries; a chunk is generated up to its longest
  sequence only. The slots past that (up to the capacity) hold random codes and
  random finite scales/offsets: no kernel may read them, and one that did would
  fail the check.
* ``q`` is random BF16 ``[batch, num_qo_heads, head_dim]``.
* The reference is :func:`foscar.reference.reference_decode` (fp64) on the
  dequantized cache, for the checked batch rows only (:func:`check_rows`).
* Inputs that several backends share (FlashInfer's BF16 paged cache) are built
  once per point through :meth:`Workload.shared`.

The error metric, ``max_rel_err``: for every checked batch row ``b``,
``||out[b] - ref[b]||_2 / ||ref[b]||_2`` over all query heads and channels of that
row (out upcast to fp64), then the maximum over the checked rows. Any NaN/Inf in
a checked row of the output or of the reference makes it NaN (a failure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import torch

from bench.lengths import WorkloadSpec, lengths_summary
from bench.shape import PointShape, shape_columns

# Quantize at most this many K (or V) values per chunk: with the quantizer's fp32
# temporaries (~20 bytes per value at peak) that is ~5 GB of scratch.
CHUNK_VALUES = 1 << 28
QUANT_SCRATCH_BYTES_PER_VALUE = 20
WORKSPACE_BYTES = (128 << 20) * 2 + (256 << 20) + (256 << 20)  # FlashInfer x2, XQA, do_bench L2 flush
MARGIN_BYTES = 1 << 30
FP8_CHUNK_SCRATCH_BYTES = 1 << 30  # fp32 temporaries of the BF16 -> FP8 page conversion (bench.flashinfer_backend)


@dataclass(frozen=True)
class Point(PointShape):
    """One sweep point: a shape and a quantized format (:class:`bench.shape.PointShape`),
    its K layout, workload and grid."""

    k_block: int | None = None  # channel-wise K over blocks of k_block tokens (foscar.quant); None: token-wise K
    workload: WorkloadSpec = WorkloadSpec()  # lengths and capacity (WorkloadSpec.at resolves it per point)
    grid: str = "sweep"  # the grid the point belongs to: "sweep" or "ragged" (bench.config.GRIDS)

    @cached_property
    def lengths(self) -> tuple[int, ...]:
        """The ``batch`` sequence lengths in tokens (``uniform``: all ``context``)."""
        return self.workload.lengths(self.batch, self.context)

    @property
    def capacity(self) -> int:
        """Tokens per sequence the cache is allocated for (``max_seq_len``); default ``context``."""
        return self.workload.capacity if self.workload.capacity is not None else self.context

    @property
    def kv_tokens(self) -> int:
        """Tokens every decode call reads per KV head: the sum of the lengths."""
        return sum(self.lengths)

    @property
    def k_layout(self) -> str:
        """``token`` or ``channel-<k_block>`` (results.csv column ``k_layout``)."""
        return f"channel-{self.k_block}" if self.k_block else "token"

    def row_columns(self) -> dict[str, Any]:
        """The point's columns of a results.csv row: its shape (:func:`bench.shape.shape_columns`)
        and its workload (:data:`bench.results.WORKLOAD_COLUMNS`)."""
        return dict(**shape_columns(self), workload=self.workload.name, capacity=self.capacity, lengths=lengths_summary(self.lengths),
                    kv_tokens=self.kv_tokens, k_layout=self.k_layout, grid=self.grid)  # fmt: skip

    def is_plain(self) -> bool:
        """Every sequence at ``context`` in a cache of ``context`` (every point before workloads)."""
        return self.capacity == self.context and all(n == self.context for n in self.lengths)

    def label(self) -> str:
        k = f", channel-wise K k_block={self.k_block}" if self.k_block else ""
        text = f"batch {self.batch} x context {self.context}, int{self.bits} G={self.group_size}{k}"
        if not self.is_plain():
            text += f"; {self.workload.name} lengths {lengths_summary(self.lengths)}, capacity {self.capacity}"
        return text


@dataclass
class Workload:
    """Everything a backend needs for one point.

    Attributes:
        point: the sweep point.
        q: ``[batch, num_qo_heads, head_dim]`` bfloat16.
        cache: the quantized cache (``foscar.quant.QuantizedKVCache``).
        sm_scale: ``1 / sqrt(head_dim)``.
        rows: the batch rows checked against the reference.
        reference: ``[batch, num_qo_heads, head_dim]`` float64; rows outside ``rows`` are zero.
    """

    point: Point
    q: torch.Tensor
    cache: Any
    sm_scale: float
    rows: list[int]
    reference: torch.Tensor
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def device(self) -> torch.device:
        return self.q.device

    def shared(self, key: Any, build: Callable[[], Any]) -> Any:
        """Build an input once per point and hand the same object to every backend asking for ``key``."""
        if key not in self._shared:
            self._shared[key] = build()
        return self._shared[key]

    def io_bytes(self) -> int:
        """Bytes of ``q`` read plus the BF16 output written."""
        return 2 * self.q.numel() * self.q.element_size()


def bytes_per_token(bits: int, group_size: int, head_dim: int) -> int:
    """Quantized bytes per (token, KV head): K and V codes + fp32 scale/offset per group."""
    return 2 * head_dim * bits // 8 + 2 * 2 * 4 * (head_dim // group_size)


def check_rows(
    batch: int, context: int, full_check_max_tokens: int, lengths: tuple[int, ...] | list[int] | None = None
) -> list[int]:
    """Batch rows to check: all of them when the point's tokens (``batch * context``, or the
    sum of ``lengths``) are at most ``full_check_max_tokens``; else first, middle and last,
    and with ``lengths`` also the (first) longest and shortest sequence."""
    total = batch * context if lengths is None else sum(lengths)
    if total <= full_check_max_tokens:
        return list(range(batch))
    rows = {0, batch // 2, batch - 1}
    if lengths is not None and len(lengths):
        rows |= {max(range(batch), key=lambda b: lengths[b]), min(range(batch), key=lambda b: lengths[b])}
    return sorted(rows)


def describe_rows(rows: list[int], batch: int) -> str:
    """``"all"`` or the row indices joined by ``;`` (CSV-safe)."""
    return "all" if rows == list(range(batch)) else ";".join(str(r) for r in rows)


def estimate_bytes(point: Point, with_bf16_cache: bool, with_fp8_cache: bool = False) -> int:
    """Device memory one point needs at its peak (an estimate, erring high), in bytes.

    Quantized cache (allocated for the capacity) + the larger of (one quantization
    chunk's scratch) and (the BF16 paged cache FlashInfer reads, pages of the lengths
    only, + one row dequantized in fp32; with ``with_fp8_cache`` also the FP8 e4m3
    paged copy, 1 byte per K/V value, and its conversion scratch,
    :data:`FP8_CHUNK_SCRATCH_BYTES`) + fp64 reference of the longest row +
    workspaces + a margin.
    """
    p = point
    hsd = p.num_kv_heads * max(p.lengths, default=0) * p.head_dim  # values of the longest row, K or V
    quant = p.batch * p.num_kv_heads * p.capacity * bytes_per_token(p.bits, p.group_size, p.head_dim)
    rows_per_chunk = max(1, min(p.batch, CHUNK_VALUES // max(hsd, 1)))
    chunk = rows_per_chunk * hsd * QUANT_SCRATCH_BYTES_PER_VALUE
    bf16 = 0
    if with_bf16_cache:
        page_tokens = sum(math.ceil(n / p.page_size) for n in p.lengths) * p.page_size
        bf16 = p.num_kv_heads * page_tokens * p.head_dim * 2 * 2 + hsd * 4 * 2
        if with_fp8_cache:
            bf16 += p.num_kv_heads * page_tokens * p.head_dim * 2 + FP8_CHUNK_SCRATCH_BYTES
    reference = hsd * 8 * 2 * 2  # one row's K and V in fp64, plus temporaries
    return quant + max(chunk, bf16) + reference + WORKSPACE_BYTES + MARGIN_BYTES


def build_cache(point: Point, device: torch.device, generator: torch.Generator):
    """Random BF16 K/V quantized chunk by chunk into one ``QuantizedKVCache`` of ``point.capacity``
    tokens per sequence, ``seq_lens`` = ``point.lengths`` (channel-wise K with ``point.k_block``:
    the chunks are whole sequences, so its blocks are too).

    A chunk is a run of batch rows, generated up to its longest sequence; tokens of a row
    past its own length are quantized random data too, and slots past the chunk's longest
    sequence get random codes and random finite scales/offsets (:func:`_fill_unused`).
    For ``uniform`` points (lengths = capacity) nothing is unused and the random stream is
    the same as before workloads existed.
    """
    from foscar.quant import QuantizedKVCache, num_k_blocks, quantize_kv

    p = point
    lengths = p.lengths
    shape = (p.batch, p.num_kv_heads, p.capacity)
    packed = p.head_dim * p.bits // 8
    groups = p.head_dim // p.group_size
    k_meta = (p.batch, p.num_kv_heads, num_k_blocks(p.capacity, p.k_block), p.head_dim) if p.k_block else (*shape, groups)
    cache = QuantizedKVCache(
        k_codes=torch.empty(*shape, packed, dtype=torch.uint8, device=device),
        v_codes=torch.empty(*shape, packed, dtype=torch.uint8, device=device),
        k_scale=torch.empty(*k_meta, dtype=torch.float32, device=device),
        k_offset=torch.empty(*k_meta, dtype=torch.float32, device=device),
        v_scale=torch.empty(*shape, groups, dtype=torch.float32, device=device),
        v_offset=torch.empty(*shape, groups, dtype=torch.float32, device=device),
        seq_lens=torch.tensor(lengths, dtype=torch.int32, device=device),
        bits=p.bits,
        group_size=p.group_size,
        head_dim=p.head_dim,
        k_block=p.k_block,
    )
    layout = dict(k_layout="channel", k_block=p.k_block) if p.k_block else {}
    for b0, b1 in _chunks(lengths, p.num_kv_heads * p.head_dim):
        n = max(lengths[b0:b1])  # tokens generated for this chunk
        kv_shape = (b1 - b0, p.num_kv_heads, n, p.head_dim)
        k = torch.randn(kv_shape, dtype=torch.bfloat16, device=device, generator=generator)
        v = torch.randn(kv_shape, dtype=torch.bfloat16, device=device, generator=generator)
        seq_lens = None if n == p.capacity and min(lengths[b0:b1]) == n else cache.seq_lens[b0:b1]
        part = quantize_kv(k, v, bits=p.bits, group_size=p.group_size, seq_lens=seq_lens, **layout)
        del k, v
        for name in ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset"):
            src = getattr(part, name)
            getattr(cache, name)[b0:b1, :, : src.shape[2]].copy_(src)
        del part
        _fill_unused(cache, b0, b1, n, generator)
    return cache


def _chunks(lengths: tuple[int, ...], values_per_token: int) -> list[tuple[int, int]]:
    """``(b0, b1)`` runs of batch rows whose K (or V) values, each row generated up to the
    run's longest length, stay within :data:`CHUNK_VALUES` (at least one row per run)."""
    out, b0 = [], 0
    while b0 < len(lengths):
        b1, longest = b0 + 1, lengths[b0]
        while b1 < len(lengths) and (b1 + 1 - b0) * max(longest, lengths[b1]) * values_per_token <= CHUNK_VALUES:
            longest = max(longest, lengths[b1])
            b1 += 1
        out.append((b0, b1))
        b0 = b1
    return out


def _fill_unused(cache, b0: int, b1: int, generated: int, generator: torch.Generator) -> None:
    """Random codes (any byte) and random finite scales/offsets (standard normal) in the slots
    of rows ``b0:b1`` past the first ``generated`` tokens (channel-wise K: past the K blocks
    those tokens cover): none of them is a valid token, so no kernel may read them."""
    from foscar.quant import num_k_blocks

    for name in ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset"):
        dst = getattr(cache, name)
        per_block = cache.k_block is not None and name in ("k_scale", "k_offset")
        start = num_k_blocks(generated, cache.k_block) if per_block else generated
        tail = dst[b0:b1, :, start:]
        if tail.numel() == 0:
            continue
        if tail.dtype == torch.uint8:
            tail.copy_(torch.randint(0, 256, tail.shape, dtype=torch.uint8, device=dst.device, generator=generator))
        else:
            tail.copy_(torch.randn(tail.shape, dtype=dst.dtype, device=dst.device, generator=generator))


def build_workload(point: Point, device: torch.device, seed: int, full_check_max_tokens: int) -> Workload:
    """Random data, quantized cache (the point's lengths in a cache of its capacity), query and
    the fp64 reference over the actual lengths, for one point."""
    from foscar.reference import reference_decode

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    cache = build_cache(point, device, gen)
    q = torch.randn(
        (point.batch, point.num_qo_heads, point.head_dim), dtype=torch.bfloat16, device=device, generator=gen
    )
    sm_scale = 1.0 / math.sqrt(point.head_dim)
    rows = check_rows(point.batch, point.context, full_check_max_tokens, point.lengths)
    reference = reference_decode(q, cache, sm_scale=sm_scale, dtype=torch.float64, batch_indices=rows)
    return Workload(point=point, q=q, cache=cache, sm_scale=sm_scale, rows=rows, reference=reference)


def max_rel_err(out: torch.Tensor, reference: torch.Tensor, rows: list[int]) -> float:
    """Max over ``rows`` of ``||out[b] - ref[b]||_2 / ||ref[b]||_2``.

    Args:
        out: ``[batch, num_qo_heads, head_dim]``, any float dtype (upcast to fp64).
        reference: the same shape, float64 (rows outside ``rows`` are not read).
        rows: the batch rows to check.

    Returns:
        The largest relative L2 error, or NaN when any value of a checked row is
        NaN or Inf in ``out`` *or* in ``reference`` (a NaN must fail the row, and
        ``max`` would drop it).

    Raises:
        ValueError: the shapes differ.
    """
    if tuple(out.shape) != tuple(reference.shape):
        raise ValueError(f"output: expected shape {list(reference.shape)}, got {list(out.shape)}")
    worst = 0.0
    for b in rows:
        o = out[b].to(torch.float64)
        r = reference[b].to(device=o.device, dtype=torch.float64)
        if not (bool(torch.isfinite(o).all()) and bool(torch.isfinite(r).all())):
            return math.nan
        denom = float(torch.linalg.vector_norm(r))
        err = float(torch.linalg.vector_norm(o - r)) / max(denom, 1e-300)
        worst = max(worst, err)
    return worst
