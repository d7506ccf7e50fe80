"""append_kv and paginate on a review's findings: appends longer than CUDA's grid axis 1
(65535 tokens), a paged or non-cache ``cache``, the capacity check inside a CUDA graph
capture, and ``extra_pages`` that is not an int >= 0.

CPU through the Triton interpreter (tiny shapes); the ``gpu`` cases run the CUDA kernel."""

import re

import numpy as np
import pytest
import torch

import foscar
from foscar.kernels import quantize_triton
from tests.test_append import _empty_cache, _values
from tests.test_decode_triton import _case

TENSORS = ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset")


def _small_cache(device, seq_lens=(40, 17)):
    """Batch 2, 1 KV head, head_dim 64, INT2, G=32, 40 rows per sequence, ``seq_lens`` filled."""
    cache = _case(device, batch=2, num_qo_heads=4, num_kv_heads=1, head_dim=64, seq_lens=[40, 17], bits=2,
                  group_size=32, seed=13)[1]
    cache.seq_lens.copy_(torch.tensor(seq_lens, dtype=torch.int32))
    return cache


def _assert_appended(cache, start, k_new, v_new):
    """Rows ``start[b] ..`` of sequence ``b`` are bit for bit ``quantize_kv(k_new, v_new)``'s."""
    ref = foscar.quantize_kv(k_new, v_new, cache.bits, cache.group_size)
    n = k_new.shape[2]
    for name in TENSORS:
        for b, s in enumerate(start):
            got, want = getattr(cache, name)[b, :, s:s + n], getattr(ref, name)[b]
            assert torch.equal(got, want), f"{name}[{b}] differs at {(got != want).nonzero()[:5].tolist()}"


# ---------------------------------------------------------------------------
# 1. more new tokens than one launch's grid axis 1 holds: launched in pieces


class _LaunchSpy:
    """Wraps the append kernel and records each launch's grid."""

    def __init__(self, kernel):
        self.kernel, self.grids = kernel, []

    def __getitem__(self, grid):
        self.grids.append(tuple(grid))
        return self.kernel[grid]


def test_append_in_pieces_matches_one_launch_and_quantize_kv(device, monkeypatch):
    batch, hkv, n, d = 2, 2, 10, 64
    start = [2, 5]  # ragged: every piece writes after each sequence's own end
    k = _values(batch, hkv, n, d, 1, torch.bfloat16).to(device)
    v = _values(batch, hkv, n, d, 2, torch.bfloat16).to(device)
    caches = []
    for piece in (quantize_triton.MAX_TOKENS_PER_LAUNCH, 3):
        monkeypatch.setattr(quantize_triton, "MAX_TOKENS_PER_LAUNCH", piece)
        spy = _LaunchSpy(quantize_triton._append_kernel)
        monkeypatch.setattr(quantize_triton, "_append_kernel", spy)
        cache = _empty_cache(batch, hkv, 16, d, 2, 32, device)
        cache.seq_lens.copy_(torch.tensor(start, dtype=torch.int32))
        assert foscar.append_kv(cache, k, v) is cache
        assert spy.grids == ([(4, 10)] if piece > n else [(4, 3), (4, 3), (4, 3), (4, 1)])
        assert cache.seq_lens.tolist() == [s + n for s in start]  # advanced once, by n
        _assert_appended(cache, start, k, v)
        monkeypatch.undo()
        caches.append(cache)
    for name in (*TENSORS, "seq_lens"):  # the pieces write what one launch writes, and nothing else
        assert torch.equal(getattr(caches[0], name), getattr(caches[1], name)), name


