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

* Largest magnitude. The format takes every finite fp32 value, ``|x| <= 3.40e38``
  (so every fp16 and bf16 value): :func:`quantize_kv`, ``append_kv`` and
  :func:`dequantize_kv` give finite scales, codes and values for finite input. A group
  whose ``max - min`` passes fp32's largest value (only possible with ``|x| >
  1.7e38``) is computed on halved operands, ``scale = 2 * ((max/2 - min/2) / qmax)``
  and ``code = round((x/2 - min/2) / (scale/2))`` (the halvings are exact); every other
  group gets the formulas above bit for bit. NaN and Inf, and float64 input past fp32's
  largest value (e.g. a Hadamard rotation of huge values), are refused by
  ``quantize_kv(check_finite=True)`` (naming the position); unchecked, they give
  non-finite scales (``append_kv`` never checks).
  The decode kernels fold the scales into fp32 and bf16 operands (``128 * scale``; the
  CUDA kernel up to ``2^6`` more for its in-place planes), which overflow for group
  ranges near 1e36: for a finite decode keep ``|K|, |V| <= 1e30`` and the scores
  ``|q . k| * sm_scale`` within fp32 (tests/test_bad_inputs.py checks 1e30 against the
  fp64 reference). Beyond that a decode can give NaN (seen with the Triton kernel at
  3.4e38, where the fp64 reference stays finite).

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

  Tokens at positions ``>= seq_lens[b]`` are padding and never read. Every tensor,
  ``seq_lens`` included, must be contiguous (a strided view is refused with a
  ``ValueError`` naming it, :mod:`foscar._validate`), and ``0 <= seq_lens[b] <=
  max_seq_len`` (:meth:`QuantizedKVCache.validate` checks it on the host).

* Channel-wise K (KIVI style, ``k_layout="channel"``; V stays token-wise). Each
  channel ``c`` of K has its own FP32 scale and offset over a block of ``k_block``
  consecutive tokens (32, 64 or 128; block ``i`` = tokens ``[i * k_block, (i + 1) *
  k_block)``), with the same min-max formulas taken over the block's *valid* tokens
  (``< seq_lens[b]``): a partial last block uses only its valid tokens, and a block
  with none has scale 0 and offset 0. Padding tokens get code 0. The codes keep the
  plane-split packing; only K's scales and offsets change shape::

      k_scale, k_offset   [batch, num_kv_heads, ceil(max_seq_len / k_block), head_dim] float32

  Folded (DESIGN §3): ``S_t = sum_c (q_c * s_c,blk) * code_t,c + sum_c q_c * z_c,blk``
  — the query is scaled per token block and the offset term is one constant per
  (block, query head). Channel-wise K exists to follow outlier channels: a channel
  with a large mean gets its own range instead of stretching every token's group.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from foscar._validate import check_choice, check_flag, check_tensor, host_checks, is_int

SUPPORTED_BITS = (2, 4)
SUPPORTED_GROUP_SIZES = (32, 64, 128)
K_LAYOUTS = ("token", "channel")
# Tokens per channel-wise K block. Each divides or is a multiple of the Triton kernel's
# token tile (64 or 128), so the kernel runs tiles of min(tile, k_block) tokens that never
# straddle two blocks: one query scaling per tile (foscar/kernels/decode_triton.py).
SUPPORTED_K_BLOCKS = (32, 64, 128)
DEFAULT_K_BLOCK = 128
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
FP32_MAX = torch.finfo(torch.float32).max  # the format's largest magnitude (module docstring)


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


def check_k_block(k_block: int) -> None:
    """Validate a channel-wise K block size.

    Raises:
        ValueError: ``k_block`` not one of :data:`SUPPORTED_K_BLOCKS` (32, 64, 128).
    """
    if not is_int(k_block):
        raise ValueError(f"k_block: expected one of {list(SUPPORTED_K_BLOCKS)}, got {k_block!r}")
    check_choice("k_block", k_block, SUPPORTED_K_BLOCKS)


