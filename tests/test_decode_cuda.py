"""The sm_90 CUDA C++ kernel: its source compiles with nvcc (CI, no GPU needed), and
on the GPU (``-m gpu``) it matches the fp64 reference on the same cases as Triton."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from foscar.kernels import decode_cuda
from tests.test_decode_triton import TOL, _case, _check


# CI (2 cores) compiles the head_dim 128 instances, 84 of the 204 (FOSCAR_ONLY_HEAD_DIM, a third of the
# nvcc time): every operand mode, bit width, group size, paged and channel-wise K, the formats the bench
# runs. All 204 compile in the GPU machine's suite (`pytest -m gpu`: 16 cores, ~1 min beside the GPU
# tests), which is why that case carries the gpu mark although it needs no GPU (bench/NOTES.md §30); its nvcc mark
# lets a machine without a GPU run it too (`pytest -m nvcc`: ~7 min on 2 cores, bench/NOTES.md §121).
@pytest.mark.parametrize("head_dim", [pytest.param(128, id="head_dim128"),
                                      pytest.param(0, id="all_head_dims", marks=[pytest.mark.gpu, pytest.mark.nvcc])])
def test_cuda_source_compiles_for_sm90(tmp_path, head_dim):
    nvcc = decode_cuda.find_nvcc() or shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: cannot compile the CUDA source here")
    units = [s for s in decode_cuda.SOURCES if s.suffix == ".cu"]  # binding.cpp needs torch headers
    # device code only (-cubin: no host compile, which the extension's build covers with binding.cpp)
    procs = [
        subprocess.Popen([nvcc, *decode_cuda.NVCC_FLAGS, f"-DFOSCAR_ONLY_HEAD_DIM={head_dim}", "-Xptxas", "-v",
                          "-cubin", str(src), "-o", str(tmp_path / f"{src.stem}.cubin")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for src in units
    ]
    reports = []
    for src, proc in zip(units, procs):
        _, err = proc.communicate()
        assert proc.returncode == 0, f"{src.name}:\n{err[-4000:]}"
        reports.append(err)
    # the Hopper default formats (head_dim 128) must not spill in the main loop. ptxas parks a few
    # words across the loop in some (INT2 G=64: 12 bytes, FP8 paged INT4 G=32: 24; STL before the
    # loop, LDL after it or a few per tile, in the SASS), so up to 32 bytes pass here and the loop
    # itself is checked below; a real spill in the loop is tens to hundreds of bytes
    from bench.sass import KERNEL_RE, find_cuobjdump, loop_counts

    checked = set()
    for e in re.split(r"Compiling entry function", "\n".join(reports)):
        m = KERNEL_RE.search(e)
        if m and m.group(2) == "128":
            spill = re.search(r"(\d+) bytes spill stores", e)
            assert spill and int(spill.group(1)) <= 32, e[:400]
            # nor keep an array in local memory (a register array indexed at run time: a query max as a
            # loop the unroller could not count put 128 bytes on the stack and cost 10-48% at 16-token
            # decodes, bench/NOTES.md §54)
            frame = re.search(r"(\d+) bytes stack frame", e)
            assert frame and int(frame.group(1)) <= 32, e[:400]
            checked.add(m.groups())
    # INT2/INT4 x group 32/64/128 x folded bf16 / per-value / folded fp8 x contiguous / paged x token- / channel-wise K,
    # and the folded BF16 token-wise ones again with the integer PV's packed columns (gqa <= 4; INT2 / INT4 x 3 groups
    # x paged)
    assert len(checked) == 84
    # the SASS claim of bench/NOTES.md §6: folding needs well under half the per-value
    # reconstruction's instructions per tile (measured 1209 vs 2797 at INT2, G=128; 1053 vs 2797
    # before the full-tile loop, 853 vs 2575 with it, NOTES §23). Channel-wise K: the static count
    # holds the query rebuild of a second K block (k_block 32 only) besides the first, 1573 vs 3004
    # at INT2 and 1713 vs 2925 at INT4 (NOTES §15; 1270 vs 2646 and 1365 vs 2654 with the full-tile loop)
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        return
    counts = []
    for obj in tmp_path.glob("*.cubin"):
        sass = subprocess.run([cuobjdump, "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
        counts.extend(loop_counts(sass))
    loop = {(c.bits, c.head_dim, c.group_size, c.mode, c.paged, c.channel): c.instructions for c in counts
            if not c.packed}
    # at most 4 local-memory accesses per 64-token tile (of 1000+) in the head_dim 128 loops; the per-value
    # ablation loops (2900-3400 instructions) run at the 255-register ceiling and may take 6: INT4 G=32
    # paged channel-wise had 4 at 4ca534b and 5 with the length-aware prologue (bench/NOTES.md §17)
    for c in counts:
        if c.head_dim == 128:
            most = 6 if c.mode == "per-value" else 4
            assert c.opcodes.get("LDL", 0) + c.opcodes.get("STL", 0) <= most, (c.label(), c.opcodes)
    # the integer QK and PV (DESIGN §5.1, §5.2) are native IMMA, not emulated: INT2's folded BF16 loops
    # hold 32 per tile for PV (16 with packed columns, DESIGN §5.2) and, with token-wise K, 32 for QK and no HMMA
    # (channel-wise K: its FP16 QK); INT4's loops the same (the two-mma PV since bench/NOTES.md §102 with token-wise K,
    # §104 with channel-wise K)
    for c in counts:
        if c.head_dim == 128 and c.mode == "folded-bf16":
            assert c.opcodes.get("IMMA", 0) == (32 if c.channel else 48 if c.packed else 64), (c.label(), c.opcodes)
            assert c.opcodes.get("HMMA", 0) == (32 if c.channel else 0), (c.label(), c.opcodes)
    for bits in (2, 4):
        for channel in (False, True):
            folded = loop[(bits, 128, 128, "folded-bf16", False, channel)]
            per_value = loop[(bits, 128, 128, "per-value", False, channel)]
            assert 0 < folded < per_value * (0.65 if channel else 0.5), (bits, channel, folded, per_value)
    # every loop's count as committed in bench/data/sass_loop_counts.json (same nvcc and flags): a change
    # to a loop must come with that file rewritten, so that review sees it
    import json

    from bench.sass import SNAPSHOT, nvcc_version, snapshot_diff

    saved = json.loads(SNAPSHOT.read_text())
    if saved["nvcc"] != nvcc_version(nvcc) or saved["nvcc_flags"] != list(decode_cuda.NVCC_FLAGS):
        pytest.skip(f"SASS snapshot taken with {saved['nvcc']} {saved['nvcc_flags']}; here {nvcc_version(nvcc)}")
    if head_dim:  # the instances compiled here
        saved = {**saved, "loops": {k: v for k, v in saved["loops"].items() if f" D={head_dim} " in k}}
    assert {c.head_dim for c in counts} == ({head_dim} if head_dim else {64, 128, 256})
    diff = snapshot_diff(counts, saved)
    assert not diff, ("main-loop SASS counts differ from bench/data/sass_loop_counts.json; if intended, rerun "
                      "`python -m bench.sass --write bench/data/sass_loop_counts.json` and commit it:\n" + "\n".join(diff))


def test_unavailable_reasons():
    assert "CUDA device" in decode_cuda.unavailable(torch.device("cpu"))
    if not torch.cuda.is_available():  # a reason, not an error from torch's CUDA initialisation
        assert "torch sees none" in decode_cuda.unavailable(torch.device("cuda"))


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

FP8_TOL = 8e-2  # the probabilities' e4m3 rounding: ~3e-2 relative L2 (torch emulation), x2.5


def fp8_score_emulation(q, cache, sm_scale=None):
    """What the FP8 kernel computes, in fp64, except the e4m3 rounding of the probabilities.

    The query rounded to e4m3 per head (``sigma = 448 / max|q_h|``, round to nearest
    of the fp32 ``q * sigma``), the scores with the kernel's first-order correction
    around the mid code ``C0`` (csrc/folded_decode_sm90.cuh), exact softmax and PV over
    the dequantized V. Channel-wise K: the same with ``Q s_blk`` (fp32) in place of the
    query, ``sigma`` per (head, block), and ``Q . z_blk`` in place of the offset term.

    Returns:
        ``(out [batch, num_qo_heads, head_dim], lse [batch, num_qo_heads])`` fp64, natural log.
    """
    from foscar.quant import dequantize_kv, unpack_codes

    batch, num_qo_heads, head_dim = q.shape
    hkv, ng, gs = cache.num_kv_heads, cache.num_groups, cache.group_size
    gqa, c0 = num_qo_heads // hkv, ((1 << cache.bits) - 1) / 2
    scale = sm_scale if sm_scale is not None else head_dim ** -0.5
    qd = q.double()
    amax = qd.abs().amax(-1, keepdim=True)
    sigma = torch.where(amax > 0, 448.0 / amax, torch.ones_like(amax)).float()
    q8 = (q.float() * sigma).to(torch.float8_e4m3fn).double() / sigma.double()
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.full(q.shape[:2], float("-inf"), dtype=torch.float64, device=q.device)
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            continue
        if cache.k_block is not None:
            codes = unpack_codes(cache.k_codes[b, :, :length], cache.bits).double()  # [hkv, L, D]
            nb = -(-length // cache.k_block)
            ks, kz = cache.k_scale[b, :, :nb], cache.k_offset[b, :, :nb].double()  # [hkv, NB, D]
            y = q[b].float().reshape(hkv, gqa, 1, head_dim) * ks.unsqueeze(1)  # [hkv, gqa, NB, D] fp32, as the kernel
            ya = y.abs().amax(-1, keepdim=True)
            sig = torch.where(ya > 0, 448.0 / ya, torch.ones_like(ya))
            y8 = (y * sig).to(torch.float8_e4m3fn).double() / sig.double()
            blk = torch.arange(length, device=q.device) // cache.k_block
            dots = torch.einsum("hqld,hld->hql", y8[:, :, blk], codes) - c0 * (y8 - y.double()).sum(-1)[:, :, blk]
            qz = torch.einsum("hqd,hnd->hqn", qd[b].reshape(hkv, gqa, head_dim), kz)
            s = (dots + qz[:, :, blk]) * scale
        else:
            codes = unpack_codes(cache.k_codes[b, :, :length], cache.bits).double().reshape(hkv, length, ng, gs)
            ks, kz = cache.k_scale[b, :, :length].double(), cache.k_offset[b, :, :length].double()
            qg, q8g = qd[b].reshape(hkv, gqa, ng, gs), q8[b].reshape(hkv, gqa, ng, gs)
            dots = torch.einsum("hqgd,hlgd->hqlg", q8g, codes) - c0 * (q8g - qg).sum(-1).unsqueeze(2)
            s = ((dots * ks.unsqueeze(1)).sum(-1) + torch.einsum("hqg,hlg->hql", qg.sum(-1), kz)) * scale
        lse_b = torch.logsumexp(s, dim=-1)
        _, v = dequantize_kv(cache, dtype=torch.float64, batch_index=b)
        o = torch.einsum("hql,hld->hqd", torch.exp(s - lse_b.unsqueeze(-1)), v.to(q.device))
        out[b], lse[b] = o.reshape(num_qo_heads, head_dim), lse_b.reshape(-1)
    return out, lse


def test_fp8_score_emulation_is_the_reference_for_e4m3_exact_queries():
    import foscar

    g = torch.Generator().manual_seed(4)
    # every |q| in {0.5, 1, 2} with max 2 per head: q * 224 is 112, 224 or 448, all e4m3 values
    q = (torch.tensor([0.5, 1.0, 2.0])[torch.randint(0, 3, (2, 4, 64), generator=g)]
         * (torch.randint(0, 2, (2, 4, 64), generator=g) * 2 - 1)).to(torch.bfloat16)
    q[..., 0] = 2.0
    k = torch.randn(2, 2, 40, 64, generator=g)
    v = torch.randn(2, 2, 40, 64, generator=g)
    cache = foscar.quantize_kv(k, v, 2, 32, seq_lens=torch.tensor([40, 7], dtype=torch.int32))
    out, lse = fp8_score_emulation(q, cache)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert torch.allclose(out, ref, rtol=1e-9, atol=1e-12) and torch.allclose(lse, ref_lse, rtol=1e-12, atol=1e-12)


def _check_fp8(q, cache, num_splits=None, vs_reference=True, decode_cache=None):
    """FP8 operand mode: output within FP8_TOL of the emulation (and of the fp64 reference
    unless ``vs_reference=False``), LSE within 2e-3 of the emulation's (the probabilities'
    rounding does not enter the LSE). ``decode_cache``: decode this one (a paged copy of
    ``cache``) instead. Returns the worst relative L2 error against the reference."""
    import foscar

    target = cache if decode_cache is None else decode_cache
    out, lse = foscar.decode(q, target, operand="fp8", num_splits=num_splits, return_lse=True, backend="cuda")
    assert out.shape == q.shape and bool(torch.isfinite(out).all()) and not torch.isnan(lse).any()
    emu, emu_lse = fp8_score_emulation(q, cache)
    ref = foscar.reference_decode(q, cache)
    worst = 0.0
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        o = out[b].double()
        err_emu = float((o - emu[b]).norm() / emu[b].norm())
        err_ref = float((o - ref[b]).norm() / ref[b].norm())
        assert err_emu < FP8_TOL, f"sequence {b} (length {length}): {err_emu:.3g} from the emulation"
        if vs_reference:
            assert err_ref < FP8_TOL, f"sequence {b} (length {length}): {err_ref:.3g} from the fp64 reference"
        lse_gap = float((lse[b].double() - emu_lse[b]).abs().max())
        assert lse_gap < 2e-3, f"sequence {b} (length {length}): LSE {lse_gap:.3g} from the emulation"
        worst = max(worst, err_ref)
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


# Outputs of one build of the CUDA kernel, saved for build-agreement tests such as the one below (run in a
# subprocess per build: the build flags and defines are read at import). argv: the output path, the
# operand and the groups (comma-separated). INT2 and INT4 at head_dim 128, token- and channel-wise K
# (k_block 32, whose FP8 query rebuild ptxas 13.0 once miscompiled at -O3; group 32 only), contiguous
# and paged.
_BUILD_OUTPUTS_SCRIPT = """
import sys, torch, foscar
from foscar.paged import paginate
from tests.test_decode_triton import _case
path, operand, groups = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")]
dev = torch.device("cuda")
res = {}
for bits in (2, 4):
    for group in groups:
        for layout in ("token", "channel"):
            if layout == "channel" and group != 32:
                continue
            q, c = _case(dev, batch=3, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=[5001, 129, 63],
                         bits=bits, group_size=group, seed=bits)
            if layout == "channel":
                g = torch.Generator(device="cpu").manual_seed(bits)
                k = torch.randn(3, 8, 5001, 128, generator=g).to(dev) * 1.5 + 0.3
                v = torch.randn(3, 8, 5001, 128, generator=g).to(dev)
                c = foscar.quantize_kv(k, v, bits, group, seq_lens=c.seq_lens, k_layout="channel", k_block=32)
            for paged in (False, True):
                cache = paginate(c, 64) if paged else c
                out, lse = foscar.decode(q, cache, operand=operand, return_lse=True, backend="cuda")
                res[f"int{bits}-g{group}-{layout}-{'paged' if paged else 'contiguous'}"] = (out.float().cpu(), lse.cpu())
