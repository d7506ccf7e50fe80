"""FlashInfer baselines (DESIGN §6): BF16 and FP8 (e4m3) KV caches. GPU only;
``flashinfer`` is imported lazily.

Rows (each checked against the same fp64 reference as the FOSCAR kernels, because
every cache holds the *dequantized* values of the point's quantized cache):

* ``flashinfer-fa2``     ``BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=False)``
* ``flashinfer-fa2-tc``  ``BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True)``
* ``flashinfer-xqa``     ``flashinfer.decode.trtllm_batch_decode_with_kv_cache(backend="auto")``
  (XQA on sm_90; trtllm-gen on sm_100), HND layout, block table
  ``[batch, pages of the longest sequence]`` int32, and its **own zero-initialised workspace**:
  sharing the wrapper's workspace gave garbage outputs silently (DESIGN §6).

counted towards "FlashInfer BF16 at its best" (``baseline="bf16"``), and the same
three over an FP8 e4m3 cache, counted towards "FlashInfer FP8-KV at its best"
(``baseline="fp8"``):

* ``flashinfer-fa2-fp8``, ``flashinfer-fa2-tc-fp8``: the wrapper planned with
  ``q_data_type=bfloat16, kv_data_type=float8_e4m3fn`` and run with
  ``k_scale``/``v_scale``. FlashInfer 0.6.13 folds ``k_scale`` into ``sm_scale`` and
  applies ``v_scale`` after the kernel (``out *= v_scale``, a second small kernel
  inside the timed call: what a user of this API pays). With a BF16 ``q`` the
  tensor-core path stays on FA2 (FA3's FP8 path needs an FP8 ``q``).
* ``flashinfer-xqa-fp8``: ``trtllm_batch_decode_with_kv_cache`` on the FP8 pages, q
  BF16, output BF16, ``bmm1_scale = sm_scale * k_scale`` (q_scale 1),
  ``bmm2_scale = v_scale``. XQA has one KV scale: it runs with ``kv_scale =
  bmm2_scale`` and ``q_scale = bmm1_scale / kv_scale * sqrt(head_dim)``, so the
  logits are scaled by ``sm_scale * k_scale`` and the output by ``v_scale``, as
  wanted. On sm_90 its FP8 path also rounds q and the softmax weights to FP8 (its
  error is the largest of the three).

The paged caches: ``page_size`` tokens per page, only the pages the point's
lengths fill (``ceil(seq_lens[b] / page_size)`` for sequence ``b``, whatever the
cache capacity: a serving engine's page pool holds the pages in use), in the
point's ``page_order``: ``shuffled`` (the default), every page at a random place in
the pool (one permutation, seed 0), as FOSCAR's paged copy lays out its own pages;
``in-order``, sequence ``b``'s pages consecutive after sequence ``b - 1``'s (every
run before session 27, whatever FOSCAR's order: bench/NOTES.md §65), HND layout
``[num_pages, num_kv_heads, page_size, head_dim]`` for K and for V, built once per
point and shared by the rows of that dtype. Every row plans over the same lengths:
the wrapper gets ``kv_indptr`` from them, XQA ``seq_lens``, a block table as wide as
the longest sequence's pages and ``max_seq_len = max(seq_lens)`` (as vLLM passes the
batch's longest length). BF16: the dequantized values rounded to
BF16. FP8: those BF16 pages divided by a per-tensor scale (``amax / 448``, one for
K and one for V) and rounded to e4m3 (:func:`paged_fp8_cache`). ``plan()`` runs in
the builder, outside timing.

Bytes per call: ``sum(seq_lens) * num_kv_heads * head_dim * (2 B for BF16, 1 B for
FP8) * 2 (K, V)`` plus q and the output.
"""

from __future__ import annotations

import importlib.util
import itertools
import math

from typing import TYPE_CHECKING

from bench.backends import Prepared, register_backend
from bench.lazy import torch  # imported at first use: listing the kernels needs no torch
from bench.shape import PAGE_SHUFFLE_SEED

if TYPE_CHECKING:
    from bench.workload import Workload

KV_LAYOUT = "HND"  # the wrapper's layout; XQA always gets HND
WRAPPER_WORKSPACE_BYTES = 128 << 20
XQA_WORKSPACE_BYTES = 256 << 20
FP8_DTYPE = "float8_e4m3fn"  # torch dtype name: getattr(torch, FP8_DTYPE)
FP8_MAX = 448.0  # largest finite e4m3fn value: torch.finfo(torch.float8_e4m3fn).max
FP8_CONVERT_VALUES = 1 << 26  # values per chunk of the BF16 -> FP8 conversion (256 MiB of fp32 scratch)


