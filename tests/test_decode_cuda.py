"""The sm_90 CUDA C++ kernel: its source compiles with nvcc (CI, no GPU needed), and
on the GPU (``-m gpu``) it matches the fp64 reference on the same cases as Triton."""

import re
import shutil
import subprocess

import pytest
import torch

from foscar.kernels import decode_cuda
from tests.test_decode_triton import _case, _check


def test_cuda_source_compiles_for_sm90(tmp_path):
    nvcc = decode_cuda.find_nvcc() or shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: cannot compile the CUDA source here")
    units = [s for s in decode_cuda.SOURCES if s.suffix == ".cu"]  # binding.cpp needs torch headers
    procs = [
        subprocess.Popen([nvcc, *decode_cuda.NVCC_FLAGS, "-Xptxas", "-v", "-c", str(src), "-o", str(tmp_path / f"{src.stem}.o")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for src in units
    ]
    reports = []
    for src, proc in zip(units, procs):
        _, err = proc.communicate()
        assert proc.returncode == 0, f"{src.name}:\n{err[-4000:]}"
        reports.append(err)
    # the Hopper default formats (head_dim 128) must not spill in the main loop. ptxas parks up to two
    # words of INT4 G=128 across the loop (STL before it, LDL after it, in the SASS; harmless), so up
    # to 8 bytes pass; a spill inside the loop costs far more than that (tens to hundreds of bytes)
    checked = set()
    for e in re.split(r"Compiling entry function", "\n".join(reports)):
        m = re.search(r"folded_decode_kernelILi(\d)ELi(\d+)ELi(\d+)ELi(\d)ELb([01])E", e)
        if m and m.group(2) == "128":
            spill = re.search(r"(\d+) bytes spill stores", e)
            assert spill and int(spill.group(1)) <= 8, e[:400]
            checked.add(m.groups())
    assert len(checked) == 36  # INT2/INT4 x group 32/64/128 x folded bf16 / per-value / folded fp8 x contiguous / paged


def test_unavailable_reasons():
    assert "CUDA device" in decode_cuda.unavailable(torch.device("cpu"))


def test_per_value_needs_the_cuda_kernel(device):
    import foscar

    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[10], bits=2, group_size=64)
    if decode_cuda.unavailable(device, 2) is None:
        pytest.skip("the CUDA kernel runs here")
    with pytest.raises(ValueError, match="per-value' exists in the CUDA kernel only"):
        foscar.decode(q, cache, method="per-value")
    with pytest.raises(ValueError, match="method: expected one of"):
        foscar.decode(q, cache, method="dequant")


def test_fp8_operand_errors(device):
    import foscar

    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[10], bits=2, group_size=64)
    with pytest.raises(ValueError, match="fp8' exists in the CUDA kernel only"):
        foscar.decode(q, cache, operand="fp8", backend="triton")
    with pytest.raises(ValueError, match="method='per-value' reconstructs BF16"):
        foscar.decode(q, cache, operand="fp8", method="per-value")
    with pytest.raises(ValueError, match="head_dim \\* bits / 128 even"):
        foscar.decode(q, cache, operand="fp8")  # INT2 at head_dim 64: one 16-byte chunk per row
    with pytest.raises(ValueError, match="operand: expected one of"):
        foscar.decode(q, cache, operand="int8")
    assert decode_cuda.fp8_unsupported(128, 2) is None and decode_cuda.fp8_unsupported(64, 4) is None


# ---------------------------------------------------------------------------- GPU

FP8_TOL = 8e-2  # FP8 e4m3 query and probabilities: ~4e-2 relative L2 on this data (torch emulation), x2


def _check_fp8(q, cache, num_splits=None):
    """FP8 operand mode against the fp64 reference; returns the worst relative L2 error."""
    import foscar

    out, lse = foscar.decode(q, cache, operand="fp8", num_splits=num_splits, return_lse=True, backend="cuda")
    assert out.shape == q.shape and bool(torch.isfinite(out).all()) and not torch.isnan(lse).any()
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    worst = 0.0
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < FP8_TOL, f"sequence {b} (length {length}): fp8 relative L2 error {err:.3g} >= {FP8_TOL}"
        # scores carry the query's e4m3 rounding (first-order cancelled): LSE within 5e-2
        assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=5e-2)
        worst = max(worst, err)
    return worst


