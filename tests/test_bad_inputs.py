"""Bad inputs get a clear error or the right answer, never a silent wrong one (issue 13, items
1-4; issue 11, "lengths the cache cannot hold"): strided index tensors, batch 0, group ranges
past fp32, NaN in the query, lengths and page tables the cache cannot hold.

CPU through the Triton interpreter (tiny shapes); the ``gpu`` cases run the CUDA kernel."""

import dataclasses

import pytest
import torch

import foscar
import foscar.rotation
from foscar.kernels.quantize_triton import append_kv_
from tests.test_decode_triton import _case

BF16_MAX = torch.finfo(torch.bfloat16).max  # 3.3895e38


def _issue_case(device, seq_lens=(40, 17), num_qo_heads=4, **kw):
    """The issue's case: batch 2, 1 KV head, head_dim 64, INT2, G=32."""
    return _case(device, batch=len(seq_lens), num_qo_heads=num_qo_heads, num_kv_heads=1, head_dim=64,
                 seq_lens=list(seq_lens), bits=2, group_size=32, seed=13, **kw)


def _strided(t: torch.Tensor) -> torch.Tensor:
    """A view of ``t``'s values with stride 2 (column 0 of a ``[n, 2]`` tensor; column 1 holds 5)."""
    wide = torch.full((*t.shape, 2), 5, dtype=t.dtype, device=t.device)
    wide[..., 0] = t
    view = wide[..., 0]
    assert not view.is_contiguous() and torch.equal(view, t)
    return view


# ---------------------------------------------------------------------------
# 1. strided index and metadata tensors: a ValueError naming the tensor


CONTIGUOUS_FIELDS = ("seq_lens", "k_scale", "k_offset", "v_scale", "v_offset", "k_codes")
PAGED_FIELDS = ("kv_indptr", "kv_indices", "kv_last_page_len", "k_scale", "v_offset")


@pytest.mark.parametrize("name", CONTIGUOUS_FIELDS)
def test_strided_field_of_a_contiguous_cache_is_refused(device, name):
    q, cache = _issue_case(device)
    bad = dataclasses.replace(cache, **{name: _strided(getattr(cache, name))})
    with pytest.raises(ValueError, match=f"^{name}: expected a contiguous tensor, got a strided view"):
        foscar.decode(q, bad)
    plan = foscar.plan_decode(cache, q.shape[1])
    with pytest.raises(ValueError, match=f"{name}: expected a contiguous tensor"):
        plan.run(q, bad)


@pytest.mark.parametrize("name", PAGED_FIELDS)
def test_strided_field_of_a_paged_cache_is_refused(device, name):
    q, cache = _issue_case(device)
    paged = foscar.paginate(cache, page_size=16)
    bad = dataclasses.replace(paged, **{name: _strided(getattr(paged, name))})
    with pytest.raises(ValueError, match=f"^{name}: expected a contiguous tensor, got a strided view"):
        foscar.decode(q, bad)
    plan = foscar.plan_decode(paged, q.shape[1])
    with pytest.raises(ValueError, match=f"{name}: expected a contiguous tensor"):
        plan.run(q, bad)


def test_strided_seq_lens_is_refused_by_append(device):
    _, cache = _issue_case(device)
    bad = dataclasses.replace(cache, seq_lens=_strided(torch.tensor([30, 10], dtype=torch.int32, device=device)))
    new = torch.randn(2, 1, 1, 64, device=device)
    with pytest.raises(ValueError, match="^seq_lens: expected a contiguous tensor"):
        foscar.append_kv(bad, new, new.clone())


def test_storage_offset_view_is_accepted(device):
    # contiguous views with a storage offset are fine: the kernels take data_ptr
    q, cache = _issue_case(device)
    shifted = torch.tensor([7, 40, 17], dtype=torch.int32, device=device)[1:]
    out = foscar.decode(q, dataclasses.replace(cache, seq_lens=shifted))
    assert torch.equal(out, foscar.decode(q, cache))


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
def test_gpu_strided_index_tensor_is_a_value_error_on_cuda(paged):
    q, cache = _issue_case(torch.device("cuda"))
    if paged:
        cache = foscar.paginate(cache, page_size=16)
        bad = dataclasses.replace(cache, kv_indices=_strided(cache.kv_indices))
    else:
        bad = dataclasses.replace(cache, seq_lens=_strided(cache.seq_lens))
    with pytest.raises(ValueError, match="expected a contiguous tensor"):
        foscar.decode(q, bad, backend="cuda")


# ---------------------------------------------------------------------------
# 2. batch of zero sequences: empty results


def _empty_cache(device, **kw):
    k = torch.zeros(0, 1, 8, 64, device=device)
    return foscar.quantize_kv(k, k.clone(), bits=2, group_size=32, **kw)


@pytest.mark.parametrize("k_layout", ["token", "channel"])
def test_batch_zero_quantize_and_paginate(device, k_layout):
    cache = _empty_cache(device, k_layout=k_layout)
    assert cache.k_codes.shape == (0, 1, 8, 16) and cache.seq_lens.shape == (0,)
    paged = foscar.paginate(cache, 16 if k_layout == "token" else 128)
    assert paged.batch_size == 0 and paged.kv_indptr.tolist() == [0] and paged.kv_indices.numel() == 0
    assert paged.lengths().shape == (0,)
    assert paged.to_contiguous().batch_size == 0


def test_batch_zero_append(device):
    cache = _empty_cache(device)
    new = torch.randn(0, 1, 3, 64, device=device)
    assert foscar.append_kv(cache, new, new.clone()) is cache and cache.seq_lens.shape == (0,)