torch.save(res, path)
"""


def _build_outputs(tmp_path, builds: dict[str, dict[str, str]], *args: str) -> dict[str, dict]:
    """``_BUILD_OUTPUTS_SCRIPT`` (``args`` after the path) run once per build, each in a subprocess with
    the build's environment variables (``{name: {variable: value}}``): ``{name: {case: (out, lse)}}``."""
    import os
    import sys

    root = Path(__file__).resolve().parents[1]
    outs = {}
    for name, variables in builds.items():
        env = {**os.environ, **variables, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        path = tmp_path / f"{name}.pt"
        proc = subprocess.run([sys.executable, "-c", _BUILD_OUTPUTS_SCRIPT, str(path), *args], env=env, cwd=root,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-4000:]
        outs[name] = torch.load(path)
    return outs


@pytest.mark.gpu
def test_gpu_fp8_same_at_ptxas_O0(tmp_path):
    """The FP8 instances give the same outputs and LSE when ptxas does not optimise (``-Xptxas -O0``):
    a miscompile at -O3 (as ptxas 13.0 made of an e4m3 read-back, bench/NOTES.md §15) shows as a
    difference. Builds a second extension (about a minute)."""
    outs = _build_outputs(tmp_path, {"O3": {"FOSCAR_NVCC_FLAGS": ""}, "O0": {"FOSCAR_NVCC_FLAGS": "-Xptxas -O0"}},
                          "fp8", "32")
    assert outs["O3"].keys() == outs["O0"].keys() and len(outs["O3"]) == 8
    for case, (out3, lse3) in outs["O3"].items():
        out0, lse0 = outs["O0"][case]
        assert torch.isfinite(lse3).all() and torch.isfinite(out3).all(), case
        lse_gap = float((lse3 - lse0).abs().max())
        out_gap = float((out3 - out0).norm() / out0.norm())
        assert lse_gap <= 1e-4 and out_gap <= 1e-3, f"{case}: -O3 vs -O0 LSE {lse_gap:.3g}, output {out_gap:.3g}"


@pytest.mark.gpu
def test_gpu_cuda_fp8_constant_v_and_scaled_query():
    """Groups with scale 0 (constant V) must not give NaN; a large query must not saturate e4m3."""
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[700, 64], bits=2, group_size=64)
    cache.v_scale[0, :, :100] = 0.0  # constant V for the first 100 tokens of sequence 0
    _check_fp8(q, cache)
    # a 40x query: near one-hot attention, where the query's e4m3 rounding can swap the
    # winning token against the fp64 reference, so only the emulation is the yardstick
    _check_fp8(q * 40, cache, vs_reference=False)



@pytest.mark.gpu
@pytest.mark.parametrize("method", ["folded", "per-value"])
@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_gpu_cuda_qwen3_8b_shape(bits, group_size, method):
    dev = torch.device("cuda")
    q, cache = _case(dev, batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[32768, 0, 1, 20001], bits=bits, group_size=group_size)
    # the per-value LSE carries its BF16 K rounding (checked exactly in test_gpu_per_value_lse)
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