def flashinfer_unavailable(device: torch.device) -> str | None:
    """Why FlashInfer cannot run here, or ``None``."""
    if device.type != "cuda":
        return "FlashInfer needs a CUDA GPU"
    if importlib.util.find_spec("flashinfer") is None:
        return "flashinfer is not installed (pip install 'foscar[gpu]')"
    return None


def paged_bf16_cache(w: Workload, layout: str) -> dict[str, torch.Tensor]:
    """The point's dequantized cache as FlashInfer pages, built once per point and layout.

    Returns a dict with ``k``, ``v`` (``[num_pages, num_kv_heads, page_size, head_dim]``
    for HND, ``[num_pages, page_size, num_kv_heads, head_dim]`` for NHD, bf16; the
    pages of the lengths only), ``indptr`` ``[batch + 1]``, ``indices`` ``[num_pages]``,
    ``last_page_len`` ``[batch]``, ``block_tables`` ``[batch, max pages of a sequence]``
    (entries past a sequence's pages are 0), ``seq_lens`` ``[batch]`` (all int32) and
    ``max_seq_len`` (the longest length). Logical page ``j`` (in token order) lies at
    ``indices[j]`` of the pool: ``j`` itself for ``page_order`` ``in-order``, a random
    permutation of the pool for ``shuffled``.
    """
    return w.shared(("flashinfer-paged", layout), lambda: _build_paged(w, layout))


def _build_paged(w: Workload, layout: str) -> dict:
    from foscar.quant import dequantize_kv

    p, cache, dev = w.point, w.cache, w.device
    page = p.page_size
    lens = [int(x) for x in cache.seq_lens.tolist()]
    used = [math.ceil(n / page) for n in lens]  # pages per sequence: only those of its length
    num_pages = max(1, sum(used))
    h, d = p.num_kv_heads, p.head_dim
    shape = (num_pages, h, page, d) if layout == "HND" else (num_pages, page, h, d)
    k_pages = torch.zeros(shape, dtype=torch.bfloat16, device=dev)
    v_pages = torch.zeros(shape, dtype=torch.bfloat16, device=dev)
    first = [0] + list(itertools.accumulate(used))  # first logical page of each sequence
    i32 = dict(dtype=torch.int32, device=dev)
    if p.page_order == "shuffled":  # logical page j at physical page place[j]
        place = torch.randperm(num_pages, generator=torch.Generator().manual_seed(PAGE_SHUFFLE_SEED)).to(dev)
    else:
        place = torch.arange(num_pages, device=dev)
    for b in range(p.batch):
        if not used[b]:
            continue
        kb, vb = dequantize_kv(cache, dtype=torch.float32, batch_index=b)  # [H, L, D]
        for src, dst in ((kb, k_pages), (vb, v_pages)):
            padded = torch.zeros(h, used[b] * page, d, dtype=torch.bfloat16, device=dev)
            padded[:, : lens[b]] = src.to(torch.bfloat16)
            tiles = padded.view(h, used[b], page, d)
            where = place[first[b] : first[b + 1]]
            dst[where] = tiles.permute(1, 0, 2, 3) if layout == "HND" else tiles.permute(1, 2, 0, 3)
        del kb, vb
    indices = place[: sum(used)].to(torch.int32)
    width = max(1, max(used, default=0))  # block table columns: the longest sequence's pages
    table = torch.zeros(p.batch, width, **i32)  # entries past a sequence's pages: page 0, never read
    for b in range(p.batch):
        table[b, : used[b]] = indices[first[b] : first[b + 1]]
    return dict(
        k=k_pages,
        v=v_pages,
        indptr=torch.tensor(first, **i32),
        indices=indices,
        last_page_len=torch.tensor([n - (u - 1) * page if u else 0 for n, u in zip(lens, used)], **i32),
        block_tables=table,
        seq_lens=torch.tensor(lens, **i32),
        max_seq_len=max(lens, default=0),
    )


