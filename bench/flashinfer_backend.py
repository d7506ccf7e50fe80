"""FlashInfer BF16 baselines (DESIGN §6). GPU only; ``flashinfer`` is imported lazily.

Rows (each checked against the same fp64 reference as the FOSCAR kernels, because
the BF16 cache holds the *dequantized* values of the point's quantized cache):

* ``flashinfer-fa2``     ``BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=False)``
* ``flashinfer-fa2-tc``  ``BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True)``
* ``flashinfer-xqa``     ``flashinfer.decode.trtllm_batch_decode_with_kv_cache(backend="auto")``
  (XQA on sm_90; trtllm-gen on sm_100), HND layout, block table
  ``[batch, pages_per_seq]`` int32, and its **own zero-initialised workspace**:
  sharing the wrapper's workspace gave garbage outputs silently (DESIGN §6).

The paged cache: ``page_size`` tokens per page, pages of sequence ``b`` are
``b * pages_per_seq ... (b + 1) * pages_per_seq - 1``, HND layout
``[num_pages, num_kv_heads, page_size, head_dim]`` bf16 for K and for V, shared by
the three rows of a point. ``plan()`` runs in the builder, outside timing.

Bytes per call: ``sum(seq_lens) * num_kv_heads * head_dim * 2 (bytes) * 2 (K, V)``
plus q and the output.
"""

from __future__ import annotations

import importlib.util
import itertools
import math

import torch

from bench.backends import Prepared, register_backend
from bench.workload import Workload

KV_LAYOUT = "HND"  # the wrapper's layout; XQA always gets HND
WRAPPER_WORKSPACE_BYTES = 128 << 20
XQA_WORKSPACE_BYTES = 256 << 20


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
    for HND, ``[num_pages, page_size, num_kv_heads, head_dim]`` for NHD, bf16),
    ``indptr`` ``[batch + 1]``, ``indices`` ``[num_pages]``, ``last_page_len``
    ``[batch]``, ``block_tables`` ``[batch, pages_per_seq]``, ``seq_lens`` ``[batch]``
    (all int32) and ``max_seq_len``.
    """
    return w.shared(("flashinfer-paged", layout), lambda: _build_paged(w, layout))


def _build_paged(w: Workload, layout: str) -> dict:
    from foscar.quant import dequantize_kv

    p, cache, dev = w.point, w.cache, w.device
    page = p.page_size
    pps = max(1, math.ceil(p.context / page))  # pages per sequence
    num_pages = p.batch * pps
    h, d = p.num_kv_heads, p.head_dim
    shape = (num_pages, h, page, d) if layout == "HND" else (num_pages, page, h, d)
    k_pages = torch.zeros(shape, dtype=torch.bfloat16, device=dev)
    v_pages = torch.zeros(shape, dtype=torch.bfloat16, device=dev)
    lens = [int(x) for x in cache.seq_lens.tolist()]
    for b in range(p.batch):
        kb, vb = dequantize_kv(cache, dtype=torch.float32, batch_index=b)  # [H, L, D]
        length = lens[b]
        for src, dst in ((kb, k_pages), (vb, v_pages)):
            padded = torch.zeros(h, pps * page, d, dtype=torch.bfloat16, device=dev)
            padded[:, :length] = src.to(torch.bfloat16)
            tiles = padded.view(h, pps, page, d)
            if layout == "HND":
                dst[b * pps : (b + 1) * pps] = tiles.permute(1, 0, 2, 3)
            else:
                dst[b * pps : (b + 1) * pps] = tiles.permute(1, 2, 0, 3)
        del kb, vb
    i32 = dict(dtype=torch.int32, device=dev)
    used = [math.ceil(n / page) for n in lens]  # pages in use per sequence
    indices = torch.cat([torch.arange(b * pps, b * pps + u, **i32) for b, u in enumerate(used)])
    return dict(
        k=k_pages,
        v=v_pages,
        indptr=torch.tensor([0] + list(itertools.accumulate(used)), **i32),
        indices=indices,
        last_page_len=torch.tensor([n - (u - 1) * page if u else 0 for n, u in zip(lens, used)], **i32),
        block_tables=torch.arange(num_pages, **i32).view(p.batch, pps),
        seq_lens=torch.tensor(lens, **i32),
        max_seq_len=p.context,
    )


def bf16_bytes(w: Workload) -> int:
    """Bytes a BF16 decode must move: K and V of every valid token, plus q and the output."""
    tokens = int(w.cache.seq_lens.to(torch.int64).sum())
    p = w.point
    return tokens * p.num_kv_heads * p.head_dim * 2 * 2 + w.io_bytes()


def _wrapper(w: Workload, use_tensor_cores: bool) -> Prepared:
    import flashinfer

    p = w.point
    kv = paged_bf16_cache(w, KV_LAYOUT)
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
        kv_data_type=torch.bfloat16,
        sm_scale=w.sm_scale,
    )
    out = torch.empty_like(w.q)

    def make(q, k, v, o):
        return lambda: wrapper.run(q, (k, v), out=o)

    def replica():  # same plan (page table), own copy of q and of the K/V pages
        return make(w.q.clone(), kv["k"].clone(), kv["v"].clone(), torch.empty_like(out))

    return Prepared(fn=make(w.q, kv["k"], kv["v"], out), output=lambda: out, bytes=bf16_bytes(w), replica=replica)


@register_backend("flashinfer-fa2", quantized=False, baseline=True, unavailable=flashinfer_unavailable)
def flashinfer_fa2(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, CUDA cores (use_tensor_cores=False), BF16 cache."""
    return _wrapper(w, use_tensor_cores=False)


@register_backend("flashinfer-fa2-tc", quantized=False, baseline=True, unavailable=flashinfer_unavailable)
def flashinfer_fa2_tc(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer BatchDecodeWithPagedKVCacheWrapper, tensor cores (use_tensor_cores=True), BF16 cache."""
    return _wrapper(w, use_tensor_cores=True)


@register_backend("flashinfer-xqa", quantized=False, baseline=True, unavailable=flashinfer_unavailable)
def flashinfer_xqa(w: Workload, operand: str | None) -> Prepared:
    """FlashInfer trtllm_batch_decode_with_kv_cache(backend="auto"): XQA on sm_90, BF16 cache, HND."""
    from flashinfer.decode import trtllm_batch_decode_with_kv_cache

    kv = paged_bf16_cache(w, "HND")
    workspace = torch.zeros(XQA_WORKSPACE_BYTES, dtype=torch.uint8, device=w.device)  # its own, zeroed
    block_tables, seq_lens, max_seq_len = kv["block_tables"], kv["seq_lens"], kv["max_seq_len"]
    out = torch.empty_like(w.q)
    sm_scale = w.sm_scale

    def make(q, k, v, o):
        def fn():
            trtllm_batch_decode_with_kv_cache(
                q,
                (k, v),
                workspace,  # calls run one after another on one stream: one workspace serves all copies
                block_tables,
                seq_lens,
                max_seq_len,
                bmm1_scale=sm_scale,  # q_scale * k_scale * sm_scale, with unit q/k scales
                bmm2_scale=1.0,
                out=o,
                kv_layout="HND",
                backend="auto",
            )

        return fn

    def replica():
        return make(w.q.clone(), kv["k"].clone(), kv["v"].clone(), torch.empty_like(out))

    return Prepared(fn=make(w.q, kv["k"], kv["v"], out), output=lambda: out, bytes=bf16_bytes(w), replica=replica)