def query_rounding_factor(bits: int, head_dim: int, group_size: int) -> torch.Tensor:
    """Per channel ([head_dim] float64), how much coarser than ``|d_h|`` the integer QK's query fixed point is:
    ``2^hexp`` of csrc ``Fmt::hexp`` (``FOSCAR_QK_HALF``, on in the default build), as the CPU mirror of the
    integer QK computes it (``tests/test_imma_fold_range.py``'s ``fmt``): 4 on INT2's odd planes where a group spans
    several planes (``head_dim / 4`` bytes a row in an even number of 16-byte chunks, fewer than ``group_size``),
    else 1."""
    from tests.test_imma_fold_range import fmt

    return torch.from_numpy(2.0 ** fmt(bits, head_dim, group_size)["hexp"])


def test_query_rounding_factor_marks_the_odd_planes():
    f = query_rounding_factor(2, 128, 128)
    assert f[:32].eq(1).all() and f[32:64].eq(4).all() and f[64:96].eq(1).all() and f[96:].eq(4).all()
    assert query_rounding_factor(2, 128, 32).eq(1).all()  # groups inside a plane: folded through the scale
    assert query_rounding_factor(2, 64, 64).eq(1).all() and query_rounding_factor(4, 128, 128).eq(1).all()
    assert int(query_rounding_factor(2, 256, 128).eq(4).sum()) == 128


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("head_dim, bits, group_size", [(64, 2, 32), (64, 2, 64), (128, 2, 128), (128, 4, 32),
                                                        (256, 4, 64), (256, 2, 128)])
def test_gpu_cuda_fixed_point_query(paged, head_dim, bits, group_size):
    """The folded BF16 mode's integer QK (csrc FOSCAR_IMMA_QK, on in the default build, INT2 and INT4;
    DESIGN §5.1) on a query with outlier
    channels, a negative and a zero softmax scale (the sign goes into the query's fixed-point scale,
    zero into the query) and an all-zero query head. Against the fp64 reference of the BF16 query:
    each score may move by the query's rounding, |sm_scale| (|d_h| / 2) sum_c r_c |k_tc| with |d_h| < 2
    max|Q_h| / 32639 (qk_h a power of two) and r_c from :func:`query_rounding_factor` (4 on INT2's odd planes
    where a group spans planes), so the LSE by at most that; a fragment-layout mistake moves it by order 1."""
    import foscar
    from foscar.quant import dequantize_kv

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=head_dim,
                     seq_lens=[1500, 77], bits=bits, group_size=group_size, seed=head_dim + bits + group_size)
    q = q.clone()
    q[:, :, 5] *= 30.0
    q[:, :, head_dim - 3] *= -7.0
    q[1, 3] = 0.0
    gqa = q.shape[1] // cache.num_kv_heads
    r = query_rounding_factor(bits, head_dim, group_size).to(dev)
    k1 = [(dequantize_kv(cache, dtype=torch.float64, batch_index=b)[0].abs() * r).sum(-1).amax(-1) for b in range(2)]
    step = q.double().abs().amax(-1) / 32639  # [batch, heads]: the query's rounding bound per channel (|d_h| / 2)
    target = foscar.paginate(cache, 64) if paged else cache
    for sm_scale in (1.0 / head_dim ** 0.5, -1.0 / head_dim ** 0.5, 0.0):
        out, lse = foscar.decode(q, target, sm_scale=sm_scale, return_lse=True, backend="cuda")
        ref, ref_lse = foscar.reference_decode(q, cache, sm_scale=sm_scale, return_lse=True)
        for b in range(2):
            bound = abs(sm_scale) * step[b] * k1[b].repeat_interleave(gqa)  # [heads]
            err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
            assert err < TOL + 2 * float(bound.max()), f"sm_scale {sm_scale}, sequence {b}: relative L2 error {err:.3g}"
            gap = (lse[b].double() - ref_lse[b]).abs()
            assert bool((gap <= bound + 1e-3).all()), f"sm_scale {sm_scale}, sequence {b}: LSE off by {gap.tolist()}"


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits, head_dim, group_size", [(2, 128, 128), (2, 128, 32), (2, 64, 64), (4, 128, 128),
                                                        (4, 64, 32)])
@pytest.mark.parametrize("qo, kv", [(2, 2), (4, 2), (6, 2), (8, 2), (10, 2)])
def test_gpu_packed_integer_pv(monkeypatch, paged, bits, head_dim, group_size, qo, kv):
    """The folded BF16 mode with at most 4 query heads per KV head takes the integer PV with packed columns (DESIGN
    §5.2, bench/NOTES.md §62; gqa 1, 2, 3, 4 here), 5 the other form (the two-mma integer PV; INT4's PV was BF16
    there until §102). Against the fp64 reference; against ``FOSCAR_PV_PACK=0`` (read when a plan is made;
    ``foscar.decode`` makes one a call): the LSE within fp32 rounding (the same scores and probabilities; with the
    packed QK's token pairs, ``FOSCAR_PK_TOKENS``, a lane sums another subset of them, bench/NOTES.md §86); the output
    within one BF16 rounding (the same integers, the fold's fp32 sums in another order); gqa 5 the same launch either
    way, bit for bit. A column mix-up (a low byte taken as high, a head's columns or a pair's tiles crossed) moves the
    output by order 1."""
    import foscar
    from tests.test_paged import _check_paged

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=3, num_qo_heads=qo, num_kv_heads=kv, head_dim=head_dim,
                     seq_lens=[5001, 129, 63], bits=bits, group_size=group_size, seed=qo + head_dim + group_size)
    target = foscar.paginate(cache, 16) if paged else cache
    monkeypatch.setenv("FOSCAR_PV_PACK", "1")
    if paged:
        _check_paged(q, cache, target, backend="cuda")
    else:
        _check(q, cache, backend="cuda")
        _check(q, cache, num_splits=3, backend="cuda")
    out1, lse1 = foscar.decode(q, target, return_lse=True, backend="cuda")
    assert foscar.plan_decode(target, qo, backend="cuda").pv_pack is True
    monkeypatch.setenv("FOSCAR_PV_PACK", "0")
    out0, lse0 = foscar.decode(q, target, return_lse=True, backend="cuda")
    assert foscar.plan_decode(target, qo, backend="cuda").pv_pack is False
    torch.testing.assert_close(lse1, lse0, rtol=0, atol=2e-5)  # (a length-0 row's -inf equals -inf)
    if qo // kv > 4:
        assert torch.equal(lse1, lse0)
        assert torch.equal(out1, out0)
    else:
        gap = (out1.float() - out0.float()).abs()
        assert bool((gap <= out0.float().abs() * 2.0 ** -7 + 1e-6).all()), float(gap.max())


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits, head_dim, group_size", [(2, 128, 128), (4, 128, 128), (2, 64, 32)])
def test_gpu_ctas_per_sm_limit_keeps_the_output(monkeypatch, paged, bits, head_dim, group_size):
    """64 sequences x 8 KV heads of one chunk each (512 working CTAs, and the ragged batch's 512 spare slots) are held
    to 2 CTAs an SM at head_dim 128 (bench/NOTES.md §67: the launch pads its dynamic shared memory). Against the
    fp64 reference, and bit for bit against the same plan at as many CTAs an SM as fit and at one
    (``FOSCAR_MAX_CTAS_PER_SM``, read when a plan is made): only where the CTAs run changes."""
    import foscar
    from tests.test_paged import _check_paged

    dev = torch.device("cuda")
    lens = [(37 * b * b + 11 * b) % 1025 for b in range(64)]  # 0..1024, an empty sequence among them
    q, cache = _case(dev, batch=64, num_qo_heads=32, num_kv_heads=8, head_dim=head_dim, seq_lens=lens, bits=bits,
                     group_size=group_size, seed=bits + head_dim)
    target = foscar.paginate(cache, 16) if paged else cache
    monkeypatch.delenv("FOSCAR_MAX_CTAS_PER_SM", raising=False)
    plan = foscar.plan_decode(target, 32, backend="cuda")
    assert plan.max_ctas_per_sm == (2 if head_dim == 128 else 0)
    if paged:
        _check_paged(q, cache, target, backend="cuda")
    else:
        _check(q, cache, backend="cuda")
    out, lse = plan.run(q, target, return_lse=True)
    out, lse = out.clone(), lse.clone()
    for knob in ("0", "1"):
        monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", knob)
        other = foscar.plan_decode(target, 32, backend="cuda")
        assert other.max_ctas_per_sm == int(knob)
        o, l = other.run(q, target, return_lse=True)
        assert torch.equal(o, out) and torch.equal(l, lse)


