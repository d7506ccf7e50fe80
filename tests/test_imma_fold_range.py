"""fp32 range of the CUDA kernel's integer QK (csrc ``FOSCAR_IMMA_QK``, DESIGN §5.1) at the documented
largest magnitude (``|K|, |V| <= 1e30``, foscar/quant.py "Largest magnitude").

This file MIRRORS the kernel, it does not run it (no GPU here): numpy float32 in the order of
operations of ``folded_decode_sm90.cuh`` for one query head and one 64-token tile, with ``fmaf``
rounded once (emulated exactly). Prologue: the query's fixed-point scale ``d_h`` and the softmax
factor ``qk_h = sm_scale log2(e) d_h``, ``qi = rint(Q / d_h)`` and its s8 parts ``hi`` / ``lo``,
``sum(Q_g) / d_h`` (as the sum of the rounded query's ``qi``; with ``FOSCAR_QK_HALF``, INT2's odd planes at
bits 2..3 and their query 4x coarser where a group spans planes). Loop: the exact integer dots
``256 acc_hi + acc_lo`` (int32 in the kernel), their conversion to fp32, the fold
``S' = fma(dot, s 2^-e, fma(sum(Q_g) / d_h, z, S'))`` group by group, the running max ``max(S') qk_h``
and ``P = exp2(fma(S', qk_h, -m))``. PV is not mirrored (the integer QK leaves it as the BF16 path has
it): the output is ``P . V`` in fp64.

What it established (bench/NOTES.md §24, "The overflow, fixed"): the fold's intermediates stay below
~2e37 at the documented magnitude (fp32's largest is 3.4e38); the non-finite output of
``tests/test_bad_inputs.py::test_gpu_decode_at_the_documented_magnitude[cuda]`` came from the
softmax: ``fma(S', qk_h, -m)`` with ``m = fl(max(S') qk_h)`` is, for the winning token, the
rounding error of that product, up to half an ulp of the score (~1e22 for a score ~1e29), and
``exp2`` of it is inf or 0. The kernel now takes ``qk_h`` as a power of two (``d_h`` up to 2x
coarser), so that product is exact and the winning token's exponent is exactly 0.
"""

import math

import numpy as np
import pytest
import torch

import foscar
from foscar.quant import unpack_codes

F32 = np.float32
QMAX = 32639  # |qi| <= QMAX: hi = (qi - lo) / 256 stays in s8 (DESIGN §5.1)
FP32_MAX = float(np.finfo(np.float32).max)
LOG2E = 1.4426950408889634  # the host's sm_scale * log2(e) (foscar/kernels/decode_cuda.py), then fp32


def fmaf(a, b, c):
    """fp32 ``a * b + c`` with one rounding (CUDA's fmaf), for float32 arrays of one shape.

    ``a * b`` is exact in float64; the float64 sum is rounded to odd (its exact error from TwoSum
    decides the last bit), which then rounds to float32 exactly as one rounding would.
    """
    a, b, c = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
    p = a * b
    with np.errstate(invalid="ignore", over="ignore"):  # inf operands: no error term, s as it is
        s = p + c
        bp = s - c
        err = (p - bp) + (c - (s - bp))  # p + c = s + err exactly (finite s)
        bump = np.isfinite(s) & (err != 0) & ((s.view(np.int64) & 1) == 0)
        s = np.where(bump, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
        return s.astype(np.float32)


def test_fmaf_rounds_once():
    """The mirror's fmaf against exact rationals, and on a case where float64 then float32 rounds twice:
    ``2^-24 (1 - 2^-40) + (1 + 2^-23)`` lies just below a float32 midpoint that float64 lands on."""
    from fractions import Fraction

    a = np.float32(2.0 ** -12 * (1 + 2.0 ** -20))
    b = np.float32(2.0 ** -12 * (1 - 2.0 ** -20))
    c = np.float32(1 + 2.0 ** -23)
    assert np.float32(float(a) * float(b) + float(c)) == np.float32(1 + 2.0 ** -22)  # twice rounded
    assert fmaf(a, b, c) == c
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 300)) * 10.0 ** rng.integers(-6, 6, (3, 300))).astype(np.float32)
    got = fmaf(*x)
    for i in range(x.shape[1]):
        exact = Fraction(float(x[0, i])) * Fraction(float(x[1, i])) + Fraction(float(x[2, i]))
        near = np.float32(float(exact))
        cands = (np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf)))
        assert abs(Fraction(float(got[i])) - exact) == min(abs(Fraction(float(y)) - exact) for y in cands)


