"""The packed QK's token pairs (csrc ``FOSCAR_PK_TOKENS``, ``pk_tokens``; bench/NOTES.md §86), mirrored lane by lane.

This file MIRRORS the kernel's register fragments, it does not run it (no GPU here; the GPU tests run the kernel
against the fp64 reference). With packed columns (gqa <= 4) the QK's ``m16n8k32`` has 8 columns for 4 heads. Token
pairs put m16 token tiles 2pt and 2pt + 1 into one accumulator: tile 2pt's mma reads a query that is zero in columns
4-7, tile 2pt + 1's one that is zero in columns 0-3, so lane ``(g, tig)`` (``g = lane / 4``, ``tig = lane % 4``) holds
the scores of tile 2pt + ``(tig >> 1)``, tokens ``g`` and ``g + 8``, heads ``2 (tig & 1) + {0, 1}``. The PV's B operand
then has to be the one the packed columns built before (column h: the high bytes of ``x + 128``, column h + 4: the
low bytes of ``x``, tokens ``2tig, 2tig + 1, 8 + 2tig, 9 + 2tig`` of tile 2kb in register 0 and of tile 2kb + 1 in
register 1), which ``ldmatrix``'s V fragments match. Fragment layouts (PTX ISA, ``mma.m16n8k32`` with 8-bit
operands; ``movmatrix.m8n8.trans.b16``):

- A (16 x 32): ``a0`` row g, k ``4tig .. 4tig + 3``; ``a1`` row g + 8; ``a2``, ``a3`` the same at k + 16;
- B (32 x 8): ``b0`` k ``4tig .. 4tig + 3`` of column g; ``b1`` k + 16;
- C (16 x 8, 32-bit): ``c0, c1`` row g, columns ``2tig, 2tig + 1``; ``c2, c3`` row g + 8;
- movmatrix: lane ``(g, tig)`` holds row g, columns ``2tig, 2tig + 1`` of an 8 x 8 matrix of 16-bit values, and
  gets row g of its transpose.
"""

import numpy as np

LANES = 32
HEADS = 4  # gqa <= 4: columns 0-3 (and 4-7)


def lane_gt(lane: int) -> tuple[int, int]:
    return lane // 4, lane % 4


def b_fragments(b: np.ndarray) -> np.ndarray:
    """B [32, 8] bytes -> per lane its two 32-bit registers as [32, 2, 4] bytes."""
    out = np.zeros((LANES, 2, 4), np.int64)
    for lane in range(LANES):
        g, tig = lane_gt(lane)
        for r in range(2):
            out[lane, r] = b[16 * r + 4 * tig: 16 * r + 4 * tig + 4, g]
    return out


def mma_from_fragments(a: np.ndarray, bf: np.ndarray) -> np.ndarray:
    """D = A @ B with B given as lane fragments ([32, 2, 4]); A [16, 32]: the mma's product, [16, 8]."""
    b = np.zeros((32, 8), np.int64)
    for lane in range(LANES):
        g, tig = lane_gt(lane)
        for r in range(2):
            b[16 * r + 4 * tig: 16 * r + 4 * tig + 4, g] = bf[lane, r]
    return a @ b


def c_lane(c: np.ndarray, lane: int) -> np.ndarray:
    """A lane's 4 accumulators of C [16, 8]: rows g, g, g + 8, g + 8; columns 2tig, 2tig + 1."""
    g, tig = lane_gt(lane)
    return np.array([c[g, 2 * tig], c[g, 2 * tig + 1], c[g + 8, 2 * tig], c[g + 8, 2 * tig + 1]])