@pytest.mark.gpu
@pytest.mark.parametrize("bits, head_dim", [(2, 128), (4, 128), (2, 64), (4, 256)])
def test_gpu_query_rows_off_8_byte_alignment(bits, head_dim):
    """The integer QK loads each head's query with 8-byte loads where its row is 8-byte aligned, else 2-byte
    loads (bench/NOTES.md §48): a query viewed at a 2-byte offset, and one whose rows are alternately aligned
    and 4 bytes off (rows of head_dim + 2 elements, both paths in one launch), give the same output and LSE,
    bit for bit, as the same values aligned."""
    import foscar

    q, cache = _case(torch.device("cuda"), batch=3, num_qo_heads=8, num_kv_heads=2, head_dim=head_dim,
                     seq_lens=[700, 1, 64], bits=bits, group_size=64, seed=bits + head_dim)
    buf = torch.empty(q.numel() + 1, dtype=q.dtype, device=q.device)
    odd = buf[1:].view(q.shape)
    odd.copy_(q)
    assert odd.data_ptr() % 8 == 2
    a, la = (t.clone() for t in foscar.decode(q, cache, return_lse=True, backend="cuda"))
    b, lb = (t.clone() for t in foscar.decode(odd, cache, return_lse=True, backend="cuda"))
    assert torch.equal(a, b) and torch.equal(la, lb)
    mixed = torch.empty(*q.shape[:2], head_dim + 2, dtype=q.dtype, device=q.device)[..., :head_dim]
    mixed.copy_(q)
    assert {(mixed.data_ptr() + 2 * h * mixed.stride(1)) % 8 for h in range(q.shape[1])} == {0, 4}
    c, lc = foscar.decode(mixed, cache, return_lse=True, backend="cuda")
    assert torch.equal(a, c) and torch.equal(la, lc)
    _check(q, cache, backend="cuda")


def _shifted(t):
    """The same values in a contiguous view whose data pointer is 4 bytes past a 16-byte boundary."""
    buf = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    view = buf[1:].view(t.shape)
    view.copy_(t)
    assert view.is_contiguous() and view.data_ptr() % 16 != 0
    return view


@pytest.mark.gpu
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("operand", ["bf16", "fp8"])
def test_gpu_scale_views_off_16_byte_alignment(paged, operand):
    """Issue 12: scales and offsets that are views with an odd storage offset (max_seq_len a multiple of
    4, so only the base pointer is off) take the 4-byte copy path: the same output as the aligned cache,
    never a fault."""
    import dataclasses

    import foscar

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=2, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=[4096, 1000],
                     bits=2, group_size=64)
    if paged:
        cache = foscar.paginate(cache, 64)
    fields = ("k_scale", "k_offset", "v_scale", "v_offset")
    shifted = dataclasses.replace(cache, **{f: _shifted(getattr(cache, f)) for f in fields})
    want = foscar.decode(q, cache, operand=operand, backend="cuda")
    got = foscar.decode(q, shifted, operand=operand, backend="cuda")
    torch.cuda.synchronize()
    assert torch.equal(got, want)


def test_misaligned_names_code_tensors_and_channel_wise_scales_off_16_bytes():
    """The binding refuses code rows (and a channel-wise K's scale rows) that do not start 16-byte aligned; a view
    at a storage offset can be such, and validate() accepts it (the Triton kernel reads it): decode_cuda.misaligned
    says which, so that backend='auto' takes the Triton kernel and backend='cuda' is refused before the binding."""
    import dataclasses

    import foscar

    k = torch.randn(2, 2, 64, 64, generator=torch.Generator().manual_seed(1))
    token = foscar.quantize_kv(k, -k, bits=2, group_size=32)
    channel = foscar.quantize_kv(k, -k, bits=4, group_size=32, k_layout="channel", k_block=32)
    assert decode_cuda.misaligned(token) is None and decode_cuda.misaligned(channel) is None
    scales = ("k_scale", "k_offset", "v_scale", "v_offset")
    shifted_scales = dataclasses.replace(token, **{f: _shifted(getattr(token, f)) for f in scales})
    assert decode_cuda.misaligned(shifted_scales) is None
    why = decode_cuda.misaligned(dataclasses.replace(token, v_codes=_shifted(token.v_codes)))
    assert why.startswith("the CUDA kernel copies k_codes, v_codes 16 bytes at a time")
    assert "v_codes starts 1 bytes" in why
    assert "storage offset 1: .clone() it" in why
    why = decode_cuda.misaligned(dataclasses.replace(channel, k_offset=_shifted(channel.k_offset)))
    assert "k_codes, v_codes, k_scale, k_offset" in why and "k_offset starts 4 bytes" in why
    assert decode_cuda.misaligned(dataclasses.replace(token, k_offset=_shifted(token.k_offset))) is None


