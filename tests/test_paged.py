"""Paged caches (FlashInfer-style kv_indptr / kv_indices / kv_last_page_len) through the Triton kernel
(CPU interpreter here, GPU with ``-m gpu``) and the CUDA kernel (GPU)."""

import dataclasses

import pytest
import torch

import foscar
from foscar.kernels import decode_cuda
from tests.test_decode_triton import TOL, _case


def _check_paged(q, cache, paged, num_splits=None, backend="auto"):
    out, lse = foscar.decode(q, paged, num_splits=num_splits, return_lse=True, backend=backend)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert torch.equal(paged.lengths().cpu(), cache.seq_lens.cpu())
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < TOL, f"sequence {b}: relative L2 error {err:.3g}"
        assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)
    # the same numbers as the contiguous cache through the same kernel
    flat = foscar.decode(q, cache, num_splits=num_splits, backend=backend)
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


def test_reference_decode_takes_a_paged_cache(device):
    q, cache = _case(device, batch=2, num_qo_heads=4, num_kv_heads=2, head_dim=64,
                     seq_lens=[21, 0], bits=2, group_size=32, seed=6)
    paged = foscar.paginate(cache, page_size=8, shuffle=True, generator=torch.Generator().manual_seed(1))
    out, lse = foscar.reference_decode(q, paged, return_lse=True)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert torch.equal(out, ref) and torch.equal(lse, ref_lse)



@pytest.mark.parametrize("table, message", [
    (dict(kv_indptr=[0, 3, 2], kv_last_page_len=[5, 0]), r"kv_indptr: expected non-decreasing values"),
    (dict(kv_indices=[0, 1, -1]), r"kv_indices: entry 2 \(sequence 0\) is page -1, expected a page id in \[0, "),
    (dict(kv_indices=[0, 1, 99]), r"is page 99, expected a page id in \[0, "),
    (dict(kv_last_page_len=[12, 0]), r"kv_last_page_len: sequence 0 has 3 page\(s\) and kv_last_page_len 12"),
])
def test_reference_decode_refuses_a_bad_page_table(device, table, message):
    # the reference gathers pages on the host: it used to give numbers for a broken table (wrapped -1, pages out
    # of order) or fail inside torch, where decode gave a clear error
    q, cache = _case(device, batch=2, num_qo_heads=4, num_kv_heads=2, head_dim=64,
                     seq_lens=[21, 0], bits=2, group_size=32, seed=6)
    paged = foscar.paginate(cache, page_size=8)
    bad = dataclasses.replace(paged, **{k: torch.tensor(v, dtype=torch.int32, device=device) for k, v in table.items()})
    with pytest.raises(ValueError, match=message):
        foscar.reference_decode(q, bad)
    with pytest.raises(ValueError, match=message):
        bad.to_contiguous()


def test_paged_to_contiguous_round_trip(device):
    _, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[21, 9], bits=2, group_size=32)
    back = foscar.paginate(cache, page_size=8, shuffle=True, generator=torch.Generator().manual_seed(2)).to_contiguous()
    for name in ("k_codes", "v_scale"):
        a, b = getattr(back, name), getattr(cache, name)
        assert torch.equal(a[0, :, :21], b[0, :, :21]) and torch.equal(a[1, :, :9], b[1, :, :9])


def test_paged_cache_bad_input(device, monkeypatch):
    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[10], bits=2, group_size=64)
    paged = foscar.paginate(cache, page_size=4)
    with pytest.raises(ValueError, match="page sizes that are powers of two, got 3"):
        foscar.decode(q, foscar.paginate(cache, page_size=3), backend="cuda")
    rows = paged.k_codes.shape[0] * paged.num_kv_heads * paged.page_size
    monkeypatch.setattr(decode_cuda, "MAX_PAGED_ROWS", rows - 1)  # stands in for a pool past 2^32 rows
    with pytest.raises(ValueError, match=f"at most 2\\^32 token rows .* got {rows}"):
        foscar.decode(q, foscar.paginate(cache, page_size=4), backend="cuda")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="page_size: expected >= 1"):
        foscar.paginate(cache, page_size=0)
    bad = foscar.PagedQuantizedKVCache(**{**paged.__dict__, "kv_indices": paged.kv_indices.long()})
    with pytest.raises(ValueError, match="kv_indices: expected dtype in {int32}"):
        foscar.decode(q, bad)


GPU_BACKENDS = [("triton", "bf16"), ("cuda", "bf16"), ("cuda", "fp8")]


def _gpu_check(q, cache, paged, backend, operand, num_splits=None):
    if operand == "fp8":  # against the FP8 emulation, as the contiguous FP8 tests
        from tests.test_decode_cuda import _check_fp8

        _check_fp8(q, cache, num_splits, decode_cache=paged)
    else:
        _check_paged(q, cache, paged, num_splits, backend)


