"""Public decode-attention entry point over a quantized KV cache."""

from __future__ import annotations

import math

import torch

from foscar._validate import check_choice, check_tensor
from foscar.paged import PagedQuantizedKVCache
from foscar.quant import QuantizedKVCache
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
    partial-output + LSE merge; no host synchronisation (CUDA-graph capturable).

    Args:
        q: ``[batch, num_qo_heads, head_dim]`` bfloat16, last dim contiguous, on
            the cache's device. ``num_qo_heads`` any multiple of ``num_kv_heads``
            (GQA); query head ``h`` reads KV head ``h // (num_qo_heads // num_kv_heads)``.
        cache: :class:`~foscar.quant.QuantizedKVCache` (contiguous) or
            :class:`~foscar.paged.PagedQuantizedKVCache` (FlashInfer-style page table;
            the CUDA kernel takes page sizes that are powers of two), ``head_dim`` in
            {64, 128, 256}. Channel-wise K
            (``quantize_kv(..., k_layout="channel")``) runs on the Triton kernel only.
        operand: tensor-core operand mode: ``"bf16"`` (codes as ``1 + code/128``) or
            ``"fp8"`` (codes' bytes as e4m3 ``code * 2^-9``, query and probabilities in
            e4m3 with per-head / per-tile scaling; CUDA kernel only, head_dim * bits / 128
            even). On sm_90 ``mma.sync`` runs e4m3 by unpacking to f16, so ``"fp8"`` is
            slower than ``"bf16"`` there, and less accurate (bench/NOTES.md §8 has the
            measured speed and error: ~4e-2 relative L2 against ~5e-3).
        sm_scale: softmax scale, default ``1 / sqrt(head_dim)``.
        num_splits: split-KV count (default: a heuristic from batch x num_kv_heads
            against the SM count, see ``choose_num_splits``).
        return_lse: also return the natural-log LSE ``[batch, num_qo_heads]`` fp32
            (``-inf`` for a sequence of length 0).
        backend: ``"cuda"`` (the sm_90 CUDA C++ kernel, compiled at first use;
            GQA <= 8), ``"triton"`` (portable), or ``"auto"``: CUDA where it can run
            (sm_90 GPU, GQA <= 8, nvcc present), else Triton.
        method: ``"folded"`` (scales and offsets folded into the other operand, codes
            turned into operands by bit operations) or ``"per-value"`` (the same CUDA
            kernel reconstructing every value as ``bf16(s * code + z)`` before the
            mma: the ablation baseline; CUDA backend only).

    Returns:
        ``[batch, num_qo_heads, head_dim]`` bfloat16 (a length-0 sequence gives a
        zero row), and the LSE if asked.

    Raises:
        ValueError: wrong shapes/dtypes/devices, unsupported head_dim or operand
            mode, ``num_qo_heads`` not a multiple of ``num_kv_heads``, a CPU tensor
            without ``TRITON_INTERPRET=1``, ``backend="cuda"`` where it cannot run
            (the message says why).
    """
    from foscar.kernels import decode_cuda, decode_triton, merge_triton

    cache.validate()
    check_tensor("q", q, shape=(cache.batch_size, None, cache.head_dim), dtypes=(torch.bfloat16,), device=cache.device)
    if q.stride(-1) != 1:
        raise ValueError(f"q: expected the last dimension contiguous (stride 1), got strides {q.stride()}")
    check_choice("head_dim", cache.head_dim, decode_triton.SUPPORTED_HEAD_DIMS)
    check_choice("operand", operand, OPERAND_MODES)
    check_choice("backend", backend, BACKENDS)
    check_choice("method", method, METHODS)
    gqa = gqa_ratio(q.shape[1], cache.num_kv_heads)
    if num_splits is not None and (not isinstance(num_splits, int) or num_splits < 1):
        raise ValueError(f"num_splits: expected a positive int or None, got {num_splits!r}")
    if q.device.type != "cuda" and backend != "cuda":
        if not decode_triton.interpreter_enabled():
            raise ValueError(
                f"q: the Triton kernel needs a CUDA device, got {q.device}; "
                "set TRITON_INTERPRET=1 before importing foscar to run it in the CPU interpreter"
            )
        decode_triton.check_interpreter_support()
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(cache.head_dim)
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
    elif getattr(cache, "k_block", None) is not None:
        why_not_cuda = "channel-wise K (k_layout='channel') runs on the Triton kernel only"
    elif paged and cache.page_size & (cache.page_size - 1):
        why_not_cuda = f"the CUDA kernel takes page sizes that are powers of two, got {cache.page_size}"
    else:
        why_not_cuda = decode_cuda.unavailable(q.device, gqa)
    if backend == "cuda" and why_not_cuda:
        raise ValueError(f"backend='cuda': {why_not_cuda}; use backend='triton' or 'auto'")
    if method == "per-value" and why_not_cuda:
        raise ValueError(f"method='per-value' exists in the CUDA kernel only, which cannot run here: {why_not_cuda}")
    if operand == "fp8" and why_not_cuda:
        raise ValueError(f"operand='fp8' exists in the CUDA kernel only, which cannot run here: {why_not_cuda}")
    if why_not_cuda is None:
        mode = "per-value" if method == "per-value" else operand
        o_part, lse_part = decode_cuda.folded_decode_partial(q, cache, scale, num_splits, mode=mode)
    else:
        o_part, lse_part = decode_triton.folded_decode_partial(q, cache, scale, num_splits)
    out = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
    lse = torch.empty(q.shape[:2], dtype=torch.float32, device=q.device)
    merge_triton.merge_splits(o_part, lse_part, out, lse)
    return (out, lse) if return_lse else out
