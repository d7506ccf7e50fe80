"""Channel-wise K (KIVI style): format, fp64 reference, folding algebra, Triton kernel.

K is quantized per channel over blocks of ``k_block`` tokens; V stays token-wise
(foscar/quant.py). The kernel cases run under ``TRITON_INTERPRET=1`` without a GPU
(tests/conftest.py); the ``gpu``-marked cases are the same checks at full size.
"""

import math

import pytest
import torch

import foscar
from foscar.quant import (
    SUPPORTED_K_BLOCKS,
    QuantizedKVCache,
    dequantize_channels,
    dequantize_kv,
    quantize_channels,
    quantize_kv,
    unpack_codes,
)


def _kv(batch, hkv, length, head_dim, seed, k_mean=0.3):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(batch, hkv, length, head_dim, generator=g) * 1.5 + k_mean
    # a few channels with a large per-channel mean: what channel-wise K is for
    k[..., 3] += 20.0
    k[..., head_dim // 2 + 1] -= 12.0
    v = torch.randn(batch, hkv, length, head_dim, generator=g)
    return k, v


# ---------------------------------------------------------------------------- format


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("k_block", SUPPORTED_K_BLOCKS)
def test_quantize_channels_error_bound_and_extremes(bits, k_block):
    length = 2 * k_block + 5  # a partial last block of 5 tokens
    k, _ = _kv(2, 3, length, 64, seed=bits + k_block)
    codes, scale, offset = quantize_channels(k, bits, k_block)
    nb = math.ceil(length / k_block)
    assert codes.shape == k.shape and codes.dtype == torch.uint8
    assert scale.shape == offset.shape == (2, 3, nb, 64) and scale.dtype == offset.dtype == torch.float32
    assert int(codes.max()) <= (1 << bits) - 1
    x_hat = dequantize_channels(codes, scale, offset, k_block, torch.float64)
    s_tok = scale.double().repeat_interleave(k_block, dim=2)[:, :, :length]
    err = (x_hat - k.double()).abs()
    assert bool((err <= s_tok / 2 * (1 + 1e-5) + 1e-6).all())
    # each (block, channel)'s min and max come back (codes 0 and 2^b - 1)
    for i in range(nb):
        blk = k[:, :, i * k_block:(i + 1) * k_block].double()
        hat = x_hat[:, :, i * k_block:(i + 1) * k_block]
        assert torch.allclose(hat.amin(2), blk.amin(2), atol=1e-5)
        assert torch.allclose(hat.amax(2), blk.amax(2), atol=1e-5)


def test_partial_last_block_uses_valid_tokens_only():
    k_block = 32
    k, v = _kv(3, 2, 96, 64, seed=1)
    lens = torch.tensor([96, 40, 0], dtype=torch.int32)
    k_pad = k.clone()
    k_pad[1, :, 40:] = 1e6  # garbage past the end: must not enter any min/max
    c = quantize_kv(k_pad, v, 2, 64, seq_lens=lens, k_layout="channel", k_block=k_block)
    assert c.k_layout == "channel" and c.k_block == k_block
    assert c.k_scale.shape == (3, 2, 3, 64)
    # sequence 1: block 1 holds tokens 32..39 only
    valid = k[1, :, 32:40].double()
    assert torch.allclose(c.k_offset[1, :, 1].double(), valid.amin(1), atol=1e-6)
    assert torch.allclose(c.k_scale[1, :, 1].double(), (valid.amax(1) - valid.amin(1)) / 3, rtol=1e-6)
    # block 2 of sequence 1 and every block of sequence 2 have no valid token: 0 and 0
    assert not c.k_scale[1, :, 2].any() and not c.k_offset[1, :, 2].any()
    assert not c.k_scale[2].any() and not c.k_offset[2].any()
    # padding tokens get code 0
    assert not unpack_codes(c.k_codes[1, :, 40:], 2).any()
    # the valid tokens are within half a step of the truth
    kb, _ = dequantize_kv(c, torch.float64, batch_index=1)
    assert kb.shape == (2, 40, 64)
    s_tok = c.k_scale[1].double().repeat_interleave(k_block, dim=1)[:, :40]
    assert bool(((kb - k[1, :, :40].double()).abs() <= s_tok / 2 * (1 + 1e-5) + 1e-6).all())
    # the whole-cache dequantization agrees with the per-sequence one on valid tokens
    kd, vd = dequantize_kv(c, torch.float64)
    assert torch.equal(kd[1, :, :40], kb)
    assert torch.equal(vd, dequantize_kv(quantize_kv(k_pad, v, 2, 64, seq_lens=lens), torch.float64)[1])


def test_channel_k_zero_range_channel_is_exact():
    k, v = _kv(1, 1, 64, 64, seed=2)
    k[0, 0, :, 5] = 0.75  # constant channel: scale 0, code 0, exact
    k[0, 0, :32, 6] = -2.5  # constant in block 0 only
    c = quantize_kv(k, v, 2, 64, k_layout="channel", k_block=32)
    kd, _ = dequantize_kv(c, torch.float32)
    assert torch.isfinite(kd).all()
    assert bool((c.k_scale[0, 0, :, 5] == 0).all()) and float(c.k_scale[0, 0, 0, 6]) == 0
    assert bool((kd[0, 0, :, 5] == 0.75).all()) and bool((kd[0, 0, :32, 6] == -2.5).all())


def test_channel_k_beats_token_k_on_outlier_channels():
    """The reason for the format: with outlier channels, per-token groups spend their
    range on the outliers; per-channel blocks do not."""
    k, v = _kv(1, 2, 256, 128, seed=3)
    tok, _ = dequantize_kv(quantize_kv(k, v, 2, 128), torch.float64)
    ch, _ = dequantize_kv(quantize_kv(k, v, 2, 128, k_layout="channel", k_block=128), torch.float64)
    err_tok = float((tok - k.double()).norm() / k.double().norm())
    err_ch = float((ch - k.double()).norm() / k.double().norm())
    assert err_ch < 0.5 * err_tok, (err_ch, err_tok)


def test_channel_k_shapes_bytes_and_default_block():
    k, v = _kv(2, 3, 70, 128, seed=4)
    lens = torch.tensor([70, 33], dtype=torch.int32)
    c = quantize_kv(k, v, 2, 128, seq_lens=lens, k_layout="channel")
    assert c.k_block == 128 and c.k_scale.shape == (2, 3, 1, 128)
    assert c.validate() is c
    # K scales/offsets of D=128 channels per 128 tokens: 8 bytes per token, as token-wise G=128
    assert c.bytes_per_token() == 80
    c32 = quantize_kv(k, v, 2, 128, seq_lens=lens, k_layout="channel", k_block=32)
    assert c32.bytes_per_token() == 32 + 32 + 8 + 32
    # exact count: blocks touched (3 + 2 for k_block=32), not tokens
    assert c32.bytes_read() == 3 * ((70 + 33) * 72 + (3 + 2) * 8 * 128)
    assert quantize_kv(k, v, 2, 128).k_layout == "token"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k_layout="channel", k_block=16), r"k_block: expected one of \[32, 64, 128\], got 16"),
        (dict(k_layout="channel", k_block=256), r"k_block: expected one of \[32, 64, 128\], got 256"),
        (dict(k_layout="channel", k_block=32.0), "k_block: expected one of"),
        (dict(k_layout="channel", k_block=True), "k_block: expected one of"),
        (dict(k_layout="token", k_block=32), "k_block: only with k_layout='channel'"),
        (dict(k_layout="per-channel"), r"k_layout: expected one of \['token', 'channel'\]"),
    ],
)
def test_quantize_kv_rejects_bad_channel_options(kwargs, match):
    k = torch.randn(1, 1, 40, 64)
    with pytest.raises(ValueError, match=match):
        quantize_kv(k, k.clone(), 2, 64, **kwargs)


