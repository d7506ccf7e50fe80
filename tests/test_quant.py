"""The quantized format: packing, quantize/dequantize, rounding, validation."""

import pytest
import torch

from foscar.quant import (
    QuantizedKVCache,
    dequantize_groups,
    dequantize_kv,
    pack_codes,
    quantize_groups,
    quantize_kv,
    unpack_codes,
)


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("view_int8", [False, True])
def test_pack_round_trip_all_byte_values(bits, view_int8):
    planes = 8 // bits
    # 256 tokens x 4 bytes per token; every byte value appears in every byte slot
    packed = torch.arange(256, dtype=torch.int64).repeat(4, 1).T.contiguous().to(torch.uint8)
    packed[:, 1] = packed[:, 1].flip(0)
    src = packed.view(torch.int8) if view_int8 else packed
    codes = unpack_codes(src, bits)
    assert codes.shape == (256, 4 * planes) and codes.dtype == torch.uint8
    assert int(codes.max()) < (1 << bits)
    assert torch.equal(pack_codes(codes, bits), packed)
    # byte j holds channel j + p * D/P at bits [bits*p, bits*(p+1))
    width = 4
    for p in range(planes):
        expect = (packed.to(torch.int64) >> (bits * p)) & ((1 << bits) - 1)
        assert torch.equal(codes[:, p * width:(p + 1) * width].to(torch.int64), expect)


@pytest.mark.parametrize("bits", [2, 4])
def test_pack_rejects_out_of_range_codes(bits):
    codes = torch.zeros(2, 8, dtype=torch.uint8)
    codes[0, 3] = 1 << bits
    with pytest.raises(ValueError, match="expected values in"):
        pack_codes(codes, bits)


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_quantize_error_bound(bits, group_size):
    torch.manual_seed(bits * 1000 + group_size)
    x = torch.randn(5, 3, 256) * 3 + 0.5
    codes, scale, offset = quantize_groups(x, bits, group_size)
    assert codes.dtype == torch.uint8 and scale.dtype == offset.dtype == torch.float32
    assert scale.shape == offset.shape == (5, 3, 256 // group_size)
    assert int(codes.max()) <= (1 << bits) - 1
    x_hat = dequantize_groups(codes, scale, offset, group_size, torch.float64)
    err = (x_hat - x.double()).abs().reshape(5, 3, -1, group_size)
    bound = scale.double().unsqueeze(-1) / 2 * (1 + 1e-5) + 1e-6
    assert bool((err <= bound).all())
    # min and max of each group are reproduced (codes 0 and 2^b - 1)
    xg = x.reshape(5, 3, -1, group_size)
    assert torch.allclose(x_hat.reshape(xg.shape).amin(-1), xg.amin(-1).double(), atol=1e-5)
    assert torch.allclose(x_hat.reshape(xg.shape).amax(-1), xg.amax(-1).double(), atol=1e-5)


@pytest.mark.parametrize("bits", [2, 4])
def test_zero_range_group_is_exact(bits):
    x = torch.randn(4, 128)
    x[1, :32] = 0.7
    x[2, 32:64] = -3.25
    x[3] = 0.0
    codes, scale, offset = quantize_groups(x, bits, 32)
    x_hat = dequantize_groups(codes, scale, offset, 32)
    assert torch.isfinite(x_hat).all()
    assert scale[1, 0] == 0 and scale[2, 1] == 0 and bool((scale[3] == 0).all())
    assert bool((codes[1, :32] == 0).all()) and bool((codes[3] == 0).all())
    assert bool((x_hat[1, :32] == x[1, :32]).all())
    assert bool((x_hat[2, 32:64] == x[2, 32:64]).all())
    assert bool((x_hat[3] == 0).all())


def test_round_half_to_even():
    # INT2, group [0, 3] -> scale 1, offset 0: exact halfway points round to even
    x = torch.tensor([[0.0, 3.0, 0.5, 1.5, 2.5] + [1.0] * 27])
    codes, scale, offset = quantize_groups(x, 2, 32)
    assert float(scale[0, 0]) == 1.0 and float(offset[0, 0]) == 0.0
    assert codes[0, :5].tolist() == [0, 3, 0, 2, 2]
    # INT4, group [0, 15]: 6.5 -> 6, 7.5 -> 8
    x4 = torch.tensor([[0.0, 15.0, 6.5, 7.5] + [1.0] * 28])
    codes4, _, _ = quantize_groups(x4, 4, 32)
    assert codes4[0, :4].tolist() == [0, 15, 6, 8]


@pytest.mark.parametrize("bits, span_ulps, raw", [(2, 4, 4.0), (4, 37, 18.5)])
def test_codes_that_would_round_to_2_pow_b_clamp(bits, span_ulps, raw):
    # In the subnormal range the fp32 scale (max - min) / (2^b - 1) rounds to a
    # whole number of ulps, so (max - min) / scale can land past 2^b - 1:
    # INT2, span 4 ulp: scale 4/3 -> 1 ulp, ratio 4; INT4, span 37: scale 2, ratio 18.5.
    ulp = 2.0**-149
    x = torch.zeros(1, 32, dtype=torch.float32)
    x[0, 1] = span_ulps * ulp
    codes, scale, offset = quantize_groups(x, bits, 32)
    assert float((x[0, 1] - offset[0, 0]) / scale[0, 0]) == raw  # would round to >= 2^b
    assert int(codes[0, 1]) == (1 << bits) - 1
    assert int(codes[0, 0]) == 0


def test_quantize_kv_shapes_and_bytes():
    k = torch.randn(2, 3, 10, 128, dtype=torch.bfloat16)
    v = torch.randn(2, 3, 10, 128, dtype=torch.bfloat16)
    lens = torch.tensor([10, 4], dtype=torch.int32)
    c = quantize_kv(k, v, bits=2, group_size=128, seq_lens=lens)
    assert c.k_codes.shape == (2, 3, 10, 32) and c.k_scale.shape == (2, 3, 10, 1)
    assert c.bytes_per_token() == 80  # DESIGN §5: 32 + 32 + 16
    assert c.bytes_read() == 14 * 3 * 80
    c4 = quantize_kv(k, v, bits=4, group_size=32)
    assert c4.bytes_per_token() == 64 + 64 + 4 * 16
    kd, vd = dequantize_kv(c, torch.float64)
    assert kd.shape == k.shape
    kb, _ = dequantize_kv(c, torch.float64, batch_index=1)
    assert kb.shape == (3, 4, 128)
    assert torch.equal(kb, kd[1, :, :4])


def test_quantize_kv_keeps_its_own_contiguous_copy_of_a_strided_seq_lens():
    """README's exception to "a strided view is refused": quantize_kv copies the seq_lens it is given."""
    k = torch.randn(2, 1, 64, 128, dtype=torch.bfloat16)
    lens = torch.tensor([64, 1, 40, 1], dtype=torch.int32)[::2]
    c = quantize_kv(k, k.clone(), bits=2, group_size=128, seq_lens=lens)
    assert c.seq_lens.is_contiguous() and c.seq_lens.tolist() == [64, 40]
    assert c.seq_lens.data_ptr() != lens.data_ptr()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(bits=3), "bits"),
        (dict(bits=8), "bits"),
        (dict(group_size=48), "group_size"),
        (dict(group_size=16), "group_size"),
    ],
)
def test_quantize_kv_rejects_bad_format(kwargs, match):
    k = torch.randn(1, 1, 4, 128)
    with pytest.raises(ValueError, match=match):
        quantize_kv(k, k.clone(), **kwargs)