@pytest.mark.gpu
@pytest.mark.parametrize("k_layout", ["token", "channel"])
def test_gpu_code_views_off_16_byte_alignment_take_the_triton_kernel(k_layout):
    """Codes at a storage offset off 16 bytes: backend='auto' plans the Triton kernel (the same output as Triton on the
    aligned cache, within 1e-2 of the fp64 reference), backend='cuda' is refused with the reason, never the binding's
    RuntimeError."""
    import dataclasses

    import foscar

    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(5)
    k, v = torch.randn(2, 4, 1000, 128, generator=g), torch.randn(2, 4, 1000, 128, generator=g)
    q = torch.randn(2, 16, 128, generator=g).to(dev, torch.bfloat16)
    layout = {"k_layout": "channel", "k_block": 64} if k_layout == "channel" else {}
    cache = foscar.quantize_kv(k.to(dev), v.to(dev), bits=4, group_size=64,
                               seq_lens=torch.tensor([1000, 333], dtype=torch.int32, device=dev), **layout)
    shifted = dataclasses.replace(cache, k_codes=_shifted(cache.k_codes))
    plan = foscar.plan_decode(shifted, q.shape[1])
    assert plan.kernel == "triton"
    got = plan.run(q, shifted).clone()
    assert torch.equal(got, foscar.decode(q, cache, backend="triton"))
    ref = foscar.reference_decode(q, cache)
    assert float((got.double() - ref).norm() / ref.norm()) < 1e-2
    with pytest.raises(ValueError, match=r"^backend='cuda': the CUDA kernel copies .* k_codes starts 1 bytes"):
        foscar.decode(q, shifted, backend="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("seq_lens, batch", [([1] * 256, 256), ([32768, 20001], 2)])
def test_gpu_per_value_lse(seq_lens, batch):
    # Per-value rounds each reconstructed K value to BF16 before the mma, so its scores (and
    # LSE) differ from the fp64 reference by that rounding: up to ~2e-2 for one token, ~2e-3
    # at 32K (scripts/diag_lse.py, bench/NOTES.md §6). Against the fp64 answer for those BF16
    # operands it must be exact to fp32 accumulation; length-1 sequences expose every score.
    import foscar

    dev = torch.device("cuda")
    q, cache = _case(dev, batch=batch, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=seq_lens, bits=2, group_size=128)
    _check(q, cache, backend="cuda", method="per-value", check_lse=False)  # outputs vs fp64 reference
    _, lse = foscar.decode(q, cache, backend="cuda", method="per-value", return_lse=True)
    _, ref_lse = foscar.reference_decode(q, cache, return_lse=True, k_operand_dtype=torch.bfloat16)
    assert torch.allclose(lse.double(), ref_lse, rtol=0, atol=1e-4), float((lse.double() - ref_lse).abs().max())


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


def test_fp8_score_emulation_channel_k_is_the_reference_for_e4m3_exact_queries():
    import foscar

    g = torch.Generator().manual_seed(5)
    # channel scales 2^-j and |q| in {1, 2} with max 2: q * s * sigma lands on e4m3 values
    q = (torch.tensor([1.0, 2.0])[torch.randint(0, 2, (2, 4, 64), generator=g)]).to(torch.bfloat16)
    q[..., 0] = 2.0
    k = torch.randn(2, 2, 70, 64, generator=g)
    v = torch.randn(2, 2, 70, 64, generator=g)
    cache = foscar.quantize_kv(k, v, 2, 32, seq_lens=torch.tensor([70, 7], dtype=torch.int32),
                               k_layout="channel", k_block=32)
    cache.k_scale.copy_(2.0 ** -torch.randint(0, 4, cache.k_scale.shape, generator=g).float())
    cache.k_scale[..., 0] = 1.0  # the largest |q s| of every (head, block): 2
    out, lse = fp8_score_emulation(q, cache)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert torch.allclose(out, ref, rtol=1e-9, atol=1e-12) and torch.allclose(lse, ref_lse, rtol=1e-12, atol=1e-12)


# Every build knob of the kernel (``#ifndef`` / ``#ifdef FOSCAR_...`` in folded_decode_sm90.cuh) at a value other than
# its default, with what else it needs to change code at head_dim 128 (compared with the build of that alone, which
# is another knob's build): the experiments that bench/NOTES.md records, kept buildable. Left out:
# FOSCAR_ONLY_HEAD_DIM (the compile test above), FOSCAR_TIMELINE (tests/test_timeline.py).
KNOB_BUILDS = {"FOSCAR_STAGES": ("3",), "FOSCAR_MERGE_WARP": ("0",), "FOSCAR_FUSED_MERGE": ("0",),
               # plane scaling acts only on INT2's BF16 PV, which the integer PV replaces at head_dim <= 128
               "FOSCAR_PLANE_SCALE": ("0", "FOSCAR_IMMA_PV=0"),
               "FOSCAR_IMMA_QK": ("0",), "FOSCAR_IMMA_QK_INT4": ("0",), "FOSCAR_IMMA_PV": ("0",),
               "FOSCAR_IMMA_PV_INT4": ("1",), "FOSCAR_PV_PACK": ("0",), "FOSCAR_PV_PACK_INT4": ("0",),
               "FOSCAR_PK_TOKENS": ("0",), "FOSCAR_QK_HALF": ("0",), "FOSCAR_ONE_CHUNK_PATH": ("0",),
               "FOSCAR_GRID_2D": ("0",), "FOSCAR_CP_L2_PREFETCH": ("128",), "FOSCAR_TILE_PROBE": ("1",),
               "FOSCAR_L2_ONLY": ("1",), "FOSCAR_PREWAIT_PREFETCH": ("4",),
               # the trigger and the wave bound act only in builds that prefetch before the wait
               "FOSCAR_EARLY_TRIGGER": ("0", "FOSCAR_PREWAIT_PREFETCH=4"),
               "FOSCAR_PREWAIT_WAVE": ("0", "FOSCAR_PREWAIT_PREFETCH=4"),
               # paged instances prefetch with it in builds that prefetch (KNOB_UNITS: the paged unit)
               "FOSCAR_PREWAIT_PAGED": ("1", "FOSCAR_PREWAIT_PREFETCH=4"),
               "FOSCAR_MIN_BLOCKS": ("2",), "FOSCAR_SEQ_CHUNK_CAP": ("0",), "FOSCAR_KEEP_SHORT": ("1",),
               "FOSCAR_WAVE_FIT": ("1",), "FOSCAR_PAGE_CHECK": ("1",)}


def kernel_knobs() -> set[str]:
    """Every ``-D`` knob of the kernel source: the names it tests with ``#ifndef`` / ``#ifdef`` / ``defined()``
    (:func:`foscar.kernels.decode_cuda.kernel_knobs`, which ``bench.ab_rounds`` checks a variant's defines with)."""
    return decode_cuda.kernel_knobs(decode_cuda.DEFAULT_CSRC)


def test_knob_builds_cover_every_knob_of_the_kernel():
    assert kernel_knobs() - {"FOSCAR_ONLY_HEAD_DIM", "FOSCAR_TIMELINE"} == set(KNOB_BUILDS)


# the unit a knob acts in, where that is not the contiguous BF16 one (its build and its reference compile that unit)
KNOB_UNITS = {"FOSCAR_PREWAIT_PAGED": "decode_mode_bf16_paged.cu", "FOSCAR_PAGE_CHECK": "decode_mode_bf16_paged.cu",
              # 1 moves only INT4's channel-wise K instances (back to the BF16 PV)
              "FOSCAR_IMMA_PV_INT4": "decode_mode_bf16_channel.cu"}
# knobs that act only in the host code of launch() (FOSCAR_PREWAIT_WAVE: which CTAs prefetch, a launch parameter): a
# device-only build is their reference's cubin, so for them the test compares the preprocessed unit instead
KNOB_HOST_ONLY = {"FOSCAR_PREWAIT_WAVE"}


# gpu: a compile of one unit a knob and reference (~12 s each) belongs on the GPU machine's 16 cores, not the 2-core CI
@pytest.mark.gpu
def test_knob_builds_compile(tmp_path):
    """Each knob of KNOB_BUILDS at its other value compiles its unit (KNOB_UNITS, else the contiguous BF16 one; head_dim
    128) without error, to a cubin other than its reference's, the same unit built with the knob's extra defines
    alone (without -lineinfo, whose strings would differ anyway): not the reference in disguise. A knob of the host
    code only (KNOB_HOST_ONLY) compiles to its reference's cubin; its preprocessed unit must differ instead."""
    nvcc = decode_cuda.find_nvcc() or shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: cannot compile the CUDA source here")
    flags = [f for f in decode_cuda.BASE_NVCC_FLAGS if f != "-lineinfo"]
    # name -> (unit, defines): each knob's build, then each reference that is not another knob's build
    builds = {k: (KNOB_UNITS.get(k, "decode_mode_bf16.cu"), (f"-D{k}={v[0]}", *(f"-D{d}" for d in v[1:])))
              for k, v in KNOB_BUILDS.items()}
    by_build = {(unit, frozenset(defs)): k for k, (unit, defs) in builds.items()}
    reference = {}
    for k, (unit, defs) in list(builds.items()):
        ref = (unit, frozenset(defs[1:]))
        if ref not in by_build:
            by_build[ref] = f"reference{len(by_build)}"
            builds[by_build[ref]] = (unit, defs[1:])
        reference[k] = by_build[ref]
    sources = {s.name: s for s in decode_cuda.SOURCES}
    procs = {k: subprocess.Popen([nvcc, *flags, "-DFOSCAR_ONLY_HEAD_DIM=128", *defs, "-cubin", str(sources[unit]),
                                  "-o", str(tmp_path / f"{k}.cubin")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, (unit, defs) in builds.items()}
    failed = {}
    for k, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            proc.kill()
            failed[k] = "timed out after 900 s"
            continue
        if proc.returncode != 0:
            failed[k] = err[-1500:]
    assert not failed, failed
    same = [k for k in KNOB_BUILDS if k not in KNOB_HOST_ONLY
            and (tmp_path / f"{k}.cubin").read_bytes() == (tmp_path / f"{reference[k]}.cubin").read_bytes()]
    assert not same, f"these knob builds compile to their reference's cubin (the same unit without the knob): {same}"

    def preprocessed(unit, defs):
        return subprocess.run([nvcc, *flags, "-DFOSCAR_ONLY_HEAD_DIM=128", *defs, "-E", str(sources[unit])],
                              capture_output=True, text=True, check=True).stdout
    same = [k for k in sorted(KNOB_HOST_ONLY)
            if preprocessed(*builds[k]) == preprocessed(*builds[reference[k]])]
    assert not same, f"these host-code knobs leave their preprocessed unit as their reference's: {same}"


@pytest.mark.parametrize("fused_merge", ["1", "0"])
def test_the_c_entry_compiles_host_and_device_in_either_merge_build(tmp_path, fused_merge):
    """The C entry (folded_decode_sm90.cu) with its host code, which the -cubin compiles above leave out: a constant
    it reads (kMaxGqa) once stood under ``#if FOSCAR_FUSED_MERGE``, so a build with ``FOSCAR_FUSED_MERGE=0`` failed
    here (a few seconds: the kernels are instantiated in the decode_mode units)."""
    nvcc = decode_cuda.find_nvcc() or shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: cannot compile the CUDA source here")
    src = decode_cuda.CSRC / "folded_decode_sm90.cu"
    proc = subprocess.run([nvcc, *decode_cuda.BASE_NVCC_FLAGS, "-DFOSCAR_ONLY_HEAD_DIM=128",
                           f"-DFOSCAR_FUSED_MERGE={fused_merge}", "-c", str(src), "-o", str(tmp_path / "entry.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_binding_source_compiles(tmp_path):
    """The torch binding (binding.cpp) is not in the nvcc compile above (it needs torch's headers):
    a syntax check with the host compiler, torch's include paths and the CUDA headers, printf formats checked
    (its messages go through vsnprintf). No TORCH_CHECK: its message formatting crashed the process on the
    GPU machines (bench/NOTES.md §59)."""
    import sysconfig

    from torch.utils.cpp_extension import CUDA_HOME, include_paths

    cxx = shutil.which("g++") or shutil.which("c++")
    cuda_include = [p for p in (CUDA_HOME and f"{CUDA_HOME}/include", "/usr/local/cuda/include") if p]
    cuda_include = next((p for p in cuda_include if (Path(p) / "cuda_runtime.h").exists()), None)
    if cxx is None or cuda_include is None:
        pytest.skip(f"needs a C++ compiler and the CUDA headers (found {cxx}, {cuda_include})")
    # a CPU build of torch lacks this generated header of its CUDA headers; an empty one stands in
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl"
    stub.mkdir(parents=True)
    (stub / "cuda_cmake_macros.h").write_text("")
    src = next(s for s in decode_cuda.SOURCES if s.name == "binding.cpp")
    assert "TORCH_CHECK(" not in src.read_text()
    cmd = [cxx, "-fsyntax-only", "-std=c++17", "-Wformat", "-Werror=format", "-DTORCH_EXTENSION_NAME=foscar_check",
           f"-I{tmp_path / 'stub'}",
           *(f"-I{p}" for p in include_paths()), f"-I{cuda_include}", f"-I{sysconfig.get_paths()['include']}", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_binding_sets_every_field_of_the_c_entry_arguments():
    """foscar_folded_decode_sm90 takes its 42 arguments as a struct (FoscarDecodeArgs) filled by field name: a field
    the binding forgets stays 0 and compiles, so every field of the header's struct must be assigned in binding.cpp
    and read in the C entry (folded_decode_sm90.cu)."""
    import re

    header = (decode_cuda.CSRC / "folded_decode_sm90.h").read_text()
    body = re.search(r"typedef struct FoscarDecodeArgs \{(.*?)\} FoscarDecodeArgs;", header, re.S).group(1)
    fields = []
    for decl in re.sub(r"//[^\n]*", "", body).split(";"):
        decl = decl.strip()
        if decl:  # "const int* lens", "int num_indices, num_pages, page_size"
            fields += [re.search(r"(\w+)\s*$", part).group(1) for part in decl.split(",")]
    assert len(fields) == len(set(fields)) and "batch" in fields and "pdl" in fields and len(fields) >= 42, fields
    binding = next(s for s in decode_cuda.SOURCES if s.name == "binding.cpp").read_text()
    entry = (decode_cuda.CSRC / "folded_decode_sm90.cu").read_text()
    assert [f for f in fields if not re.search(rf"\ba\.{f} = ", binding)] == []
    assert [f for f in fields if not re.search(rf"\ba\.{f}\b", entry)] == []


def test_build_settings_say_when_an_experiment_knob_changes_the_kernel(monkeypatch, tmp_path):
    """meta.json's cuda_kernel_build: numbers from a -D knob or another source tree are not the shipped kernel's."""
    import importlib

    from foscar.kernels import decode_cuda

    before = decode_cuda.build_settings()
    try:
        monkeypatch.setenv("FOSCAR_NVCC_DEFINES", "FOSCAR_MIN_BLOCKS=4")
        s = importlib.reload(decode_cuda).build_settings()
        assert s["default_build"] is False and "-DFOSCAR_MIN_BLOCKS=4" in s["nvcc_flags"]
        monkeypatch.delenv("FOSCAR_NVCC_DEFINES")
        monkeypatch.delenv("FOSCAR_MERGE", raising=False)
        monkeypatch.delenv("FOSCAR_CSRC", raising=False)
        monkeypatch.delenv("FOSCAR_NVCC_FLAGS", raising=False)
        monkeypatch.delenv("FOSCAR_MERGE_SPECULATE", raising=False)
        monkeypatch.delenv("FOSCAR_MERGE_PDL", raising=False)
        monkeypatch.delenv("FOSCAR_MERGE_FIXED_WINDOW", raising=False)
        monkeypatch.delenv("FOSCAR_MERGE_FROM_LENGTHS", raising=False)
        monkeypatch.delenv("FOSCAR_PV_PACK", raising=False)
        monkeypatch.delenv("FOSCAR_MAX_CTAS_PER_SM", raising=False)
        monkeypatch.delenv("FOSCAR_PDL", raising=False)
        for knob in ("FOSCAR_MERGE_TREE", "FOSCAR_MERGE_LEVELS", "FOSCAR_MERGE_WIDE", "FOSCAR_SHORT_CHUNKS",
                     "FOSCAR_LONG_CHUNKS", "FOSCAR_LONG_CHUNK_PROGRAMS", "FOSCAR_LONG_CHUNK_ROOM",
                     "FOSCAR_LONG_CHUNK_TOKENS", "FOSCAR_LONG_CHUNK_SHORT", "FOSCAR_LONG_CHUNK_CEIL",
                     "FOSCAR_SHORT_TOKENS", "FOSCAR_MERGE_ROWS", "FOSCAR_MERGE_D_SLICES"):
            monkeypatch.delenv(knob, raising=False)
        s = importlib.reload(decode_cuda).build_settings()
        assert (s["merge_tree"], s["merge_levels"], s["merge_wide"], s["short_chunks"], s["long_chunks"],
                s["long_chunk_programs"], s["long_chunk_room"], s["long_chunk_tokens"], s["long_chunk_short"],
                s["long_chunk_ceil"], s["short_tokens"], s["merge_rows"], s["merge_d_slices"]) == (
            True, False, True, True, True, 1, True, 512, True, True, True, "auto", "auto")
        assert s["default_build"] is True and s["merge_speculate"] is False and s["merge_pdl"] is True
        assert s["merge"] == "fused" and s["fused_merge_built"] is True
        monkeypatch.setenv("FOSCAR_MERGE", "kernel")  # plans take the merge kernel (read when a plan is made)
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["merge"] == "kernel"
        monkeypatch.delenv("FOSCAR_MERGE")
        assert s["pv_pack"] is True and s["max_ctas_per_sm"] == "auto" and s["pdl"] is True
        monkeypatch.setenv("FOSCAR_PDL", "0")  # the decode kernel launched without PDL (read when a plan is made)
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["pdl"] is False
        monkeypatch.setenv("FOSCAR_PDL", "1")
        monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "0")  # as many CTAs an SM as fit (read when a plan is made)
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["max_ctas_per_sm"] == "0"
        monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "auto")
        monkeypatch.setenv("FOSCAR_MERGE_SPECULATE", "1")  # the speculative merge (read per call, as per plan)
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["merge_speculate"] is True
        monkeypatch.setenv("FOSCAR_MERGE_SPECULATE", "0")
        monkeypatch.setenv("FOSCAR_MERGE_PDL", "0")  # the merge kernel launched without PDL
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["merge_pdl"] is False
        monkeypatch.setenv("FOSCAR_MERGE_PDL", "1")
        monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "0")  # fixed chunks merged with the chunk table
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["merge_fixed_window"] is False
        monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "1")
        monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", "1")  # the merge derives its ranges from the lengths
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["merge_from_lengths"] is True
        monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", "0")
        monkeypatch.setenv("FOSCAR_PV_PACK", "0")  # the two-mma integer PV (read when a plan is made)
        s = decode_cuda.build_settings()
        assert s["default_build"] is False and s["pv_pack"] is False
        monkeypatch.setenv("FOSCAR_PV_PACK", "yes")
        with pytest.raises(ValueError, match="FOSCAR_PV_PACK"):
            decode_cuda.pv_pack_choice()
        monkeypatch.setenv("FOSCAR_PV_PACK", "1")
        # the plan rules (read when a plan is made): each off its default is not the shipped kernel's plan
        for knob, value, key, got in (("FOSCAR_MERGE_TREE", "0", "merge_tree", False),
                                      ("FOSCAR_MERGE_LEVELS", "1", "merge_levels", True),
                                      ("FOSCAR_MERGE_WIDE", "0", "merge_wide", False),
                                      ("FOSCAR_SHORT_CHUNKS", "0", "short_chunks", False),
                                      ("FOSCAR_LONG_CHUNKS", "0", "long_chunks", False),
                                      ("FOSCAR_LONG_CHUNK_PROGRAMS", "2", "long_chunk_programs", 2),
                                      ("FOSCAR_LONG_CHUNK_ROOM", "0", "long_chunk_room", False),
                                      ("FOSCAR_LONG_CHUNK_TOKENS", "1024", "long_chunk_tokens", 1024),
                                      ("FOSCAR_LONG_CHUNK_SHORT", "0", "long_chunk_short", False),
                                      ("FOSCAR_LONG_CHUNK_CEIL", "0", "long_chunk_ceil", False),
                                      ("FOSCAR_SHORT_TOKENS", "0", "short_tokens", False),
                                      ("FOSCAR_MERGE_ROWS", "2", "merge_rows", "2"),
                                      ("FOSCAR_MERGE_D_SLICES", "1", "merge_d_slices", "1")):
            monkeypatch.setenv(knob, value)
            s = decode_cuda.build_settings()
            assert s["default_build"] is False and s[key] == got, knob
            monkeypatch.delenv(knob)
        assert decode_cuda.build_settings()["default_build"] is True
    finally:  # the process's own environment and module state back, whatever it was
        monkeypatch.undo()
        importlib.reload(decode_cuda)
    assert decode_cuda.build_settings() == before


def test_merge_choice_is_read_per_plan_and_names_bad_values(monkeypatch):
    """FOSCAR_MERGE is read whenever a plan is made (default: the fused merge), so one build runs both merges."""
    monkeypatch.delenv("FOSCAR_MERGE", raising=False)
    monkeypatch.setattr(decode_cuda, "FUSED_MERGE_BUILT", True)
    assert decode_cuda.merge_choice() == "fused"
    monkeypatch.setattr(decode_cuda, "FUSED_MERGE_BUILT", False)  # a FOSCAR_FUSED_MERGE=0 build: the merge kernel
    assert decode_cuda.merge_choice() == "kernel"
    monkeypatch.setenv("FOSCAR_MERGE", "fused")  # asked for by name: refused with what to do
    with pytest.raises(ValueError, match="built without the fused merge.*FOSCAR_FUSED_MERGE=0.*FOSCAR_MERGE=kernel"):
        decode_cuda.merge_choice()
    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    assert decode_cuda.merge_choice() == "kernel"
    monkeypatch.setattr(decode_cuda, "FUSED_MERGE_BUILT", True)
    assert decode_cuda.merge_choice() == "kernel"
    monkeypatch.setenv("FOSCAR_MERGE", "fused")
    assert decode_cuda.merge_choice() == "fused"
    monkeypatch.setenv("FOSCAR_MERGE", "Fused")
    with pytest.raises(ValueError, match="expected 'fused' or 'kernel', got 'Fused'"):
        decode_cuda.merge_choice()


def test_merge_choice_default_is_the_callers_where_foscar_merge_is_unset(monkeypatch):
    """A one-shot foscar.decode passes default="kernel" (no counters to zero at every call, NOTES §80): taken
    where FOSCAR_MERGE is unset, also in a FOSCAR_FUSED_MERGE=0 build; FOSCAR_MERGE, where set, wins."""
    monkeypatch.delenv("FOSCAR_MERGE", raising=False)
    monkeypatch.setattr(decode_cuda, "FUSED_MERGE_BUILT", False)
    assert decode_cuda.merge_choice("kernel") == "kernel"
    monkeypatch.setattr(decode_cuda, "FUSED_MERGE_BUILT", True)
    assert decode_cuda.merge_choice("kernel") == "kernel" and decode_cuda.merge_choice("fused") == "fused"
    monkeypatch.setenv("FOSCAR_MERGE", "fused")
    assert decode_cuda.merge_choice("kernel") == "fused"
    with pytest.raises(ValueError, match="default: expected 'fused' or 'kernel', got 'both'"):
        decode_cuda.merge_choice("both")


def test_merge_buffers_are_sized_for_the_merge():
    counters, seq_chunks = decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "fused")
    assert counters.shape == (3, 2) and counters.dtype == torch.int32 and not counters.any()  # zero: the kernel counts
    assert seq_chunks is None
    counters, seq_chunks = decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "kernel")
    assert counters.numel() == 0 and counters.dtype == torch.int32
    assert seq_chunks.shape == (3, 2) and seq_chunks.dtype == torch.int32
    with pytest.raises(ValueError, match="expected 'fused' or 'kernel', got 'both'"):
        decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "both")
    counters, _ = decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "fused", groups=4)  # merge_tree's (NOTES §108)
    assert counters.shape == (3, 2, 5) and not counters.any()
    assert decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "kernel", groups=4)[0].numel() == 0
    with pytest.raises(ValueError, match="groups: expected 0 or more group counters, got -1"):
        decode_cuda.merge_buffers(3, 2, torch.device("cpu"), "fused", groups=-1)