def test_append_in_pieces_stops_at_capacity(device, monkeypatch):
    # check_capacity=False: tokens past max_seq_len are not written, in whichever piece they fall
    monkeypatch.setattr(quantize_triton, "MAX_TOKENS_PER_LAUNCH", 3)
    k = _values(1, 1, 8, 64, 3, torch.float32).to(device)
    cache = _empty_cache(1, 1, 6, 64, 2, 32, device)
    cache.seq_lens.fill_(1)
    before = {name: getattr(cache, name)[:, :, :1].clone() for name in TENSORS}
    foscar.append_kv(cache, k, k.clone(), check_capacity=False)
    assert cache.seq_lens.tolist() == [9]
    _assert_appended(cache, [1], k[:, :, :5], k[:, :, :5].clone())
    for name, rows in before.items():
        assert torch.equal(getattr(cache, name)[:, :, :1], rows), name


@pytest.mark.gpu
def test_gpu_append_70000_tokens_in_one_call():
    # CUDA caps grid axis 1 at 65535: one launch of 70000 tokens failed with "invalid argument"
    dev = torch.device("cuda")
    n, start = 70000, 3
    g = torch.Generator().manual_seed(5)
    k = torch.randn(1, 1, n, 64, generator=g).to(dev, torch.bfloat16)
    v = torch.randn(1, 1, n, 64, generator=g).to(dev, torch.bfloat16)
    cache = _empty_cache(1, 1, start + n + 5, 64, 2, 32, dev)
    cache.seq_lens.fill_(start)
    foscar.append_kv(cache, k, v)
    assert cache.seq_lens.tolist() == [start + n]
    _assert_appended(cache, [start], k, v)
    assert not cache.k_codes[:, :, start + n:].any() and not cache.v_scale[:, :, start + n:].any()


# ---------------------------------------------------------------------------
# 2. a paged cache, or no cache at all


def test_append_kv_refuses_a_paged_cache(device):
    paged = foscar.paginate(_small_cache(device), 16)
    new = torch.randn(2, 1, 1, 64, device=device)
    with pytest.raises(ValueError, match=r"^cache: expected a contiguous QuantizedKVCache, got PagedQuantizedKVCache "
                                         r"\(append_kv has no paged version\); append to the contiguous cache, "
                                         r"then paginate it again"):
        foscar.append_kv(paged, new, new.clone())


def test_paginate_refuses_a_paged_cache(device):
    paged = foscar.paginate(_small_cache(device), 16)
    with pytest.raises(ValueError, match=r"^cache: expected a contiguous QuantizedKVCache, got PagedQuantizedKVCache "
                                         r"\(already paged\); take cache.to_contiguous\(\) first"):
        foscar.paginate(paged, 16)


@pytest.mark.parametrize("bad, kind", [(None, "NoneType"), (torch.zeros(2, 1, 40, 16, dtype=torch.uint8), "Tensor")])
def test_append_kv_and_paginate_refuse_what_is_not_a_cache(device, bad, kind):
    new = torch.randn(2, 1, 1, 64, device=device)
    msg = rf"^cache: expected a QuantizedKVCache \(foscar.quantize_kv\), got {kind}$"
    with pytest.raises(ValueError, match=msg):
        foscar.append_kv(bad, new, new.clone())
    with pytest.raises(ValueError, match=msg):
        foscar.paginate(bad, 16)


# ---------------------------------------------------------------------------
# 3. the capacity check (a host read) while a CUDA graph is being captured


def test_append_kv_capacity_check_is_refused_while_capturing(device, monkeypatch):
    # a CPU stand-in for the capture: append_kv asks foscar.append._capturing (the GPU case below captures)
    cache = _small_cache(device, seq_lens=(30, 10))
    new = torch.randn(2, 1, 1, 64, device=device)
    monkeypatch.setattr("foscar.append._capturing", lambda dev: True)
    with pytest.raises(ValueError, match=r"^check_capacity: expected False while a CUDA graph is being captured "
                                         r".*got True; pass check_capacity=False"):
        foscar.append_kv(cache, new, new.clone())
    assert cache.seq_lens.tolist() == [30, 10]  # nothing written
    foscar.append_kv(cache, new, new.clone(), check_capacity=False)
    assert cache.seq_lens.tolist() == [31, 11]


