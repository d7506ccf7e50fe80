"""transformers integration: an INT2/INT4 KV cache and the attention function that decodes over it.

Needs the ``hf`` extra (``pip install -e '.[hf]'``: transformers, safetensors). Use::

    import torch, foscar.hf
    from transformers import AutoModelForCausalLM

    foscar.hf.register()  # adds attn_implementation="foscar" to transformers
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16, attn_implementation="foscar")
    cache = foscar.hf.FoscarCache(model.config, bits=4, group_size=32)  # num_sink=, num_recent=, rotation=
    out = model.generate(input_ids, past_key_values=cache, max_new_tokens=64, do_sample=False)

What happens to the keys and values (per attention layer, :class:`FoscarLayer`):

* Every token's post-RoPE K and V go into the cache as they arrive. The first
  ``num_sink`` tokens and the last ``num_recent`` tokens are kept in BF16; a token
  leaving the recent window is quantized (INT2/INT4, token-wise groups of ``group_size``
  channels; :func:`foscar.append_kv` for a decode step's token, :func:`foscar.quantize_kv`
  for a prefill's, bit for bit the same) into the "middle", as :mod:`foscar.mixed` lays a
  cache out. With ``rotation="hadamard"``, K and V are rotated per head
  (:mod:`foscar.rotation`) before they are quantized; the BF16 windows stay unrotated.
* A step of more than one query token (the prefill, or a later chunk) runs transformers'
  SDPA. For the prefill it attends over the exact BF16 K/V of the prompt, which are
  then quantized into the cache and dropped (only the BF16 windows keep copies): the
  prompt's own logits are those of the BF16 model, and only the tokens that come after
  it see quantized K/V. A later chunk attends over the dequantized cache plus its own
  BF16 K/V.
* A one-token decode step runs FOSCAR's kernel (a :func:`foscar.plan_decode` plan,
  replanned only when the cache's capacity grows) over the quantized middle with its
  LSE, an exact fp32 pass over the BF16 windows, and merges the two
  (:func:`foscar.mixed.merge_states`); with rotation the query is rotated and the
  middle's output rotated back. The new token is in the cache before it attends.

Limits (checked, ``ValueError``): ``head_dim`` must be 64, 128 or 256 and a multiple of
``group_size``; every layer full attention (no sliding-window layers); the model loaded
with ``attn_implementation="foscar"``; no beam search or cache cropping. Decode steps
take no attention mask, so every row of a batch must be the same length (a padded batch
raises at its first decode step).
The CUDA kernel takes at most 8 query heads per KV head; with ``backend="auto"`` a model
with more decodes through the Triton kernel and :class:`FoscarCache` warns once, with
``backend="cuda"`` it raises. The kernel that ran is :attr:`FoscarCache.kernel`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch
from transformers import AttentionInterface, PreTrainedConfig
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from foscar._validate import check_choice, is_int
from foscar.append import append_kv
from foscar.decode import BACKENDS, plan_decode
from foscar.kernels.decode_triton import SUPPORTED_HEAD_DIMS
from foscar.kernels.quantize_triton import append_kv_
from foscar.mixed import merge_states
from foscar.quant import (
    CACHE_TENSORS,
    SUPPORTED_BITS,
    SUPPORTED_GROUP_SIZES,
    QuantizedKVCache,
    check_format,
    dequantize_kv,
    packed_dim,
    quantize_kv,
)
from foscar.reference import attend_all

ATTN_IMPLEMENTATION = "foscar"
ROTATIONS = ("none", "hadamard")
CAPACITY_STEP = 256  # the quantized middle grows in multiples of this many tokens
_TAG = "_foscar_layer"  # attribute on a decode step's key tensor that points at its FoscarLayer


def register() -> str:
    """Register ``attn_implementation="foscar"`` with transformers (idempotent).

    Adds :func:`foscar_attention_forward` to transformers' ``AttentionInterface`` and
    SDPA's mask builder to its ``AttentionMaskInterface`` under the same name.

    Returns:
        ``"foscar"``, the name to pass as ``attn_implementation``.
    """
    AttentionInterface.register(ATTN_IMPLEMENTATION, foscar_attention_forward)
    AttentionMaskInterface.register(ATTN_IMPLEMENTATION, sdpa_mask)
    return ATTN_IMPLEMENTATION


def foscar_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers attention function: FOSCAR for decode steps over a :class:`FoscarCache`, SDPA otherwise.

    Args:
        module: the attention module (reads ``num_key_value_groups`` on the SDPA path).
        query: ``[batch, num_qo_heads, q_len, head_dim]`` (post-RoPE).
        key, value: ``[batch, num_kv_heads, kv_len, head_dim]``: what the cache's
            ``update`` returned. A one-token decode step over a :class:`FoscarCache`
            returns the new token's K/V tagged with its layer, and the layer's cache is
            attended instead.
        attention_mask: SDPA's mask; on the FOSCAR path it must be ``None`` (what transformers
            builds for a decode step without padding).
        scaling: softmax scale (default ``1 / sqrt(head_dim)``).

    Returns:
        ``([batch, q_len, num_qo_heads, head_dim]`` in ``query``'s dtype, ``None``).

    Raises:
        ValueError: a padding mask on a FOSCAR decode step; what :func:`foscar.decode` raises.
    """
    layer = getattr(key, _TAG, None)
    if layer is not None and query.shape[2] == 1:
        if attention_mask is not None:  # transformers builds none for a decode step unless a row is padded
            raise ValueError("attention_mask: FoscarCache decodes without a mask, so every batch row must have the "
                             "same length (no padding); got a padding mask")  # fmt: skip
        out = layer.attend(query[:, :, 0], scaling)  # [batch, num_qo_heads, head_dim]
        return out.to(query.dtype).unsqueeze(1), None
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