def num_k_blocks(max_seq_len: int, k_block: int) -> int:
    """Channel-wise K blocks covering ``max_seq_len`` tokens: ``ceil(max_seq_len / k_block)``."""
    return -(-max_seq_len // k_block)


def check_lengths(name: str, lens: torch.Tensor, max_seq_len: int, what: str = "", hint: str = "") -> None:
    """Raise unless every ``lens[b]`` (a host tensor) lies in ``[0, max_seq_len]``.

    Raises:
        ValueError: naming ``name``, the first sequence out of range, its length and the
            allowed range (``what`` follows the length, e.g. how it was derived; ``hint``
            ends the message).
    """
    lens = lens.to(torch.int64)  # a bound past 2^31 against int32 lengths
    bad = ((lens < 0) | (lens > max_seq_len)).nonzero()
    if bad.numel():
        b = int(bad[0, 0])
        raise ValueError(f"{name}: sequence {b} has length {int(lens[b])}{what}, expected 0 <= length <= "
                         f"max_seq_len={max_seq_len}{hint}")


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
        ValueError: wrong dtype, a 0-dim tensor, a code out of range, or ``head_dim`` not divisible.
        TypeError: ``codes`` is not a ``torch.Tensor``.
    """
    check_tensor("codes", codes, dtypes=(torch.uint8,))
    if codes.dim() == 0:
        raise ValueError("codes: expected at least one dimension ([..., head_dim]), got a 0-dim tensor")
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

    Raises:
        ValueError: a dtype other than uint8 / int8, a 0-dim tensor, ``bits`` not 2 or 4.
    """
    check_tensor("packed", packed, dtypes=(torch.uint8, torch.int8))
    if packed.dim() == 0:
        raise ValueError("packed: expected at least one dimension ([..., head_dim * bits // 8]), got a 0-dim tensor")
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
        the module docstring; arithmetic in fp32 (``x`` is first rounded to fp32),
        finite for every finite ``x`` (a range past fp32 on halved operands).

    Raises:
        ValueError: unsupported ``bits``/``group_size``/``head_dim`` or dtype.
    """
    check_tensor("x", x, dtypes=FLOAT_DTYPES)
    if x.dim() < 1:
        raise ValueError("x: expected at least one dimension [..., head_dim], got a scalar")
    head_dim = x.shape[-1]
    check_format(bits, group_size, head_dim)
    xg = x.to(torch.float32).reshape(*x.shape[:-1], head_dim // group_size, group_size)
    lo = xg.amin(dim=-1)
    hi = xg.amax(dim=-1)
    codes, scale = _minmax_codes(xg, lo, hi, bits, dim=-1)
    return codes.reshape(x.shape), scale, lo


def _minmax_codes(xg: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bits: int, dim: int):
    """Codes and scales of fp32 ``xg`` whose groups run along ``dim``, given each
    group's ``lo``/``hi`` (``xg``'s shape without ``dim``). The one place the format's
    arithmetic lives (shared by the token-wise and the channel-wise quantizers)."""
    qmax = (1 << bits) - 1
    # a tensor divisor: PyTorch's CUDA kernels divide by a Python scalar as a multiply by
    # its reciprocal, which is not the IEEE division of the contract (and differed from
    # the append kernel's div_rn in the last bit on the H200)
    qmax_t = torch.full_like(hi, qmax)
    scale = (hi - lo) / qmax_t
    # A range past fp32's largest value (finite values only: |x| > 1.7e38) is computed on
    # halved operands (halving is exact there), so the scale stays finite; other groups
    # keep the plain arithmetic bit for bit (module docstring, "Largest magnitude").
    over = torch.isinf(hi - lo) & torch.isfinite(hi) & torch.isfinite(lo)
    scale = torch.where(over, (hi * 0.5 - lo * 0.5) / qmax_t * 2.0, scale)
    flat = scale == 0
    # Zero-range group: code 0 everywhere. Divide by 1 there so nothing is 0/0.
    denom = torch.where(flat, torch.ones_like(scale), scale)
    lo_d, denom_d, over_d = lo.unsqueeze(dim), denom.unsqueeze(dim), over.unsqueeze(dim)
    ratio = (xg - lo_d) / denom_d
    ratio = torch.where(over_d, (xg * 0.5 - lo_d * 0.5) / (denom_d * 0.5), ratio)
    q = torch.round(ratio)
    q = torch.where(flat.unsqueeze(dim), torch.zeros_like(q), q)
    return q.clamp_(0, qmax).to(torch.uint8), scale


def quantize_channels(
    x: torch.Tensor, bits: int, k_block: int, seq_lens: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Channel-wise asymmetric min-max quantization over blocks of ``k_block`` tokens.

    Args:
        x: ``[batch, num_kv_heads, max_seq_len, head_dim]`` float16/bfloat16/float32/
            float64, finite at the valid positions.
        bits: 2 or 4.
        k_block: tokens per block, one of :data:`SUPPORTED_K_BLOCKS`.
        seq_lens: ``[batch]`` integer valid lengths on ``x``'s device (default: all
            ``max_seq_len``). Only tokens ``< seq_lens[b]`` enter a block's min/max.

    Returns:
        ``(codes, scale, offset)``: codes ``[batch, num_kv_heads, max_seq_len,
        head_dim]`` uint8 (unpacked; 0 at padding positions); scale and offset
        ``[batch, num_kv_heads, ceil(max_seq_len / k_block), head_dim]`` float32 (0 and
        0 for a block without valid tokens). Same formulas and rounding as
        :func:`quantize_groups`, per (block, channel).

    Raises:
        ValueError: unsupported ``bits``/``k_block``, wrong shape or dtype.
    """
    check_tensor("x", x, ndim=4, dtypes=FLOAT_DTYPES)
    check_choice("bits", bits, SUPPORTED_BITS)
    check_k_block(k_block)
    batch, hkv, length, head_dim = x.shape
    nb = num_k_blocks(length, k_block)
    xf = x.to(torch.float32)
    if nb * k_block != length:
        xf = torch.nn.functional.pad(xf, (0, 0, 0, nb * k_block - length))
    xb = xf.reshape(batch, hkv, nb, k_block, head_dim)
    pos = torch.arange(nb * k_block, device=x.device).reshape(1, nb, k_block)
    if seq_lens is None:
        valid = (pos < length).expand(batch, nb, k_block)
    else:
        check_tensor("seq_lens", seq_lens, shape=(batch,), device=x.device)
        valid = pos < seq_lens.to(torch.int64).reshape(batch, 1, 1)
    valid = valid.reshape(batch, 1, nb, k_block, 1)
    inf = torch.tensor(float("inf"), device=x.device)
    lo = torch.where(valid, xb, inf).amin(dim=3)  # [batch, hkv, nb, head_dim]
    hi = torch.where(valid, xb, -inf).amax(dim=3)
    empty = ~valid.any(dim=3)  # [batch, 1, nb, 1]
    lo = torch.where(empty, torch.zeros_like(lo), lo)
    hi = torch.where(empty, torch.zeros_like(hi), hi)
    xb = torch.where(valid, xb, lo.unsqueeze(3))  # padding -> code 0 (finite, whatever it held)
    codes, scale = _minmax_codes(xb, lo, hi, bits, dim=3)
    codes = codes.reshape(batch, hkv, nb * k_block, head_dim)[:, :, :length]
    return codes, scale, lo