def test_validate_checks_channel_k_shapes():
    k, v = _kv(1, 2, 70, 64, seed=5)
    c = quantize_kv(k, v, 2, 64, k_layout="channel", k_block=32)
    bad = QuantizedKVCache(**{**c.__dict__, "k_scale": c.k_scale[:, :, :2].contiguous()})
    with pytest.raises(ValueError, match=r"k_scale: expected shape \[1, 2, 3, 64\], got \[1, 2, 2, 64\]"):
        bad.validate()
    bad = QuantizedKVCache(**{**c.__dict__, "k_block": 48})
    with pytest.raises(ValueError, match="k_block: expected one of"):
        bad.validate()
    # a channel-wise cache read as token-wise: its K scales have the wrong shape
    bad = QuantizedKVCache(**{**c.__dict__, "k_block": None})
    with pytest.raises(ValueError, match="k_scale: expected shape"):
        bad.validate()


def test_paged_channel_k_needs_whole_blocks_per_page_and_append_refuses():
    k, v = _kv(1, 1, 40, 64, seed=6)
    c = quantize_kv(k, v, 2, 64, seq_lens=torch.tensor([30], dtype=torch.int32), k_layout="channel", k_block=32)
    with pytest.raises(ValueError, match="page_size: a page must hold whole channel-wise K blocks; k_block=32 "
                                         "does not divide page_size=16"):
        foscar.paginate(c, 16)
    paged = foscar.paginate(c, 64)
    assert paged.k_block == 32 and paged.k_scale.shape == (1, 1, 2, 64)
    bad = foscar.PagedQuantizedKVCache(**{**paged.__dict__, "k_block": 128})
    with pytest.raises(ValueError, match="k_block=128 does not divide page_size=64"):
        bad.validate()
    for k_block in (0, 48, "32"):  # not a block size at all: that is the message, not the page
        bad = foscar.PagedQuantizedKVCache(**{**paged.__dict__, "k_block": k_block})
        with pytest.raises(ValueError, match=r"k_block: expected one of \[32, 64, 128\]"):
            bad.validate()
    with pytest.raises(ValueError, match="append_kv supports token-wise K only"):
        foscar.append_kv(c, k[:, :, :1], v[:, :, :1])


