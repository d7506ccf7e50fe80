"""Session 43: a numpy model of the layout probe's copies (a review helper's), f43976a: the shared-memory stages
filled by `issue` and `issue_full` from the six tensors (default) and from the block buffer (FOSCAR_TILE_PROBE=1), byte
for byte, for every shipped format, the buffer from scripts/tile_layout_probe.py's block_layout. Run from the
repository root:
    python results/2026-12-04-h200-s43/probes/tile_probe_model.py
"""
import itertools, numpy as np, torch
import sys
sys.path.insert(0, "scripts")
import foscar
from tile_layout_probe import block_layout

def run(BITS, D, G, B=2, H=3, cap=512, lens=None, seed=0):
    RB, NG = D * BITS // 8, D // G
    NCH = RB // 16
    CB, SB = 64 * RB, 64 * NG * 4; KM = SB
    rng = np.random.default_rng(seed)
    kc = torch.from_numpy(rng.integers(0, 256, (B, H, cap, RB), dtype=np.uint8))
    vc = torch.from_numpy(rng.integers(0, 256, (B, H, cap, RB), dtype=np.uint8))
    sc = [torch.from_numpy(rng.standard_normal((B, H, cap, NG)).astype(np.float32)) for _ in range(4)]
    c = foscar.QuantizedKVCache(kc, vc, *sc, torch.full((B,), cap, dtype=torch.int32), BITS, G, D)
    qc = block_layout(c)
    full = torch.empty(0, dtype=torch.uint8).set_(qc.k_codes.untyped_storage())  # the buffer the view lies in
    buf = full.numpy()
    assert qc.k_codes.shape == kc.shape and qc.k_codes.storage_offset() == 0
    assert np.array_equal(qc.k_codes.numpy().reshape(-1), buf[:kc.numel()])
    std = [kc.numpy().reshape(-1), vc.numpy().reshape(-1)] + [s.numpy().reshape(-1).view(np.uint8) for s in sc]
    BB = 64 * (2 * RB + 16 * NG)
    assert buf.size % BB == 0 and buf.size == B * H * cap // 64 * BB
    def il(row0, row, a, off):
        R = row0 + row; r = R & 63
        aoff = a * 64 * RB + r * RB if a < 2 else 128 * RB + (a - 2) * 256 * NG + r * 4 * NG
        return (R >> 6) * BB + aoff + off
    def cp(stage, dst, mem, addr, nbytes, check_in=None):
        assert 0 <= nbytes <= 16
        if nbytes:
            if mem is buf: assert addr % 16 == 0, ('misaligned', addr)
            if check_in is not None:  # the 16 bytes lie in one block and in the expected array
                lo, hi = check_in; assert lo <= addr and addr + nbytes <= hi, ('outside', addr, lo, hi)
        stage[dst:dst + 16] = 0
        stage[dst:dst + nbytes] = mem[addr:addr + nbytes]
    def arr_range(row0, t, a):  # byte range of array a of the block holding token row0 + t
        blk = (row0 + t) >> 6
        lo = blk * BB + (a * 64 * RB if a < 2 else 128 * RB + (a - 2) * 256 * NG)
        return lo, lo + (64 * RB if a < 2 else 256 * NG)
    SCALE_CHUNKS = SB // 16
    nst = 0
    for b, h in itertools.product(range(B), range(H)):
        bh = b * H + h; row0 = bh * cap
        for end in lens:
            for t0 in range(0, end, 64):  # sub-tiles at multiples of 64 (chunks start at multiples of 256)
                STAGE = 2 * CB + 2 * KM + 2 * SB
                for IL in (False, True):
                    # ---- issue
                    st = np.full(STAGE, 0xAB, np.uint8)
                    for lane in range(32):
                        for jj in range(64 * NCH // 32):
                            i = lane + 32 * jj; tok, cc = i // NCH, i % NCH; gt = t0 + tok; live = gt < end
                            row = gt; dst = 16 * i  # (swizzle identical in both builds)
                            if IL:
                                cp(st, dst, buf, il(row0, row if live else 0, 0, 16 * cc if live else 0), 16 if live else 0, arr_range(row0, row, 0) if live else None)
                                cp(st, CB + dst, buf, il(row0, row if live else 0, 1, 16 * cc if live else 0), 16 if live else 0, arr_range(row0, row, 1) if live else None)
                            else:
                                s = (row0 + row) * RB + 16 * cc if live else 0
                                cp(st, dst, std[0], s, 16 if live else 0); cp(st, CB + dst, std[1], s, 16 if live else 0)
                        valid = (end - t0) * NG
                        for i0 in range(0, SCALE_CHUNKS, 32):
                            i = i0 + lane; f0 = 4 * i; tok = min(f0 // NG, 63); row = t0 + tok
                            if i < SCALE_CHUNKS:
                                left = valid - f0; nb = 16 if left >= 4 else (left * 4 if left > 0 else 0)
                                base = 2 * CB + f0 * 4
                                dsts = [base, base + KM, base + 2 * KM, base + 2 * KM + SB]
                                if IL:
                                    rr = row if nb else 0; off = 4 * (f0 % NG) if nb else 0
                                    for a in range(4): cp(st, dsts[a], buf, il(row0, rr, 2 + a, off), nb, arr_range(row0, rr, 2 + a) if nb else None)
                                else:
                                    s = ((row0 + row) * NG + f0 % NG) * 4 if nb else 0
                                    for a in range(4): cp(st, dsts[a], std[2 + a], s, nb)
                    if IL: st_il_issue = st
                    else: st_def_issue = st
                    # ---- issue_full (only full sub-tiles)
                    if t0 + 64 <= end:
                        st = np.full(STAGE, 0xCD, np.uint8)
                        trow = t0
                        for lane in range(32):
                            for jj in range(64 * NCH // 32):
                                dst = 16 * (lane + 32 * jj)
                                if IL:
                                    ks = il(row0, trow, 0, 16 * lane); vs = il(row0, trow, 1, 16 * lane)
                                    cp(st, dst, buf, ks + 512 * jj, 16, arr_range(row0, trow, 0))
                                    cp(st, CB + dst, buf, vs + 512 * jj, 16, arr_range(row0, trow, 1))
                                else:
                                    s = (row0 + trow) * RB + 16 * lane + 512 * jj
                                    cp(st, dst, std[0], s, 16); cp(st, CB + dst, std[1], s, 16)
                            sst = 2 * CB
                            if IL:
                                for q in range((SCALE_CHUNKS + 31) // 32):
                                    i = lane + 32 * q
                                    if i < SCALE_CHUNKS:
                                        sb = il(row0, trow, 2, 16 * i)
                                        for a, (d, o) in enumerate([(0, 0), (KM, 256 * NG), (2 * KM, 512 * NG), (2 * KM + SB, 768 * NG)]):
                                            cp(st, sst + d + 16 * i, buf, sb + o, 16, arr_range(row0, trow, 2 + a))
                            elif SCALE_CHUNKS == 16:
                                hh, i = lane // 16, lane % 16; srow = (row0 + trow) * NG
                                cp(st, sst + hh * KM + 16 * i, std[3 if hh else 2], (srow + 4 * i) * 4, 16)
                                cp(st, sst + 2 * KM + hh * SB + 16 * i, std[5 if hh else 4], (srow + 4 * i) * 4, 16)
                            else:
                                srow = (row0 + trow) * NG
                                for q in range(SCALE_CHUNKS // 32):
                                    i = lane + 32 * q
                                    for a, d in enumerate([0, KM, 2 * KM, 2 * KM + SB]):
                                        cp(st, sst + d + 16 * i, std[2 + a], (srow + 4 * i) * 4, 16)
                        if IL: st_il_full = st
                        else: st_def_full = st
                assert np.array_equal(st_def_issue, st_il_issue), (BITS, D, G, bh, end, t0, 'issue')
                if t0 + 64 <= end:
                    assert np.array_equal(st_def_full, st_il_full), (BITS, D, G, bh, end, t0, 'full')
                    assert np.array_equal(st_def_full, st_def_issue)  # the fast path's own claim
                nst += 1
    return nst

fmts = [(B_, D, G) for B_ in (2, 4) for D, Gs in ((64, (64, 32)), (128, (128, 64, 32)), (256, (128, 64, 32))) for G in Gs]
for f in fmts:
    n = run(*f, B=2, H=2, cap=320, lens=[1, 3, 63, 64, 65, 130, 255, 256, 257, 319, 320])
    print(f, 'RB', f[1] * f[0] // 8, 'NG', f[1] // f[2], 'sub-tiles checked', n, 'OK')