def _check_empty_decode(fn, num_qo_heads=4):
    out = fn(False)
    assert out.shape == (0, num_qo_heads, 64) and out.dtype == torch.bfloat16
    out, lse = fn(True)
    assert out.shape == (0, num_qo_heads, 64) and lse.shape == (0, num_qo_heads) and lse.dtype == torch.float32


@pytest.mark.parametrize("paged", [False, True])
def test_batch_zero_decode_and_plan(device, paged):
    cache = _empty_cache(device)
    if paged:
        cache = foscar.paginate(cache, 16)
    q = torch.zeros(0, 4, 64, dtype=torch.bfloat16, device=device)
    _check_empty_decode(lambda lse: foscar.decode(q, cache, return_lse=lse))
    plan = foscar.plan_decode(cache, 4)
    _check_empty_decode(lambda lse: plan.run(q, cache, return_lse=lse))


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
def test_gpu_batch_zero_on_cuda(paged):
    cache = _empty_cache(torch.device("cuda"))
    if paged:
        cache = foscar.paginate(cache, 16)
    q = torch.zeros(0, 4, 64, dtype=torch.bfloat16, device="cuda")
    _check_empty_decode(lambda lse: foscar.decode(q, cache, return_lse=lse, backend="cuda"))
    plan = foscar.plan_decode(cache, 4, backend="cuda")
    _check_empty_decode(lambda lse: plan.run(q, cache, return_lse=lse))


# ---------------------------------------------------------------------------
# 3. finite values whose group range passes fp32's largest value


def _huge_k(device, bits=2):
    """``[1, 1, 4, 64]`` bf16 K: token 0's first group holds +-bf16 max (range 6.8e38, past
    fp32's 3.4e38) and a ramp in between; everything else ordinary."""
    g = torch.Generator().manual_seed(3)
    k = torch.randn(1, 1, 4, 64, generator=g)
    ramp = torch.linspace(-1.0, 1.0, 32) * BF16_MAX
    k[0, 0, 0, :32] = ramp
    return k.to(torch.bfloat16).to(device)


@pytest.mark.parametrize("bits", [2, 4])
def test_range_past_fp32_gives_finite_scales_codes_and_values(device, bits):
    k = _huge_k(device)
    cache = foscar.quantize_kv(k, k.clone(), bits=bits, group_size=32)
    assert bool(torch.isfinite(cache.k_scale).all()) and bool(torch.isfinite(cache.k_offset).all())
    kd32, _ = foscar.dequantize_kv(cache, torch.float32)
    kd64, _ = foscar.dequantize_kv(cache, torch.float64)
    assert bool(torch.isfinite(kd32).all())
    # each value within half a step of the exact one (the group's step is range / qmax)
    step = 2.0 * float(BF16_MAX) / ((1 << bits) - 1)
    x = k.double()
    assert float((kd64 - x)[0, 0, 0, :32].abs().max()) <= 0.5 * step * (1 + 1e-6)
    assert torch.allclose(kd32.double()[0, 0, 0, :32], kd64[0, 0, 0, :32], rtol=0, atol=1e-6 * float(BF16_MAX))
    # the ends are exact codes 0 and qmax; the other groups are untouched
    codes = foscar.quant.unpack_codes(cache.k_codes, bits)[0, 0, 0]
    assert int(codes[0]) == 0 and int(codes[31]) == (1 << bits) - 1
    plain = foscar.quantize_kv(k[..., 1:, :], k[..., 1:, :].clone(), bits=bits, group_size=32)
    assert torch.equal(plain.k_scale, cache.k_scale[:, :, 1:]) and torch.equal(plain.k_codes, cache.k_codes[:, :, 1:])


def test_range_past_fp32_channel_wise_k(device):
    g = torch.Generator().manual_seed(4)
    k = torch.randn(1, 1, 32, 64, generator=g).to(torch.bfloat16)
    k[0, 0, 0, 5], k[0, 0, 1, 5] = BF16_MAX, -BF16_MAX  # channel 5 of the one K block
    cache = foscar.quantize_kv(k.to(device), k.to(device), bits=2, group_size=32, k_layout="channel", k_block=32)
    assert bool(torch.isfinite(cache.k_scale).all())
    kd, _ = foscar.dequantize_kv(cache, torch.float32)
    assert bool(torch.isfinite(kd).all())
    assert float(kd[0, 0, 0, 5]) == pytest.approx(float(BF16_MAX), rel=1e-6)
    assert float(kd[0, 0, 1, 5]) == pytest.approx(-float(BF16_MAX), rel=1e-6)


@pytest.mark.parametrize("bits", [2, 4])
def test_range_past_fp32_append_matches_quantize_kv(device, bits):
    k = _huge_k(device)
    v = k.flip(-1).contiguous()
    want = foscar.quantize_kv(k, v, bits=bits, group_size=32)
    got = foscar.quantize_kv(torch.zeros_like(k), torch.zeros_like(v), bits=bits, group_size=32,
                             seq_lens=torch.zeros(1, dtype=torch.int32, device=device))
    append_kv_(got, k, v)
    assert bool(torch.isfinite(got.k_scale).all()) and bool(torch.isfinite(got.v_scale).all())
    for name in foscar.quant.CACHE_TENSORS:
        assert torch.equal(getattr(got, name), getattr(want, name)), name