@pytest.mark.parametrize("var, choice, default", [
    ("FOSCAR_MERGE_LEVELS", "merge_levels_choice", False),  # the merge kernel past 32 chunks (NOTES §111)
    ("FOSCAR_MERGE_TREE", "merge_tree_choice", True),
    ("FOSCAR_MERGE_WIDE", "merge_wide_choice", True),  # few two-pass merges: the merge kernel (NOTES §116)
])
def test_merge_plan_settings(monkeypatch, var, choice, default):
    """The merge's plan settings, read when a plan is made: ``"1"`` / ``"0"``, their default where unset, and an
    error that names the variable and the allowed values for anything else."""
    read = getattr(decode_cuda, choice)
    monkeypatch.delenv(var, raising=False)
    assert read() is default
    for value in ("1", "0"):
        monkeypatch.setenv(var, value)
        assert read() is (value == "1")
    monkeypatch.setenv(var, "on")
    with pytest.raises(ValueError, match=f"{var}: expected '1' or '0', got 'on'"):
        read()


def test_the_merge_kernel_is_preferred_for_few_two_pass_merges():
    """merge_kernel_preferred (NOTES §116-§117): the merging CTA's 128 threads cover 512 floats a pass, so gqa 8 at
    head_dim 128 and gqa 4-8 at 256 take two or more; at most 16 (sequence, KV head) pairs; gqa 6 and gqa 4 at 128
    (a half-full second pass, one pass), gqa 2-3 at 256 (one pass, one and a half), head_dim 64 (one pass at any gqa
    of the kernel) and batch 32 at one KV head keep the in-kernel merge."""
    assert decode_cuda.MERGE_PASS_FLOATS == 512 and decode_cuda.WIDE_MERGE_MAX_PAIRS == 16
    pref = decode_cuda.merge_kernel_preferred
    assert pref(8, 128, 1, 1) and pref(8, 128, 16, 1) and pref(8, 128, 8, 2) and pref(8, 128, 1, 8)
    assert not pref(8, 128, 32, 1) and not pref(8, 128, 8, 8) and not pref(8, 128, 17, 1)
    assert not any(pref(g, 128, 1, 1) for g in (1, 2, 3, 4, 5, 6, 7))
    assert all(pref(g, 256, 1, 1) for g in range(4, 9)) and pref(4, 256, 4, 4) and pref(8, 256, 16, 1)
    assert not any(pref(g, 256, 1, 1) for g in (1, 2, 3)) and not pref(4, 256, 8, 4) and not pref(8, 256, 17, 1)
    assert not any(pref(g, 64, 1, 1) for g in range(1, 9))


