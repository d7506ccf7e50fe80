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