def test_float64_past_fp32_is_refused_naming_the_position(device):
    # e.g. a Hadamard rotation (fp64) of bf16-max values: finite in fp64, past the format's fp32
    k = foscar.rotation.rotate(_huge_k(device), foscar.rotation.random_signs(64))
    assert bool(torch.isfinite(k).all()) and float(k.abs().max()) > torch.finfo(torch.float32).max
    with pytest.raises(ValueError, match=r"^k: value -?[0-9.e+]+ at \[b, h, t, c\] = \[0, 0, 0, [0-9]+\] is past the format's largest "
                                         r"magnitude 3.403e\+38"):
        foscar.quantize_kv(k, k.clone(), bits=2, group_size=32)


def _check_large_decode(device, backend, magnitude=1e30, bits=2, num_qo_heads=4):
    """Decode over a cache holding values up to the documented decode bound (quant.py,
    "Largest magnitude") against the fp64 reference; one KV head under ``num_qo_heads`` query heads (the CUDA
    kernel's packed integer PV at <= 4, its two-mma integer PV at 5-8, INT4's too since bench/NOTES.md §102)."""
    g = torch.Generator().manual_seed(5)
    k = torch.randn(2, 1, 40, 64, generator=g)
    v = torch.randn(2, 1, 40, 64, generator=g)
    k[0, 0, 3, :32] = torch.linspace(-1.0, 1.0, 32) * magnitude
    v[1, 0, 7, 32:] = torch.linspace(1.0, -1.0, 32) * magnitude
    cache = foscar.quantize_kv(k.to(device), v.to(device), bits=bits, group_size=32)
    q = torch.randn(2, num_qo_heads, 64, generator=g).to(torch.bfloat16).to(device)
    out, lse = foscar.decode(q, cache, return_lse=True, backend=backend)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(lse).all())
    for b in range(2):
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < 1e-2, f"sequence {b}: relative L2 error {err:.3g}"
    assert torch.allclose(lse.double(), ref_lse, rtol=1e-3, atol=1e-3)


def test_decode_at_the_documented_magnitude(device):
    _check_large_decode(device, "triton")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
@pytest.mark.parametrize("bits, num_qo_heads", [(2, 4), (2, 8), (4, 4), (4, 8)])
def test_gpu_decode_at_the_documented_magnitude(backend, bits, num_qo_heads):
    _check_large_decode(torch.device("cuda"), backend, bits=bits, num_qo_heads=num_qo_heads)


# ---------------------------------------------------------------------------
# 4. NaN in the query: NaN output row and NaN LSE, other rows unchanged


def _check_nan_query(q, cache, **kw):
    out, lse = (t.clone() for t in foscar.decode(q, cache, return_lse=True, **kw))
    qn = q.clone()
    qn[0, 1, 3] = float("nan")
    out_n, lse_n = foscar.decode(qn, cache, return_lse=True, **kw)
    assert bool(torch.isnan(out_n[0, 1]).all()) and bool(torch.isnan(lse_n[0, 1]))
    keep = torch.ones(lse.shape, dtype=torch.bool, device=lse.device)
    keep[0, 1] = False
    assert torch.equal(out_n[keep], out[keep]) and torch.equal(lse_n[keep], lse[keep])
    assert not torch.isnan(lse_n[keep]).any()


@pytest.mark.parametrize("num_splits", [None, 1, 3])
def test_nan_query_gives_nan_lse(device, num_splits):
    q, cache = _issue_case(device)
    _check_nan_query(q, cache, num_splits=num_splits, backend="triton")


def test_nan_query_channel_wise_and_paged(device):
    q, cache = _issue_case(device)
    k, v = foscar.dequantize_kv(cache)
    ch = foscar.quantize_kv(k, v, bits=2, group_size=32, seq_lens=cache.seq_lens, k_layout="channel", k_block=32)
    _check_nan_query(q, ch, backend="triton")
    _check_nan_query(q, foscar.paginate(cache, 16, shuffle=True, generator=torch.Generator().manual_seed(0)),
                     backend="triton")


def test_empty_sequence_lse_stays_minus_inf_next_to_a_nan_row(device):
    q, cache = _issue_case(device, seq_lens=(40, 0))
    q[0, 1, 3] = float("nan")
    out, lse = foscar.decode(q, cache, return_lse=True, backend="triton")
    assert bool(torch.isnan(lse[0, 1])) and bool(torch.isneginf(lse[1]).all()) and not out[1].any()


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_gpu_nan_query_gives_nan_lse(backend):
    q, cache = _issue_case(torch.device("cuda"))
    _check_nan_query(q, cache, backend=backend)


# ---------------------------------------------------------------------------
# 5. lengths and page tables the cache cannot hold: validate() names tensor, sequence, range


@pytest.mark.parametrize("lens, match", [
    ([40, 41], r"seq_lens: sequence 1 has length 41, expected 0 <= length <= max_seq_len=40"),
    ([-1, 17], r"seq_lens: sequence 0 has length -1, expected 0 <= length <= max_seq_len=40"),
])
def test_seq_lens_out_of_capacity_raises(device, lens, match):
    q, cache = _issue_case(device)
    bad = dataclasses.replace(cache, seq_lens=torch.tensor(lens, dtype=torch.int32, device=device))
    with pytest.raises(ValueError, match=match):
        bad.validate()
    with pytest.raises(ValueError, match=match):
        foscar.decode(q, bad)
    with pytest.raises(ValueError, match=match):
        foscar.plan_decode(bad, q.shape[1])
    bad.validate(check_values=False)  # shapes only: no sync