def test_defined_value_reads_an_nvcc_define_in_either_spelling():
    dv = decode_cuda.defined_value
    assert dv(("-O3", "-DFOSCAR_FUSED_MERGE=0"), "FOSCAR_FUSED_MERGE") == "0"
    assert dv(("-D", "FOSCAR_FUSED_MERGE=0", "-DX"), "FOSCAR_FUSED_MERGE") == "0"
    assert dv(("-DFOSCAR_FUSED_MERGE",), "FOSCAR_FUSED_MERGE") == "1"
    assert dv(("-DFOSCAR_FUSED_MERGE_X=0", "-D"), "FOSCAR_FUSED_MERGE") is None
    assert dv(("-DA=1", "-DA=0"), "A") == "0"


def test_an_off_by_default_knob_is_on_as_its_if_reads_it():
    """KEEP_SHORT_BUILT and WAVE_FIT_BUILT follow the kernel's ``#if FOSCAR_...`` (default 0): any value but 0 is on
    (a -DFOSCAR_WAVE_FIT=2 build grows its chunks, so its plans must read the chunk table too)."""
    on = decode_cuda.defined_on
    assert on(("-DFOSCAR_WAVE_FIT=1",), "FOSCAR_WAVE_FIT") and on(("-DFOSCAR_WAVE_FIT=2",), "FOSCAR_WAVE_FIT")
    assert on(("-DFOSCAR_WAVE_FIT",), "FOSCAR_WAVE_FIT")
    assert not on(("-DFOSCAR_WAVE_FIT=0",), "FOSCAR_WAVE_FIT") and not on(("-O3",), "FOSCAR_WAVE_FIT")
    assert not on(("-DFOSCAR_WAVE_FIT=1", "-DFOSCAR_WAVE_FIT=0"), "FOSCAR_WAVE_FIT")


def test_fused_merge_build_is_the_same_from_either_switch(monkeypatch):
    """Every build holds the fused merge unless FOSCAR_FUSED_MERGE=0 leaves it out (other flags: another cached
    build); FOSCAR_MERGE, read per plan, does not change the build; a bad FOSCAR_MERGE stops the import with the
    allowed values."""
    import importlib

    before = decode_cuda.build_settings()
    try:
        monkeypatch.delenv("FOSCAR_NVCC_DEFINES", raising=False)
        monkeypatch.delenv("FOSCAR_MERGE", raising=False)
        fused = importlib.reload(decode_cuda)
        flags, digest = fused.NVCC_FLAGS, fused.source_hash()
        assert fused.FUSED_MERGE_BUILT and flags == fused.BASE_NVCC_FLAGS
        assert fused.build_settings()["merge"] == "fused"
        monkeypatch.setenv("FOSCAR_MERGE", "kernel")
        same = importlib.reload(decode_cuda)
        assert same.FUSED_MERGE_BUILT and same.NVCC_FLAGS == flags and same.source_hash() == digest
        assert same.merge_choice() == "kernel" and same.build_settings()["default_build"] is False
        monkeypatch.setenv("FOSCAR_MERGE", "fused")
        assert same.merge_choice() == "fused"
        monkeypatch.setenv("FOSCAR_NVCC_DEFINES", "FOSCAR_FUSED_MERGE=0")
        without = importlib.reload(decode_cuda)
        assert not without.FUSED_MERGE_BUILT and "-DFOSCAR_FUSED_MERGE=0" in without.NVCC_FLAGS
        assert without.source_hash() != digest
        monkeypatch.delenv("FOSCAR_MERGE")
        assert without.merge_choice() == "kernel" and without.build_settings()["merge"] == "kernel"
        monkeypatch.delenv("FOSCAR_NVCC_DEFINES")
        monkeypatch.setenv("FOSCAR_NVCC_FLAGS", "-DFOSCAR_FUSED_MERGE=0")  # the same define through the flags
        assert not importlib.reload(decode_cuda).FUSED_MERGE_BUILT
        monkeypatch.setenv("FOSCAR_NVCC_FLAGS", "-D FOSCAR_FUSED_MERGE=0")  # spelled as two words
        assert not importlib.reload(decode_cuda).FUSED_MERGE_BUILT
        monkeypatch.setenv("FOSCAR_NVCC_FLAGS", "-DFOSCAR_FUSED_MERGE=0 -DFOSCAR_FUSED_MERGE=1")  # the last one wins
        assert importlib.reload(decode_cuda).FUSED_MERGE_BUILT
        monkeypatch.delenv("FOSCAR_NVCC_FLAGS")
        monkeypatch.setenv("FOSCAR_MERGE", "both")
        with pytest.raises(ValueError, match="FOSCAR_MERGE: expected 'fused' or 'kernel', got 'both'"):
            importlib.reload(decode_cuda)
    finally:  # the process's own environment and module state back
        monkeypatch.undo()
        importlib.reload(decode_cuda)
    assert decode_cuda.build_settings() == before