def dequantize_channels(
    codes: torch.Tensor,
    scale: torch.Tensor,
    offset: torch.Tensor,
    k_block: int,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``x_hat[t, c] = scale[t // k_block, c] * code[t, c] + offset[t // k_block, c]``.

    Args:
        codes: ``[..., length, head_dim]`` uint8 (unpacked).
        scale, offset: ``[..., nb, head_dim]`` float32, ``nb * k_block >= length``.
        k_block: tokens per block.
        dtype: float32 or float64.

    Returns:
        ``[..., length, head_dim]`` tensor of ``dtype``.
    """
    length = codes.shape[-2]
    s = scale.to(dtype).repeat_interleave(k_block, dim=-2)[..., :length, :]
    z = offset.to(dtype).repeat_interleave(k_block, dim=-2)[..., :length, :]
    return _affine(codes.to(dtype), s, z)


def _affine(q: torch.Tensor, s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``q * s + z``, finite wherever the exact value is: where the plain arithmetic
    overflows (fp32, a group whose range passes fp32's largest value), on halved
    operands (``2 * (q * s/2 + z/2)``, exact halvings), elsewhere bit for bit the plain."""
    x = q * s + z
    if x.dtype == torch.float64:  # the scales are fp32: nothing overflows in fp64
        return x
    return torch.where(torch.isinf(x) & torch.isfinite(s) & torch.isfinite(z), (q * (s * 0.5) + z * 0.5) * 2.0, x)


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
    x = _affine(q, scale.to(dtype).unsqueeze(-1), offset.to(dtype).unsqueeze(-1))
    return x.reshape(codes.shape)


# ---------------------------------------------------------------------------
# the cache


CACHE_TENSORS = ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset")


class _CacheTensors:
    """What the contiguous and the paged caches share: the six tensors of
    :data:`CACHE_TENSORS`, whose first three dimensions agree (``[batch or num_pages,
    num_kv_heads, tokens]``) except for channel-wise K's scales and offsets (``[batch,
    num_kv_heads, blocks, head_dim]``), and ``bits``, ``group_size``, ``head_dim``,
    ``k_block`` (``None``: token-wise K; a field of both caches, and a paged cache's
    ``k_block`` divides its ``page_size``)."""

    k_block = None

    @property
    def k_layout(self) -> str:
        """``"token"`` (K in per-token channel groups) or ``"channel"`` (per channel over ``k_block`` tokens)."""
        return "token" if self.k_block is None else "channel"

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
        FP32 scale and offset per group (INT2, G=128, D=128: 32 + 32 + 16 = 80).
        Channel-wise K: its scales and offsets are ``2 * 4 * head_dim`` bytes per
        ``k_block`` tokens, counted here per token over full blocks (D=128,
        k_block=128: 8, the same as token-wise K with G=128)."""
        if self.k_block is None:
            k_meta = 2 * 4 * self.num_groups
        else:
            k_meta = 2 * 4 * self.head_dim // self.k_block
        return 2 * packed_dim(self.head_dim, self.bits) + 2 * 4 * self.num_groups + k_meta

    def _validate_tensors(self) -> tuple:
        """Check format, shapes, dtypes, device and contiguity of the six tensors; return
        their shared first three dimensions.

        Raises:
            ValueError: the first inconsistency, as "expected X, got Y"; a tensor that is
                not contiguous (a strided view: :mod:`foscar._validate`).
            TypeError: a tensor field that is not a ``torch.Tensor`` (``k_codes=None``, say).
        """
        check_format(self.bits, self.group_size, self.head_dim)
        dev = check_tensor("k_codes", self.k_codes).device
        lead = tuple(self.k_codes.shape[:3]) if self.k_codes.dim() == 4 else (None, None, None)
        pd = packed_dim(self.head_dim, self.bits)
        for name in ("k_codes", "v_codes"):
            check_tensor(name, getattr(self, name), shape=(*lead, pd), dtypes=(torch.uint8,), device=dev,
                         contiguous=True)
        if self.k_block is None:
            k_meta_shape = (*lead, self.num_groups)
        else:
            check_k_block(self.k_block)
            blocks = None if lead[2] is None else num_k_blocks(lead[2], self.k_block)
            k_meta_shape = (lead[0], lead[1], blocks, self.head_dim)
        for name in ("k_scale", "k_offset"):
            check_tensor(name, getattr(self, name), shape=k_meta_shape, dtypes=(torch.float32,), device=dev,
                         contiguous=True)
        for name in ("v_scale", "v_offset"):
            check_tensor(name, getattr(self, name), shape=(*lead, self.num_groups), dtypes=(torch.float32,),
                         device=dev, contiguous=True)
        return lead


@dataclass
class QuantizedKVCache(_CacheTensors):
    """A contiguous (HND) quantized KV cache. Shapes and dtypes in the module docstring.

    ``k_block`` is ``None`` for token-wise K (groups of ``group_size`` channels per
    token, like V), or the tokens per block of channel-wise K (``k_layout ==
    "channel"``; ``k_scale``/``k_offset`` then ``[batch, num_kv_heads,
    ceil(max_seq_len / k_block), head_dim]``). ``group_size`` is V's group either way.

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
    k_block: int | None = None

    @property
    def batch_size(self) -> int:
        return self.k_codes.shape[0]

    @property
    def max_seq_len(self) -> int:
        return self.k_codes.shape[2]

    def bytes_read(self) -> int:
        """Bytes one decode call must read from the cache: ``sum(seq_lens) *
        num_kv_heads * bytes_per_token()`` (channel-wise K: its scales and offsets
        counted per block touched, ``ceil(seq_lens[b] / k_block)`` blocks of ``2 * 4 *
        head_dim`` bytes). Synchronizes on ``seq_lens``."""
        lens = self.seq_lens.to(torch.int64)
        total_tokens = int(lens.sum())
        if self.k_block is None:
            return total_tokens * self.num_kv_heads * self.bytes_per_token()
        per_token = 2 * packed_dim(self.head_dim, self.bits) + 2 * 4 * self.num_groups
        blocks = int(((lens + self.k_block - 1) // self.k_block).sum())
        return self.num_kv_heads * (total_tokens * per_token + blocks * 2 * 4 * self.head_dim)

    def validate(self, check_values: bool | None = None) -> "QuantizedKVCache":
        """Check every field: format, shapes, dtypes, devices, contiguity and the lengths.

        Args:
            check_values: also check every ``seq_lens[b]`` against ``[0, max_seq_len]``
                (reads ``seq_lens`` on the host: one device sync). ``None`` (default):
                unless the current CUDA stream is capturing a graph.

        Returns:
            ``self``.

        Raises:
            ValueError: the first inconsistency, as "expected X, got Y"; a cache or index
                tensor that is not contiguous (a strided view; names the tensor); a
                ``seq_lens[b]`` outside ``[0, max_seq_len]`` (names the sequence).
        """
        b = self._validate_tensors()[0]
        check_tensor("seq_lens", self.seq_lens, shape=(b,), dtypes=(torch.int32,), device=self.device,
                     contiguous=True)
        if b and host_checks(check_values, self.device):
            check_lengths("seq_lens", self.seq_lens.cpu(), self.max_seq_len,
                          hint=" (the cache's rows per sequence)")
        return self


def check_finite_kv(k: torch.Tensor, v: torch.Tensor, seq_lens: torch.Tensor) -> None:
    """Raise on a NaN/Inf (or, in float64, a magnitude past fp32's) in ``k``/``v`` at the valid tokens.

    Args:
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` float tensors.
        seq_lens: ``[batch]`` int lengths; tokens ``t >= seq_lens[b]`` are not checked.

    Raises:
        ValueError: naming the tensor, the value and its position ``[b, h, t, c]``.
    """
    valid = (torch.arange(k.shape[2], device=k.device)[None, :] < seq_lens[:, None].to(torch.int64))[:, None, :, None]
    for name, x in (("k", k), ("v", v)):
        bad = ~torch.isfinite(x) & valid
        if bool(bad.any()):
            pos = [int(i) for i in bad.nonzero()[0]]
            raise ValueError(f"{name}: expected finite values at the valid tokens (t < seq_lens[b]), got "
                             f"{float(x[tuple(pos)])} at [b, h, t, c] = {pos}")
        if x.dtype == torch.float64:  # finite in fp64 but past fp32 (the format's arithmetic)
            big = (x.abs() > FP32_MAX) & valid
            if bool(big.any()):
                pos = [int(i) for i in big.nonzero()[0]]
                raise ValueError(f"{name}: value {float(x[tuple(pos)]):.4g} at [b, h, t, c] = {pos} is past the "
                                 f"format's largest magnitude {FP32_MAX:.4g} (fp32: module docstring, 'Largest "
                                 "magnitude')")


def quantize_kv(
    k: torch.Tensor,
    v: torch.Tensor,
    bits: int = 2,
    group_size: int = 128,
    seq_lens: torch.Tensor | None = None,
    check_finite: bool = True,
    *,
    k_layout: str = "token",
    k_block: int | None = None,
) -> QuantizedKVCache:
    """Quantize and pack a K/V cache.

    Args:
        k, v: ``[batch, num_kv_heads, max_seq_len, head_dim]`` float16/bfloat16/float32/float64.
        bits: 2 or 4 (K and V alike).
        group_size: 32, 64 or 128, dividing ``head_dim``: V's channel group, and K's
            with ``k_layout="token"``.
        seq_lens: ``[batch]`` int32 valid lengths (default: all ``max_seq_len``);
            each in ``[0, max_seq_len]``. The cache holds a copy: :func:`foscar.append_kv`
            advances the cache's own ``seq_lens``, never the tensor passed here (caches of
            several layers made from one ``seq_lens`` stay apart).
        check_finite: raise on NaN/Inf in ``k``/``v`` at the valid tokens (``t < seq_lens[b]``;
            the padding past them is never read, and may hold anything, e.g. a
            ``torch.empty`` buffer's bits), and on float64 values past fp32's largest
            (3.40e38, the format's largest magnitude) (device syncs).
        k_layout: ``"token"`` (K in per-token groups of ``group_size`` channels) or
            ``"channel"`` (KIVI-style: K per channel over blocks of ``k_block`` tokens,
            min/max over the valid tokens only; module docstring).
        k_block: tokens per channel-wise K block, 32, 64 or 128 (default 128); only
            with ``k_layout="channel"``.

    Returns:
        A :class:`QuantizedKVCache` on the device of ``k``.

    Every finite value is taken (module docstring, "Largest magnitude"): scales and
    codes are finite even for a group whose range passes fp32's largest value.

    Raises:
        ValueError: bad shapes/dtypes, unsupported bits/group size/k_layout/k_block,
            ``k_block`` given with ``k_layout="token"``, lengths out of range,
            non-finite values at a valid token, or float64 values past fp32's range (both
            naming the position ``[b, h, t, c]``); a ``bits`` or ``group_size`` that is not
            a Python int (``2.0``); no KV heads (``k.shape[1] == 0``); a ``check_finite`` that is not a bool.
        TypeError: ``k``, ``v`` or ``seq_lens`` is not a ``torch.Tensor`` (a list of lengths, say).

    Example (CPU, through the Triton interpreter: ``TRITON_INTERPRET=1``; on a GPU pass CUDA tensors)::

        >>> import torch, foscar
        >>> k, v = torch.randn(2, 2, 64, 64), torch.randn(2, 2, 64, 64)  # [batch, num_kv_heads, max_seq_len, head_dim]
        >>> cache = foscar.quantize_kv(k, v, bits=2, group_size=32, seq_lens=torch.tensor([64, 40], dtype=torch.int32))
        >>> cache.k_codes.shape, cache.k_codes.dtype, cache.k_scale.shape  # 4 codes per byte; one scale per group
        (torch.Size([2, 2, 64, 16]), torch.uint8, torch.Size([2, 2, 64, 2]))
        >>> foscar.quantize_kv(k, v, bits=3)
        Traceback (most recent call last):
        ValueError: bits: expected one of [2, 4], got 3
    """
    check_tensor("k", k, ndim=4, dtypes=FLOAT_DTYPES)
    check_tensor("v", v, shape=tuple(k.shape), dtypes=FLOAT_DTYPES, device=k.device)
    check_flag("check_finite", check_finite)
    batch, num_kv_heads, max_seq_len, head_dim = k.shape
    if num_kv_heads == 0:
        raise ValueError(f"k: expected at least one KV head (dimension 1), got shape {list(k.shape)}")
    check_format(bits, group_size, head_dim)
    check_choice("k_layout", k_layout, K_LAYOUTS)
    if k_layout == "token":
        if k_block is not None:
            raise ValueError(f"k_block: only with k_layout='channel', got k_block={k_block!r} with k_layout='token'")
    else:
        k_block = DEFAULT_K_BLOCK if k_block is None else k_block
        check_k_block(k_block)
    if seq_lens is None:
        seq_lens = torch.full((batch,), max_seq_len, dtype=torch.int32, device=k.device)
    check_tensor("seq_lens", seq_lens, shape=(batch,), dtypes=(torch.int32,), device=k.device)
    if batch and (int(seq_lens.min()) < 0 or int(seq_lens.max()) > max_seq_len):
        raise ValueError(
            f"seq_lens: expected values in [0, max_seq_len={max_seq_len}], "
            f"got min {int(seq_lens.min())}, max {int(seq_lens.max())}"
        )
    if check_finite and batch:
        check_finite_kv(k, v, seq_lens)
    if k_block is None:
        kc, ks, ko = quantize_groups(k, bits, group_size)
    else:
        kc, ks, ko = quantize_channels(k, bits, k_block, seq_lens)
    vc, vs, vo = quantize_groups(v, bits, group_size)
    return QuantizedKVCache(
        k_codes=pack_codes(kc, bits).contiguous(),
        v_codes=pack_codes(vc, bits).contiguous(),
        k_scale=ks.contiguous(),
        k_offset=ko.contiguous(),
        v_scale=vs.contiguous(),
        v_offset=vo.contiguous(),
        seq_lens=seq_lens.clone(),  # the cache's own: append_kv advances it in place (docstring)
        bits=bits,
        group_size=group_size,
        head_dim=head_dim,
        k_block=k_block,
    )


def check_contiguous_cache(cache: object) -> None:
    """Raise ``ValueError`` unless ``cache`` is a :class:`QuantizedKVCache`; for a paged cache the message says to
    take ``cache.to_contiguous()`` first (:func:`dequantize_kv`, :func:`foscar.reference.folded_decode_torch`)."""
    if not isinstance(cache, QuantizedKVCache):
        hint = "; take cache.to_contiguous() first" if hasattr(cache, "to_contiguous") else ""
        raise ValueError(f"cache: expected a QuantizedKVCache, got {type(cache).__name__}{hint}")


def dequantize_kv(
    cache: QuantizedKVCache,
    dtype: torch.dtype = torch.float32,
    batch_index: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reconstruct ``x_hat`` for K and V.

    Args:
        cache: the quantized cache (contiguous: for a :class:`~foscar.paged.PagedQuantizedKVCache`
            take ``cache.to_contiguous()`` first).
        dtype: float32 (default), float64 for references, or float16 / bfloat16: computed in float32
            and rounded to the 16-bit type once (its scale, offset, product and sum are not each rounded).
        batch_index: if given, only that sequence (first ``seq_lens[b]`` tokens), an int in
            ``[0, batch)``.

    Returns:
        ``(k, v)``, each ``[batch, num_kv_heads, max_seq_len, head_dim]`` (padding
        positions included), or ``[num_kv_heads, seq_lens[b], head_dim]`` with
        ``batch_index``. Channel-wise K is expanded block by block
        (:func:`dequantize_channels`).

    Raises:
        ValueError: a cache that is not a :class:`QuantizedKVCache` (a paged one: the message says
            to take ``to_contiguous()``), or whose fields disagree (:meth:`QuantizedKVCache.validate`'s
            shape, dtype and device checks; the lengths are not read), a ``dtype`` other than those four,
            a ``batch_index`` that is not an int in ``[0, batch)``, a ``seq_lens[batch_index]`` outside
            ``[0, max_seq_len]``.
    """
    check_contiguous_cache(cache)
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype: expected one of float16, bfloat16, float32, float64, got {dtype!r}")
    cache.validate(check_values=False)  # a mis-described cache would otherwise expand with the wrong scales
    work = torch.float64 if dtype == torch.float64 else torch.float32  # 16-bit: computed in fp32, rounded once
    sl = slice(None)
    sel = (sl,)
    if batch_index is not None:
        if not is_int(batch_index) or not 0 <= batch_index < cache.batch_size:
            hint = "" if is_int(batch_index) else f" ({type(batch_index).__name__}); pass int(x)"
            raise ValueError(f"batch_index: expected a Python int in [0, {cache.batch_size}), got {batch_index!r}{hint}")
        length = int(cache.seq_lens[batch_index])
        if not 0 <= length <= cache.max_seq_len:
            raise ValueError(f"seq_lens: sequence {batch_index} has length {length}, expected 0 <= length <= "
                             f"max_seq_len={cache.max_seq_len}")
        sel = (batch_index, sl, slice(0, length))
    kq = unpack_codes(cache.k_codes[sel], cache.bits)
    if cache.k_block is None:
        k = dequantize_groups(kq, cache.k_scale[sel], cache.k_offset[sel], cache.group_size, work)
    else:
        bsel = sel if batch_index is None else (batch_index, sl, slice(0, num_k_blocks(length, cache.k_block)))
        k = dequantize_channels(kq, cache.k_scale[bsel], cache.k_offset[bsel], cache.k_block, work)
    vq = unpack_codes(cache.v_codes[sel], cache.bits)
    v = dequantize_groups(vq, cache.v_scale[sel], cache.v_offset[sel], cache.group_size, work)
    return k.to(dtype), v.to(dtype)