def test_quantize_kv_rejects_bad_inputs():
    k = torch.randn(1, 1, 4, 96)
    with pytest.raises(ValueError, match="head_dim: expected a positive multiple of group_size=64"):
        quantize_kv(k, k.clone(), group_size=64)
    k = torch.randn(1, 1, 4, 128)
    with pytest.raises(ValueError, match="v: expected shape"):
        quantize_kv(k, torch.randn(1, 1, 5, 128))
    with pytest.raises(ValueError, match="k: expected 4 dimensions"):
        quantize_kv(k[0], k[0])
    with pytest.raises(ValueError, match="dtype"):
        quantize_kv(k.to(torch.int32), k.to(torch.int32))
    with pytest.raises(ValueError, match="seq_lens: expected values in"):
        quantize_kv(k, k.clone(), seq_lens=torch.tensor([5], dtype=torch.int32))
    with pytest.raises(ValueError, match="seq_lens: expected dtype"):
        quantize_kv(k, k.clone(), seq_lens=torch.tensor([4]))
    bad = k.clone()
    bad[0, 0, 1, 3] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        quantize_kv(bad, k.clone())


def test_cache_validate_names_the_field():
    k = torch.randn(1, 2, 4, 128)
    c = quantize_kv(k, k.clone())
    bad = QuantizedKVCache(**{**c.__dict__, "v_scale": c.v_scale.double()})
    with pytest.raises(ValueError, match="v_scale: expected dtype"):
        bad.validate()