def _paged_case(device):
    # lengths [40, 17] in pages of 16: 3 + 2 pages, 5 pages in the pool plus one spare
    q, cache = _issue_case(device)
    paged = foscar.paginate(cache, 16, extra_pages=1)
    assert paged.kv_indptr.tolist() == [0, 3, 5] and paged.kv_last_page_len.tolist() == [8, 1]
    return q, paged


def _i32(values, device):
    return torch.tensor(values, dtype=torch.int32, device=device)


@pytest.mark.parametrize("field, values, match", [
    ("kv_last_page_len", [17, 1], r"kv_last_page_len: sequence 0 has 3 page\(s\) and kv_last_page_len 17, "
                                  r"expected 1 <= kv_last_page_len <= page_size=16"),
    ("kv_last_page_len", [8, 0], r"kv_last_page_len: sequence 1 has 2 page\(s\) and kv_last_page_len 0"),
    ("kv_indptr", [1, 3, 5], r"kv_indptr: expected kv_indptr\[0\] == 0, got 1"),
    ("kv_indptr", [0, 3, 2], r"kv_indptr: expected non-decreasing values, got kv_indptr\[1\]=3 > kv_indptr\[2\]=2 "
                             r"\(sequence 1\)"),
    ("kv_indptr", [0, 3, 6], r"kv_indptr: sequence 1's pages end at kv_indptr\[2\]=6, past len\(kv_indices\)=5"),
    ("kv_indices", [0, 1, 2, 6, 4], r"kv_indices: entry 3 \(sequence 1\) is page 6, expected a page id in "
                                    r"\[0, num_pages=6\)"),
    ("kv_indices", [0, -1, 2, 3, 4], r"kv_indices: entry 1 \(sequence 0\) is page -1"),
])
def test_page_table_the_cache_cannot_hold_raises(device, field, values, match):
    q, paged = _paged_case(device)
    bad = dataclasses.replace(paged, **{field: _i32(values, device)})
    with pytest.raises(ValueError, match=match):
        bad.validate()
    with pytest.raises(ValueError, match=match):
        foscar.decode(q, bad)


def test_paged_length_past_max_seq_len_and_empty_sequence_rules(device):
    q, paged = _paged_case(device)
    with pytest.raises(ValueError, match=r"kv_indptr / kv_last_page_len: sequence 0 has length 40 .*"
                                         r"expected 0 <= length <= max_seq_len=39"):
        dataclasses.replace(paged, max_seq_len=39).validate()
    # a sequence without pages must say kv_last_page_len 0 (the module docstring's rule)
    empty = dataclasses.replace(paged, kv_indptr=_i32([0, 3, 3], device), kv_last_page_len=_i32([8, 4], device))
    with pytest.raises(ValueError, match="kv_last_page_len: sequence 1 has no pages and kv_last_page_len 4, expected 0"):
        empty.validate()
    ok = dataclasses.replace(empty, kv_last_page_len=_i32([8, 0], device)).validate()
    assert ok.lengths().tolist() == [40, 0]
    # entries of kv_indices past kv_indptr[batch] are never read, so not checked
    dataclasses.replace(paged, kv_indices=_i32([0, 1, 2, 3, 4, 99], device)).validate()


def test_paginate_checks_the_lengths(device):
    _, cache = _issue_case(device)
    bad = dataclasses.replace(cache, seq_lens=_i32([41, 17], device))
    with pytest.raises(ValueError, match="seq_lens: sequence 0 has length 41"):
        foscar.paginate(bad, 16)


def test_paginate_refuses_a_shuffle_that_is_not_a_bool_and_a_fill_that_is_not_a_number(device):
    """shuffle="no" shuffled the pages (read by truthiness); fill="x" failed inside torch.full."""
    _, cache = _issue_case(device)
    for shuffle in ("no", 0, None):
        with pytest.raises(ValueError, match=r"^shuffle: expected True or False, got "):
            foscar.paginate(cache, 16, shuffle=shuffle)
    for fill in ("x", True, torch.tensor(1.0)):
        with pytest.raises(ValueError, match=r"^fill: expected None or a real number \(the unused pages' scales"):
            foscar.paginate(cache, 16, fill=fill)
    paged = foscar.paginate(cache, 16, extra_pages=2, fill=1e30)
    assert paged.kv_indices.tolist() == list(range(len(paged.kv_indices)))  # shuffle=False: in order
    assert float(paged.k_scale[-1].max()) == float(torch.tensor(1e30))  # an unused page (fp32)


def test_reference_decode_refuses_a_k_operand_dtype_it_cannot_round_to(device):
    """torch.int8 rounded K to integers and returned a number; a string failed inside torch."""
    q, cache = _issue_case(device)
    for bad in (torch.int8, "bfloat16", torch.float64):
        with pytest.raises(ValueError, match=r"^k_operand_dtype: expected None, torch.bfloat16, torch.float16 or "):
            foscar.reference_decode(q, cache, k_operand_dtype=bad)
    assert torch.isfinite(foscar.reference_decode(q, cache, k_operand_dtype=torch.bfloat16)).all()


def test_unpack_codes_refuses_a_0_dim_tensor():
    from foscar.quant import unpack_codes

    with pytest.raises(ValueError, match=r"^packed: expected at least one dimension"):
        unpack_codes(torch.tensor(7, dtype=torch.uint8), 2)


def test_run_clamps_lengths_past_capacity(device):
    # plan.run reads no values on the host; the Triton kernel clamps a length past capacity
    # (append_kv(check_capacity=False) can produce one) instead of reading the next rows
    q, cache = _issue_case(device)
    plan = foscar.plan_decode(cache, q.shape[1], backend="triton")
    want = foscar.decode(q, dataclasses.replace(cache, seq_lens=_i32([40, 40], device)), backend="triton").clone()
    got = plan.run(q, dataclasses.replace(cache, seq_lens=_i32([40, 90], device)))
    assert torch.equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
