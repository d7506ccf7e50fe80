"""The folded Triton decode kernel against the fp64 reference on the dequantized cache.

Without a GPU these run under ``TRITON_INTERPRET=1`` (tests/conftest.py) on tiny
shapes; the ``gpu``-marked cases run the same checks at full size on the GPU.
"""

import os
import subprocess
import sys

import pytest
import torch

import foscar
from foscar.kernels import splits

TOL = 1e-2  # BF16 operands: relative L2 error lands near 1e-3..1e-2 (DESIGN, "How we work")


def _case(device, *, batch, num_qo_heads, num_kv_heads, head_dim, seq_lens, bits, group_size, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    max_len = max(max(seq_lens), 1)
    k = torch.randn(batch, num_kv_heads, max_len, head_dim, generator=g) * 1.5 + 0.3
    v = torch.randn(batch, num_kv_heads, max_len, head_dim, generator=g)
    q = torch.randn(batch, num_qo_heads, head_dim, generator=g)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    cache = foscar.quantize_kv(k.to(device), v.to(device), bits, group_size, seq_lens=lens.to(device))
    return q.to(torch.bfloat16).to(device), cache


def _check(q, cache, num_splits=None, tol=TOL, backend="triton", method="folded", check_lse=True):
    # through a plan, as a decode loop and foscar bench run it: the CUDA kernel's split merge is then the plans'
    # (in the kernel by default; a one-shot foscar.decode takes the merge kernel, bench/NOTES.md §80)
    plan = foscar.plan_decode(cache, q.shape[1], num_splits=num_splits, backend=backend, method=method)
    out, lse = plan.run(q, cache, return_lse=True)
    assert out.shape == q.shape and out.dtype == torch.bfloat16
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    errs = []
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any(), "a length-0 sequence must give an all-zero row"
            assert bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        errs.append(err)
        assert err < tol, f"sequence {b} (length {length}): relative L2 error {err:.3g} >= {tol}"
        if check_lse:
            assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)
    return max(errs) if errs else 0.0


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_formats_head_dim_128(device, bits, group_size):
    q, cache = _case(device, batch=2, num_qo_heads=4, num_kv_heads=2, head_dim=128,
                     seq_lens=[150, 33], bits=bits, group_size=group_size, seed=bits * 7 + group_size)
    _check(q, cache)


def test_context_one(device):
    q, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=1, head_dim=128,
                     seq_lens=[1, 1], bits=2, group_size=128)
    out = foscar.decode(q, cache, backend="triton")
    # one token: softmax weight 1, the output is that token's dequantized V
    _, v = foscar.dequantize_kv(cache, torch.float64)
    expect = v[:, 0, 0].unsqueeze(1).expand(-1, 2, -1)
    assert torch.allclose(out.double(), expect, rtol=1e-2, atol=1e-2)
    _check(q, cache)


def test_context_not_multiple_of_tile_and_mixed_lengths(device):
    # BLOCK_N is 128 here: 129 and 300 end mid-tile; 0 is an empty sequence
    q, cache = _case(device, batch=4, num_qo_heads=4, num_kv_heads=1, head_dim=128,
                     seq_lens=[129, 0, 300, 7], bits=2, group_size=64, seed=3)
    _check(q, cache)
    _check(q, cache, num_splits=3)  # splits of 128 tokens: some empty for the short rows


def test_gqa_28_over_4(device):
    q, cache = _case(device, batch=1, num_qo_heads=28, num_kv_heads=4, head_dim=128,
                     seq_lens=[70], bits=4, group_size=128, seed=5)
    _check(q, cache)


@pytest.mark.parametrize("head_dim, bits, group_size", [(64, 2, 32), (64, 4, 64), (256, 2, 32), (256, 4, 128)])
def test_head_dims_64_and_256(device, head_dim, bits, group_size):
    q, cache = _case(device, batch=2, num_qo_heads=2, num_kv_heads=2, head_dim=head_dim,
                     seq_lens=[45, 90], bits=bits, group_size=group_size, seed=head_dim)
    _check(q, cache)


def test_gqa_one_and_seven(device):
    for qo, kv in ((3, 3), (7, 1)):
        q, cache = _case(device, batch=1, num_qo_heads=qo, num_kv_heads=kv, head_dim=64,
                         seq_lens=[40], bits=2, group_size=64, seed=qo)
        _check(q, cache)