def fmt(bits: int, head_dim: int, group: int) -> dict:
    """``Fmt``'s integer-QK constants: ``P``, ``RB``, ``NCH``, ``NG``, ``igexp`` (each group's in-place exponent) and
    ``hexp`` ([head_dim]: each channel's ``Fmt::hexp`` of ``FOSCAR_QK_HALF``, the build's default: INT2's odd planes
    at bits 2..3 where a group spans several planes, their query fixed point 2^hexp as coarse)."""
    planes, rb = 8 // bits, head_dim * bits // 8
    nch = rb // 16
    ksteps = nch // 2 * planes if nch % 2 == 0 else planes // 2
    in_place = group <= rb if nch % 2 == 0 else group <= 32

    def ibase(k):
        return (k % planes) * rb + 32 * (k // planes) if nch % 2 == 0 else 32 * k

    def iexp(k):
        return 0 if not in_place else bits * (k % planes) if nch % 2 == 0 else 2 * bits * k

    half = bits == 2 and not in_place and nch % 2 == 0
    hexp = np.zeros(head_dim, dtype=np.int64)
    for k in range(ksteps):  # step k: channels ibase(k) + [0, 32)
        hexp[ibase(k):ibase(k) + 32] = bits * (k % planes % 2) if half else 0
    ng = head_dim // group
    igexp = [next(iexp(k) for k in range(ksteps) if ibase(k) // group == gr) for gr in range(ng)]
    steps = [(ibase(k), ibase(k) // group) for k in range(ksteps)]
    return dict(P=planes, RB=rb, NCH=nch, NG=ng, G=group, igexp=igexp, steps=steps, hexp=hexp)


def pow2_at_least(x: np.float32) -> np.float32:
    """The kernel's ``(bits(x) + 0x7FFFFF) & 0xFF800000``: the smallest power of two >= a positive normal x."""
    u = np.array([x], dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFFFF)) & np.uint32(0xFF800000)).view(np.float32)[0]


def prologue(q: np.ndarray, qk: float, f: dict, scale: str = "pow2") -> dict:
    """The kernel's integer-QK prologue for one query head ``q`` ([head_dim] float32, BF16 values).

    ``scale``: ``"pow2"`` (the kernel now: ``qk_h`` a power of two) or ``"session8"`` (before:
    ``d_h = +-max|Q_h| / 32639`` exactly, ``qk_h = qk d_h`` rounded). Returns ``qi`` ([head_dim] int64),
    ``hi`` / ``lo`` (their s8 parts), ``qsum`` ([NG] float32, ``sum(qi 2^hexp)`` over group g: ``sum(Q_g) / d_h``
    up to the rounding) and ``qk_h``.
    """
    qk = F32(qk)
    amax = F32(np.max(np.abs(np.nan_to_num(q, nan=0.0)))) if q.size else F32(0)
    if scale == "session8":
        qscale = F32(max(amax, F32(2.0 ** -90)) * F32(1.0 / 32639.0))
        d = -qscale if qk < 0 else qscale
        inv = F32(0) if qk == 0 else F32(F32(1) / d)
        qk_h = F32(1) if qk == 0 else F32(qk * d)
    else:
        x = F32(F32(max(amax, F32(2.0 ** -90)) * F32(1.0 / 32639.0)) * F32(abs(qk)))
        x = max(x, F32(2.0 ** -126))
        qk_h = F32(1) if qk == 0 else pow2_at_least(x)
        inv = F32(0) if qk == 0 else F32(qk / qk_h)
    inv_c = (inv * np.exp2(-f["hexp"].astype(np.float64))).astype(np.float32)  # exact: powers of two
    with np.errstate(invalid="ignore"):
        qi = np.rint(q.astype(np.float32) * inv_c).astype(np.float64)
    qi = np.where(np.isnan(qi), 0, qi).astype(np.int64)  # cvt.rni.s32 of NaN: 0
    assert np.abs(qi).max(initial=0) <= QMAX, "hi would leave s8"
    lo = ((qi & 0xFF) ^ 0x80) - 0x80
    hi = (qi - lo) >> 8
    # sum(Q_g) / d_h as the kernel takes it: the integer sum of the rounded query, qi 2^hexp per channel (exact in
    # fp32: below 128 * 32639 < 2^23; NaN where the group holds a NaN)
    qv = np.where(np.isnan(q), np.nan, (qi << f["hexp"]).astype(np.float64))
    qsum = np.array([qv[gr * f["G"]:(gr + 1) * f["G"]].sum() for gr in range(f["NG"])], dtype=np.float32)
    return dict(qi=qi, hi=hi, lo=lo, qsum=qsum, qk_h=F32(qk_h), inv=inv)


def fold_tile(codes: np.ndarray, ks: np.ndarray, kz: np.ndarray, pro: dict, f: dict, valid: int) -> dict:
    """The QK fold and softmax of one tile: ``codes`` [T, head_dim] (0 .. 2^bits - 1), ``ks`` / ``kz``
    [T, NG] float32; tokens ``>= valid`` masked. Returns ``S'`` [T], the fold's largest intermediate,
    the largest integer dot, ``m`` (log2 units) and ``P`` [T] float32."""
    t, g = codes.shape[0], f["G"]
    s = np.zeros(t, dtype=np.float32)
    big, dmax = 0.0, 0
    for gr in range(f["NG"]):
        e = f["igexp"][gr]
        cg = codes[:, gr * g:(gr + 1) * g].astype(np.int64) << (e + f["hexp"][gr * g:(gr + 1) * g])  # u8: <= 240
        ah = cg @ pro["hi"][gr * g:(gr + 1) * g]
        al = cg @ pro["lo"][gr * g:(gr + 1) * g]
        dot = ah * 256 + al  # int32 in the kernel
        dmax = max(dmax, int(np.abs(ah * 256).max()), int(np.abs(dot).max()))
        a_t = (ks[:, gr] * F32(1.0 / (1 << e))).astype(np.float32)
        inner = fmaf(np.full(t, pro["qsum"][gr], np.float32), kz[:, gr], s)
        s = fmaf(dot.astype(np.float32), a_t, inner)
        prod = np.abs(dot.astype(np.float64) * a_t)
        big = max(big, float(prod.max()), float(np.abs(inner).max()), float(np.abs(s).max()))
    s[valid:] = -np.inf
    mx = F32(np.max(s) * pro["qk_h"])  # max, then FMUL: -inf stays -inf
    m_use = F32(0) if mx == -np.inf else mx
    with np.errstate(over="ignore"):
        p = np.exp2(fmaf(s, np.full(t, pro["qk_h"], np.float32), np.full(t, -m_use, np.float32)))
    return dict(s=s, big=big, dot_max=dmax, m=m_use, p=p.astype(np.float32))


def _documented_magnitude_case():
    """tests/test_bad_inputs.py::_check_large_decode's cache and query (seed 5): INT2, head_dim 64, G=32."""
    g = torch.Generator().manual_seed(5)
    k = torch.randn(2, 1, 40, 64, generator=g)
    v = torch.randn(2, 1, 40, 64, generator=g)
    k[0, 0, 3, :32] = torch.linspace(-1.0, 1.0, 32) * 1e30
    v[1, 0, 7, 32:] = torch.linspace(1.0, -1.0, 32) * 1e30
    cache = foscar.quantize_kv(k, v, bits=2, group_size=32)
    q = torch.randn(2, 4, 64, generator=g).to(torch.bfloat16)
    return q, cache


def _mirror_decode(q, cache, b: int, h: int, scale: str):
    f = fmt(cache.bits, q.shape[-1], cache.group_size)
    n = int(cache.seq_lens[b])
    codes = np.zeros((64, q.shape[-1]), dtype=np.int64)
    codes[:n] = unpack_codes(cache.k_codes[b, 0, :n], cache.bits).numpy()
    ks = np.zeros((64, f["NG"]), np.float32)
    kz = np.zeros((64, f["NG"]), np.float32)
    ks[:n], kz[:n] = cache.k_scale[b, 0, :n].numpy(), cache.k_offset[b, 0, :n].numpy()
    qk = 1.0 / math.sqrt(q.shape[-1]) * LOG2E
    pro = prologue(q[b, h].float().numpy(), qk, f, scale)
    return pro, fold_tile(codes, ks, kz, pro, f, n), n


def test_session8_scale_reproduces_the_gpu_failure():
    """With ``qk_h = fl(qk d_h)`` the winning token's exponent is the product's rounding error: at a
    score of ~1e29 that is ~1e22, and some head of sequence 0 gets P = inf or a zero sum (as on the GPU)."""
    q, cache = _documented_magnitude_case()
    bad = []
    for h in range(4):
        _, r, n = _mirror_decode(q, cache, 0, h, "session8")
        assert r["big"] < FP32_MAX / 16  # the fold itself stays in range
        if not (np.isfinite(r["p"][:n]).all() and r["p"][:n].sum() > 0):
            bad.append(h)
    assert bad, "the mirror no longer shows the session-8 failure"


@pytest.mark.parametrize("b", [0, 1])
def test_pow2_softmax_factor_is_finite_and_right_at_the_documented_magnitude(b):
    q, cache = _documented_magnitude_case()
    _, vd = foscar.dequantize_kv(cache, torch.float64, batch_index=b)
    ref = foscar.reference_decode(q, cache)[b]
    for h in range(4):
        pro, r, n = _mirror_decode(q, cache, b, h, "pow2")
        p = r["p"][:n].astype(np.float64)
        assert np.isfinite(p).all() and p.max() == 1.0  # the winning token: exp2(0) exactly
        out = torch.from_numpy(p) @ vd[0] / p.sum()
        err = float((out - ref[h]).norm() / ref[h].norm())
        assert err < 1e-3, f"head {h}: relative L2 error {err:.3g}"


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("head_dim, group", [(64, 32), (64, 64), (128, 32), (128, 64), (128, 128), (256, 32),
                                             (256, 64), (256, 128)])
def test_worst_case_intermediates_stay_in_range(bits, head_dim, group):
    """Every K group at the documented extreme (range [-1e30, 1e30]: s = 2e30 / (2^bits - 1), z = -1e30,
    every code the largest) and a query of equal channels (every |qi| = 32639 in the session-8 scale,
    >= 16320 with the power of two), sign of sm_scale either way: the int32 dot, the fold's partial
    sums and products and the score times qk_h stay finite, with margin."""
    f = fmt(bits, head_dim, group)
    qmax = (1 << bits) - 1
    codes = np.full((64, head_dim), qmax, dtype=np.int64)
    codes[1::2] = 0  # tokens at either end of the range
    ks = np.full((64, f["NG"]), F32(2e30) / F32(qmax), np.float32)
    kz = np.full((64, f["NG"]), F32(-1e30), np.float32)
    for sign in (1.0, -1.0):
        for qval in (1.0, -3.0e2):
            q = np.full(head_dim, qval, np.float32)
            pro = prologue(q, sign / math.sqrt(head_dim) * LOG2E, f)
            r = fold_tile(codes, ks, kz, pro, f, 64)
            assert r["dot_max"] < 2 ** 31 and 240 * QMAX * 128 < 2 ** 31
            assert r["big"] < FP32_MAX / 16
            assert np.isfinite(r["m"]) and np.isfinite(r["p"]).all() and r["p"].max() == 1.0


def quantized_tile(rng, f: dict, bits: int, scale: float = 1.0, offset: float = 0.0):
    """A 64-token tile of Gaussian K (``scale * N(0, 1) + offset``) quantized as ``foscar.quantize_kv`` does (min-max
    per token and group): ``codes`` [64, head_dim] int64, ``ks`` / ``kz`` [64, NG] float32 and the dequantized
    ``khat`` [64, head_dim] float64."""
    head_dim, group = f["NG"] * f["G"], f["G"]
    xg = (rng.standard_normal((64, head_dim)) * scale + offset).reshape(64, f["NG"], group)
    lo_, hi_ = xg.min(-1), xg.max(-1)
    qmax = (1 << bits) - 1
    ks = ((hi_ - lo_) / qmax).astype(np.float32)
    kz = lo_.astype(np.float32)
    codes = np.clip(np.rint((xg - kz[..., None]) / ks[..., None]), 0, qmax).astype(np.int64)
    khat = (codes * ks[..., None].astype(np.float64) + kz[..., None]).reshape(64, head_dim)
    return codes.reshape(64, head_dim), ks, kz, khat


@pytest.mark.parametrize("bits, head_dim, group", [(2, 128, 128), (2, 128, 32), (4, 128, 64), (2, 64, 32)])
def test_ordinary_inputs_within_the_fixed_point_bound(bits, head_dim, group):
    """Gaussian K and a query with outlier channels: each score (log2 units) is within the fixed point's
    rounding of the fp64 score, |qk| (|d_h| / 2) sum_c 2^hexp_c |k_tc| (|d_h| < 2 max|Q_h| / 32639 with the power
    of two; hexp: INT2's odd planes at G = 128, whose query is 4x as coarse), and the softmax within 1e-3 relative
    L2 of the fp64 one."""
    f = fmt(bits, head_dim, group)
    codes, ks, kz, khat = quantized_tile(np.random.default_rng(bits * 1000 + head_dim + group), f, bits)
    q = torch.randn(head_dim, generator=torch.Generator().manual_seed(group))
    q[5] *= 30
    q = q.to(torch.bfloat16).float().numpy()
    qk = 1.0 / math.sqrt(head_dim) * LOG2E
    pro = prologue(q, qk, f)
    r = fold_tile(codes, ks, kz, pro, f, 64)
    got = r["s"].astype(np.float64) * float(pro["qk_h"])
    want = khat @ q.astype(np.float64) * float(F32(qk))
    d = float(pro["qk_h"]) / float(F32(qk))
    bound = abs(qk) * abs(d) / 2 * (np.abs(khat) * np.exp2(f["hexp"])).sum(-1) + 1e-5 * np.abs(want).max()
    assert (np.abs(got - want) <= bound).all()
    p_ref = np.exp2(want - want.max())
    p = r["p"].astype(np.float64)
    assert np.linalg.norm(p / p.sum() - p_ref / p_ref.sum()) / np.linalg.norm(p_ref / p_ref.sum()) < 1e-3


@pytest.mark.parametrize("bits, head_dim, group", [(2, 128, 128), (2, 128, 64), (2, 128, 32), (4, 128, 128)])
def test_scores_are_the_dequantized_k_times_the_rounded_query(bits, head_dim, group):
    """``sum(Q_g) / d_h`` is the integer sum of the rounded query (bench/NOTES.md §63), so a score's error is exactly
    the dot of the dequantized K with the query's rounding error, ``qk sum_c khat_c (qi_c 2^hexp_c d - q_c)``, up to
    fp32 rounding; with the sum of the unrounded query it was ``qk sum_c s code_c (...)``, whose mean over tokens
    (``s (2^b - 1) / 2`` per channel) shifted every score, and the LSE, by 3x more (K with an offset, as the GPU
    tests' data)."""
    f = fmt(bits, head_dim, group)
    codes, ks, kz, khat = quantized_tile(np.random.default_rng(7 + bits + group), f, bits, scale=1.5, offset=0.3)
    q = torch.randn(head_dim, generator=torch.Generator().manual_seed(bits)).to(torch.bfloat16).float().numpy()
    qk = 1.0 / math.sqrt(head_dim) * LOG2E
    pro = prologue(q, qk, f)
    r = fold_tile(codes, ks, kz, pro, f, 64)
    d = float(pro["qk_h"]) / float(F32(qk))
    got = r["s"].astype(np.float64) * float(pro["qk_h"])
    want = khat @ q.astype(np.float64) * float(F32(qk))
    rounded = (pro["qi"] << f["hexp"]).astype(np.float64) * d
    predicted = khat @ (rounded - q) * float(F32(qk))
    scale = np.abs(got).max()
    assert np.abs((got - want) - predicted).max() <= 1e-6 * scale
