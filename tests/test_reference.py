"""Reference attention and the folding algebra (DESIGN §3) in torch, fp64."""

import math

import pytest
import torch

from foscar import attention_reference, folded_decode_torch, quantize_kv, reference_decode
from foscar.quant import dequantize_kv


def _cache(bits, group_size, batch=3, hkv=2, seq=37, d=128, seed=0, lens=(37, 0, 20)):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(batch, hkv, seq, d, generator=g) * 2
    v = torch.randn(batch, hkv, seq, d, generator=g)
    return quantize_kv(k, v, bits, group_size, seq_lens=torch.tensor(lens, dtype=torch.int32))


def test_attention_reference_matches_naive_softmax():
    torch.manual_seed(1)
    q = torch.randn(2, 4, 64, dtype=torch.float64)
    k = torch.randn(2, 2, 9, 64, dtype=torch.float64)
    v = torch.randn(2, 2, 9, 64, dtype=torch.float64)
    lens = torch.tensor([9, 5])
    out, lse = attention_reference(q, k, v, lens, return_lse=True)
    for b in range(2):
        for h in range(4):
            kv = h // 2
            s = (k[b, kv, : lens[b]] @ q[b, h]) / math.sqrt(64)
            p = torch.softmax(s, 0)
            assert torch.allclose(out[b, h], p @ v[b, kv, : lens[b]], atol=1e-12)
            assert math.isclose(float(lse[b, h]), float(torch.logsumexp(s, 0)), rel_tol=1e-12)


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
@pytest.mark.parametrize("operand", ["bf16", "fp8"])
def test_folding_identity_fp64(bits, group_size, operand):
    c = _cache(bits, group_size, seed=bits + group_size)
    q = torch.randn(3, 8, 128, dtype=torch.float64)
    ref = reference_decode(q, c)
    folded = folded_decode_torch(q, c, operand=operand)
    assert torch.equal(ref[1], torch.zeros_like(ref[1]))  # length 0: zero row
    err = (folded - ref).norm() / ref.norm()
    assert float(err) < 1e-12


def test_reference_decode_equals_attention_on_dequantized():
    c = _cache(4, 64)
    q = torch.randn(3, 4, 128, dtype=torch.bfloat16)
    k, v = dequantize_kv(c, torch.float64)
    ref = reference_decode(q, c)
    direct = attention_reference(q, k, v, c.seq_lens)
    assert torch.allclose(ref, direct, atol=1e-12)
    some = reference_decode(q, c, batch_indices=[2])
    assert torch.equal(some[2], ref[2]) and not some[0].any()


def test_reference_decode_with_bf16_k_operand():
    # the per-value kernel's exact answer: K rounded to BF16, then fp64 attention
    c = _cache(2, 128)
    q = torch.randn(3, 4, 128, dtype=torch.bfloat16)
    k, v = dequantize_kv(c, torch.float64)
    out, lse = reference_decode(q, c, return_lse=True, k_operand_dtype=torch.bfloat16)
    direct, direct_lse = attention_reference(q, k.to(torch.bfloat16).double(), v, c.seq_lens, return_lse=True)
    assert torch.allclose(out, direct, atol=1e-12) and torch.allclose(lse, direct_lse, atol=1e-12)
    _, exact_lse = reference_decode(q, c, return_lse=True)
    assert (lse - exact_lse)[0].abs().max() > 0  # the rounding is visible


def test_gqa_ratio_must_divide():
    c = _cache(2, 128)
    with pytest.raises(ValueError, match="multiple of num_kv_heads=2"):
        reference_decode(torch.randn(3, 5, 128), c)