def paged_fp8_cache(w: Workload, layout: str) -> dict:
    """The point's BF16 pages (:func:`paged_bf16_cache`) as FP8 e4m3, built once per point and layout.

    Returns the BF16 dict's page table entries (``indptr``, ``indices``,
    ``last_page_len``, ``block_tables``, ``seq_lens``, ``max_seq_len``) with ``k``, ``v``
    replaced by ``torch.float8_e4m3fn`` pages of the same shape, and ``k_scale``,
    ``v_scale`` (Python floats): ``k ~= k_fp8.float() * k_scale``. Each scale is the
    tensor's ``amax / 448`` (amax over all pages; padding is zero, so it does not
    count), 1.0 for an all-zero tensor.
    """
    return w.shared(("flashinfer-paged-fp8", layout), lambda: _build_paged_fp8(paged_bf16_cache(w, layout)))


def per_tensor_fp8_scale(x: torch.Tensor) -> float:
    """``amax(|x|) / 448`` as a Python float (1.0 when ``x`` is all zeros): the scale that
    maps the largest magnitude of ``x`` onto the largest finite e4m3 value."""
    amax = float(x.abs().amax().float()) if x.numel() else 0.0
    return amax / FP8_MAX if amax > 0 else 1.0


def to_fp8(x: torch.Tensor, scale: float, chunk_values: int = FP8_CONVERT_VALUES) -> torch.Tensor:
    """``x / scale`` rounded to ``torch.float8_e4m3fn``, same shape; clamped to +-448 first
    (torch's conversion does not saturate: beyond it lies NaN). Converted ``chunk_values``
    values at a time, so the fp32 scratch stays small for a cache of many GB."""
    src = x.contiguous().view(-1)
    out = torch.empty(src.shape, dtype=getattr(torch, FP8_DTYPE), device=x.device)
    inv = 1.0 / scale
    for i in range(0, src.numel(), chunk_values):
        part = (src[i : i + chunk_values].float() * inv).clamp_(-FP8_MAX, FP8_MAX)  # a new tensor: x untouched
        out[i : i + chunk_values] = part.to(getattr(torch, FP8_DTYPE))
    return out.view(x.shape)


def _build_paged_fp8(kv: dict) -> dict:
    k_scale, v_scale = per_tensor_fp8_scale(kv["k"]), per_tensor_fp8_scale(kv["v"])
    out = {name: value for name, value in kv.items() if name not in ("k", "v")}
    out.update(k=to_fp8(kv["k"], k_scale), v=to_fp8(kv["v"], v_scale), k_scale=k_scale, v_scale=v_scale)
    return out


def bf16_bytes(w: Workload) -> int:
    """Bytes a BF16 decode must move: K and V of every valid token, plus q and the output."""
    return kv_bytes(w, elem_bytes=2)


def fp8_bytes(w: Workload) -> int:
    """Bytes an FP8-KV decode must move: K and V of every valid token at 1 byte, plus q and the output
    (the two per-tensor scales are arguments, not memory traffic)."""
    return kv_bytes(w, elem_bytes=1)


def kv_bytes(w: Workload, elem_bytes: int) -> int:
    """``sum(seq_lens) * num_kv_heads * head_dim * elem_bytes * 2 (K, V)`` + q + output, in bytes."""
    tokens = int(w.cache.seq_lens.to(torch.int64).sum())
    p = w.point
    return tokens * p.num_kv_heads * p.head_dim * elem_bytes * 2 + w.io_bytes()


def _wrapper(w: Workload, use_tensor_cores: bool, fp8: bool = False) -> Prepared:
    """The decode wrapper over the BF16 pages, or (``fp8``) the FP8 pages with their scales."""
    import flashinfer

    p = w.point
    kv = paged_fp8_cache(w, KV_LAYOUT) if fp8 else paged_bf16_cache(w, KV_LAYOUT)
    scales = dict(k_scale=kv["k_scale"], v_scale=kv["v_scale"]) if fp8 else {}
    workspace = torch.zeros(WRAPPER_WORKSPACE_BYTES, dtype=torch.uint8, device=w.device)
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        workspace, kv_layout=KV_LAYOUT, use_tensor_cores=use_tensor_cores
    )
    wrapper.plan(
        kv["indptr"],
        kv["indices"],
        kv["last_page_len"],
        p.num_qo_heads,
        p.num_kv_heads,
        p.head_dim,
        p.page_size,
        pos_encoding_mode="NONE",
        q_data_type=torch.bfloat16,
        kv_data_type=getattr(torch, FP8_DTYPE) if fp8 else torch.bfloat16,
        sm_scale=w.sm_scale,
    )
    out = torch.empty_like(w.q)

    def make(q, k, v, o):
        # with v_scale, FlashInfer scales `o` in place after the kernel (out *= v_scale)
        return lambda: wrapper.run(q, (k, v), out=o, **scales)

    def replica():  # same plan (page table), own copy of q and of the K/V pages
        return make(w.q.clone(), kv["k"].clone(), kv["v"].clone(), torch.empty_like(out))

    nbytes = fp8_bytes(w) if fp8 else bf16_bytes(w)
    return Prepared(fn=make(w.q, kv["k"], kv["v"], out), output=lambda: out, bytes=nbytes, replica=replica)