def test_long_range_single_split_keeps_error(device):
    """32K tokens in one split: the biased BF16 operand must not lose precision
    (DESIGN §9: per-tile bias cancellation with the rounded operands)."""
    q, cache = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                     seq_lens=[32768], bits=2, group_size=64, seed=11)
    long_err = _check(q, cache, num_splits=1)
    q2, short = _case(device, batch=1, num_qo_heads=2, num_kv_heads=1, head_dim=64,
                      seq_lens=[256], bits=2, group_size=64, seed=11)
    short_err = _check(q2, short, num_splits=1)
    # (_check holds both under TOL already): 128 times the tokens in one split, not a growing error (4.6e-3 against
    # 3.6e-3 in the interpreter; a loss of precision over the range would show as a multiple)
    assert long_err < 1.5 * short_err + 1e-3, (long_err, short_err)


def test_split_heuristic():
    # ~2 programs per SM as a power of two: 8 programs on 132 SMs -> 32 splits of 1024 tokens
    n, per = splits.choose_num_splits(batch=1, num_kv_heads=8, max_seq_len=32768, block_n=128, num_sms=132)
    assert (n, per) == (32, 1024)
    # enough programs already: one split per sequence up to 32K tokens, then 32K-token splits
    n, per = splits.choose_num_splits(batch=64, num_kv_heads=8, max_seq_len=32768, block_n=128, num_sms=132)
    assert (n, per) == (1, 32768)
    n, per = splits.choose_num_splits(batch=64, num_kv_heads=8, max_seq_len=131072, block_n=256, num_sms=132)
    assert (n, per) == (4, 32768)
    # each split keeps two tiles: 1 x 8K on 8 KV heads gets 16 splits of 512, not 32 of 256
    n, per = splits.choose_num_splits(batch=1, num_kv_heads=8, max_seq_len=8192, block_n=256, num_sms=132)
    assert (n, per) == (16, 512)
    n, per = splits.choose_num_splits(batch=1, num_kv_heads=1, max_seq_len=100, block_n=128, num_sms=132)
    assert (n, per) == (1, 128)


def test_decode_rejects_bad_inputs(device, monkeypatch):
    q, cache = _case(device, batch=2, num_qo_heads=4, num_kv_heads=2, head_dim=128,
                     seq_lens=[5, 5], bits=2, group_size=128)
    with pytest.raises(ValueError, match="q: expected dtype in {bfloat16}, got float32"):
        foscar.decode(q.float(), cache)
    with pytest.raises(ValueError, match=r"q: expected shape \[2, \*, 128\]"):
        foscar.decode(q[:, :, :64], cache)
    with pytest.raises(ValueError, match="multiple of num_kv_heads=2"):
        foscar.decode(q[:, :3], cache)
    with pytest.raises(ValueError, match="operand: expected one of"):
        foscar.decode(q, cache, operand="fp4")
    with pytest.raises(ValueError, match="num_splits"):
        foscar.decode(q, cache, num_splits=0)
    with pytest.raises(ValueError, match="last dimension contiguous"):
        foscar.decode(torch.empty(2, 4, 256, dtype=torch.bfloat16, device=q.device)[:, :, ::2], cache)
    k = torch.randn(1, 1, 4, 96, device=device)
    c96 = foscar.quantize_kv(k, k, 2, 32)
    with pytest.raises(ValueError, match=r"head_dim: expected one of \[64, 128, 256\], got 96"):
        foscar.decode(torch.randn(1, 1, 96, device=device, dtype=torch.bfloat16), c96)
    if device.type == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        with pytest.raises(ValueError, match="needs a CUDA device"):
            foscar.decode(q, cache)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU interpreter path")
def test_interpreter_set_after_import_is_refused():
    # Triton decorates its own functions (tl.cdiv) at import: TRITON_INTERPRET=1 set later used to reach the
    # interpreter's "Cannot call @triton.jit'd outside of the scope of a kernel" from inside the kernel
    script = (
        "import os, torch, triton, foscar\n"
        "os.environ['TRITON_INTERPRET'] = '1'\n"
        "k = torch.randn(1, 1, 8, 128)\n"
        "cache = foscar.quantize_kv(k, k + 1, 2, 128)\n"
        "foscar.decode(torch.randn(1, 1, 128, dtype=torch.bfloat16), cache)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: TRITON_INTERPRET=1 was set after triton was imported"), proc.stderr[-2000:]


# ---------------------------------------------------------------------------- GPU, full size


@pytest.mark.gpu
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_gpu_qwen3_8b_shape(bits, group_size):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20000], bits=bits, group_size=group_size)
    _check(q, cache)
    _check(q, cache, num_splits=1)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, qo, kv", [(64, 28, 4), (256, 8, 8), (128, 7, 1)])
def test_gpu_head_dims_and_gqa(head_dim, qo, kv):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5000, 129, 1], bits=2, group_size=min(head_dim, 64))
    _check(q, cache)


@pytest.mark.gpu
def test_gpu_long_context_one_split():
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=1, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[131072], bits=2, group_size=128)
    _check(q, cache, num_splits=1)
    _check(q, cache)