@pytest.mark.parametrize("k_block, page_size", [(32, 32), (32, 128), (64, 64)])
def test_paginate_channel_k_round_trip(k_block, page_size):
    k, v = _kv(3, 2, 300, 64, seed=k_block + page_size)
    lens = torch.tensor([300, 0, k_block + 1], dtype=torch.int32)
    c = quantize_kv(k, v, 4, 32, seq_lens=lens, k_layout="channel", k_block=k_block)
    g = torch.Generator().manual_seed(0)
    paged = foscar.paginate(c, page_size, shuffle=True, extra_pages=2, fill=1e30, generator=g)
    assert paged.validate() is paged and paged.k_scale.shape[2:] == (page_size // k_block, 64)
    back = paged.to_contiguous()
    assert back.k_block == k_block
    for b, length in enumerate(lens.tolist()):
        nb = -(-length // k_block)
        for name in ("k_scale", "k_offset"):
            assert torch.equal(getattr(back, name)[b, :, :nb], getattr(c, name)[b, :, :nb]), (name, b)
        assert torch.equal(back.k_codes[b, :, :length], c.k_codes[b, :, :length])
    assert torch.equal(dequantize_kv(back, torch.float64, batch_index=0)[0], dequantize_kv(c, torch.float64, batch_index=0)[0])


# ---------------------------------------------------------------------------- reference and algebra


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("k_block", SUPPORTED_K_BLOCKS)
@pytest.mark.parametrize("operand", ["bf16", "fp8"])
def test_folding_identity_channel_k_fp64(bits, k_block, operand):
    k, v = _kv(3, 2, 150, 128, seed=bits * k_block)
    lens = torch.tensor([150, 0, 65], dtype=torch.int32)
    c = quantize_kv(k, v, bits, 64, seq_lens=lens, k_layout="channel", k_block=k_block)
    q = torch.randn(3, 14, 128, dtype=torch.float64)
    ref = foscar.reference_decode(q, c)
    assert not ref[1].any()
    kd, vd = dequantize_kv(c, torch.float64)
    assert torch.allclose(ref, foscar.attention_reference(q, kd, vd, lens), atol=1e-12)
    folded = foscar.folded_decode_torch(q, c, operand=operand)
    assert float((folded - ref).norm() / ref.norm()) < 1e-12


# ---------------------------------------------------------------------------- Triton kernel

TOL = 1e-2  # BF16 P and V operands: as tests/test_decode_triton.py
# The scaled query Q * s_blk is rounded to FP16 for the dot (2^-11 relative per value), which
# the token-wise path does not need (it dots the caller's BF16 query as is): up to 1.4e-3 seen here
# (Triton, whose FP16 query is normalized per group), 2.04e-3 on the H200 with the CUDA kernel (one
# normalization per head and block) at a 128-token sequence.
LSE_TOL = 3e-3


def _case(device, *, batch, num_qo_heads, num_kv_heads, head_dim, seq_lens, bits, group_size, k_block, seed=0):
    max_len = max(max(seq_lens), 1)
    k, v = _kv(batch, num_kv_heads, max_len, head_dim, seed)
    g = torch.Generator().manual_seed(seed + 1)
    q = torch.randn(batch, num_qo_heads, head_dim, generator=g)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    cache = quantize_kv(k.to(device), v.to(device), bits, group_size, seq_lens=lens.to(device),
                        k_layout="channel", k_block=k_block)
    return q.to(torch.bfloat16).to(device), cache


def _check(q, cache, num_splits=None, tol=TOL, backend="auto", method="folded", decode_cache=None):
    """Decode ``cache`` (or ``decode_cache``, a paged copy of it) and compare with the fp64
    reference: output within ``tol``, LSE within LSE_TOL (per-value: exactly the reference's
    with K rounded to BF16, as its K operand is). Returns the worst relative L2 error."""
    target = cache if decode_cache is None else decode_cache
    out, lse = foscar.decode(q, target, num_splits=num_splits, return_lse=True, backend=backend, method=method)
    assert out.shape == q.shape and out.dtype == torch.bfloat16
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    if method == "per-value":
        _, ref_lse = foscar.reference_decode(q, cache, return_lse=True, k_operand_dtype=torch.bfloat16)
    errs = []
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        errs.append(err)
        assert err < tol, f"sequence {b} (length {length}): relative L2 error {err:.3g} >= {tol}"
        lse_err = float((lse[b].double() - ref_lse[b]).abs().max())
        lse_tol = 1e-4 if method == "per-value" else LSE_TOL
        assert lse_err < lse_tol, f"sequence {b} (length {length}): LSE off by {lse_err:.3g}"
    return max(errs, default=0.0)


@pytest.mark.parametrize("bits, k_block, num_splits", [(2, 32, None), (4, 32, 3), (2, 64, 3), (4, 128, None), (2, 128, 3)])
def test_decode_channel_k_lengths(device, bits, k_block, num_splits):
    # lengths 1, a partial last block, exactly one block, several blocks + a partial one, 0
    lens = [1, k_block - 5, k_block, 2 * k_block + 17, 0]
    q, cache = _case(device, batch=5, num_qo_heads=4, num_kv_heads=1, head_dim=128,
                     seq_lens=lens, bits=bits, group_size=64 if bits == 2 else 128, k_block=k_block,
                     seed=bits * 100 + k_block)
    _check(q, cache, num_splits=num_splits)  # None: the heuristic (1 split on the CPU here; 3: several)


@pytest.mark.parametrize("qo, kv", [(3, 3), (7, 1)])
def test_decode_channel_k_gqa_one_and_seven(device, qo, kv):
    q, cache = _case(device, batch=2, num_qo_heads=qo, num_kv_heads=kv, head_dim=64,
                     seq_lens=[100, 33], bits=2, group_size=32, k_block=32, seed=qo)
    _check(q, cache)


@pytest.mark.parametrize("head_dim, bits, group_size, k_block", [(64, 4, 64, 128), (256, 2, 128, 128), (256, 4, 32, 32)])
def test_decode_channel_k_head_dims(device, head_dim, bits, group_size, k_block):
    q, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=1, head_dim=head_dim,
                     seq_lens=[150, 64], bits=bits, group_size=group_size, k_block=k_block, seed=head_dim)
    _check(q, cache)


def test_decode_channel_k_single_token_is_its_v(device):
    q, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=1, head_dim=128,
                     seq_lens=[1, 1], bits=2, group_size=128, k_block=64)
    out = foscar.decode(q, cache)
    _, v = dequantize_kv(cache, torch.float64)
    assert torch.allclose(out.double(), v[:, 0, 0].unsqueeze(1).expand(-1, 2, -1), rtol=1e-2, atol=1e-2)