_BAD_CALL_SCRIPT = """
import torch, foscar
from foscar.kernels import decode_cuda
from tests.test_decode_triton import _case
q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=8, num_kv_heads=2, head_dim=128, seq_lens=[1000],
                 bits=2, group_size=128)
plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=4)
bad_calls = [
    (q, 0, True),  # fixed_window without fixed chunks (fixed_splits 0): integers in the message
    (q.cpu(), 4, False),  # a query on the CPU: the binding's first check, a message of text only
    (q[0], 4, False),  # a query of 2 dims: refused by the binding's rank check, before torch's stride(2) would check it
    (q, 4, False, 2),  # pdl neither 0 nor 1
    (q, 4, False, 0, 384),  # min_chunk neither 256 nor 512
    (q, 4, False, 0, 512, 300),  # long_chunk not a multiple of 256
    (q, 4, False, 0, 512, 0, -1),  # a negative short_tokens
]
for query, fixed_splits, fixed_window, *more in bad_calls:
    pdl, min_chunk = more[0] if more else False, more[1] if len(more) > 1 else 512
    long_chunk = more[2] if len(more) > 2 else 0
    short_tokens = more[3] if len(more) > 3 else 0
    try:
        decode_cuda.launch(query, cache, 0.1, plan._o_part, plan._lse_part, plan.out, plan.lse, plan._counters,
                           fixed_splits, plan._o_part.shape[0], "bf16", plan._seq_chunks, fixed_window,
                           pdl=pdl, min_chunk=min_chunk, long_chunk=long_chunk, short_tokens=short_tokens)
    except RuntimeError as e:
        print("raised:", e)
"""


@pytest.mark.gpu
def test_the_binding_raises_on_a_bad_argument_and_never_crashes():
    """A call of the extension that the binding's checks refuse raises a RuntimeError naming the argument; it must
    not take the process down. In a subprocess: in sessions 20 and 21 such a call ended the process with a
    segmentation fault while TORCH_CHECK formatted an integer into its message (bench/NOTES.md §58, §59); the
    binding's checks now format with vsnprintf."""
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", _BAD_CALL_SCRIPT], capture_output=True, text=True, cwd=root,
                          timeout=900)
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr[-3000:]}"
    raised = [line for line in proc.stdout.splitlines() if line.startswith("raised:")]
    assert len(raised) == 7, proc.stdout[-2000:]
    assert "fixed_window: 0, or 1 with fixed_splits >= 2 and seq_chunks; got fixed_window 1, fixed_splits 0" in raised[0]
    assert "q: CUDA bf16, last dim contiguous" in raised[1]
    assert "q: [batch, num_qo_heads, head_dim], got 2 dims" in raised[2]
    assert "pdl: 0 (a plain launch) or 1 (programmatic dependent launch), got 2" in raised[3]
    assert "min_chunk: expected 256 or 512 tokens, got 384" in raised[4]
    assert "long_chunk: expected 0 or a multiple of 256 tokens up to 32768, got 300" in raised[5]
    assert "short_tokens: expected 0 (never) or a token count up to 2^31 - 1, got -1" in raised[6]


def test_plans_of_a_16k_cache_take_the_floor_of_256(monkeypatch):
    """``plan_splits`` and ``plan_long_chunk_of`` plan with the long chunks' floor of the cache's capacity
    (splits.long_chunk_floor, which plan_work and plan_long_chunk apply; bench/NOTES.md §115): a batch of one in a 16K
    cache at one KV head on 132 SMs takes 64 fixed splits with a long chunk of 256; with ``FOSCAR_LONG_CHUNK_SHORT=0``
    32 of 512, and a 16K + 256 cache 33 of 512 by default (32 with ``FOSCAR_LONG_CHUNK_CEIL=0``);
    ``FOSCAR_LONG_CHUNK_TOKENS=4096`` changes nothing at 16K but gives 32 past it. A bad value names the setting."""
    import types

    monkeypatch.setattr(decode_cuda, "device_sm_count", lambda device: 132)
    for knob in ("FOSCAR_LONG_CHUNKS", "FOSCAR_LONG_CHUNK_PROGRAMS", "FOSCAR_LONG_CHUNK_ROOM",
                 "FOSCAR_LONG_CHUNK_TOKENS", "FOSCAR_LONG_CHUNK_SHORT", "FOSCAR_LONG_CHUNK_CEIL",
                 "FOSCAR_SHORT_CHUNKS"):
        monkeypatch.delenv(knob, raising=False)
    cpu = torch.device("cpu")

    def plan(capacity):
        cache = types.SimpleNamespace(batch_size=1, num_kv_heads=1, max_seq_len=capacity, bits=2, head_dim=128)
        slots, fixed, target = decode_cuda.plan_splits(cache, cpu)
        return (slots, fixed, target), decode_cuda.plan_long_chunk_of(cache, cpu, None, fixed)

    assert plan(16384) == ((64, 64, 1), 256)
    assert plan(16384 + 256) == ((33, 33, 1), 512)  # ceil(16640 / 512) chunks of at most 512
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", "4096")
    assert plan(16384) == ((64, 64, 1), 256) and plan(32768) == ((32, 32, 1), 4096)
    monkeypatch.delenv("FOSCAR_LONG_CHUNK_TOKENS")
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_SHORT", "0")
    assert plan(16384) == ((32, 32, 1), 512)
    monkeypatch.delenv("FOSCAR_LONG_CHUNK_SHORT")
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_CEIL", "0")  # 16640 // 512 = 32 splits, of 768 tokens: 22 chunks
    assert plan(16384 + 256) == ((32, 32, 1), 512) and plan(16384) == ((64, 64, 1), 256)
    monkeypatch.delenv("FOSCAR_LONG_CHUNK_CEIL")
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_SHORT", "on")
    with pytest.raises(ValueError, match="FOSCAR_LONG_CHUNK_SHORT"):
        plan(16384)


def test_plan_long_chunk_of_reads_the_room_setting_and_takes_an_empty_batch(monkeypatch):
    """``plan_long_chunk_of`` passes the cache's batch and ``FOSCAR_LONG_CHUNK_ROOM`` (read when a plan is made) to
    splits.plan_long_chunk: one 512K sequence among seven at one KV head on 132 SMs, 4352 with the room (the default
    since session 68, bench/NOTES.md §112, §113), 4096 without; an empty batch (plan_decode accepts one) plans as a
    batch of one in both settings, and so does a batch past the room's bound (18 sequences at one KV head)."""
    import types

    monkeypatch.setattr(decode_cuda, "device_sm_count", lambda device: 132)
    for room, want in (("0", 4096), ("1", 4352)):
        monkeypatch.setenv("FOSCAR_LONG_CHUNK_ROOM", room)
        for batch, expected in ((8, want), (0, 4096), (18, 4096)):
            cache = types.SimpleNamespace(num_kv_heads=1, max_seq_len=1 << 19, batch_size=batch)
            assert decode_cuda.plan_long_chunk_of(cache, torch.device("cpu"), None) == expected, (room, batch)
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_ROOM", "on")
    with pytest.raises(ValueError, match="FOSCAR_LONG_CHUNK_ROOM"):
        decode_cuda.plan_long_chunk_of(cache, torch.device("cpu"), None)


def page_check_ids(start: int, end: int, page_shift: int, warps: int = 4, tile: int = 64) -> list[set[int]]:
    """Python mirror of the FOSCAR_PAGE_CHECK build's enumeration (folded_decode_sm90.cuh, before the loop): the page
    indices (into the sequence's kv_indices) that each warp's lanes read for a chunk of tokens [start, end)."""
    first0, stride = start, warps * tile
    tile_shift = max(6 - page_shift, 0)
    read = []
    for warp in range(warps):
        first = first0 + warp * tile
        n = ((end - first + stride - 1) // stride) << tile_shift if first < end else 0
        ids = set()
        for lane in range(32):
            for i in range(lane, n, 32):
                t = first + (i >> tile_shift) * stride + ((i & ((1 << tile_shift) - 1)) << page_shift)
                if t < end:
                    ids.add(t >> page_shift)
        read.append(ids)
    return read


@pytest.mark.parametrize("page_shift", range(0, 9))
def test_the_page_check_reads_each_warps_pages_and_no_other(page_shift):
    """Each warp of the page-check build reads the ids of exactly the pages its own sub-tiles touch (so a bad id
    anywhere in the chunk turns the rows NaN, and no id past the chunk is read), for pages of 1-256 tokens and chunks
    that start on a multiple of 256 tokens (the kernel's chunk alignment) and end anywhere."""
    import random

    rng = random.Random(page_shift)
    for _ in range(60):
        chunk = 256 * rng.randint(1, 40)
        start = chunk * rng.randint(0, 5)
        end = start + rng.randint(1, chunk)
        read = page_check_ids(start, end, page_shift)
        for warp, ids in enumerate(read):  # the pages of the warp's own tokens
            own = {t >> page_shift for t in range(start + warp * 64, end) if (t - start) // 64 % 4 == warp}
            assert ids == own, (page_shift, start, end, warp)
        assert set().union(*read) == set(range(start >> page_shift, ((end - 1) >> page_shift) + 1))