@pytest.mark.gpu
@pytest.mark.parametrize("backend, operand", GPU_BACKENDS)
@pytest.mark.parametrize("page_size", [1, 4, 16, 64, 128])
def test_gpu_paged_qwen3_shape(backend, operand, page_size):
    # pages 1 and 4: every step of the CUDA kernel takes the general copies (NOTES §65)
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[8192, 4097, 1, 3 * page_size], bits=2, group_size=128)
    g = torch.Generator().manual_seed(0)
    paged = foscar.paginate(cache, page_size=page_size, shuffle=True, extra_pages=5, fill=1e30, generator=g)
    assert paged.kv_last_page_len.tolist() == [8192 % page_size or page_size, 4097 % page_size or page_size, 1, page_size]
    _gpu_check(q, cache, paged, backend, operand)
    _gpu_check(q, cache, paged, backend, operand, num_splits=3)


@pytest.mark.gpu
@pytest.mark.parametrize("backend, operand", GPU_BACKENDS)
def test_gpu_paged_page_one_gqa_seven_and_int4(backend, operand):
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(3)
    q, cache = _case(dev, batch=2, num_qo_heads=7, num_kv_heads=1, head_dim=128,
                     seq_lens=[1000, 5], bits=4, group_size=32, seed=5)
    paged = foscar.paginate(cache, page_size=1, shuffle=True, extra_pages=3, fill=1e30, generator=g)
    _gpu_check(q, cache, paged, backend, operand)
    _gpu_check(q, cache, paged, backend, operand, num_splits=4)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_gpu_paged_cache_past_2_31_bytes(backend):
    """Pages at byte offsets past 2^31 of the code pool (64-bit address arithmetic)."""
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=16, num_kv_heads=8, head_dim=128,
                     seq_lens=[700, 333], bits=2, group_size=128, seed=11)
    small = foscar.paginate(cache, page_size=16)
    page_bytes = small.k_codes[0].numel()  # 8 heads x 16 tokens x 32 bytes
    num_pages = (1 << 31) // page_bytes + 2 * small.k_codes.shape[0] + 8
    big = {}
    for name in ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset"):
        t = getattr(small, name)
        big[name] = torch.zeros((num_pages, *t.shape[1:]), dtype=t.dtype, device=dev)
        big[name][num_pages - t.shape[0]:] = t  # the used pages at the very end of the pool
    far = foscar.PagedQuantizedKVCache(
        **big, kv_indptr=small.kv_indptr, kv_indices=small.kv_indices + (num_pages - small.k_codes.shape[0]),
        kv_last_page_len=small.kv_last_page_len, bits=2, group_size=128, head_dim=128,
        max_seq_len=small.max_seq_len)
    assert int(far.kv_indices.min()) * page_bytes >= (1 << 31)
    _check_paged(q, cache, far, backend=backend)


_BAD_TABLE = """
import dataclasses, sys, torch, foscar
sys.path.insert(0, sys.argv[1])
from tests.test_decode_triton import _case
q, cache = _case(torch.device("cpu"), batch=3, num_qo_heads=4, num_kv_heads=2, head_dim=64, seq_lens=[100, 40, 70],
                 bits=2, group_size=32)
paged = foscar.paginate(cache, 16, extra_pages=2)
plan = foscar.plan_decode(paged, 4, backend="triton")
good = plan.run(q, paged).clone()
bad = paged.kv_indices.clone()
bad[1], bad[8] = 10**6, -5  # ids outside the pool: read as its last page (the CUDA kernel's rule too)
out = plan.run(q, dataclasses.replace(paged, kv_indices=bad)).clone()
last = paged.k_codes.shape[0] - 1
clamped = dataclasses.replace(paged, kv_indices=torch.where((bad < 0) | (bad > last), last, bad).to(torch.int32))
assert torch.equal(out, plan.run(q, clamped)), "ids"
ptr = paged.kv_indptr.clone()
ptr[2] = 1 << 20  # sequence 1's pages past kv_indices: clipped to it
out = plan.run(q, dataclasses.replace(paged, kv_indptr=ptr)).clone()
assert torch.equal(out[0], good[0]) and bool(torch.isfinite(out.float()).all()), "indptr"
print("ok")
"""


def test_triton_run_clamps_a_page_table_that_points_outside_the_pool():
    """DecodePlan.run reads no values on the host: page ids outside the pool, and a kv_indptr past kv_indices, made
    the Triton kernel read out of bounds (a segfault in the interpreter, a fault on a GPU). Its page-table reads are now
    clamped as the CUDA kernel's lengths are; run in a subprocess, so that a regression fails here instead of killing
    the test process."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", _BAD_TABLE, repo], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (proc.returncode, proc.stderr[-2000:])