def test_decode_channel_k_matches_token_k_on_its_own_dequantized_cache(device):
    """The channel-wise kernel path and the token-wise one agree with their own fp64
    references, and channel-wise K is the closer one to unquantized attention on
    outlier channels."""
    k, v = _kv(1, 2, 200, 128, seed=9)
    q = torch.randn(1, 8, 128, generator=torch.Generator().manual_seed(10)).to(torch.bfloat16)
    exact = foscar.attention_reference(q, k, v, torch.tensor([200]))
    errs = {}
    for layout in ("token", "channel"):
        c = quantize_kv(k.to(device), v.to(device), 2, 128, k_layout=layout)
        _check(q.to(device), c)
        out = foscar.decode(q.to(device), c).double().cpu()
        errs[layout] = float((out - exact).norm() / exact.norm())
    assert errs["channel"] < errs["token"], errs


@pytest.mark.parametrize("k_block, page_size, bits", [(32, 64, 2), (64, 64, 4), (32, 32, 4), (128, 128, 2), (32, 128, 2)])
def test_decode_channel_k_paged(device, k_block, page_size, bits):
    # shuffled pages, poisoned unused pages; lengths: a partial block, exactly a page, several pages + 1,
    # 0, and a last page with later block slots unused (page + k_block + 8)
    q, cache = _case(device, batch=5, num_qo_heads=4, num_kv_heads=2, head_dim=128,
                     seq_lens=[k_block - 3, page_size, 2 * page_size + 1, 0, page_size + k_block + 8], bits=bits,
                     group_size=64,
                     k_block=k_block, seed=k_block + page_size)
    g = torch.Generator().manual_seed(1)
    paged = foscar.paginate(cache, page_size, shuffle=True, extra_pages=2, fill=1e30, generator=g)
    _check(q, cache, decode_cache=paged)
    _check(q, cache, decode_cache=paged, num_splits=3)