def test_gpu_decode_and_append_capture_without_host_checks(paged):
    # validate() reads the lengths on the host, except while a CUDA graph is captured:
    # foscar.decode (what `foscar bench` captures) and append_kv(check_capacity=False) stay capturable
    dev = torch.device("cuda")
    q, cache = _issue_case(dev)
    decode_cache = foscar.paginate(cache, 16) if paged else cache
    want = foscar.decode(q, decode_cache).clone()  # compile / first launch outside the capture
    new = torch.randn(2, 1, 1, 64, device=dev)
    room = foscar.quantize_kv(torch.zeros(2, 1, 4, 64, device=dev), torch.zeros(2, 1, 4, 64, device=dev), 2, 32,
                              seq_lens=torch.zeros(2, dtype=torch.int32, device=dev))
    foscar.append_kv(room, new, new.clone())
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = foscar.decode(q, decode_cache)
        foscar.append_kv(room, new, new.clone(), check_capacity=False)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, want) and room.seq_lens.tolist() == [2, 2]


# ---------------------------------------------------------------------------
# 6. a review's findings (session 41): silent wrong numbers and crashes deep inside the API


def test_quantize_kv_keeps_its_own_seq_lens(device):
    """Two layers quantized from one seq_lens tensor: appending to one must not move the other's lengths
    (the cache aliased the caller's tensor, and append_kv advanced it in place for both)."""
    lens = torch.tensor([30, 17], dtype=torch.int32, device=device)
    g = torch.Generator(device="cpu").manual_seed(3)
    layers = [foscar.quantize_kv(*(torch.randn(2, 1, 40, 64, generator=g).to(device) for _ in range(2)), bits=2,
                                 group_size=32, seq_lens=lens) for _ in range(2)]
    assert layers[0].seq_lens is not lens and layers[0].seq_lens.data_ptr() != layers[1].seq_lens.data_ptr()
    new = [torch.randn(2, 1, 1, 64, generator=g).to(device) for _ in range(2)]
    foscar.append_kv(layers[0], *new)
    foscar.append_kv(layers[1], *new)
    assert lens.tolist() == [30, 17]
    assert layers[0].seq_lens.tolist() == layers[1].seq_lens.tolist() == [31, 18]
    # each layer's sequence 0 now reads 31 tokens, all written
    for cache in layers:
        k, _ = foscar.dequantize_kv(cache, batch_index=0)
        assert k.shape[1] == 31 and torch.isfinite(k).all()


@pytest.mark.parametrize("value,kind", [(2.0, "float"), (True, "bool")])
def test_float_or_bool_bits_are_refused(value, kind):
    k = torch.randn(1, 1, 8, 64)
    with pytest.raises(ValueError, match=rf"^bits: expected one of \[2, 4\] \(a Python int\), got .* \({kind}\)"):
        foscar.quantize_kv(k, k, bits=value, group_size=32)
    with pytest.raises(ValueError, match=r"^group_size: expected one of \[32, 64, 128\] \(a Python int\)"):
        foscar.quantize_kv(k, k, bits=2, group_size=32.0)


def test_nan_in_padding_is_accepted_and_named_at_a_valid_token(device):
    """check_finite looks at the valid tokens only (a torch.empty buffer's padding may hold anything) and names
    the position of the first bad value; decode over such a cache equals decode over a clean one."""
    q, cache = _issue_case(device)
    k, v = foscar.dequantize_kv(cache)
    lens = cache.seq_lens.clone()
    k_pad, v_pad = k.clone(), v.clone()
    k_pad[1, :, 17:] = float("nan")  # sequence 1 holds 17 tokens
    v_pad[1, :, 30:] = float("inf")
    clean = foscar.quantize_kv(k, v, bits=2, group_size=32, seq_lens=lens)
    padded = foscar.quantize_kv(k_pad, v_pad, bits=2, group_size=32, seq_lens=lens)
    assert torch.equal(foscar.decode(q, padded), foscar.decode(q, clean))
    k_pad[1, 0, 16, 5] = float("nan")  # the last valid token of sequence 1
    with pytest.raises(ValueError, match=r"^k: expected finite values at the valid tokens .* at \[b, h, t, c\] = \[1, 0, 16, 5\]"):
        foscar.quantize_kv(k_pad, v_pad, bits=2, group_size=32, seq_lens=lens)


def test_dequantize_kv_refuses_a_paged_cache_a_bad_dtype_and_a_bad_index(device):
    _, cache = _issue_case(device)
    paged = foscar.paginate(cache, page_size=16)
    with pytest.raises(ValueError, match=r"^cache: expected a QuantizedKVCache, got PagedQuantizedKVCache; take "
                                         r"cache.to_contiguous\(\) first"):
        foscar.dequantize_kv(paged)
    with pytest.raises(ValueError, match="^dtype: expected one of float16, bfloat16, float32, float64"):
        foscar.dequantize_kv(cache, dtype=torch.int32)
    for index in (2, -1, True, 0.0):
        with pytest.raises(ValueError, match=r"^batch_index: expected a Python int in \[0, 2\)"):
            foscar.dequantize_kv(cache, batch_index=index)
    k, _ = foscar.dequantize_kv(paged.to_contiguous(), batch_index=1)
    assert k.shape == (1, 17, 64)


