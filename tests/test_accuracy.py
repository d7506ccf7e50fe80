"""foscar.accuracy metrics, foscar.data generators, foscar.rotation, foscar.mixed (no GPU needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import foscar
from foscar import attention_reference, quantize_kv, reference_decode
from foscar.accuracy import aggregate, attention_kl, attention_log_probs, output_errors
from foscar.data import DATA_KINDS, apply_rope, make_kv, outlier_rope_kv, student_t_kv
from foscar.mixed import build_mixed_cache, dequantize_mixed, merge_states, mixed_decode, split_points
from foscar.rotation import hadamard_matrix, random_signs, rotate, unrotate


def fp64_middle(q, cache, scale):
    return reference_decode(q, cache, sm_scale=scale, return_lse=True)


# ---------------------------------------------------------------------------
# metrics


def test_identical_outputs_have_zero_error():
    ref = torch.randn(3, 4, 64, dtype=torch.float64)
    e = output_errors(ref.clone(), ref)
    assert torch.equal(e.rel_l2, torch.zeros(3, dtype=torch.float64))
    assert torch.equal(e.max_abs, torch.zeros(3, dtype=torch.float64))
    assert torch.allclose(e.cosine, torch.ones(3, dtype=torch.float64), atol=1e-15)


def test_known_perturbations():
    ref = torch.tensor([[[3.0, 4.0]], [[1.0, 0.0]]], dtype=torch.float64)  # [2, 1, 2]
    out = torch.tensor([[[3.3, 4.4]], [[1.0, 1.0]]], dtype=torch.float64)  # row 0: x1.1; row 1: orthogonal add
    e = output_errors(out, ref)
    assert e.rel_l2.tolist() == pytest.approx([0.1, 1.0], rel=1e-12)
    assert e.max_abs.tolist() == pytest.approx([0.4, 1.0], rel=1e-12)
    assert e.cosine.tolist() == pytest.approx([1.0, 1 / math.sqrt(2)], rel=1e-12)
    assert aggregate(e.rel_l2) == pytest.approx((1.0, 0.55))
    assert aggregate(e.cosine, worst="min")[0] == pytest.approx(1 / math.sqrt(2))


def test_zero_rows_and_bad_input():
    ref = torch.zeros(2, 1, 4, dtype=torch.float64)
    out = torch.zeros(2, 1, 4, dtype=torch.float64)
    out[1, 0, 0] = 1.0
    e = output_errors(out, ref)
    assert e.rel_l2[0] == 0 and math.isinf(e.rel_l2[1])
    assert e.cosine.tolist() == [1.0, 0.0]
    nan_out = torch.full((1, 1, 4), math.nan)
    assert math.isnan(output_errors(nan_out, torch.ones(1, 1, 4)).rel_l2[0])
    with pytest.raises(ValueError, match="expected shape"):
        output_errors(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="finite"):
        output_errors(torch.zeros(1, 4), torch.full((1, 4), math.inf))
    with pytest.raises(ValueError, match="worst"):
        aggregate(torch.zeros(2), worst="median")


def test_attention_kl_known_value():
    # one KV head, one query head, head_dim 2, sm_scale 1, q = e0: the scores are k[:, 0]
    q = torch.tensor([[[1.0, 0.0]]], dtype=torch.float64)
    k_ref = torch.tensor([[[[0.0, 5.0], [0.0, -1.0]]]], dtype=torch.float64)  # scores (0, 0): p = (1/2, 1/2)
    k_test = torch.tensor([[[[math.log(3.0), 5.0], [0.0, 7.0]]]], dtype=torch.float64)  # p_hat = (3/4, 1/4)
    lens = torch.tensor([2])
    kl = attention_kl(q, k_ref, q, k_test, lens, sm_scale=1.0)
    assert kl.item() == pytest.approx(0.5 * math.log(4.0 / 3.0), rel=1e-12)
    assert attention_kl(q, k_ref, q, k_ref, lens, sm_scale=1.0).item() == 0.0
    assert attention_kl(q, k_ref, q, k_test, torch.tensor([0]), sm_scale=1.0).item() == 0.0  # empty row
    lp = attention_log_probs(q[0], k_test[0], 2, sm_scale=1.0)
    assert lp.exp()[0].tolist() == pytest.approx([0.75, 0.25])


def test_attention_kl_is_zero_for_identical_and_positive_for_quantized():
    d = make_kv("gaussian", 2, 4, 2, 32, 64, seed=3)
    assert torch.equal(attention_kl(d.q, d.k, d.q, d.k, d.seq_lens), torch.zeros(2, dtype=torch.float64))
    k_hat, _ = foscar.dequantize_kv(quantize_kv(d.k, d.v, bits=2, group_size=32), torch.float64)
    kl = attention_kl(d.q, d.k, d.q, k_hat, d.seq_lens)
    assert bool((kl > 0).all())


# ---------------------------------------------------------------------------
# synthetic data


def test_data_kinds_shapes_labels_determinism():
    for kind in DATA_KINDS:
        d = make_kv(kind, 2, 8, 2, 40, 64, seed=5)
        assert d.name == kind and d.label
        assert d.q.shape == (2, 8, 64) and d.k.shape == d.v.shape == (2, 2, 40, 64)
        assert d.q.dtype == d.k.dtype == d.v.dtype == torch.bfloat16
        assert d.seq_lens.tolist() == [40, 40]
        again = make_kv(kind, 2, 8, 2, 40, 64, seed=5)
        assert torch.equal(d.k, again.k) and torch.equal(d.v, again.v) and torch.equal(d.q, again.q)
    with pytest.raises(ValueError, match="kind"):
        make_kv("zeros", 1, 1, 1, 1, 64)
    with pytest.raises(ValueError, match="multiple"):
        make_kv("gaussian", 1, 3, 2, 8, 64)


def test_data_generators_refuse_what_is_not_an_int():
    for kwargs, name in ((dict(max_seq_len=64.0), "max_seq_len"), (dict(num_kv_heads=0), "num_kv_heads"),
                         (dict(batch=True), "batch")):
        args = dict(batch=1, num_qo_heads=4, num_kv_heads=2, max_seq_len=8, head_dim=64) | kwargs
        with pytest.raises(ValueError, match=f"{name}: expected a positive int, got {kwargs[name]!r}"):
            make_kv("gaussian", **args)
    with pytest.raises(ValueError, match="num_outliers: expected"):
        outlier_rope_kv(1, 4, 2, 8, 64, num_outliers=2.0)
    with pytest.raises(ValueError, match="df: expected a positive int, got True"):
        student_t_kv(1, 4, 2, 8, 64, df=True)
    assert make_kv("gaussian", np.int64(1), 4, 2, np.int32(8), 64).k.shape == (1, 2, 8, 64)  # numpy ints are ints


def test_outlier_channels_and_heavy_tails():
    d = make_kv("outlier-rope", 1, 2, 2, 512, 128, seed=0)
    # RoPE rotates each (i, i + D/2) pair: the pair's norm keeps the outlier's size at every position
    k = d.k.double()[0]  # [Hkv, L, D]
    pair_norm = (k[..., :64] ** 2 + k[..., 64:] ** 2).sqrt()  # [Hkv, L, 64]
    typical = pair_norm.median()
    big = pair_norm.mean(dim=1) > 8 * typical  # [Hkv, 64] pairs with an outlier
    assert 1 <= int(big.sum(dim=1).min()) and int(big.sum(dim=1).max()) <= 4
    assert 10 <= float(pair_norm.mean(dim=1).max()) <= 55
    g = make_kv("gaussian", 1, 2, 2, 512, 128, seed=0).v.double()
    t = make_kv("student-t", 1, 2, 2, 512, 128, seed=0).v.double()
    kurt = lambda x: float(((x - x.mean()) ** 4).mean() / x.var() ** 2)  # noqa: E731
    assert kurt(g) < 3.5 < 6 < kurt(t)


def test_rope_preserves_norms_and_relative_positions():
    x = torch.randn(3, 64, dtype=torch.float64)
    pos = torch.tensor([0, 7, 100])
    r = apply_rope(x, pos)
    assert torch.allclose(r.norm(dim=-1), x.norm(dim=-1))
    q, k = torch.randn(64, dtype=torch.float64), torch.randn(64, dtype=torch.float64)
    dot = lambda m, n: float(apply_rope(q[None], torch.tensor([m]))[0] @ apply_rope(k[None], torch.tensor([n]))[0])  # noqa: E731
    assert dot(10, 3) == pytest.approx(dot(107, 100), rel=1e-9)


# ---------------------------------------------------------------------------
# rotation


@pytest.mark.parametrize("n", [1, 2, 64, 128])
def test_hadamard_is_orthogonal(n):
    h = hadamard_matrix(n)
    assert torch.equal(h @ h.T, n * torch.eye(n, dtype=torch.float64))
    h /= 8.0  # the caller's copy: the cached matrix the rotations use must not change
    assert torch.equal(hadamard_matrix(n).abs(), torch.ones(n, n, dtype=torch.float64))
    s = random_signs(n, seed=1)
    r = rotate(torch.eye(n, dtype=torch.float64), s)  # the rotation matrix itself
    assert torch.allclose(r @ r.T, torch.eye(n, dtype=torch.float64), atol=1e-14)


def test_rotation_preserves_scores_and_inverts():
    d = make_kv("outlier-rope", 2, 4, 2, 24, 128, seed=2)
    s = random_signs(128, seed=9)
    q, k, v = (x.double() for x in (d.q, d.k, d.v))
    assert torch.allclose(unrotate(rotate(k, s), s), k, atol=1e-12)
    qk = torch.einsum("bhd,bld->bhl", q[:, :2], k[:, 0])
    qk_rot = torch.einsum("bhd,bld->bhl", rotate(q, s)[:, :2], rotate(k, s)[:, 0])
    assert torch.allclose(qk, qk_rot, rtol=1e-12, atol=1e-10)
    out = attention_reference(q, k, v, d.seq_lens)
    out_rot = unrotate(attention_reference(rotate(q, s), rotate(k, s), rotate(v, s), d.seq_lens), s)
    assert torch.allclose(out, out_rot, atol=1e-12)
    with pytest.raises(ValueError, match="power of two"):
        rotate(torch.zeros(2, 96), torch.ones(96))


def test_rotation_reduces_int2_error_on_outliers():
    d = make_kv("outlier-rope", 2, 4, 2, 256, 128, seed=0)
    ref = attention_reference(d.q, d.k, d.v, d.seq_lens)
    plain = output_errors(reference_decode(d.q, quantize_kv(d.k, d.v, bits=2, group_size=128)), ref).rel_l2
    s = random_signs(128, seed=1)
    q, k, v = (rotate(x, s).to(torch.bfloat16) for x in (d.q, d.k, d.v))
    rot = output_errors(unrotate(reference_decode(q, quantize_kv(k, v, bits=2, group_size=128)), s), ref).rel_l2
    assert float(rot.max()) < 0.8 * float(plain.max())


# ---------------------------------------------------------------------------
# mixed layout


def test_split_points():
    assert split_points(1000, 64, 256) == (64, 744)
    assert split_points(300, 64, 256) == (64, 64)  # no middle
    assert split_points(10, 64, 256) == (10, 10)
    assert split_points(0, 64, 256) == (0, 0)
    assert split_points(50, 0, 0) == (0, 50)


def test_mixed_all_bf16_equals_reference():
    d = make_kv("gaussian", 3, 4, 2, 40, 64, seed=4)
    lens = torch.tensor([40, 17, 0], dtype=torch.int32)
    cache = build_mixed_cache(d.k, d.v, bits=2, group_size=32, seq_lens=lens, num_sink=8, num_recent=32)
    assert cache.middle.max_seq_len == 0
    called = []
    out, lse = mixed_decode(d.q, cache, middle_decode=lambda *a: called.append(a), dtype=torch.float64, return_lse=True)
    ref, ref_lse = attention_reference(d.q, d.k, d.v, lens, return_lse=True)
    assert not called
    assert torch.allclose(out, ref, rtol=0, atol=1e-14)
    assert torch.allclose(lse[:2], ref_lse[:2], atol=1e-13) and bool(torch.isneginf(lse[2]).all())
    k_eff, v_eff = dequantize_mixed(cache)
    assert torch.equal(k_eff[0], d.k[0].double()) and torch.equal(v_eff[1, :, :17], d.v[1, :, :17].double())


@pytest.mark.parametrize("num_sink, num_recent", [(4, 8), (0, 8), (4, 0), (0, 0)])
def test_mixed_quantized_middle_matches_lse_merged_reference(num_sink, num_recent):
    d = make_kv("outlier-rope", 3, 8, 2, 48, 64, seed=6)
    lens = torch.tensor([48, 13, 5], dtype=torch.int32)
    cache = build_mixed_cache(d.k, d.v, bits=2, group_size=32, seq_lens=lens, num_sink=num_sink, num_recent=num_recent)
    mids = [max(0, n - min(num_sink, n) - num_recent) for n in lens.tolist()]
    assert cache.middle.seq_lens.tolist() == mids
    out, lse = mixed_decode(d.q, cache, middle_decode=fp64_middle, dtype=torch.float64, return_lse=True)
    k_eff, v_eff = dequantize_mixed(cache)
    ref, ref_lse = attention_reference(d.q, k_eff, v_eff, lens, return_lse=True)
    assert torch.allclose(out, ref, rtol=0, atol=1e-12)
    assert torch.allclose(lse, ref_lse, atol=1e-12)
    # the quantized middle really is quantized (the exact cache differs)
    if max(mids):
        assert not torch.allclose(ref, attention_reference(d.q, d.k, d.v, lens), atol=1e-3)


def test_merge_states_empty_parts():
    o = torch.randn(2, 3, 8, dtype=torch.float64)
    lse = torch.randn(2, 3, dtype=torch.float64)
    empty_o, empty_lse = torch.zeros_like(o), torch.full_like(lse, -math.inf)
    m, ml = merge_states(o, lse, empty_o, empty_lse, torch.float64)
    assert torch.equal(m, o) and torch.equal(ml, lse)
    m, ml = merge_states(empty_o, empty_lse, o, lse, torch.float64)
    assert torch.equal(m, o) and torch.equal(ml, lse)
    m, ml = merge_states(empty_o, empty_lse, empty_o, empty_lse, torch.float64)
    assert torch.equal(m, empty_o) and bool(torch.isneginf(ml).all())
    m, ml = merge_states(o, lse, o, lse, torch.float64)  # two equal halves
    assert torch.allclose(m, o) and torch.allclose(ml, lse + math.log(2.0))


def test_mixed_cache_checks_every_valid_token_at_its_position():
    # the NaN check ran on the re-indexed middle only: positions were the middle's, and sinks/recent unchecked
    k, v = torch.randn(2, 1, 40, 64), torch.randn(2, 1, 40, 64)
    k[1, 0, 10, 5] = float("nan")
    with pytest.raises(ValueError, match=r"k: expected finite values .* at \[b, h, t, c\] = \[1, 0, 10, 5\]"):
        build_mixed_cache(k, v, bits=2, group_size=64, num_sink=4, num_recent=8)
    k = torch.randn(2, 1, 40, 64, dtype=torch.float64)
    k[0, 0, 1, 0] = 1e39  # in a sink: stored as BF16 it would be inf
    with pytest.raises(ValueError, match=r"k: value 1e\+39 at \[b, h, t, c\] = \[0, 0, 1, 0\]"):
        build_mixed_cache(k, k.clone(), bits=2, group_size=64, num_sink=4, num_recent=8)
    with pytest.raises(ValueError, match="num_sink: expected a non-negative int, got True"):
        build_mixed_cache(v, v, num_sink=True)


def test_attention_kl_names_a_bad_length():
    q, k = torch.randn(1, 2, 8, dtype=torch.float64), torch.randn(1, 1, 5, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"seq_lens\[0\]: expected a length in \[0, max_seq_len=5\], got 6"):
        attention_kl(q, k, q, k, torch.tensor([6]))
    with pytest.raises(ValueError, match="seq_lens: expected dtype"):
        attention_kl(q, k, q, k, torch.tensor([4.9]))  # was truncated to 4
    assert attention_kl(q, k, q, k, torch.tensor([4], dtype=torch.int16)).item() == 0.0


def test_output_errors_of_batch_zero():
    e = output_errors(torch.zeros(0, 4, 64), torch.zeros(0, 4, 64))
    assert e.rel_l2.shape == e.max_abs.shape == e.cosine.shape == (0,)


def test_mixed_decode_with_the_triton_kernel(device):
    d = make_kv("gaussian", 2, 4, 1, 64, 64, seed=7, device=device)
    cache = build_mixed_cache(d.k, d.v, bits=4, group_size=32, seq_lens=d.seq_lens, num_sink=8, num_recent=16)
    out = mixed_decode(d.q, cache, backend="triton")
    all_exact = build_mixed_cache(d.k, d.v, bits=4, group_size=32, seq_lens=d.seq_lens, num_sink=64, num_recent=0)
    with pytest.raises(ValueError, match="q: expected dtype in {bfloat16}"):  # as where a middle is decoded
        mixed_decode(d.q.float(), all_exact, backend="triton")
    k_eff, v_eff = dequantize_mixed(cache)
    ref = attention_reference(d.q, k_eff, v_eff, d.seq_lens)
    assert float(output_errors(out, ref).rel_l2.max()) < 2e-2
