"""Append new tokens' K/V to a quantized cache (quantize-on-append, GPU kernel)."""

from __future__ import annotations

import torch

from foscar._validate import check_flag, check_tensor
from foscar.paged import PagedQuantizedKVCache
from foscar.quant import FLOAT_DTYPES, QuantizedKVCache


def append_kv(
    cache: QuantizedKVCache,
    k_new: torch.Tensor,
    v_new: torch.Tensor,
    check_capacity: bool = True,
) -> QuantizedKVCache:
    """Quantize ``n_new`` tokens per sequence into ``cache`` in place, after its current ends.

    Token ``t`` of sequence ``b`` lands at position ``seq_lens[b] + t``; then
    ``seq_lens += n_new``. The codes, scales and offsets are bit for bit those of
    :func:`foscar.quantize_kv` on the same values (``foscar/kernels/quantize_triton.py``).

    Args:
        cache: the cache to extend (modified in place).
        k_new, v_new: ``[batch, num_kv_heads, n_new, head_dim]`` float16/bfloat16/float32/float64
            on the cache's device, finite (not checked: a NaN/Inf gives NaN scales; every
            finite value gives finite scales, :mod:`foscar.quant` "Largest magnitude").
        check_capacity: check the lengths (``cache.validate()``) and raise if a sequence
            would pass ``max_seq_len`` (device syncs). Pass False inside a CUDA graph (True
            raises there) or to avoid the syncs: the caller then guarantees the room, nothing
            reads ``seq_lens`` on the host, and tokens past ``max_seq_len`` (or at a negative
            position, from a negative ``seq_lens[b]``) are not written, but ``seq_lens[b]`` still
            grows by ``n_new``: such a cache then fails ``cache.validate()`` (so :func:`foscar.decode`
            refuses it), and a plan's ``run`` clamps the length to ``max_seq_len``.

    Any ``n_new`` works: past 65535 tokens (CUDA's grid limit) the kernel is launched in pieces,
    with the same result.

    Returns:
        ``cache`` (the same object).

    Raises:
        ValueError: ``check_capacity`` not a bool; ``cache`` not a :class:`QuantizedKVCache` (a paged cache has
            no append: append to the contiguous cache, then paginate it again); ``check_capacity`` while
            the current CUDA stream is capturing a graph (the check reads ``seq_lens`` on the
            host, which would invalidate the capture); what ``cache.validate()`` raises (a
            strided tensor; with ``check_capacity``, a ``seq_lens[b]`` outside
            ``[0, max_seq_len]``); shapes, dtypes or device that do not match the cache; no
            room left;
            a channel-wise K cache (its block scales would change as tokens arrive;
            re-quantize with :func:`foscar.quantize_kv` instead); a ``head_dim`` that is not a
            power of two (the append kernel's rows; decode takes 64, 128 and 256).

    Example (a cache allocated for 128 tokens, 100 of them filled; one decode step appends one)::

        >>> import torch, foscar
        >>> k, v = torch.randn(1, 2, 128, 64), torch.randn(1, 2, 128, 64)
        >>> cache = foscar.quantize_kv(k, v, bits=2, group_size=64, seq_lens=torch.tensor([100], dtype=torch.int32))
        >>> cache = foscar.append_kv(cache, torch.randn(1, 2, 1, 64), torch.randn(1, 2, 1, 64))
        >>> cache.seq_lens.tolist()
        [101]
    """
    check_flag("check_capacity", check_capacity)
    if not isinstance(cache, QuantizedKVCache):
        if isinstance(cache, PagedQuantizedKVCache):
            raise ValueError(f"cache: expected a contiguous QuantizedKVCache, got {type(cache).__name__} "
                             "(append_kv has no paged version); append to the contiguous cache, then paginate it again")
        raise ValueError(f"cache: expected a QuantizedKVCache (foscar.quantize_kv), got {type(cache).__name__}")
    cache.validate(check_values=None if check_capacity else False)  # no host read while a graph is captured
    if check_capacity and _capturing(cache.device):
        raise ValueError("check_capacity: expected False while a CUDA graph is being captured (the capacity check "
                         "reads seq_lens on the host, which would invalidate the capture), got True; pass "
                         "check_capacity=False and guarantee the room yourself")
    if cache.k_block is not None:
        raise ValueError("cache: append_kv supports token-wise K only; a channel-wise K cache "
                         "(k_layout='channel') must be re-quantized with quantize_kv")
    shape = (cache.batch_size, cache.num_kv_heads, None, cache.head_dim)
    check_tensor("k_new", k_new, shape=shape, dtypes=FLOAT_DTYPES, device=cache.device)
    check_tensor("v_new", v_new, shape=tuple(k_new.shape), dtypes=(k_new.dtype,), device=cache.device)
    n_new = k_new.shape[2]
    if cache.head_dim & (cache.head_dim - 1) and k_new.numel():  # an empty append launches nothing
        raise ValueError(f"cache: append_kv takes a head_dim that is a power of two (decode takes 64, 128, 256), "
                         f"got {cache.head_dim}; re-quantize the grown K/V with quantize_kv instead")
    if check_capacity and cache.batch_size and n_new:
        longest = int(cache.seq_lens.max()) + n_new
        if longest > cache.max_seq_len:
            raise ValueError(
                f"k_new: appending {n_new} tokens needs max_seq_len >= {longest}, the cache has {cache.max_seq_len}; "
                "allocate the room up front: quantize_kv on K/V of the capacity you will decode to (max_seq_len "
                "tokens) with seq_lens= the lengths filled so far"
            )
    if cache.device.type != "cuda":
        from foscar.kernels import decode_triton

        if not decode_triton.interpreter_enabled():
            raise ValueError(
                f"k_new: the append kernel needs a CUDA device, got {cache.device}; "
                "set TRITON_INTERPRET=1 before importing foscar to run it in the CPU interpreter"
            )
        decode_triton.check_interpreter_support()
    from foscar.kernels.quantize_triton import append_kv_

    append_kv_(cache, k_new.contiguous(), v_new.contiguous())
    return cache


def _capturing(device: torch.device) -> bool:
    """Whether the current CUDA stream of ``device`` is capturing a graph (a host read would break it)."""
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()