@pytest.mark.gpu
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_gpu_cuda_fp8_qwen3_8b_shape(bits, group_size):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20001], bits=bits, group_size=group_size)
    _check_fp8(q, cache)
    _check_fp8(q, cache, num_splits=1)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, qo, kv, bits, group_size",
                         [(64, 8, 8, 4, 64), (256, 8, 8, 2, 128), (256, 16, 2, 4, 32), (128, 7, 1, 2, 128),
                          (128, 1, 1, 4, 32)])
def test_gpu_cuda_fp8_head_dims_and_gqa(head_dim, qo, kv, bits, group_size):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5001, 129, 63], bits=bits, group_size=group_size)
    _check_fp8(q, cache)
    _check_fp8(q, cache, num_splits=7)


@pytest.mark.gpu
def test_gpu_cuda_fp8_constant_v_and_scaled_query():
    """Groups with scale 0 (constant V) must not give NaN; a large query must not saturate e4m3."""
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[700, 64], bits=2, group_size=64)
    cache.v_scale[0, :, :100] = 0.0  # constant V for the first 100 tokens of sequence 0
    _check_fp8(q * 40, cache)



@pytest.mark.gpu
@pytest.mark.parametrize("method", ["folded", "per-value"])
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_gpu_cuda_qwen3_8b_shape(bits, group_size, method):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20001], bits=bits, group_size=group_size)
    # the per-value LSE has a known deviation (test_gpu_per_value_lse below): outputs only
    _check(q, cache, backend="cuda", method=method, check_lse=method == "folded")
    _check(q, cache, num_splits=1, backend="cuda", method=method, check_lse=method == "folded")


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, qo, kv, bits, group_size",
                         [(64, 28, 4, 2, 32), (64, 8, 8, 4, 64), (256, 8, 8, 2, 128), (256, 16, 2, 4, 32),
                          (128, 7, 1, 2, 128), (128, 8, 1, 4, 64), (128, 1, 1, 2, 32)])
def test_gpu_cuda_head_dims_and_gqa(head_dim, qo, kv, bits, group_size):
    dev = torch.device("cuda")
    # max_seq_len 5001 (odd): scale rows are not 16-byte aligned -> the 4-byte copy path
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5001, 129, 63], bits=bits, group_size=group_size)
    _check(q, cache, backend="cuda")
    _check(q, cache, num_splits=7, backend="cuda")
    _check(q, cache, backend="cuda", method="per-value", check_lse=False)


@pytest.mark.gpu
@pytest.mark.xfail(strict=False, reason="known issue: the per-value kernel's LSE deviates from the fp64 reference by "
                   "up to ~1e-2 at 20K-32K tokens (its outputs pass); BF16 rounding of the reconstructed K explains only "
                   "~2e-4 (torch emulation), so a bug is suspected; bench/NOTES.md section 6")
def test_gpu_per_value_lse():
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 20001], bits=2, group_size=128)
    _check(q, cache, backend="cuda", method="per-value")


@pytest.mark.gpu
def test_gpu_cuda_long_context_and_matches_triton():
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[131072, 77777], bits=2, group_size=128)
    _check(q, cache, num_splits=1, backend="cuda")
    import foscar

    a = foscar.decode(q, cache, backend="cuda").float()
    b = foscar.decode(q, cache, backend="triton").float()
    assert float((a - b).norm() / b.norm()) < 1e-2


@pytest.mark.gpu
def test_gpu_cuda_refuses_gqa_above_8():
    import foscar

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=1, num_qo_heads=16, num_kv_heads=1, head_dim=128,
                     seq_lens=[100], bits=2, group_size=128)
    with pytest.raises(ValueError, match="1..8 query heads per KV head"):
        foscar.decode(q, cache, backend="cuda")
    _check(q, cache, backend="auto")  # auto falls back to Triton