@pytest.mark.gpu
def test_gpu_append_kv_capacity_check_inside_a_capture_is_a_clear_error():
    # int(seq_lens.max()) inside a capture invalidated it (cudaErrorStreamCaptureInvalidated)
    dev = torch.device("cuda")
    cache = _small_cache(dev, seq_lens=(30, 10))
    new = torch.randn(2, 1, 1, 64, device=dev)
    foscar.append_kv(cache, new, new.clone())  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ValueError, match="^check_capacity: expected False while a CUDA graph is being captured"):
        with torch.cuda.graph(graph):
            foscar.append_kv(cache, new, new.clone())
    torch.cuda.synchronize()  # the capture ended cleanly: the device still works
    assert cache.seq_lens.tolist() == [31, 11]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        foscar.append_kv(cache, new, new.clone(), check_capacity=False)
    graph.replay()
    torch.cuda.synchronize()
    assert cache.seq_lens.tolist() == [32, 12]


# ---------------------------------------------------------------------------
# 4. extra_pages: an int >= 0


@pytest.mark.parametrize("extra", [-3, 2.5, True, "2"])
def test_paginate_refuses_extra_pages_that_is_not_an_int_at_least_0(device, extra):
    with pytest.raises(ValueError, match=rf"^extra_pages: expected >= 0 \(an int\), got {re.escape(repr(extra))}$"):
        foscar.paginate(_small_cache(device), 16, extra_pages=extra)


def test_paginate_extra_pages_zero_and_two(device):
    cache = _small_cache(device)
    assert foscar.paginate(cache, 16, extra_pages=0).k_codes.shape[0] == 5  # 3 + 2 pages for 40 and 17 tokens
    assert foscar.paginate(cache, 16, extra_pages=2, fill=1e30).k_codes.shape[0] == 7


# ---------------------------------------------------------------------------
# a review's findings (session 45): a negative length with check_capacity=False, a head_dim not a power of two


def test_append_at_a_negative_length_writes_nothing(device):
    # seq_lens[1] = -1 used to put the token at row bh * max_seq_len - 1: sequence 0's last row
    cache = _small_cache(device)
    cache.seq_lens[1] = -1
    before = {name: getattr(cache, name).clone() for name in TENSORS}
    k = (torch.randn(2, 1, 1, 64, generator=torch.Generator().manual_seed(5)) * 100).to(device)
    foscar.append_kv(cache, k, k.clone(), check_capacity=False)
    for name, rows in before.items():
        got = getattr(cache, name)
        assert torch.equal(got[1], rows[1]), f"{name}: sequence 1 written at a negative position"
        assert torch.equal(got[0], rows[0]), f"{name}: sequence 0 overwritten"  # its 40 rows are full: no room
    assert cache.seq_lens.tolist() == [41, 0]


def test_append_refuses_a_head_dim_that_is_not_a_power_of_two(device):
    k = torch.randn(1, 2, 8, 96, device=device)
    cache = foscar.quantize_kv(k, k + 1, 2, 32, seq_lens=torch.tensor([4], dtype=torch.int32, device=device))
    new = torch.randn(1, 2, 1, 96, device=device)
    with pytest.raises(ValueError, match="append_kv takes a head_dim that is a power of two .*got 96"):
        foscar.append_kv(cache, new, new)
    assert cache.seq_lens.tolist() == [4]
    foscar.append_kv(cache, new[:, :, :0], new[:, :, :0])  # an empty append launches nothing: still a no-op
    assert cache.seq_lens.tolist() == [4]


def test_append_check_capacity_must_be_a_bool(device):
    cache = _small_cache(device, seq_lens=(3, 3))
    new = torch.randn(2, 1, 1, 64, device=device)
    with pytest.raises(ValueError, match="check_capacity: expected True or False, got 'no'"):
        foscar.append_kv(cache, new, new, check_capacity="no")
    foscar.append_kv(cache, new, new, check_capacity=np.bool_(True))  # numpy's bool is a bool
    assert cache.seq_lens.tolist() == [4, 4]