def test_decode_channel_k_backend_choice_and_errors(device):
    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[40], bits=2, group_size=64, k_block=32)
    if device.type != "cuda":  # the CUDA kernel takes channel-wise K: the reason is the device, not the layout
        with pytest.raises(ValueError, match="backend='cuda': the CUDA kernel needs a CUDA device"):
            foscar.decode(q, cache, backend="cuda")
    from foscar.kernels import decode_triton

    with pytest.raises(ValueError, match="BLOCK_N=64 must divide k_block=32"):
        decode_triton.folded_decode_partial(q, cache, 0.125, config={"BLOCK_N": 64})
    assert decode_triton.launch_config(128, 2, 128, 4, k_block=32)["BLOCK_N"] == 32
    assert decode_triton.launch_config(256, 2, 128, 4, k_block=128)["BLOCK_N"] == 64
    assert decode_triton.launch_config(128, 2, 128, 4) == decode_triton.launch_config(128, 2, 128, 4, None)


# ---------------------------------------------------------------------------- GPU, full size


@pytest.mark.gpu
@pytest.mark.parametrize("backend, method", [("cuda", "folded"), ("cuda", "per-value"), ("triton", "folded")])
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("k_block", SUPPORTED_K_BLOCKS)
def test_gpu_channel_k_qwen3_8b_shape(bits, k_block, backend, method):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20000 + k_block // 2], bits=bits, group_size=128, k_block=k_block)
    assert foscar.plan_decode(cache, 32, backend="auto").kernel == "cuda"
    _check(q, cache, backend=backend, method=method)
    _check(q, cache, num_splits=1, backend=backend, method=method)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, qo, kv, bits, group_size, k_block",
                         [(64, 8, 8, 4, 64, 32), (256, 8, 8, 2, 128, 64), (256, 16, 2, 4, 32, 128),
                          (128, 7, 1, 2, 128, 32), (128, 1, 1, 4, 32, 64), (64, 28, 4, 2, 32, 128)])