def test_dequantize_kv_refuses_a_mis_described_cache():
    """A channel-wise cache relabelled with another k_block expanded tokens 32..39 with block 0's scales (max error
    307 here), and a relabelled group size or bit width failed inside torch's reshape: dequantize_kv validates first."""
    k = torch.randn(1, 1, 40, 64, generator=torch.Generator().manual_seed(0))
    k[:, :, 32:] *= 100
    cache = foscar.quantize_kv(k, k.clone(), bits=4, group_size=32, k_layout="channel", k_block=32)
    with pytest.raises(ValueError, match=r"^k_scale: expected shape \[1, 1, 1, 64\], got \[1, 1, 2, 64\]"):
        foscar.dequantize_kv(dataclasses.replace(cache, k_block=64))
    token = foscar.quantize_kv(k, k.clone(), bits=2, group_size=32)
    for wrong in (dict(group_size=64), dict(bits=4)):
        with pytest.raises(ValueError, match=r"^(v_scale|v_codes|k_codes|k_scale): expected shape"):
            foscar.dequantize_kv(dataclasses.replace(token, **wrong))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_dequantize_kv_to_16_bits_rounds_the_fp32_values_once(dtype):
    """The 16-bit results are the fp32 ones rounded once: the affine map used to run in the 16-bit type, where the
    scale, offset, product and sum were each rounded (a group from -100.3 to 0.1 gave 0.0 for 0.0999 in bf16, and
    23% of the bf16 values of an INT4 cache of randn * 3 + 20 differed from the rounded fp32 ones)."""
    g = torch.Generator().manual_seed(3)
    k = torch.randn(2, 2, 64, 128, generator=g) * 3 + 20
    k[0, 0, 0, :32] = torch.linspace(-100.3, 0.1, 32)
    for bits, group_size in ((2, 32), (4, 128)):
        cache = foscar.quantize_kv(k, -k, bits=bits, group_size=group_size)
        k32, v32 = foscar.dequantize_kv(cache, torch.float32)
        k16, v16 = foscar.dequantize_kv(cache, dtype)
        assert k16.dtype == v16.dtype == dtype
        assert torch.equal(k16, k32.to(dtype)) and torch.equal(v16, v32.to(dtype))
        kb, _ = foscar.dequantize_kv(cache, dtype, batch_index=1)
        assert torch.equal(kb, k32[1].to(dtype))


def test_attention_reference_refuses_lengths_it_would_cut_or_drop():
    q, k = torch.randn(2, 4, 64), torch.randn(2, 1, 40, 64)
    with pytest.raises(ValueError, match=r"^seq_lens: expected shape \[2\], got \[1\]"):
        foscar.attention_reference(q, k, k, torch.tensor([40]))
    with pytest.raises(ValueError, match=r"^seq_lens: sequence 0 has length 99, expected 0 <= length <= max_seq_len=40"):
        foscar.attention_reference(q, k, k, torch.tensor([99, 17]))
    with pytest.raises(ValueError, match=r"^k: expected shape \[2, \*, \*, 64\], got \[3, 1, 40, 64\]"):
        foscar.attention_reference(q, torch.randn(3, 1, 40, 64), torch.randn(3, 1, 40, 64), torch.tensor([4, 4]))
    with pytest.raises(ValueError, match="^seq_lens: expected an integer dtype, got float32"):
        foscar.attention_reference(q, k, k, torch.tensor([4.0, 4.0]))
    out = foscar.attention_reference(q, k, k, torch.tensor([40, 0]))
    assert torch.isfinite(out).all() and not out[1].any()


def test_reference_decode_refuses_lengths_and_indices_out_of_range(device):
    q, cache = _issue_case(device)
    with pytest.raises(ValueError, match=r"^batch_indices: expected Python ints in \[0, 2\), got 5"):
        foscar.reference_decode(q, cache, batch_indices=[5])
    long = dataclasses.replace(cache, seq_lens=torch.tensor([41, 17], dtype=torch.int32, device=device))
    with pytest.raises(ValueError, match="^seq_lens: sequence 0 has length 41"):
        foscar.reference_decode(q, long)
    from foscar.reference import folded_decode_torch
    with pytest.raises(ValueError, match=r"^operand: expected one of \['bf16', 'fp8'\], got 'int8'"):
        folded_decode_torch(q, cache, operand="int8")
    with pytest.raises(ValueError, match="^cache: expected a QuantizedKVCache, got PagedQuantizedKVCache"):
        folded_decode_torch(q, foscar.paginate(cache, page_size=16))


@pytest.mark.parametrize("sm_scale", [torch.tensor(0.125), float("nan"), float("inf"), "0.1", True])
def test_sm_scale_must_be_a_finite_float(device, sm_scale):
    q, cache = _issue_case(device)
    with pytest.raises(ValueError, match="^sm_scale: expected a finite float or None, got ") as e:
        foscar.decode(q, cache, sm_scale=sm_scale)
    assert ("pass float" in str(e.value)) != isinstance(sm_scale, float)  # (a NaN or Inf gets no float() hint)
    with pytest.raises(ValueError, match="^sm_scale: expected a finite float or None"):
        foscar.plan_decode(cache, q.shape[1], sm_scale=sm_scale)
    # the references too: a tensor scale used to pass through, NaN gave NaN rows
    from foscar.reference import attention_reference, folded_decode_torch
    with pytest.raises(ValueError, match="^sm_scale: expected a finite float or None"):
        foscar.reference_decode(q, cache, sm_scale=sm_scale)
    with pytest.raises(ValueError, match="^sm_scale: expected a finite float or None"):
        folded_decode_torch(q, cache, sm_scale=sm_scale)
    k = v = torch.zeros(q.shape[0], cache.num_kv_heads, 4, cache.head_dim, device=q.device)
    with pytest.raises(ValueError, match="^sm_scale: expected a finite float or None"):
        attention_reference(q, k, v, torch.zeros(q.shape[0], dtype=torch.int32, device=q.device), sm_scale=sm_scale)


