"""The CUDA kernel's full-tile copy path (``issue_full`` in foscar/kernels/csrc/folded_decode_sm90.cuh)
against its general path (``issue``), mirrored in Python: for every format the kernel is built for,
contiguous and paged caches (the page sizes ``issue_full`` takes: >= 64 tokens, or >= 32 / NCH
without channel-wise K; paged rows as ``id_row`` computes them, 32-bit, from the sub-tile's page ids
as ``copy_ids`` leaves them in the warp's id slot) and channel-wise K blocks, both must leave the same
bytes in a warp's shared-memory stage. The mirror follows the C++ index arithmetic line by line (it
does not run the kernel, which needs a GPU); the compile-time half of the same proof is the
``static_assert`` on ``code_swizzle_period``. A second test replays the kernel's order of id copies,
commit groups, waits and issues (paged) and checks that every issue reads its own sub-tile's ids,
complete, from a slot that no later copy has refilled yet."""

import random

import pytest

TILE = 64  # kTileTokens
MASK32 = 2**32 - 1  # uint32_t arithmetic
STRIDE = 4 * TILE  # kWarps * kTileTokens
FORMATS = [(b, d, g) for d, gs in ((64, (64, 32)), (128, (128, 64, 32)), (256, (128, 64, 32)))
           for b in (2, 4) for g in gs]