def movmatrix_trans(regs: np.ndarray) -> np.ndarray:
    """``movmatrix.m8n8.trans.b16``: regs [32] uint32 (lane (g, tig): row g, columns 2tig | 2tig + 1 << 16)."""
    m = np.zeros((8, 8), np.int64)
    for lane in range(LANES):
        g, tig = lane_gt(lane)
        m[g, 2 * tig], m[g, 2 * tig + 1] = int(regs[lane]) & 0xFFFF, int(regs[lane]) >> 16
    t = m.T
    return np.array([t[lane // 4, 2 * (lane % 4)] | (t[lane // 4, 2 * (lane % 4) + 1] << 16) for lane in range(LANES)],
                    np.int64)


def byte_perm(a: int, b: int, sel: int) -> int:
    """``__byte_perm(a, b, sel)`` for selectors of nibbles 0-7 (bytes of {b:a})."""
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def s8(byte: np.ndarray) -> np.ndarray:
    return np.asarray(byte, np.int64).astype(np.uint8).view(np.int8).astype(np.int64)


def test_masked_queries_put_the_pair_in_the_columns():
    """Lane (g, tig) of one accumulator holds the pair's scores as the kernel's fold reads them: tile tig >> 1, tokens
    g and g + 8, heads 2 (tig & 1) + {0, 1}. The query's B fragments are the packed columns' (columns 4-7 repeat heads
    0-3) masked per lane: lanes g < 4 keep them for tile 2pt, lanes g >= 4 for tile 2pt + 1."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, (2, 16, 32))  # two m16 tiles' codes, 32 channels (one k step)
    q = rng.integers(-128, 128, (32, HEADS))
    repeated = b_fragments(np.concatenate([q, q], axis=1))  # qih: columns 4-7 repeat heads 0-3
    g_of = np.array([lane_gt(lane)[0] for lane in range(LANES)])[:, None, None]
    q_first, q_second = np.where(g_of < 4, repeated, 0), np.where(g_of < 4, 0, repeated)
    acc = mma_from_fragments(codes[0], q_first) + mma_from_fragments(codes[1], q_second)
    scores = codes @ q  # [tile, token, head]
    for lane in range(LANES):
        g, tig = lane_gt(lane)
        tile, heads = tig >> 1, [2 * (tig & 1), 2 * (tig & 1) + 1]
        want = [scores[tile, g, heads[0]], scores[tile, g, heads[1]], scores[tile, g + 8, heads[0]],
                scores[tile, g + 8, heads[1]]]
        assert np.array_equal(c_lane(acc, lane), want), lane


def packed_b_before(x: np.ndarray) -> np.ndarray:
    """The packed columns' B registers without token pairs (``FOSCAR_PK_TOKENS=0``): per m16 tile, lanes tig < 2
    take ``x + 128`` (the FFMA's magic number), tig >= 2 ``x``; movmatrix per 8-row half, then high bytes for columns
    g < 4 (prmt 0x7531) and low bytes for g >= 4 (0x6420). x [2 tiles, 16 tokens, 4 heads] -> [32 lanes, 2, 4 bytes]."""
    out = np.zeros((LANES, 2, 4), np.int64)
    for r in range(2):
        t = []
        for half in range(2):
            regs = np.zeros(LANES, np.int64)
            for lane in range(LANES):
                g, tig = lane_gt(lane)
                vals = [x[r, g + 8 * half, (2 * tig + j) % HEADS] + (128 if tig < 2 else 0) for j in range(2)]
                regs[lane] = (vals[0] & 0xFFFF) | ((vals[1] & 0xFFFF) << 16)
            t.append(movmatrix_trans(regs))
        for lane in range(LANES):
            g = lane // 4
            w = byte_perm(int(t[0][lane]), int(t[1][lane]), 0x7531 if g < 4 else 0x6420)
            out[lane, r] = [(w >> (8 * i)) & 0xFF for i in range(4)]
    return out


def token_pair_b(x: np.ndarray) -> np.ndarray:
    """The same registers with token pairs, as the kernel builds them: every lane's ``x + 128`` of its own tile (tig
    >> 1) with bit 7 of each 16-bit value flipped (so the low byte is ``x``'s), one movmatrix per half, then each lane
    keeps its column's bytes (high for g < 4, low for g >= 4), swaps the other four with lane ^ 16 and puts its own
    tile's into register 0 (g < 4) or 1 (g >= 4)."""
    t = []
    for half in range(2):
        regs = np.zeros(LANES, np.int64)
        for lane in range(LANES):
            g, tig = lane_gt(lane)
            vals = [x[tig >> 1, g + 8 * half, 2 * (tig & 1) + j] + 128 for j in range(2)]
            regs[lane] = ((vals[0] & 0xFFFF) | ((vals[1] & 0xFFFF) << 16)) ^ 0x00800080
        t.append(movmatrix_trans(regs))
    keep, give = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
    for lane in range(LANES):
        hi_col = lane // 4 < 4
        keep[lane] = byte_perm(int(t[0][lane]), int(t[1][lane]), 0x7531 if hi_col else 0x6420)
        give[lane] = byte_perm(int(t[0][lane]), int(t[1][lane]), 0x6420 if hi_col else 0x7531)
    out = np.zeros((LANES, 2, 4), np.int64)
    for lane in range(LANES):
        got = give[lane ^ 16]
        regs = (keep[lane], got) if lane // 4 < 4 else (got, keep[lane])
        for r in range(2):
            out[lane, r] = [(int(regs[r]) >> (8 * i)) & 0xFF for i in range(4)]
    return out


def test_token_pairs_build_the_packed_columns_b_operand():
    """For every fixed point ``x`` in [-kIpvMax, kIpvMax] at random positions (and the range's ends), the PV's B
    registers with token pairs are byte for byte those of the packed columns before: the same PV, the same integers."""
    rng = np.random.default_rng(1)
    for trial in range(40):
        x = rng.integers(-32512, 32513, (2, 16, HEADS))
        if trial == 0:
            x.flat[:4] = [-32512, 32512, -128, 127]
        assert np.array_equal(token_pair_b(x), packed_b_before(x)), trial


def test_token_pairs_bytes_give_back_the_fixed_point():
    """Column h's high byte (s8) times 256 plus column h + 4's low byte (s8) is ``x`` for every token of both tiles;
    register 0 holds tile 2kb's tokens 2tig, 2tig + 1, 8 + 2tig, 9 + 2tig, register 1 tile 2kb + 1's."""
    rng = np.random.default_rng(2)
    x = rng.integers(-32512, 32513, (2, 16, HEADS))
    b = token_pair_b(x)
    for lane in range(16):  # columns g < 4: the high bytes; lane + 16: column g + 4, the low bytes
        g, tig = lane_gt(lane)
        for r in range(2):
            tokens = [2 * tig, 2 * tig + 1, 8 + 2 * tig, 9 + 2 * tig]
            assert np.array_equal(256 * s8(b[lane, r]) + s8(b[lane + 16, r]), x[r, tokens, g]), (lane, r)


# ---------------------------------------------------------------------------------------------------------------------
# One warp end to end: the fold's token layout, the online softmax, the V scales' max, P', the exchange, the PV in its
# C layout and the epilogue's sums, for one V group of 16 channels, against float64 softmax attention. The kernel's
# cross-lane steps are shuffles over lane ^ d; "skip" drops one of the steps that token pairs added (the xor-2 max,
# the V scales' xor-2 max, sum P z's and the denominator's xor 2, the bit-7 flip) or exchanges with lane ^ 8.

LANE = np.arange(LANES)
G_OF, TIG_OF = LANE // 4, LANE % 4
F32 = np.float32


def _shfl(v: np.ndarray, d: int) -> np.ndarray:
    return v[LANE ^ d]


def _rows(v: np.ndarray, op) -> np.ndarray:
    """``warp_max_over_rows`` / ``warp_sum_over_rows``: over the lanes of one tig (xor 4, 8, 16)."""
    for d in (4, 8, 16):
        v = op(v, _shfl(v, d)).astype(F32)
    return v


def _token(mt: int, half: int) -> np.ndarray:
    """Each lane's token of pair mt (the kernel's ``tl``): tile 2mt + (tig >> 1), row g + 8 half."""
    return 32 * mt + 16 * (TIG_OF >> 1) + G_OF + 8 * half


def warp_decode(seed: int, n_tokens: int, gqa: int = HEADS, skip: str = "") -> tuple[float, float]:
    """Decode ``n_tokens`` random tokens (log2 scores, V codes 0-3 with signed scales and offsets) as one warp of the
    kernel does with token pairs; returns the output's largest error relative to the reference's largest value and
    the base-2 LSE's largest absolute error, over the live heads."""
    rng = np.random.default_rng(seed)
    chans = 16
    scores = (rng.standard_normal((n_tokens, HEADS)) * 3).astype(F32)
    scores[:, gqa:] = 0
    s_v = (rng.uniform(0.1, 2, n_tokens) * rng.choice([-1, 1], n_tokens)).astype(F32)
    z_v = rng.standard_normal(n_tokens).astype(F32)
    codes = rng.integers(0, 4, (chans, n_tokens))
    m_run = np.full((LANES, 2), -np.inf, F32)
    l_part = np.zeros((LANES, 2), F32)
    o_acc = np.zeros((LANES, 4), F32)
    for t0 in range(0, n_tokens, 64):
        live = min(64, n_tokens - t0)
        tile_s = np.zeros((64, HEADS), F32)
        tile_s[:live] = scores[t0:t0 + live]
        tile_sv, tile_zv = np.zeros(64, F32), np.zeros(64, F32)
        tile_sv[:live], tile_zv[:live] = s_v[t0:t0 + live], z_v[t0:t0 + live]
        tile_codes = np.zeros((chans, 64), np.int64)
        tile_codes[:, :live] = codes[:, t0:t0 + live]
        s = np.zeros((LANES, 2, 4), F32)  # the fold's scores: [lane, pair, 2 half + j]
        for mt in range(2):
            for half in range(2):
                tok = _token(mt, half)
                for j in range(2):
                    s[:, mt, 2 * half + j] = np.where(tok < live, tile_s[tok, 2 * (TIG_OF & 1) + j], -np.inf)
        alpha, ptile, m_use = (np.zeros((LANES, 2), F32) for _ in range(3))
        for j in range(2):  # softmax_update
            mx = _rows(s[:, :, [j, j + 2]].reshape(LANES, -1).max(axis=1), np.fmax)
            if skip != "max":
                mx = np.fmax(mx, _shfl(mx, 2))
            m_new = np.fmax(m_run[:, j], mx)
            m_use[:, j] = np.where(m_new != -np.inf, m_new, 0)
            alpha[:, j], ptile[:, j] = np.exp2(m_run[:, j] - m_use[:, j]), np.exp2(mx - m_use[:, j])
            m_run[:, j] = m_new
        pr = np.exp2(s - m_use[:, None, [0, 1, 0, 1]]).astype(F32)
        for j in range(2):
            l_part[:, j] = l_part[:, j] * alpha[:, j] + pr[:, :, [j, j + 2]].sum(axis=(1, 2))
        sv = np.stack([np.stack([tile_sv[_token(mt, h)] for h in range(2)], 1) for mt in range(2)], 1)
        smax = _rows(np.abs(sv).max(axis=(1, 2)), np.fmax)  # tile_v_scales
        if skip != "smax":
            smax = np.fmax(smax, _shfl(smax, 2))
        mxs = np.fmax(ptile * smax[:, None], F32(2.0 ** -112)).astype(F32)
        f, wsc = (32512 / mxs).astype(F32), (mxs / 32512).astype(F32)
        pz = np.zeros((LANES, 2), F32)
        t = np.zeros((2, 2, LANES), np.int64)
        for mt in range(2):  # P' as x + 128, bit 7 flipped, movmatrix per 8-row half
            for half in range(2):
                regs = np.zeros(LANES, np.int64)
                for j in range(2):
                    p = pr[:, mt, 2 * half + j]
                    x = np.rint(p.astype(np.float64) * (sv[:, mt, half] * f[:, j]).astype(F32)).astype(np.int64)
                    regs |= ((x + 128) & 0xFFFF) << (16 * j)
                    pz[:, j] = (pz[:, j] + p * tile_zv[_token(mt, half)]).astype(F32)
                if skip != "flip":
                    regs ^= 0x00800080
                t[mt, half] = movmatrix_trans(regs)
        b = np.zeros((64, 8), np.int64)  # the PV's B from the exchanged registers
        partner = 8 if skip == "lane8" else 16
        for kb in range(2):
            hi_col = G_OF < 4
            keep = np.array([byte_perm(int(t[kb, 0, i]), int(t[kb, 1, i]), 0x7531 if hi_col[i] else 0x6420)
                             for i in range(LANES)])
            give = np.array([byte_perm(int(t[kb, 0, i]), int(t[kb, 1, i]), 0x6420 if hi_col[i] else 0x7531)
                             for i in range(LANES)])
            got = _shfl(give, partner)
            regs = (np.where(hi_col, keep, got), np.where(hi_col, got, keep))
            for lane in range(LANES):
                g, tig = lane_gt(lane)
                for r in range(2):
                    for i, tok in enumerate((2 * tig, 2 * tig + 1, 8 + 2 * tig, 9 + 2 * tig)):
                        b[32 * kb + 16 * r + tok, g] = s8((int(regs[r][lane]) >> (8 * i)) & 0xFF)
        pz = _rows(pz, np.add)
        if skip != "pz":
            pz = (pz + _shfl(pz, 2)).astype(F32)
        hi_lane = (TIG_OF < 2)[:, None]  # the PV's output columns 0-3: 256 dot_hi / f + sum P z
        wsc, pz = wsc * np.where(hi_lane, 256, 1), np.where(hi_lane, pz, 0)
        dots = tile_codes @ b  # [channel, column], the mma's exact s32
        for i in range(4):
            ch, col, j = G_OF + 8 * (i >> 1), 2 * TIG_OF + (i & 1), i & 1
            o_acc[:, i] = o_acc[:, i] * alpha[:, j] + (dots[ch, col] * wsc[:, j] + pz[:, j])
    den = np.stack([_rows(l_part[:, j], np.add) for j in range(2)], 1)  # the epilogue
    if skip != "l":
        den = den + _shfl(den, 2)
    out_cols, m_cols, l_cols = np.zeros((chans, 8)), np.zeros(8), np.zeros(8)
    for lane in range(LANES):
        g, tig = lane_gt(lane)
        for i in range(4):
            out_cols[g + 8 * (i >> 1), 2 * tig + (i & 1)] = o_acc[lane, i]
        if g == 0:
            m_cols[2 * tig:2 * tig + 2], l_cols[2 * tig:2 * tig + 2] = m_run[lane], den[lane]
    out = (out_cols[:, :HEADS] + out_cols[:, HEADS:]) / l_cols[:HEADS]
    sd = scores.astype(np.float64)
    p = np.exp2(sd - sd.max(0))
    ref = (s_v[None, :].astype(np.float64) * codes + z_v[None, :]) @ (p / p.sum(0))
    lse, lse_ref = m_cols[:HEADS] + np.log2(l_cols[:HEADS]), sd.max(0) + np.log2(p.sum(0))
    return (float(np.abs(out - ref)[:, :gqa].max() / np.abs(ref[:, :gqa]).max()),
            float(np.abs(lse - lse_ref)[:gqa].max()))


def test_warp_model_matches_softmax_attention():
    """Token pairs end to end over full and partial sub-tiles (63 to 1001 tokens) and gqa 1, 3, 4: the output within
    the fixed point's rounding (its bound, half a unit in 32512 of a tile's largest P |s_v|, is ~1.5e-5 relative per
    token), the LSE within fp32's."""
    for n in (63, 64, 129, 300, 1001):
        for gqa in (1, 3, 4):
            err, lse_err = warp_decode(n + gqa, n, gqa)
            assert err < 1e-3 and lse_err < 1e-4, (n, gqa, err, lse_err)


def test_warp_model_needs_every_step_token_pairs_added():
    """Dropping any of the cross-lane steps that token pairs added, or exchanging with lane ^ 8, moves the output or
    the LSE far past the bounds above."""
    for skip in ("max", "smax", "pz", "l", "flip", "lane8"):
        worst = max(max(warp_decode(seed, n, skip=skip)) for seed, n in ((1, 63), (2, 129), (3, 1001)))
        assert worst > 1e-3, skip