def test_plan_run_refuses_a_non_cache(device):
    q, cache = _issue_case(device)
    plan = foscar.plan_decode(cache, q.shape[1])
    for bad in (None, cache.k_codes):
        with pytest.raises(ValueError, match="^cache: expected a QuantizedKVCache or PagedQuantizedKVCache"):
            plan.run(q, bad)


def test_num_splits_true_is_refused(device):
    q, cache = _issue_case(device)
    with pytest.raises(ValueError, match="^num_splits: expected a positive int or None, got True"):
        foscar.decode(q, cache, num_splits=True)


def test_lengths_past_2_31_compare_in_int64():
    from foscar.quant import check_lengths
    check_lengths("seq_lens", torch.tensor([40], dtype=torch.int32), 2**31)  # fits: no error
    with pytest.raises(ValueError, match=r"sequence 0 has length -1"):
        check_lengths("seq_lens", torch.tensor([-1], dtype=torch.int32), 2**31)


def test_paged_run_past_the_planned_capacity_reads_every_listed_page(device):
    """plan.run checks no lengths: a paged sequence whose pages pass the plan's max_seq_len is read whole by
    both kernels (the Triton kernel's splits covered only the planned capacity and cut it silently)."""
    q, cache = _issue_case(device, seq_lens=(300, 17))
    paged = foscar.paginate(cache, page_size=16)  # sequence 0 in 19 pages
    stale = dataclasses.replace(paged, max_seq_len=40)  # the bound the plan below was made for
    pages0 = paged.kv_indices[:3]
    small = dataclasses.replace(paged, kv_indptr=torch.tensor([0, 3, 5], dtype=torch.int32, device=device),
                                kv_indices=torch.cat([pages0, paged.kv_indices[19:21]]),
                                kv_last_page_len=torch.tensor([8, 1], dtype=torch.int32, device=device),
                                max_seq_len=40)
    ref = foscar.reference_decode(q, paged).float()
    for backend in ("triton", "auto"):
        plan = foscar.plan_decode(small, q.shape[1], backend=backend)
        out = plan.run(q, stale).float()
        err = ((out - ref).norm(dim=(1, 2)) / ref.norm(dim=(1, 2))).max()
        assert err < 1e-2, (backend, float(err))


@pytest.mark.parametrize("bad", [None, torch.zeros(2)])
def test_decode_refuses_what_is_not_a_cache(device, bad):
    q, _ = _issue_case(device)
    with pytest.raises(ValueError, match="^cache: expected a QuantizedKVCache or PagedQuantizedKVCache"):
        foscar.decode(q, bad)
    with pytest.raises(ValueError, match="^cache: expected a QuantizedKVCache or PagedQuantizedKVCache"):
        foscar.plan_decode(bad, 4)


def test_hints_fit_what_was_wrong():
    # "pass int(x)" / "pass float(sm_scale)" only where the type was wrong, not for an int out of range or a NaN
    from foscar._validate import softmax_scale

    k = torch.randn(2, 1, 16, 64)
    cache = foscar.quantize_kv(k, k.clone(), bits=4, group_size=64)
    with pytest.raises(ValueError, match=r"batch_index: expected a Python int in \[0, 2\), got 2$"):
        foscar.dequantize_kv(cache, batch_index=2)
    with pytest.raises(ValueError, match=r"got 1.0 \(float\); pass int\(x\)"):
        foscar.dequantize_kv(cache, batch_index=1.0)
    with pytest.raises(ValueError, match=r"sm_scale: expected a finite float or None, got nan$"):
        softmax_scale(float("nan"), 64)
    with pytest.raises(TypeError, match="seq_lens: expected a torch.Tensor, got list"):
        foscar.quantize_kv(k, k.clone(), bits=4, group_size=64, seq_lens=[16, 8])


# ---------------------------------------------------------------------------
# found by a newcomer's audit (session 75): each was an AttributeError, IndexError or RuntimeError from deep
# inside, a message that blamed the wrong tensor, or a flag taken by truthiness


def test_plan_run_refuses_a_query_that_is_not_a_tensor(device):
    q, cache = _issue_case(device)
    plan = foscar.plan_decode(cache, q.shape[1])
    with pytest.raises(TypeError, match="^q: expected a torch.Tensor, got list"):
        plan.run(q.tolist(), cache)


def test_a_hand_built_cache_without_codes_is_named(device):
    q, cache = _issue_case(device)
    bad = dataclasses.replace(cache, k_codes=None)
    with pytest.raises(TypeError, match="^k_codes: expected a torch.Tensor, got NoneType"):
        foscar.decode(q, bad)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, "float64"])
def test_the_references_compute_in_float64_or_float32_only(device, dtype):
    from foscar.reference import folded_decode_torch

    q, cache = _issue_case(device)
    match = r"^dtype: expected torch.float64 or torch.float32, got"
    with pytest.raises(ValueError, match=match):
        foscar.reference_decode(q, cache, dtype=dtype)
    with pytest.raises(ValueError, match=match):
        folded_decode_torch(q, cache, dtype=dtype)
    k = torch.randn(q.shape[0], cache.num_kv_heads, 4, cache.head_dim, device=q.device)
    with pytest.raises(ValueError, match=match):
        foscar.attention_reference(q, k, k, torch.zeros(q.shape[0], dtype=torch.int32, device=q.device), dtype=dtype)
    assert foscar.reference_decode(q, cache, dtype=torch.float32).dtype == torch.float32  # both allowed ones work