def test_gpu_channel_k_cuda_head_dims_and_gqa(head_dim, qo, kv, bits, group_size, k_block):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5001, 129, 63], bits=bits, group_size=group_size, k_block=k_block, seed=head_dim + qo)
    for method in ("folded", "per-value"):
        _check(q, cache, backend="cuda", method=method)
        _check(q, cache, num_splits=7, backend="cuda", method=method)
    from foscar.kernels.decode_cuda import fp8_unsupported
    from tests.test_decode_cuda import _check_fp8

    if fp8_unsupported(head_dim, bits) is None:  # FP8 operands: KS8 and the chunk pairing change with the format
        _check_fp8(q, cache)
        _check_fp8(q, cache, num_splits=7)


@pytest.mark.gpu
@pytest.mark.parametrize("bits, k_block, page_size", [(2, 32, 64), (4, 64, 64), (2, 128, 128), (4, 32, 128), (4, 32, 32)])
def test_gpu_channel_k_paged_every_mode(bits, k_block, page_size):  # page 32: a sub-tile's two blocks on two pages
    from tests.test_decode_cuda import _check_fp8

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[20001, 0, page_size, 9000 + k_block + 1], bits=bits, group_size=128, k_block=k_block)
    g = torch.Generator().manual_seed(2)
    paged = foscar.paginate(cache, page_size, shuffle=True, extra_pages=3, fill=1e30, generator=g)
    for backend, method in (("cuda", "folded"), ("cuda", "per-value"), ("triton", "folded")):
        _check(q, cache, decode_cache=paged, backend=backend, method=method)
    _check_fp8(q, cache, decode_cache=paged)
    _check_fp8(q, cache)


@pytest.mark.gpu
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("k_block", SUPPORTED_K_BLOCKS)
def test_gpu_channel_k_fp8_operands(bits, k_block):
    from tests.test_decode_cuda import _check_fp8

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20000 + k_block // 2], bits=bits, group_size=64, k_block=k_block)
    _check_fp8(q, cache)
    _check_fp8(q, cache, num_splits=1)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, qo, kv, group_size", [(64, 28, 4, 32), (256, 8, 8, 128), (128, 7, 1, 64)])
def test_gpu_channel_k_head_dims_and_gqa(head_dim, qo, kv, group_size):
    """The compiled Triton kernel with channel-wise K (backend "auto" took the CUDA kernel at all three shapes, which
    test_gpu_channel_k_cuda_head_dims_and_gqa covers)."""
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5000, 129, 1], bits=2, group_size=group_size, k_block=64)
    _check(q, cache, backend="triton")