@register_backend("flashinfer-fa2", quantized=False, baseline="bf16", unavailable=flashinfer_unavailable)
def flashinfer_fa2(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, CUDA cores (use_tensor_cores=False), BF16 cache."""
    return _wrapper(w, use_tensor_cores=False)


@register_backend("flashinfer-fa2-tc", quantized=False, baseline="bf16", unavailable=flashinfer_unavailable)
def flashinfer_fa2_tc(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, tensor cores (use_tensor_cores=True), BF16 cache."""
    return _wrapper(w, use_tensor_cores=True)


@register_backend("flashinfer-xqa", quantized=False, baseline="bf16", unavailable=flashinfer_unavailable)
def flashinfer_xqa(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer trtllm_batch_decode_with_kv_cache(backend="auto"): XQA on sm_90, BF16 cache, HND."""
    return _xqa(w, fp8=False)


@register_backend(
    "flashinfer-fa2-fp8", quantized=False, baseline="fp8", kv_dtype="fp8_e4m3", unavailable=flashinfer_unavailable
)
def flashinfer_fa2_fp8(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, CUDA cores, FP8 e4m3 cache (per-tensor k/v scales), BF16 q."""
    return _wrapper(w, use_tensor_cores=False, fp8=True)


@register_backend(
    "flashinfer-fa2-tc-fp8", quantized=False, baseline="fp8", kv_dtype="fp8_e4m3", unavailable=flashinfer_unavailable
)
def flashinfer_fa2_tc_fp8(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, tensor cores, FP8 e4m3 cache (per-tensor k/v scales), BF16 q."""
    return _wrapper(w, use_tensor_cores=True, fp8=True)


@register_backend(
    "flashinfer-xqa-fp8", quantized=False, baseline="fp8", kv_dtype="fp8_e4m3", unavailable=flashinfer_unavailable
)
def flashinfer_xqa_fp8(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer trtllm_batch_decode_with_kv_cache(backend="auto"): XQA on sm_90, FP8 e4m3 cache, BF16 q, HND."""
    return _xqa(w, fp8=True)


def _xqa(w: Workload, fp8: bool) -> Prepared:
    """XQA (sm_90) / trtllm-gen (sm_100) over the BF16 pages, or (``fp8``) the FP8 pages with their scales."""
    from flashinfer.decode import trtllm_batch_decode_with_kv_cache

    kv = paged_fp8_cache(w, "HND") if fp8 else paged_bf16_cache(w, "HND")
    workspace = torch.zeros(XQA_WORKSPACE_BYTES, dtype=torch.uint8, device=w.device)  # its own, zeroed
    block_tables, seq_lens, max_seq_len = kv["block_tables"], kv["seq_lens"], kv["max_seq_len"]
    out = torch.empty_like(w.q)
    # bmm1_scale = q_scale * k_scale * sm_scale and bmm2_scale = v_scale / o_scale, with q_scale = o_scale = 1
    bmm1_scale = w.sm_scale * (kv["k_scale"] if fp8 else 1.0)
    bmm2_scale = kv["v_scale"] if fp8 else 1.0

    def make(q, k, v, o):
        def fn():
            trtllm_batch_decode_with_kv_cache(
                q,
                (k, v),
                workspace,  # calls run one after another on one stream: one workspace serves all copies
                block_tables,
                seq_lens,
                max_seq_len,
                bmm1_scale=bmm1_scale,
                bmm2_scale=bmm2_scale,
                out=o,
                kv_layout="HND",
                backend="auto",
            )

        return fn

    def replica():
        return make(w.q.clone(), kv["k"].clone(), kv["v"].clone(), torch.empty_like(out))

    nbytes = fp8_bytes(w) if fp8 else bf16_bytes(w)
    return Prepared(fn=make(w.q, kv["k"], kv["v"], out), output=lambda: out, bytes=nbytes, replica=replica)
