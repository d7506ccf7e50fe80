"""The quantized KV format: token-wise INT2/INT4 groups, plane-split packing.

Contract (DESIGN §2):

* Every token's head vector of ``head_dim`` channels is split into groups of
  ``group_size`` consecutive channels (32, 64 or 128). Each group stores an FP32
  ``scale`` and an FP32 ``offset`` (asymmetric min-max)::

      scale  = (max - min) / (2**bits - 1)
      offset = min
      code   = clamp(round((x - offset) / scale), 0, 2**bits - 1)
      x_hat  = scale * code + offset

  The division is IEEE fp32 division (round to nearest), and ``round`` is round
  half to even (``torch.round``); the same two choices are used by the reference
  and by the tests. A group whose values are all equal has ``scale == 0``; its
  codes are 0 and it dequantizes to ``offset`` exactly (no NaN, no Inf).

* Plane-split packing. With ``P = 8 // bits`` planes, byte ``j`` of a token's
  packed row (``head_dim // P`` bytes) holds channel ``j + p * head_dim / P`` in
  bits ``[bits * p, bits * (p + 1))`` for ``p = 0 .. P-1``. INT2: byte ``j`` holds
  channels ``j, j + D/4, j + D/2, j + 3D/4`` at bits 0-1, 2-3, 4-5, 6-7. INT4:
  channels ``j`` (bits 0-3) and ``j + D/2`` (bits 4-7). A shift by ``bits * p``
  and a mask give the *contiguous* channel block ``p``, so unpacking never moves
  data between lanes: the kernel reads plane ``p`` of a 32-bit word with one
  shift-and-mask, four channels at a time.

* Cache layout (HND, one contiguous stream per (sequence, KV head), which is what
  a decode program reads)::

      k_codes, v_codes    [batch, num_kv_heads, max_seq_len, head_dim * bits // 8]  uint8
      k_scale, k_offset   [batch, num_kv_heads, max_seq_len, head_dim // group_size] float32
      v_scale, v_offset   [batch, num_kv_heads, max_seq_len, head_dim // group_size] float32
      seq_lens            [batch]                                                     int32

  Tokens at positions ``>= seq_lens[b]`` are padding and never read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from foscar._validate import check_choice, check_tensor

SUPPORTED_BITS = (2, 4)
SUPPORTED_GROUP_SIZES = (32, 64, 128)
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_format(bits: int, group_size: int, head_dim: int) -> None:
    """Validate a (bits, group_size, head_dim) combination.

    Raises:
        ValueError: ``bits`` not in {2, 4}; ``group_size`` not in {32, 64, 128};
            ``head_dim`` not a positive multiple of ``group_size``.
    """
    check_choice("bits", bits, SUPPORTED_BITS)
    check_choice("group_size", group_size, SUPPORTED_GROUP_SIZES)
    if head_dim <= 0 or head_dim % group_size != 0:
        raise ValueError(
            f"head_dim: expected a positive multiple of group_size={group_size}, got {head_dim}"
        )


def num_planes(bits: int) -> int:
    """Codes per byte: 4 for INT2, 2 for INT4."""
    check_choice("bits", bits, SUPPORTED_BITS)
    return 8 // bits


def packed_dim(head_dim: int, bits: int) -> int:
    """Bytes per packed token row: ``head_dim * bits // 8``."""
    return head_dim * bits // 8


