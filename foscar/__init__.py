"""FOSCAR: affine-folded decode attention over INT2/INT4 KV caches.

Public API:

* :func:`quantize_kv`, :func:`dequantize_kv`, :class:`QuantizedKVCache` — the format
  (token-wise K, or channel-wise K with ``k_layout="channel"``);
  :class:`PagedQuantizedKVCache`, :func:`paginate` — the same in pages.
* :func:`decode` — folded decode attention (CUDA kernel on Hopper, Triton elsewhere);
  :func:`plan_decode` + :meth:`DecodePlan.run` — the same, checked and planned once,
  then launch-only calls (FlashInfer's plan/run split).
* :func:`append_kv` — quantize new tokens into the cache on the GPU (bit-exact with
  :func:`quantize_kv`).
* :func:`reference_decode`, :func:`attention_reference` — fp64/fp32 references.

Accuracy tooling (submodules, imported on demand): :mod:`foscar.accuracy` (error
metrics, attention KL), :mod:`foscar.data` (synthetic K/V), :mod:`foscar.rotation`
(randomized Hadamard), :mod:`foscar.mixed` (BF16 sinks + recent tokens, quantized
middle, LSE merge).

transformers integration (the ``hf`` extra): :mod:`foscar.hf` (``FoscarCache`` and the
``"foscar"`` attention implementation).
"""

from foscar.append import append_kv
from foscar.decode import OPERAND_MODES, DecodePlan, decode, plan_decode
from foscar.paged import PagedQuantizedKVCache, paginate
from foscar.quant import (
    SUPPORTED_BITS,
    SUPPORTED_GROUP_SIZES,
    SUPPORTED_K_BLOCKS,
    QuantizedKVCache,
    dequantize_kv,
    pack_codes,
    quantize_kv,
    unpack_codes,
)
from foscar.reference import attention_reference, folded_decode_torch, reference_decode

__version__ = "0.1.0"

__all__ = [
    "DecodePlan",
    "OPERAND_MODES",
    "PagedQuantizedKVCache",
    "SUPPORTED_BITS",
    "SUPPORTED_GROUP_SIZES",
    "SUPPORTED_K_BLOCKS",
    "append_kv",
    "QuantizedKVCache",
    "attention_reference",
    "decode",
    "dequantize_kv",
    "folded_decode_torch",
    "pack_codes",
    "paginate",
    "plan_decode",
    "quantize_kv",
    "reference_decode",
    "unpack_codes",
]
