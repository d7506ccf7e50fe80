"""The CUDA kernel's integer PV (csrc ``FOSCAR_IMMA_PV``, DESIGN §5.2, bench/NOTES.md §46), mirrored in numpy.

This file MIRRORS the kernel, it does not run it (no GPU here; the GPU tests run the kernel against the
fp64 reference). For one query head and one 64-token tile of one V group, with the kernel's fp32
operations: the tile's largest ``|s_v|`` and ``P``, the fixed-point factor ``f = kIpvMax / max(max P max
|s_v|, 2^-112)``, ``x = rint(P s_v f)`` read from the low 16 bits of ``fma(P, s_v f, 1.5 2^23)``, its hi
(s8) and lo (u8) bytes, the exact integer dots ``256 sum(A hi) + sum(A lo)`` of the codes in place (``A =
code 2^(BITS pl)``), and the fold ``O = fma(dot, 2^-(BITS pl) / f, sum P z)``. Not bit for bit:
``__fdividef`` (an approximate reciprocal on the GPU) is mirrored by an fp32 division (``f`` and ``1 / f``
then agree to ~1e-7, as on the GPU), and ``sum P z`` is summed token by token here where the kernel sums 8
tokens per lane and then over the lanes (fp32 rounding of the order only).
"""

import numpy as np
import pytest

from tests.test_imma_fold_range import fmaf

F32 = np.float32
IPV_MAX = F32(32512.0)  # kIpvMax in folded_decode_sm90.cuh
MAGIC = F32(12582912.0)  # kIpvMagic = 1.5 2^23
TOKENS = 64


def fixed_point(p: np.ndarray, sv_f: np.ndarray) -> np.ndarray:
    """``x`` as the kernel gets it: the low 16 bits of ``fma(p, sv_f, 1.5 2^23)`` as int16."""
    y = fmaf(p, sv_f, np.full(p.shape, MAGIC, F32))
    return (y.view(np.uint32) & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.int64)


def hi_lo(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The PV B fragments' bytes of ``x``: prmt 0x7531 (the high byte, an s8 lane) and 0x6420 (the low, u8)."""
    u = (x & 0xFFFF).astype(np.uint16)
    return (u >> 8).astype(np.uint8).view(np.int8).astype(np.int64), (u & 0xFF).astype(np.int64)


def fmax_nan(a, b):
    """PTX ``max.NaN.f32``."""
    return F32(np.nan) if np.isnan(a) or np.isnan(b) else F32(max(a, b))


def integer_pv(p, sv, zv, codes, bits: int, plane: int) -> dict:
    """One channel block's output column for one head: ``p``, ``sv``, ``zv`` [T] float32 (P, the V scales
    and offsets of the tile), ``codes`` [T, C] (0 .. 2^bits - 1). Returns the output ``o`` [C] float32,
    the fixed points ``x`` [T], the high bytes' dots ``dh`` and the full dots ``dot`` [C] (int64), and the
    tile's ``f``, ``wsc = 1 / f`` and ``pz = sum P z`` (float32)."""
    smax = F32(0)
    for s in sv:
        smax = fmax_nan(smax, F32(abs(s)))
    ptile = F32(np.max(p))  # the softmax's ex2 of the tile max: the same value as the largest p
    sm = smax if smax <= F32(2.0 ** 126) else F32(np.nan)
    mx = fmax_nan(F32(ptile * sm), F32(2.0 ** -112))
    with np.errstate(invalid="ignore", divide="ignore"):
        f = F32(IPV_MAX / mx)
    wsc = F32(mx * F32(1.0 / IPV_MAX))
    with np.errstate(invalid="ignore", over="ignore"):
        x = fixed_point(p, (sv * f).astype(F32))
    hi, lo = hi_lo(x)
    a = codes.astype(np.int64) << (bits * plane)  # the codes in place: u8 lanes
    dh, dl = hi @ a, lo @ a  # each one s32 mma chain over the tile's 64 tokens
    dot = dh * 256 + dl
    pz = F32(0)
    for pi, zi in zip(p, zv):
        pz = fmaf(pi, zi, pz)
    e = F32(1.0 / (1 << (bits * plane)))
    with np.errstate(invalid="ignore", over="ignore"):
        o = fmaf(dot.astype(F32), np.full(dot.shape, F32(wsc * e), F32), np.full(dot.shape, pz, F32))
    return dict(o=o, x=x, dh=dh, dot=dot, f=f, wsc=wsc, pz=pz)


def reference(p, sv, zv, codes) -> np.ndarray:
    """fp64 ``sum_t P_t (s_t code_t + z_t)``."""
    p, sv, zv = (np.asarray(t, np.float64) for t in (p, sv, zv))
    return (p[:, None] * (sv[:, None] * codes + zv[:, None])).sum(axis=0)


def _tile(rng, bits: int, peaked: bool):
    scores = rng.standard_normal(TOKENS) * (8.0 if peaked else 1.0)
    p = np.exp2(scores - scores.max()).astype(F32)
    codes = rng.integers(0, 1 << bits, (TOKENS, 16))
    sv = (rng.random(TOKENS) * 0.3 + 0.01).astype(F32)
    zv = (rng.standard_normal(TOKENS) * 0.5).astype(F32)
    return p, sv, zv, codes


def test_fixed_point_read_from_the_mantissa():
    """``fma(p, s f, 1.5 2^23)`` holds ``rint(p s f)`` in its low 16 bits over the whole range, negative
    values as two's complement, and its hi / lo bytes give it back: ``x = 256 hi + lo``, hi in s8, lo in u8."""
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.uniform(-IPV_MAX, IPV_MAX, 20000), [0, 0.5, 1.5, -0.5, -1.5, IPV_MAX, -IPV_MAX]])
    v = v.astype(F32)
    x = fixed_point(v, np.ones_like(v))
    assert np.array_equal(x, np.rint(v.astype(np.float64)).astype(np.int64))  # ties to even, as the FFMA
    hi, lo = hi_lo(x)
    assert hi.min() >= -128 and hi.max() <= 127 and lo.min() >= 0 and lo.max() <= 255
    assert np.array_equal(256 * hi + lo, x)