# ---------------------------------------------------------------------------
# packing


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack integer codes into plane-split bytes.

    Args:
        codes: ``[..., head_dim]`` uint8 with values in ``[0, 2**bits)``;
            ``head_dim`` divisible by ``8 // bits``.
        bits: 2 or 4.

    Returns:
        ``[..., head_dim * bits // 8]`` uint8 (layout in the module docstring).

    Raises:
        ValueError: wrong dtype, a code out of range, or ``head_dim`` not divisible.
    """
    check_tensor("codes", codes, dtypes=(torch.uint8,))
    planes = num_planes(bits)
    d = codes.shape[-1]
    if d % planes != 0:
        raise ValueError(f"codes: last dimension must be divisible by {planes} for INT{bits}, got {d}")
    if codes.numel() and int(codes.max()) >= (1 << bits):
        raise ValueError(f"codes: expected values in [0, {(1 << bits) - 1}], got max {int(codes.max())}")
    blocks = codes.reshape(*codes.shape[:-1], planes, d // planes)
    packed = torch.zeros(blocks.shape[:-2] + blocks.shape[-1:], dtype=torch.uint8, device=codes.device)
    for p in range(planes):
        packed |= blocks[..., p, :] << (bits * p)
    return packed


def unpack_codes(packed: torch.Tensor, bits: int) -> torch.Tensor:
    """Inverse of :func:`pack_codes`.

    Args:
        packed: ``[..., head_dim * bits // 8]`` uint8, or the same bytes viewed as
            int8 (sign bits are not extended: the bytes are read as unsigned).
        bits: 2 or 4.

    Returns:
        ``[..., head_dim]`` uint8 codes in ``[0, 2**bits)``.
    """
    check_tensor("packed", packed, dtypes=(torch.uint8, torch.int8))
    planes = num_planes(bits)
    raw = packed.view(torch.uint8)
    mask = (1 << bits) - 1
    blocks = [(raw >> (bits * p)) & mask for p in range(planes)]
    return torch.cat(blocks, dim=-1)


# ---------------------------------------------------------------------------
# quantize / dequantize groups


def quantize_groups(
    x: torch.Tensor, bits: int, group_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric min-max quantization of groups of ``group_size`` consecutive channels.

    Args:
        x: ``[..., head_dim]`` float16/bfloat16/float32/float64, finite.
        bits: 2 or 4.
        group_size: 32, 64 or 128; divides ``head_dim``.

    Returns:
        ``(codes, scale, offset)``: codes ``[..., head_dim]`` uint8 (unpacked);
        scale and offset ``[..., head_dim // group_size]`` float32. Formulas in
        the module docstring; arithmetic in fp32 (``x`` is first rounded to fp32).

    Raises:
        ValueError: unsupported ``bits``/``group_size``/``head_dim`` or dtype.
    """
    check_tensor("x", x, dtypes=FLOAT_DTYPES)
    if x.dim() < 1:
        raise ValueError("x: expected at least one dimension [..., head_dim], got a scalar")
    head_dim = x.shape[-1]
    check_format(bits, group_size, head_dim)
    qmax = (1 << bits) - 1
    xg = x.to(torch.float32).reshape(*x.shape[:-1], head_dim // group_size, group_size)
    lo = xg.amin(dim=-1)
    hi = xg.amax(dim=-1)
    scale = (hi - lo) / qmax
    flat = scale == 0
    # Zero-range group: code 0 everywhere. Divide by 1 there so nothing is 0/0.
    denom = torch.where(flat, torch.ones_like(scale), scale)
    q = torch.round((xg - lo.unsqueeze(-1)) / denom.unsqueeze(-1))
    q = torch.where(flat.unsqueeze(-1), torch.zeros_like(q), q)
    codes = q.clamp_(0, qmax).to(torch.uint8).reshape(x.shape)
    return codes, scale, lo


def dequantize_groups(
    codes: torch.Tensor,
    scale: torch.Tensor,
    offset: torch.Tensor,
    group_size: int,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``x_hat = scale * code + offset`` per group, computed in ``dtype``.

    Args:
        codes: ``[..., head_dim]`` uint8 (unpacked).
        scale, offset: ``[..., head_dim // group_size]`` float32.
        group_size: channels per group.
        dtype: float32 or float64.

    Returns:
        ``[..., head_dim]`` tensor of ``dtype``.
    """
    head_dim = codes.shape[-1]
    shape = (*codes.shape[:-1], head_dim // group_size, group_size)
    q = codes.to(dtype).reshape(shape)
    x = q * scale.to(dtype).unsqueeze(-1) + offset.to(dtype).unsqueeze(-1)
    return x.reshape(codes.shape)


# ---------------------------------------------------------------------------
# the cache


CACHE_TENSORS = ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset")


class _CacheTensors:
    """What the contiguous and the paged caches share: the six tensors of
    :data:`CACHE_TENSORS`, whose first three dimensions agree (``[batch or num_pages,
    num_kv_heads, tokens]``), and ``bits``, ``group_size``, ``head_dim``."""

    @property
    def num_kv_heads(self) -> int:
        return self.k_codes.shape[1]

    @property
    def num_groups(self) -> int:
        return self.head_dim // self.group_size

    @property
    def device(self) -> torch.device:
        return self.k_codes.device

    def bytes_per_token(self) -> int:
        """Bytes the decode kernel reads per (token, KV head): K and V codes plus
        FP32 scale and offset per group (INT2, G=128, D=128: 32 + 32 + 16 = 80)."""
        return 2 * packed_dim(self.head_dim, self.bits) + 2 * 2 * 4 * self.num_groups

    def _validate_tensors(self) -> tuple:
        """Check format, shapes, dtypes, device and contiguity of the six tensors; return
        their shared first three dimensions.

        Raises:
            ValueError: the first inconsistency, as "expected X, got Y".
        """
        check_format(self.bits, self.group_size, self.head_dim)
        dev = self.k_codes.device
        lead = tuple(self.k_codes.shape[:3]) if self.k_codes.dim() == 4 else (None, None, None)
        pd = packed_dim(self.head_dim, self.bits)
        for name in ("k_codes", "v_codes"):
            check_tensor(name, getattr(self, name), shape=(*lead, pd), dtypes=(torch.uint8,), device=dev)
        for name in ("k_scale", "k_offset", "v_scale", "v_offset"):
            check_tensor(name, getattr(self, name), shape=(*lead, self.num_groups), dtypes=(torch.float32,), device=dev)
        for name in CACHE_TENSORS:
            if not getattr(self, name).is_contiguous():
                raise ValueError(f"{name}: expected a contiguous tensor, got strides {getattr(self, name).stride()}")
        return lead


@dataclass
class QuantizedKVCache(_CacheTensors):
    """A contiguous (HND) quantized KV cache. Shapes and dtypes in the module docstring.

    Use :func:`quantize_kv` to build one; :meth:`validate` checks a hand-built one.
    """

    k_codes: torch.Tensor
    v_codes: torch.Tensor
    k_scale: torch.Tensor
    k_offset: torch.Tensor
    v_scale: torch.Tensor
    v_offset: torch.Tensor
    seq_lens: torch.Tensor
    bits: int
    group_size: int
    head_dim: int

    @property
    def batch_size(self) -> int:
        return self.k_codes.shape[0]

    @property
    def max_seq_len(self) -> int:
        return self.k_codes.shape[2]

    def bytes_read(self) -> int:
        """Bytes one decode call must read from the cache: ``sum(seq_lens) *
        num_kv_heads * bytes_per_token()``. Synchronizes on ``seq_lens``."""
        total_tokens = int(self.seq_lens.to(torch.int64).sum())
        return total_tokens * self.num_kv_heads * self.bytes_per_token()

    def validate(self) -> "QuantizedKVCache":
        """Check shapes, dtypes and devices of every field.

        Raises:
            ValueError: the first inconsistency, as "expected X, got Y".
        """
        b = self._validate_tensors()[0]
        check_tensor("seq_lens", self.seq_lens, shape=(b,), dtypes=(torch.int32,), device=self.device)
        return self


def quantize_kv(
    k: torch.Tensor,
    v: torch.Tensor,
    bits: int = 2,
    group_size: int = 128,
    seq_lens: torch.Tensor | None = None,
    check_finite: bool = True,
) -> QuantizedKVCache:
    """Quantize and pack a K/V cache.

    Args:
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` float16/bfloat16/float32.
        bits: 2 or 4.
        group_size: 32, 64 or 128, dividing ``head_dim``.
        seq_lens: ``[batch]`` int32 valid lengths (default: all ``max_seq_len``);
            each in ``[0, max_seq_len]``.
        check_finite: raise on NaN/Inf in ``k``/``v`` (one device sync).

    Returns:
        A :class:`QuantizedKVCache` on the device of ``k``.

    Raises:
        ValueError: bad shapes/dtypes, unsupported bits/group size, lengths out of
            range, or non-finite values.
    """
    check_tensor("k", k, ndim=4, dtypes=FLOAT_DTYPES)
    check_tensor("v", v, shape=tuple(k.shape), dtypes=FLOAT_DTYPES, device=k.device)
    batch, _, max_seq_len, head_dim = k.shape
    check_format(bits, group_size, head_dim)
    if seq_lens is None:
        seq_lens = torch.full((batch,), max_seq_len, dtype=torch.int32, device=k.device)
    check_tensor("seq_lens", seq_lens, shape=(batch,), dtypes=(torch.int32,), device=k.device)
    if batch and (int(seq_lens.min()) < 0 or int(seq_lens.max()) > max_seq_len):
        raise ValueError(
            f"seq_lens: expected values in [0, max_seq_len={max_seq_len}], "
            f"got min {int(seq_lens.min())}, max {int(seq_lens.max())}"
        )
    if check_finite:
        for name, x in (("k", k), ("v", v)):
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"{name}: expected finite values, got NaN or Inf")
    kc, ks, ko = quantize_groups(k, bits, group_size)
    vc, vs, vo = quantize_groups(v, bits, group_size)
    return QuantizedKVCache(
        k_codes=pack_codes(kc, bits).contiguous(),
        v_codes=pack_codes(vc, bits).contiguous(),
        k_scale=ks.contiguous(),
        k_offset=ko.contiguous(),
        v_scale=vs.contiguous(),
        v_offset=vo.contiguous(),
        seq_lens=seq_lens.contiguous(),
        bits=bits,
        group_size=group_size,
        head_dim=head_dim,
    )


def dequantize_kv(
    cache: QuantizedKVCache,
    dtype: torch.dtype = torch.float32,
    batch_index: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reconstruct ``x_hat`` for K and V.

    Args:
        cache: the quantized cache.
        dtype: float32 or float64.
        batch_index: if given, only that sequence (first ``seq_lens[b]`` tokens).

    Returns:
        ``(k, v)``, each ``[batch, num_kv_heads, max_seq_len, head_dim]`` (padding
        positions included), or ``[num_kv_heads, seq_lens[b], head_dim]`` with
        ``batch_index``.
    """
    sl = slice(None)
    sel = (sl,)
    if batch_index is not None:
        length = int(cache.seq_lens[batch_index])
        sel = (batch_index, sl, slice(0, length))
    out = []
    for codes, scale, offset in (
        (cache.k_codes, cache.k_scale, cache.k_offset),
        (cache.v_codes, cache.v_scale, cache.v_offset),
    ):
        q = unpack_codes(codes[sel], cache.bits)
        out.append(dequantize_groups(q, scale[sel], offset[sel], cache.group_size, dtype))
    return out[0], out[1]