def fmt(bits, head_dim, group):
    rb = head_dim * bits // 8
    nch = rb // 16
    return {"RB": rb, "NCH": nch, "NG": head_dim // group, "ROWS_PER_SWZ": 1 if nch >= 8 else 8 // nch}


def swz(token, chunk, nch, rows_per_swz):
    return chunk ^ ((token // rows_per_swz) & (nch - 1))


def code_dst(f, lane, jj):
    i = lane + 32 * jj
    tok, c = i // f["NCH"], i % f["NCH"]
    return tok * f["RB"] + 16 * swz(tok, c, f["NCH"], f["ROWS_PER_SWZ"])


def swizzle_period(f):
    """code_swizzle_period<F>(): the smallest period in jj of code_dst, as the C++ computes it."""
    rounds = TILE * f["NCH"] // 32
    per = 1
    while per <= rounds:
        if all(code_dst(f, lane, jj) == code_dst(f, lane, jj % per) + (jj - jj % per) * 512
               for lane in range(32) for jj in range(rounds)):
            return per
        per *= 2
    return 0


class Tensor:
    """A cache tensor of `size` elements, flat: a distinct value per (tensor, element), computed
    on reading (a Python list of a whole contiguous cache would dominate the test's time)."""

    def __init__(self, salt, size):
        self.salt, self.size = salt, size

    def __getitem__(self, i):
        assert 0 <= i < self.size, "read outside the tensor"
        return (self.salt, i)


class Cache:
    """Codes / scales / K-block rows, addressed by element as the kernel's views are."""

    def __init__(self, f, head_dim, rows, k_rows):
        self.codes = {a: Tensor(a, rows * f["RB"]) for a in ("k", "v")}
        self.scales = {a: Tensor(a, rows * f["NG"]) for a in ("ks", "kz", "vs", "vz")}
        self.krows = {a: Tensor("c" + a, k_rows * head_dim) for a in ("ks", "kz")}


class Stage:
    """A warp-stage of shared memory as named arrays: codes by byte, scales and K rows by float."""

    def __init__(self, f, head_dim, ch):
        self.codes = {a: [None] * (TILE * f["RB"]) for a in ("k", "v")}
        names = ("vs", "vz") if ch else ("ks", "kz", "vs", "vz")
        self.scales = {a: [None] * (TILE * f["NG"]) for a in names}
        self.krows = {a: [None] * (2 * head_dim) for a in ("ks", "kz")} if ch else {}

    def copy(self, dst, at, src, frm, n, live=True):  # cp.async: n elements, zero-filled when not live
        for e in range(n):
            assert dst[at + e] is None, "two copies to one shared-memory element"
            dst[at + e] = src[frm + e] if live else 0


class Seq:
    """One (sequence, KV head) of a contiguous or paged cache: rows of its tokens."""

    def __init__(self, length, page, num_kv_heads, hkv, max_seq_len, bh, rng):
        self.page, self.nkv, self.hkv = page, num_kv_heads, hkv
        self.row0 = bh * max_seq_len
        if page:
            n = (length + page - 1) // page
            self.pages = rng.sample(range(n + 3), n)  # shuffled page table
            self.shift = page.bit_length() - 1

    def layout_row(self, gt):
        """Row of token gt in the [num_pages, num_kv_heads, page, ...] pool (the layout's definition)."""
        return ((self.pages[gt >> self.shift] * self.nkv + self.hkv) << self.shift) + (gt & (self.page - 1))

    def slot(self, t0, end):
        """copy_ids: the id slot of the sub-tile at t0, the page id of each of its 64 tokens (0 past end)."""
        return [self.pages[gt >> self.shift] if gt < end else 0 for gt in range(t0, t0 + TILE)]

    def id_row(self, page_id, gt):
        """id_row: the 32-bit unsigned row of token gt in page page_id."""
        page_rows, head_row = (self.nkv << self.shift) & MASK32, (self.hkv << self.shift) & MASK32
        return (page_id * page_rows + (head_row | (gt & (self.page - 1)))) & MASK32

    def row(self, ids, tok, gt):
        """row_at: the row of tile token tok at gt: row0 + gt (contiguous); paged from the id slot."""
        if not self.page:
            return self.row0 + gt
        return self.id_row(ids[tok], gt)


def issue_general(f, d, seq, cache, stage, ids, t0, end, k_block, k_blocks, bh):
    """`issue` (the general path), scales_aligned; ids: the sub-tile's id slot (paged)."""
    nch, rb, ng = f["NCH"], f["RB"], f["NG"]
    for i in range(TILE * nch):
        tok, c = i // nch, i % nch
        gt = t0 + tok
        live = gt < end
        src = seq.row(ids, tok, gt) * rb + 16 * c if live else 0
        dst = tok * rb + 16 * swz(tok, c, nch, f["ROWS_PER_SWZ"])
        for a in ("k", "v"):
            stage.copy(stage.codes[a], dst, cache.codes[a], src, 16, live)
    valid = (end - t0) * ng
    for i in range(TILE * ng // 4):
        f0 = 4 * i
        tok = min(f0 // ng, TILE - 1)
        left = valid - f0
        n = 4 if left >= 4 else max(left, 0)
        src = seq.row(ids, tok, t0 + tok) * ng + f0 % ng if n else 0
        for a in stage.scales:
            stage.copy(stage.scales[a], f0, cache.scales[a], src, n)
            stage.copy(stage.scales[a], f0 + n, None, 0, 4 - n, live=False)  # cp.async zero-fills the rest
    if k_block:
        shift = k_block.bit_length() - 1
        rc = d // 4
        rows = 2 if k_block == 32 else 1
        for i in range(rows * rc):
            r, cc = i // rc, i % rc
            gt = t0 + 32 * r
            live = gt < end
            if seq.page:  # the row of token t0 + 32 r (its id ids[32 r]) >> kbs, as k_blocks = page >> kbs
                krow = seq.row(ids, 32 * r, gt) >> shift
            else:
                krow = bh * k_blocks + (gt >> shift)
            src = krow * d + 4 * cc if live else 0
            for a in ("ks", "kz"):
                stage.copy(stage.krows[a], r * d + 4 * cc, cache.krows[a], src, 4, live)


def issue_full(f, d, seq, cache, stage, ids, t0, k_block, k_blocks, bh):
    """`issue_full` (the fast path): per-lane loop-invariant offsets plus constants; ids as issue_general's."""
    nch, rb, ng = f["NCH"], f["RB"], f["NG"]
    per = swizzle_period(f)
    assert per in (1, 2)  # the kernel's static_assert
    code_dst_lane = [[code_dst(f, lane, q) for q in range(per)] for lane in range(32)]
    trow = seq.row(ids, 0, t0)  # paged: from ids[0]
    chunks = TILE * ng // 4
    round_rows = seq.page and not k_block  # paged token-wise K, every page size
    for lane in range(32):
        for jj in range(TILE * nch // 32):
            dst = code_dst_lane[lane][jj % per] + (jj - jj % per) * 512
            if round_rows:  # the row of the round's first token tj, its page that of the round
                tj = 32 * jj // nch
                src = seq.row(ids, tj, t0 + tj) * rb + 16 * lane
            else:
                src = trow * rb + 16 * lane + 512 * jj
            for a in ("k", "v"):
                stage.copy(stage.codes[a], dst, cache.codes[a], src, 16)

        def scale_src(i):  # float of scale chunk i
            if round_rows:  # the row of the chunk's token, from its id
                tok = 4 * i // ng
                return seq.row(ids, tok, t0 + tok) * ng + 4 * i % ng
            return trow * ng + 4 * i

        if chunks == 16:  # lanes 0-15: ks, vs; 16-31: kz, vz (the stage's arrays by name here)
            h, i = lane // 16, lane % 16
            for a in (("kz", "vz") if h else ("ks", "vs")):
                if a in stage.scales:
                    stage.copy(stage.scales[a], 4 * i, cache.scales[a], scale_src(i), 4)
        else:
            for q in range(chunks // 32):
                i = lane + 32 * q
                for a in stage.scales:
                    stage.copy(stage.scales[a], 4 * i, cache.scales[a], scale_src(i), 4)
        if k_block:
            shift = k_block.bit_length() - 1
            rc = d // 4
            n = (2 if k_block == 32 else 1) * rc
            krow = trow >> shift if seq.page else bh * k_blocks + (t0 >> shift)  # paged: k_blocks = page >> shift
            for q in range((2 * rc + 31) // 32):
                i = lane + 32 * q
                if i < n:
                    for a in ("ks", "kz"):
                        stage.copy(stage.krows[a], 4 * i, cache.krows[a], krow * d + 4 * i, 4)


@pytest.mark.parametrize("bits,head_dim,group", FORMATS)
@pytest.mark.parametrize("page", [0, 16, 32, 64, 256])
@pytest.mark.parametrize("k_block", [0, 32, 64, 128])
def test_full_tile_copies_match_general_path(bits, head_dim, group, page, k_block):
    if page and k_block and page % k_block:
        pytest.skip("paged channel-wise K needs k_block dividing page_size")
    f = fmt(bits, head_dim, group)
    if page and page < 64 and (k_block or page * f["NCH"] < 32):  # the kernel's fast_copies
        pytest.skip("issue_full not taken: pages under 64 tokens with channel-wise K or under 32 / NCH")
    rng = random.Random(bits * 1000 + head_dim + group + page + k_block)
    num_kv_heads, hkv, batch, b = 2, 1, 2, 1
    bh = b * num_kv_heads + hkv
    max_seq_len = 1024 + 64  # the sequence: chunk [start, end) of a 1000-token sequence
    length = 1000
    if page:
        seq = Seq(length, page, num_kv_heads, hkv, 0, 0, rng)
        rows = (max(seq.pages) + 1) * num_kv_heads * page
        k_blocks = page // k_block if k_block else 0
        k_rows = (max(seq.pages) + 1) * num_kv_heads * k_blocks
    else:
        seq = Seq(length, 0, num_kv_heads, hkv, max_seq_len, bh, rng)
        rows = batch * num_kv_heads * max_seq_len
        k_blocks = -(-max_seq_len // k_block) if k_block else 0
        k_rows = batch * num_kv_heads * k_blocks
    if page:  # id_row's 32-bit rows are the layout's rows (the pool is far under 2^32 rows here)
        assert all(seq.id_row(seq.pages[gt >> seq.shift], gt) == seq.layout_row(gt) for gt in range(length))
    cache = Cache(f, head_dim, rows, k_rows)
    start, end = 256, length
    compared = 0
    for warp in range(4):
        first = start + warp * TILE
        for t0 in range(first, end - TILE + 1, STRIDE):  # the full sub-tiles of this warp
            general, fast = Stage(f, head_dim, bool(k_block)), Stage(f, head_dim, bool(k_block))
            ids = seq.slot(t0, end) if page else None
            issue_general(f, head_dim, seq, cache, general, ids, t0, end, k_block, k_blocks, bh)
            issue_full(f, head_dim, seq, cache, fast, ids, t0, k_block, k_blocks, bh)
            assert fast.codes == general.codes and None not in fast.codes["k"], (warp, t0)
            assert fast.scales == general.scales and all(None not in v for v in fast.scales.values())
            assert fast.krows == general.krows
            compared += 1
    assert compared >= 8


def replay_id_ring(iters, stages):
    """The kernel's paged order of id copies, commit groups, waits and issues for one warp of `iters`
    sub-tiles with `stages` = kStages: the prologue (ids of sub-tiles 0 .. stages - 1 in a group of
    their own, waited for; then issue_next of sub-tiles 0 .. stages - 2, a commit each) and steps
    it = 0 .. iters - 1 (issue_next(it + stages - 1) when it is < iters, commit, wait_group stages - 1,
    __syncwarp). issue_next(u) reads slot u % stages, __syncwarp, then copies the ids of sub-tile
    u + stages into that slot. Returns the sub-tiles issued, in order; raises AssertionError where an
    issue would read ids not yet complete or of another sub-tile."""
    slots = {}  # slot -> (sub-tile whose ids it holds, commit group of the copy)
    done = -1  # every group <= done is complete (and, after the __syncwarp that follows each wait, visible)
    group = 0  # the group the next copies join
    issued = []

    def copy_ids(u):
        slots[u % stages] = (u, group)

    def wait(pending):  # cp.async.wait_group pending: all but the last `pending` committed groups complete
        nonlocal done
        done = max(done, group - 1 - pending)

    def commit():
        nonlocal group
        group += 1

    def issue_next(u):
        held, g = slots[u % stages]
        assert held == u, f"sub-tile {u} reads the ids of sub-tile {held}"
        assert g <= done, f"sub-tile {u} reads ids of group {g}, complete only up to {done}"
        issued.append(u)
        copy_ids(u + stages)  # after the __syncwarp: every lane has read the slot

    for s0 in range(stages):
        copy_ids(s0)
    commit()
    wait(0)
    for s0 in range(stages - 1):
        if s0 < iters:
            issue_next(s0)
        commit()
    for it in range(iters):
        if it + stages - 1 < iters:
            issue_next(it + stages - 1)
        commit()
        wait(stages - 1)
        assert it in issued[: it + 1], "sub-tile computed before it was issued"
    return issued


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("iters", [0, 1, 2, 3, 4, 9])
def test_id_ring_order(iters, stages):
    assert replay_id_ring(iters, stages) == list(range(iters))