def packed_hi_lo(p: np.ndarray, sv_f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The packed columns' bytes (csrc PK, DESIGN §5.2): columns 0-3 read the high byte of the low 16 bits of
    ``fma(p, s f, 1.5 2^23 + 128)`` (prmt 0x7531), columns 4-7 the low byte of ``fma(p, s f, 1.5 2^23)`` (prmt
    0x6420), both as s8 lanes of one u8.s8 mma."""
    y_hi = fmaf(p, sv_f, np.full(p.shape, MAGIC + F32(128), F32))
    y_lo = fmaf(p, sv_f, np.full(p.shape, MAGIC, F32))
    hi = ((y_hi.view(np.uint32) >> 8) & 0xFF).astype(np.uint8).view(np.int8).astype(np.int64)
    lo = (y_lo.view(np.uint32) & 0xFF).astype(np.uint8).view(np.int8).astype(np.int64)
    return hi, lo


def test_packed_columns_split_the_fixed_point_exactly():
    """Every ``x`` in [-kIpvMax, kIpvMax] is ``256 hi + lo`` with both parts in s8 (the one mma of the packed
    columns takes one B type): hi the high byte of ``x + 128`` (the magic number's 128 adds it, exactly: the sum
    stays in [2^23, 2^24)), lo the low byte of ``x`` read as s8."""
    v = np.arange(-int(IPV_MAX), int(IPV_MAX) + 1).astype(F32)
    hi, lo = packed_hi_lo(v, np.ones_like(v))
    assert hi.min() >= -128 and hi.max() <= 127 and lo.min() >= -128 and lo.max() <= 127
    assert np.array_equal(256 * hi + lo, v.astype(np.int64))
    # and on fractional products (the FFMA rounds p s f + magic once, ties to even, either magic)
    rng = np.random.default_rng(5)
    v = rng.uniform(-IPV_MAX, IPV_MAX, 50000).astype(F32)
    hi, lo = packed_hi_lo(v, np.ones_like(v))
    assert np.array_equal(256 * hi + lo, fixed_point(v, np.ones_like(v)))


@pytest.mark.parametrize("bits", [2, 4])
def test_packed_columns_fold_to_the_same_output(bits):
    """The packed fold: column h accumulates ``dot_hi 256 / f + sum P z``, column h + 4 ``dot_lo / f``, and the
    epilogue adds them; against the two-mma fold ``(256 dot_hi + dot_lo) / f + sum P z`` the difference is fp32
    rounding of the terms (a few ulps), and both stay inside the fixed point's bound against fp64."""
    rng = np.random.default_rng(7 + bits)
    for _ in range(20):
        p, sv, zv, codes = _tile(rng, bits, peaked=False)
        ref = reference(p, sv, zv, codes)
        for plane in range(8 // bits):
            two = integer_pv(p, sv, zv, codes, bits, plane)
            wsc = two["wsc"]
            hi, lo = packed_hi_lo(p, (sv * two["f"]).astype(F32))
            a = codes.astype(np.int64) << (bits * plane)
            e = F32(1.0 / (1 << (bits * plane)))
            o_hi = fmaf((hi @ a).astype(F32), np.full(a.shape[1], F32(F32(wsc * F32(256)) * e), F32),
                        np.full(a.shape[1], two["pz"], F32))
            o_lo = fmaf((lo @ a).astype(F32), np.full(a.shape[1], F32(wsc * e), F32), np.zeros(a.shape[1], F32))
            o = (o_hi + o_lo).astype(F32)
            scale = float((p.astype(np.float64) * (np.abs(sv) * ((1 << bits) - 1) + np.abs(zv))).sum())
            assert float(np.abs(o - two["o"]).max()) <= 8 * scale * 2.0 ** -24, plane
            assert float(np.abs(o - ref).max()) <= rounding_bound(p, sv, zv, bits), plane


@pytest.mark.parametrize("bits", [2, 4])
def test_integer_dots_stay_in_int32(bits):
    """The worst tile: every code at its largest in the top plane (``A = 3 << 6`` or ``15 << 4``), every
    ``|x|`` at kIpvMax: each mma chain and ``256 dh + dl`` stay inside int32 (the kernel's comment: < 2^29)."""
    plane = 8 // bits - 1
    codes = np.full((TOKENS, 1), (1 << bits) - 1)
    for sign in (1, -1):
        p = np.ones(TOKENS, F32)
        sv = np.full(TOKENS, sign, F32)
        r = integer_pv(p, sv, np.zeros(TOKENS, F32), codes, bits, plane)
        assert np.abs(r["x"]).max() <= IPV_MAX
        assert np.abs(r["dh"] * 256).max() < 2 ** 29 and np.abs(r["dot"]).max() < 2 ** 29


def rounding_bound(p, sv, zv, bits: int) -> float:
    """What the fixed point may be off by, at most: half a unit (``max P max |s| / kIpvMax``) per token
    times the largest code, plus fp32's rounding of the fold and of ``sum P z`` (a few ulps of the terms)."""
    unit = max(float(np.max(p)) * float(np.max(np.abs(sv))), 2.0 ** -112) / float(IPV_MAX)
    terms = float((p.astype(np.float64) * (np.abs(sv) * ((1 << bits) - 1) + np.abs(zv))).sum())
    return TOKENS * 0.5 * unit * ((1 << bits) - 1) * 1.01 + 8 * terms * 2.0 ** -24


@pytest.mark.parametrize("bits", [2, 4])
@pytest.mark.parametrize("peaked", [False, True])
def test_tile_output_matches_fp64(bits, peaked):
    """Against fp64, the tile's output stays inside the fixed point's rounding bound (half a unit in
    32512 of the tile's largest ``P |s|`` per token), on flat and on peaked probabilities, every plane;
    relative to the tile's scale ``sum P (|s| code_max + |z|)`` that is 1e-4 .. 3e-4 here, where rounding
    ``P' = P s`` to BF16 (as the BF16 PV does) allows 2^-9 = 2e-3 of each term."""
    rng = np.random.default_rng(1 + bits + 2 * peaked)
    for _ in range(20):
        p, sv, zv, codes = _tile(rng, bits, peaked)
        ref = reference(p, sv, zv, codes)
        bound = rounding_bound(p, sv, zv, bits)
        for plane in range(8 // bits):
            o = integer_pv(p, sv, zv, codes, bits, plane)["o"]
            assert float(np.abs(o - ref).max()) <= bound, (plane, float(np.abs(o - ref).max()), bound)


def test_rounding_is_to_nearest():
    """Over many flat tiles the signed error averages out (round to nearest: unbiased), where truncating x
    would pull every token down by half a unit on average."""
    rng = np.random.default_rng(11)
    total, units = 0.0, 0.0
    for _ in range(300):
        p, sv, zv, codes = _tile(rng, 2, False)
        unit = float(np.max(p)) * float(np.max(np.abs(sv))) / float(IPV_MAX)
        o = integer_pv(p, sv, np.zeros(TOKENS, F32), codes, 2, 0)["o"]
        total += float((o - reference(p, sv, np.zeros(TOKENS), codes)).sum())
        units += unit * float(codes.sum())  # what truncation's bias would be, half of it per code unit
    assert abs(total) < 0.05 * 0.5 * units, (total, units)


@pytest.mark.parametrize("magnitude", [1e-20, 1e-30, 1e-33])
def test_small_scales_keep_their_precision(magnitude):
    """V scales far below 1 (values ~1e-30): f is the same ratio, so the error stays at the fixed point's
    bound relative to the tile (down to max P max |s_v| = 2^-112 = 1.9e-34, where f reaches 2^127)."""
    rng = np.random.default_rng(5)
    p, sv, zv, codes = _tile(rng, 2, True)
    sv = (sv * F32(magnitude)).astype(F32)
    zv = (zv * F32(magnitude)).astype(F32)
    o = integer_pv(p, sv, zv, codes, 2, 2)["o"]
    ref = reference(p, sv, zv, codes)
    assert np.isfinite(o).all() and float(np.abs(o - ref).max()) <= rounding_bound(p, sv, zv, 2)
    scale = float((p.astype(np.float64) * (np.abs(sv) * 3 + np.abs(zv))).sum())
    assert float(np.abs(o - ref).max()) < 3e-4 * scale


def test_negative_scales_are_exact_too():
    """Scales below zero (not what quantize_kv writes, but a cache is only tensors): |s_v| sets f, x is
    negative, the s8 high byte carries the sign."""
    rng = np.random.default_rng(7)
    p, sv, zv, codes = _tile(rng, 2, False)
    sv = -sv
    ref = reference(p, sv, zv, codes)
    r = integer_pv(p, sv, zv, codes, 2, 3)
    assert (r["x"] < 0).any()
    assert float(np.abs(r["o"] - ref).max()) <= rounding_bound(p, sv, zv, 2)


def test_edges_stay_finite_or_give_nan():
    """A tile of no token (P = 0, the softmax's ptile 0) or of zero scales: f = kIpvMax 2^112, x = 0, the
    output is sum P z; scales at the documented largest magnitude (1e30) stay finite; a NaN scale, or one
    past 2^126, gives NaN (the NaN-propagating max), not a finite wrong number."""
    rng = np.random.default_rng(3)
    p, sv, zv, codes = _tile(rng, 2, True)
    r = integer_pv(np.zeros(TOKENS, F32), sv, zv, codes, 2, 1)
    assert np.array_equal(r["x"], np.zeros(TOKENS, np.int64)) and np.array_equal(r["o"], np.zeros(16, F32))
    r = integer_pv(p, np.zeros(TOKENS, F32), zv, codes, 2, 1)
    assert np.isfinite(r["o"]).all() and np.allclose(r["o"], reference(p, np.zeros(TOKENS), zv, codes), atol=1e-5)
    big = (sv * F32(1e30)).astype(F32)
    o = integer_pv(p, big, zv, codes, 2, 3)["o"]
    ref = reference(p, big, zv, codes)
    assert np.isfinite(o).all() and float(np.abs(o - ref).max()) <= rounding_bound(p, big, zv, 2)
    bad = sv.copy()
    bad[5] = np.nan
    assert np.isnan(integer_pv(p, bad, zv, codes, 2, 0)["o"]).all()
    bad[5] = F32(2.0 ** 127)
    assert np.isnan(integer_pv(p, bad, zv, codes, 2, 0)["o"]).all()