def test_pack_codes_refuses_a_0_dim_tensor():
    from foscar.quant import pack_codes

    with pytest.raises(ValueError, match=r"^codes: expected at least one dimension"):
        pack_codes(torch.tensor(1, dtype=torch.uint8), 2)


def test_a_page_table_whose_batch_disagrees_names_kv_indptr(device):
    q, paged = _paged_case(device)
    bad = dataclasses.replace(paged, kv_indptr=paged.kv_indptr[:2].clone())  # batch 1, kv_last_page_len has 2
    with pytest.raises(ValueError, match=r"^kv_last_page_len: expected shape \[1\] \(the batch that kv_indptr's 2 "
                                         r"entries give\), got \[2\]"):
        bad.validate(check_values=False)


def test_quantize_kv_refuses_no_kv_heads(device):
    k = torch.randn(1, 0, 8, 64, device=device)
    with pytest.raises(ValueError, match=r"^k: expected at least one KV head \(dimension 1\), got shape \[1, 0, 8"):
        foscar.quantize_kv(k, k.clone(), bits=2, group_size=32)


@pytest.mark.parametrize("value", [None, 0, "no"])
def test_flags_must_be_bools(device, value):
    q, cache = _issue_case(device)
    k = torch.randn(1, 1, 8, 64, device=device)
    with pytest.raises(ValueError, match=f"^check_finite: expected True or False, got {value!r}"):
        foscar.quantize_kv(k, k.clone(), bits=2, group_size=32, check_finite=value)
    with pytest.raises(ValueError, match=f"^return_lse: expected True or False, got {value!r}"):
        foscar.decode(q, cache, return_lse=value)
    plan = foscar.plan_decode(cache, q.shape[1])
    with pytest.raises(ValueError, match=f"^return_lse: expected True or False, got {value!r}"):
        plan.run(q, cache, return_lse=value)
    with pytest.raises(ValueError, match=f"^return_lse: expected True or False, got {value!r}"):
        foscar.reference_decode(q, cache, return_lse=value)


def test_rotation_refuses_what_it_cannot_rotate():
    """An int dtype truncated x and returned a wrong float; a 0-dim tensor, a list or a float head_dim failed deep
    inside (IndexError, AttributeError, TypeError)."""
    from foscar.rotation import random_signs, rotate, unrotate

    signs = random_signs(64)
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(2))
    for fn in (rotate, unrotate):
        with pytest.raises(ValueError, match=r"^dtype: expected torch.float64 or torch.float32, got torch.int32"):
            fn(x, signs, torch.int32)
        with pytest.raises(ValueError, match=r"^(x|y): expected at least one dimension"):
            fn(torch.tensor(1.0), signs)
        with pytest.raises(TypeError, match=r"^(x|y): expected a torch.Tensor"):
            fn([1.0] * 64, signs)
    with pytest.raises(ValueError, match=r"^head_dim: the Walsh-Hadamard transform needs a power of two \(an int\), "
                                         r"got 64.0"):
        random_signs(64.0)
    assert torch.allclose(unrotate(rotate(x, signs), signs), x.double(), atol=1e-12)


def test_rotation_reads_one_cached_hadamard_matrix_per_device_and_dtype():
    """rotate / unrotate copied the matrix from the host at every call (four times a layer and decode step in
    foscar.hf on a GPU: a pageable copy that waits for the stream); they now read one cached copy, which
    hadamard_matrix's callers cannot modify (they get their own)."""
    from foscar import rotation

    rotation._hadamard_on.cache_clear()
    x, signs = torch.randn(2, 32), rotation.random_signs(32)
    for _ in range(3):
        rotation.unrotate(rotation.rotate(x, signs, torch.float32), signs, torch.float32)
    info = rotation._hadamard_on.cache_info()
    assert (info.misses, info.hits) == (1, 5)
    mine = rotation.hadamard_matrix(32, torch.float32)
    mine.zero_()
    assert torch.equal(rotation._hadamard_on(32, torch.float32, torch.device("cpu")).abs(), torch.ones(32, 32))


def test_attend_all_is_attention_reference_where_every_sequence_holds_every_token():
    """foscar.hf's sinks and recent window take the batched attend_all (no lengths read on the host)."""
    from foscar.reference import attend_all

    g = torch.Generator().manual_seed(4)
    q = torch.randn(3, 8, 64, generator=g)
    k, v = torch.randn(3, 2, 5, 64, generator=g), torch.randn(3, 2, 5, 64, generator=g)
    out, lse = attend_all(q, k, v, 0.125)
    ref, ref_lse = foscar.attention_reference(q, k, v, torch.full((3,), 5), sm_scale=0.125, dtype=torch.float32,
                                              return_lse=True)
    assert out.dtype == lse.dtype == torch.float32
    assert torch.allclose(out, ref, atol=1e-6) and torch.allclose(lse, ref_lse, atol=1e-6)


def test_mixed_decode_refuses_a_cache_that_is_not_mixed(device):
    from foscar.mixed import mixed_decode

    q, cache = _issue_case(device)
    with pytest.raises(ValueError, match=r"^cache: expected a MixedKVCache \(foscar.mixed.build_mixed_cache\), got "
                                         r"QuantizedKVCache \(a quantized cache alone: foscar.decode\)"):
        mixed_decode(q, cache)
