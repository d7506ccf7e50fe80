"""Paged caches (FlashInfer-style kv_indptr / kv_indices / kv_last_page_len) through the Triton kernel."""

import pytest
import torch

import foscar
from tests.test_decode_triton import TOL, _case


def _check_paged(q, cache, paged, num_splits=None):
    out, lse = foscar.decode(q, paged, num_splits=num_splits, return_lse=True)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert torch.equal(paged.lengths().cpu(), cache.seq_lens.cpu())
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < TOL, f"sequence {b}: relative L2 error {err:.3g}"
        assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)
    # the same numbers as the contiguous kernel on the same tokens
    flat = foscar.decode(q, cache, num_splits=num_splits, backend="triton")
    assert float((out.float() - flat.float()).norm()) <= 1e-2 * float(flat.float().norm()) + 1e-6


@pytest.mark.parametrize("bits, group_size", [(2, 128), (4, 32)])
def test_paged_last_page_full_single_token_and_empty(device, bits, group_size):
    # page 16: 48 fills its last page exactly, 17 leaves one token in its last page, 0 has no page
    q, cache = _case(device, batch=3, num_qo_heads=4, num_kv_heads=2, head_dim=128,
                     seq_lens=[48, 17, 0], bits=bits, group_size=group_size, seed=bits)
    paged = foscar.paginate(cache, page_size=16)
    assert paged.kv_last_page_len.tolist() == [16, 1, 0]
    _check_paged(q, cache, paged)


def test_paged_shuffled_page_size_one_and_poisoned_unused_pages(device):
    q, cache = _case(device, batch=2, num_qo_heads=7, num_kv_heads=1, head_dim=64,
                     seq_lens=[37, 5], bits=2, group_size=64, seed=9)
    g = torch.Generator().manual_seed(0)
    paged = foscar.paginate(cache, page_size=1, shuffle=True, extra_pages=3, fill=1e30, generator=g)
    assert paged.kv_indices.tolist() != sorted(paged.kv_indices.tolist())  # really non-contiguous
    _check_paged(q, cache, paged)
    _check_paged(q, cache, paged, num_splits=4)


def test_paged_gqa_one_and_page_64(device):
    q, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=2, head_dim=256,
                     seq_lens=[130, 64], bits=4, group_size=128, seed=3)
    g = torch.Generator().manual_seed(1)
    _check_paged(q, cache, foscar.paginate(cache, page_size=64, shuffle=True, extra_pages=1, fill=-1e30, generator=g))


def test_paged_to_contiguous_round_trip(device):
    _, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[21, 9], bits=2, group_size=32)
    back = foscar.paginate(cache, page_size=8, shuffle=True, generator=torch.Generator().manual_seed(2)).to_contiguous()
    for name in ("k_codes", "v_scale"):
        a, b = getattr(back, name), getattr(cache, name)
        assert torch.equal(a[0, :, :21], b[0, :, :21]) and torch.equal(a[1, :, :9], b[1, :, :9])


def test_paged_cache_refuses_cuda_backend_and_bad_input(device):
    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[10], bits=2, group_size=64)
    paged = foscar.paginate(cache, page_size=4)
    with pytest.raises(ValueError, match="paged caches run on the Triton kernel only"):
        foscar.decode(q, paged, backend="cuda")
    with pytest.raises(ValueError, match="page_size: expected >= 1"):
        foscar.paginate(cache, page_size=0)
    bad = foscar.PagedQuantizedKVCache(**{**paged.__dict__, "kv_indices": paged.kv_indices.long()})
    with pytest.raises(ValueError, match="kv_indices: expected dtype in {int32}"):
        foscar.decode(q, bad)


@pytest.mark.gpu
def test_gpu_paged_qwen3_shape():
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[8192, 4097, 1], bits=2, group_size=128)
    g = torch.Generator().manual_seed(0)
    _check_paged(q, cache, foscar.paginate(cache, page_size=16, shuffle=True, extra_pages=5, fill=1e30, generator=g))