class FoscarLayer(CacheLayerMixin):
    """One attention layer's cache: BF16 sinks + recent window, the rest INT2/INT4.

    Layout and what each step does: the module docstring. Token counts are tracked on
    the host (every batch row has the same length), so appending and planning never
    synchronize with the device.

    Attributes:
        middle: the quantized tokens (a :class:`foscar.QuantizedKVCache` with capacity
            ``middle.max_seq_len``), ``None`` before the first update.
        middle_len: tokens in ``middle``.
        sink_k, sink_v, recent_k, recent_v: ``[batch, num_kv_heads, n, head_dim]`` BF16
            windows (``n`` <= ``num_sink`` / ``num_recent``).
        kernel: ``"cuda"`` or ``"triton"`` once a decode step has run, else ``None``.
    """

    is_compileable = False
    is_croppable = False
    is_sliding = False

    def __init__(self, *, bits: int, group_size: int, num_sink: int, num_recent: int,
                 signs: torch.Tensor | None, backend: str, capacity: int = 0):  # fmt: skip
        super().__init__()
        self.bits, self.group_size = bits, group_size
        self.num_sink, self.num_recent = num_sink, num_recent
        self.signs, self.backend = signs, backend
        self.capacity_hint = capacity
        self.seq_len = 0
        self.middle: QuantizedKVCache | None = None
        self.middle_len = 0
        self.sink_k = self.sink_v = self.recent_k = self.recent_v = None
        self._plan = None
        self._appended = False
        self.kernel: str | None = None

    # --- CacheLayerMixin -----------------------------------------------------------

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        batch, hkv, _, head_dim = key_states.shape
        self.device, self.dtype = key_states.device, key_states.dtype
        empty = key_states.new_zeros(batch, hkv, 0, head_dim, dtype=torch.bfloat16)
        self.sink_k = self.sink_v = self.recent_k = self.recent_v = empty
        self.middle = _empty_cache(batch, hkv, head_dim, self.bits, self.group_size,
                                   _round_up(max(self.capacity_hint - self.num_sink - self.num_recent, 1)), self.device)  # fmt: skip
        if self.signs is not None:
            self.signs = self.signs.to(self.device)
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Store ``key_states``/``value_states`` (``[batch, num_kv_heads, n, head_dim]``) and
        return what the attention function needs: the new token's K/V tagged with this layer
        for a one-token step after the first, else dense K/V for SDPA (module docstring)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n = key_states.shape[2]
        if n == 1 and self.seq_len > 0:
            self._store(key_states, value_states)
            setattr(key_states, _TAG, self)
            return key_states, value_states
        if self.seq_len == 0:
            keys, values = key_states, value_states
        else:
            k_old, v_old = self.dense(key_states.dtype)
            keys, values = torch.cat([k_old, key_states], dim=2), torch.cat([v_old, value_states], dim=2)
        self._store(key_states, value_states)
        return keys, values

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.seq_len + query_length, 0

    def get_seq_length(self) -> int:
        return self.seq_len

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        self.seq_len = self.middle_len = 0
        if self.is_initialized:
            empty = self.sink_k[:, :, :0]
            self.sink_k = self.sink_v = self.recent_k = self.recent_v = empty
            self.middle.seq_lens.zero_()

    def crop(self, tokens_to_remove: int) -> None:
        raise ValueError("FoscarCache: cropping is not supported (quantized tokens cannot be restored)")

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        raise ValueError("FoscarCache: beam search (reorder_cache) is not supported; use greedy or sampling")

    def batch_repeat_interleave(self, repeats: int) -> None:
        raise ValueError("FoscarCache: batch_repeat_interleave is not supported (num_return_sequences / beams > 1)")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        raise ValueError("FoscarCache: batch_select_indices is not supported")

    def offload(self):
        raise ValueError("FoscarCache: offloading is not supported")

    def prefetch(self):
        pass

    # --- storing -------------------------------------------------------------------

    def _store(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """Append ``n`` tokens: sinks first, then the recent window; what leaves the window is quantized."""
        n = k.shape[2]
        to_sink = max(0, min(n, self.num_sink - self.seq_len))
        bf = torch.bfloat16
        if to_sink:
            self.sink_k = torch.cat([self.sink_k, k[:, :, :to_sink].to(bf)], dim=2)
            self.sink_v = torch.cat([self.sink_v, v[:, :, :to_sink].to(bf)], dim=2)
        k, v = k[:, :, to_sink:], v[:, :, to_sink:]
        self.seq_len += n
        if not k.shape[2]:
            return
        if self.num_recent:
            rk, rv = torch.cat([self.recent_k, k.to(bf)], dim=2), torch.cat([self.recent_v, v.to(bf)], dim=2)
            spill = rk.shape[2] - self.num_recent
            if spill > 0:
                k, v = rk[:, :, :spill], rv[:, :, :spill]
                rk, rv = rk[:, :, spill:], rv[:, :, spill:]
            self.recent_k, self.recent_v = rk, rv
            if spill <= 0:
                return
        self._quantize(k, v)

    def _quantize(self, k: torch.Tensor, v: torch.Tensor) -> None:
        n = k.shape[2]
        if self.middle_len + n > self.middle.max_seq_len:
            self._grow(self.middle_len + n)
        if self.signs is not None:
            from foscar.rotation import rotate

            k, v = rotate(k, self.signs, torch.float32), rotate(v, self.signs, torch.float32)
        if n == 1:  # a decode step: the append kernel (no host sync, CUDA-graph friendly)
            if self._appended and k.device.type == "cuda":  # checked once; the shapes are the layer's own
                append_kv_(self.middle, k.contiguous(), v.contiguous())  # skips ~0.1 ms of Python checks per layer
            else:
                append_kv(self.middle, k.contiguous(), v.contiguous(), check_capacity=False)
                self._appended = True
        else:  # a prefill chunk: quantize_kv in torch (bit for bit what append_kv writes; fast on CPU too)
            chunk = quantize_kv(k, v, bits=self.bits, group_size=self.group_size)
            for name in CACHE_TENSORS:
                getattr(self.middle, name)[:, :, self.middle_len : self.middle_len + n] = getattr(chunk, name)
            self.middle.seq_lens += n
        self.middle_len += n

    def _grow(self, needed: int) -> None:
        old = self.middle
        new = _empty_cache(old.batch_size, old.num_kv_heads, old.head_dim, self.bits, self.group_size,
                           _round_up(max(needed, 2 * old.max_seq_len)), self.device)  # fmt: skip
        for name in CACHE_TENSORS:
            getattr(new, name)[:, :, : self.middle_len] = getattr(old, name)[:, :, : self.middle_len]
        new.seq_lens.copy_(old.seq_lens)
        self.middle, self._plan = new, None

    # --- reading -------------------------------------------------------------------

    def attend(self, q: torch.Tensor, scaling: float | None) -> torch.Tensor:
        """Decode attention of ``q`` ``[batch, num_qo_heads, head_dim]`` over every stored token.

        Returns:
            ``[batch, num_qo_heads, head_dim]`` (bfloat16 without BF16 windows and rotation, else float32).
        """
        head_dim = q.shape[-1]
        scale = scaling if scaling is not None else 1.0 / math.sqrt(head_dim)
        out_m = lse_m = None
        if self.middle_len:
            if self._plan is None:
                self._plan = plan_decode(self.middle, q.shape[1], sm_scale=scale, backend=self.backend)
                self.kernel = self._plan.kernel
            if self.signs is not None:
                from foscar.rotation import rotate, unrotate

                qm = rotate(q, self.signs, torch.float32).to(torch.bfloat16)
                out_m, lse_m = self._plan.run(qm, self.middle, return_lse=True)
                out_m = unrotate(out_m, self.signs, torch.float32)
            else:
                out_m, lse_m = self._plan.run(q.to(torch.bfloat16).contiguous(), self.middle, return_lse=True)
        n_exact = self.sink_k.shape[2] + self.recent_k.shape[2]
        if not n_exact:
            return out_m
        ek, ev = torch.cat([self.sink_k, self.recent_k], dim=2), torch.cat([self.sink_v, self.recent_v], dim=2)
        out_e, lse_e = attend_all(q, ek, ev, scale)  # every row holds the same tokens: no lengths to sync on
        if out_m is None:
            return out_e
        return merge_states(out_m, lse_m, out_e, lse_e, torch.float32)[0]

    def dense(self, dtype: torch.dtype = torch.bfloat16) -> tuple[torch.Tensor, torch.Tensor]:
        """The K/V the layer represents, in token order (middle dequantized and rotated back).

        Returns:
            ``(k, v)``, each ``[batch, num_kv_heads, seq_len, head_dim]`` of ``dtype``.
        """
        parts_k, parts_v = [self.sink_k.to(dtype)], [self.sink_v.to(dtype)]
        if self.middle_len:
            mk, mv = dequantize_kv(self.middle, dtype=torch.float32)
            mk, mv = mk[:, :, : self.middle_len], mv[:, :, : self.middle_len]
            if self.signs is not None:
                from foscar.rotation import unrotate

                mk, mv = unrotate(mk, self.signs, torch.float32), unrotate(mv, self.signs, torch.float32)
            parts_k.append(mk.to(dtype))
            parts_v.append(mv.to(dtype))
        parts_k.append(self.recent_k.to(dtype))
        parts_v.append(self.recent_v.to(dtype))
        return torch.cat(parts_k, dim=2), torch.cat(parts_v, dim=2)

    def nbytes(self) -> int:
        """Bytes of the stored tokens: quantized ones at the format's size (codes plus FP32
        scale and offset per group), BF16 ones at 2 bytes per value (capacity not counted)."""
        if not self.is_initialized:
            return 0
        batch, hkv, _, head_dim = self.sink_k.shape
        exact = self.sink_k.shape[2] + self.recent_k.shape[2]
        per_token_q = 2 * packed_dim(head_dim, self.bits) + 2 * 2 * 4 * (head_dim // self.group_size)
        return batch * hkv * (self.middle_len * per_token_q + exact * 2 * 2 * head_dim)


def _round_up(n: int) -> int:
    return -(-n // CAPACITY_STEP) * CAPACITY_STEP


def _empty_cache(batch: int, hkv: int, head_dim: int, bits: int, group_size: int, capacity: int,
                 device: torch.device) -> QuantizedKVCache:  # fmt: skip
    z = lambda last, dtype: torch.zeros(batch, hkv, capacity, last, dtype=dtype, device=device)  # noqa: E731
    ng = head_dim // group_size
    pd = packed_dim(head_dim, bits)
    return QuantizedKVCache(
        k_codes=z(pd, torch.uint8), v_codes=z(pd, torch.uint8),
        k_scale=z(ng, torch.float32), k_offset=z(ng, torch.float32),
        v_scale=z(ng, torch.float32), v_offset=z(ng, torch.float32),
        seq_lens=torch.zeros(batch, dtype=torch.int32, device=device),
        bits=bits, group_size=group_size, head_dim=head_dim,
    )  # fmt: skip


def attention_shape(config: PreTrainedConfig) -> tuple[int, int, int, int]:
    """``(num_layers, num_qo_heads, num_kv_heads, head_dim)`` of a decoder config."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    num_qo_heads = cfg.num_attention_heads
    num_kv_heads = getattr(cfg, "num_key_value_heads", None) or num_qo_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // num_qo_heads
    return cfg.num_hidden_layers, num_qo_heads, num_kv_heads, head_dim


def check_model_config(config: PreTrainedConfig, group_size: int = 32) -> None:
    """Check that FOSCAR's kernels can take this model's attention.

    Raises:
        ValueError: ``head_dim`` not in {64, 128, 256} or not a multiple of ``group_size``;
            sliding-window layers (``layer_types``, or a ``sliding_window`` below ``max_position_embeddings``);
            ``num_attention_heads`` not a multiple of ``num_key_value_heads``.
    """
    _, hq, hkv, head_dim = attention_shape(config)
    if head_dim not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"head_dim: FOSCAR's kernels take head_dim in {list(SUPPORTED_HEAD_DIMS)}, "
                         f"this model has {head_dim}; use transformers' own cache for it")  # fmt: skip
    check_format(4, group_size, head_dim)
    if hq % hkv:
        raise ValueError(f"num_attention_heads: expected a multiple of num_key_value_heads={hkv}, got {hq}")
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    kinds = set(getattr(cfg, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"}:
        raise ValueError(f"layer_types: FoscarCache supports full-attention layers only, this model has {sorted(kinds)}")
    window = getattr(cfg, "sliding_window", None)
    longest = getattr(cfg, "max_position_embeddings", None)
    if (not getattr(cfg, "layer_types", None) and window is not None and getattr(cfg, "use_sliding_window", True)
            and (longest is None or window < longest)):
        # a config without layer_types (Mistral's) whose every layer attends over a window the context can pass
        # (Phi-3's 262144 against 131072 positions never fills)
        raise ValueError(f"sliding_window: FoscarCache supports full-attention layers only, this model's layers "
                         f"attend over a window of {window} tokens")


class FoscarCache(Cache):
    """A transformers :class:`~transformers.Cache` holding the KV cache in INT2/INT4 (FOSCAR's format).

    Args:
        config: the model's config (``model.config``); the model must have been loaded
            with ``attn_implementation="foscar"`` after :func:`register`.
        bits: 2 or 4.
        group_size: channels per quantization group: 32, 64 or 128 (dividing head_dim).
        num_sink: leading tokens kept in BF16 (attention sinks), >= 0.
        num_recent: trailing tokens kept in BF16, >= 0.
        rotation: ``"none"`` or ``"hadamard"`` (randomized Hadamard on K, V and the query
            per head before quantization, :mod:`foscar.rotation`; signs from ``seed``).
        backend: :func:`foscar.decode`'s ``backend``: ``"auto"``, ``"cuda"``, ``"triton"``.
        max_cache_len: tokens to allocate room for up front (avoids regrowing the
            quantized middle, and replanning, during a timed decode); 0 grows on demand.
        seed: the rotation's sign vector seed.

    Raises:
        ValueError: a bad option, a model the kernels cannot take (:func:`check_model_config`),
            a model not loaded with ``attn_implementation="foscar"``, or ``backend="cuda"``
            with more than 8 query heads per KV head.
    """

    def __init__(self, config: PreTrainedConfig, *, bits: int = 4, group_size: int = 32, num_sink: int = 0,
                 num_recent: int = 0, rotation: str = "none", backend: str = "auto", max_cache_len: int = 0,
                 seed: int = 0):  # fmt: skip
        check_choice("bits", bits, SUPPORTED_BITS)
        check_choice("group_size", group_size, SUPPORTED_GROUP_SIZES)
        check_choice("rotation", rotation, ROTATIONS)
        check_choice("backend", backend, BACKENDS)
        for name, x in (("num_sink", num_sink), ("num_recent", num_recent), ("max_cache_len", max_cache_len)):
            if not is_int(x) or x < 0:
                raise ValueError(f"{name}: expected a non-negative int, got {x!r}")
        check_model_config(config, group_size)
        impl = getattr(config, "_attn_implementation", None)
        if impl != ATTN_IMPLEMENTATION:
            raise ValueError(f"config._attn_implementation: FoscarCache needs the model loaded with "
                             f"attn_implementation='foscar' (after foscar.hf.register()), got {impl!r}")  # fmt: skip
        num_layers, hq, hkv, head_dim = attention_shape(config)
        gqa = hq // hkv
        from foscar.kernels.decode_cuda import MAX_GQA

        if gqa > MAX_GQA:
            msg = (f"{hq} query heads per {hkv} KV heads = {gqa} per KV head: the CUDA kernel takes at most {MAX_GQA}")
            if backend == "cuda":
                raise ValueError(f"backend='cuda': {msg}; use backend='auto' or 'triton'")
            if backend == "auto":
                warnings.warn(f"{msg}, so this model decodes with the Triton kernel", stacklevel=2)
        signs = None
        if rotation == "hadamard":
            from foscar.rotation import random_signs

            signs = random_signs(head_dim, seed=seed).to(torch.float32)
        self.bits, self.group_size, self.num_sink, self.num_recent = bits, group_size, num_sink, num_recent
        self.rotation, self.backend = rotation, backend
        layers = [
            FoscarLayer(bits=bits, group_size=group_size, num_sink=num_sink, num_recent=num_recent, signs=signs,
                        backend=backend, capacity=max_cache_len)
            for _ in range(num_layers)
        ]  # fmt: skip
        super().__init__(layers=layers)

    @property
    def kernel(self) -> str | None:
        """``"cuda"`` or ``"triton"``: the kernel the decode steps ran (``None`` before the first)."""
        return next((layer.kernel for layer in self.layers if layer.kernel), None)

    def nbytes(self) -> int:
        """Bytes of the stored tokens over all layers (:meth:`FoscarLayer.nbytes`)."""
        return sum(layer.nbytes() for layer in self.layers)

    def describe(self) -> str:
        """e.g. ``"int4 g32 sink4+recent16 hadamard"``."""
        parts = [f"int{self.bits}", f"g{self.group_size}"]
        if self.num_sink or self.num_recent:
            parts.append(f"sink{self.num_sink}+recent{self.num_recent}")
        if self.rotation != "none":
            parts.append(self.rotation)
        return " ".join(parts)

    @classmethod
    def from_dense(cls, dense: Cache, config: PreTrainedConfig, **kwargs: Any) -> "FoscarCache":
        """A :class:`FoscarCache` holding the K/V of a filled BF16 cache (e.g. a ``DynamicCache``
        after a prefill): the same state a prefill with this cache would leave.

        Args:
            dense: a cache whose layers have ``keys``/``values`` ``[batch, num_kv_heads, seq_len, head_dim]``.
            config, kwargs: as :class:`FoscarCache`.
        """
        cache = cls(config, **kwargs)
        for layer, src in zip(cache.layers, dense.layers):
            n = src.get_seq_length()
            k, v = src.keys[:, :, :n], src.values[:, :, :n]
            layer.lazy_initialization(k, v)
            layer._store(k, v)
        return cache
