"""Length-aware split-KV (foscar.kernels.splits.plan_work / schedule, DESIGN §10): the chunks follow the
sequences' actual lengths, not the cache's capacity (CPU; the kernel's own schedule is checked against
the fp64 reference by the GPU tests in tests/test_ragged_gpu.py)."""

import collections
import functools
import random
import re

import pytest

from foscar.kernels import splits

H200_SMS = 132


def _chunks(lengths, capacity, num_kv_heads=8, num_splits=None, sms=H200_SMS):
    slots, fixed, target = splits.plan_work(len(lengths), num_kv_heads, capacity, sms, num_splits)
    work = splits.schedule(lengths, slots, fixed, target, splits.plan_min_chunk(target, num_kv_heads, sms))
    assert len(work) <= slots, "more chunks than the grid has slots"
    return work, slots


def _per_sequence(work, batch):
    per = [[] for _ in range(batch)]
    for b, start, end in work:
        per[b].append((start, end))
    return per


@pytest.mark.parametrize("seed", range(20))
def test_chunks_cover_every_sequence_exactly(seed):
    rng = random.Random(seed)
    batch = rng.choice([1, 2, 7, 64, 300])
    capacity = rng.choice([256, 4096, 131072])
    lengths = [rng.choice([0, 1, rng.randrange(capacity + 1), capacity]) for _ in range(batch)]
    num_splits = rng.choice([None, None, 1, 3, 16])
    work, _ = _chunks(lengths, capacity, num_kv_heads=rng.choice([1, 8, 32]), num_splits=num_splits)
    for b, chunks in enumerate(_per_sequence(work, batch)):
        assert chunks, f"sequence {b} has no CTA (its output row would never be written)"
        assert chunks[0][0] == 0 and chunks[-1][1] == lengths[b]
        assert all(a[1] == c[0] for a, c in zip(chunks, chunks[1:])), "chunks must tile [0, len)"
        assert all(s % 256 == 0 for s, _ in chunks)


def test_a_long_sequence_among_short_ones_gets_most_chunks():
    """Issue 11: 1 x 128K + 7 x 4K ran on 4 splits of 32K (capacity-sized), 6x slower than alone."""
    lengths = [131072] + [4096] * 7
    work, _ = _chunks(lengths, 131072)
    per = _per_sequence(work, 8)
    assert len(per[0]) >= 24 and all(len(c) == 1 for c in per[1:])
    sizes = [e - s for s, e in per[0]]
    assert max(sizes) <= 6144  # about the same tokens per CTA as the short sequences
    alone, _ = _chunks([131072], 131072)
    assert len(alone) == 32  # two CTAs per SM over 8 KV heads


def test_chunks_do_not_depend_on_the_capacity():
    lengths = [4096] * 8
    small, _ = _chunks(lengths, 4096)
    large, slots = _chunks(lengths, 131072)
    assert small == large and len(small) == 32
    assert slots == 32  # no empty slot (they cost time on the H200, bench/NOTES.md §17)


@pytest.mark.parametrize("batch, context", [(1, 8192), (1, 131072), (8, 4096), (8, 32768), (64, 32768),
                                            (64, 131072), (1, 300)])
def test_uniform_batches_keep_the_fitted_split_counts(batch, context):
    """On uniform lengths the chunks are choose_num_splits' splits (fit on the H200, bench/NOTES.md §14)."""
    work, _ = _chunks([context] * batch, context)
    n, _ = splits.choose_num_splits(batch, 8, context, 256, H200_SMS)
    assert len(work) == batch * n
    slots, fixed, target = splits.plan_work(batch, 8, context, H200_SMS)
    if slots == batch:  # one chunk per sequence: said as one fixed split (the same chunks, NOTES §48)
        assert (fixed, target, n) == (1, 1, 1)
    elif batch == 1:  # one sequence: the kernel's fixed path over its own length (the same chunks, NOTES §54)
        assert (fixed, target) == (n, 1) and len(work) == n
    else:
        assert fixed == 0 and target == len(work)
    if len(work) * 8 < splits.RESIDENT_CTAS_PER_SM * H200_SMS:
        assert slots == len(work)  # no empty slot beside the working CTAs (up to 42% slower, NOTES §18)
    else:  # the working CTAs fill the GPU: batch spare slots for ragged batches, after every working CTA
        assert slots == len(work) + batch


def test_a_ragged_batch_that_fills_the_gpu_splits_its_long_sequences():
    """64 heavy-tailed lengths up to 32K in a 32K cache (the bench's ragged lognormal point): with one
    slot per sequence the 32K sequence ran on one CTA per KV head (294 us on the H200, 142 with the spare
    slots, bench/NOTES.md §18)."""
    from bench.lengths import WorkloadSpec

    lengths = list(WorkloadSpec("lognormal", seed=0).lengths(64, 32768))
    work, slots = _chunks(lengths, 32768)
    assert slots == 128
    per = _per_sequence(work, 64)
    longest = max(range(64), key=lambda b: lengths[b])
    assert lengths[longest] == 32768 and len(per[longest]) >= 4
    assert max(e - s for _, s, e in work) <= 8192


def test_more_tokens_than_planned_still_fit():
    """The plan sizes the grid for the capacity; lengths past it (a paged cache given more pages) grow
    the chunk instead of dropping work."""
    slots, fixed, target = splits.plan_work(4, 8, 1024, H200_SMS)
    lengths = [1 << 20] * 4
    work = splits.schedule(lengths, slots, fixed, target)
    assert len(work) <= slots
    assert sum(e - s for _, s, e in work) == sum(lengths)


def test_fixed_split_count_follows_each_length():
    work, slots = _chunks([1000, 100, 0], 4096, num_splits=4)
    assert slots == 12
    assert _per_sequence(work, 3) == [[(0, 256), (256, 512), (512, 768), (768, 1000)], [(0, 100)], [(0, 0)]]


@pytest.mark.parametrize("batch, context, bits, per_sequence", [
    (64, 8192, 4, 2), (64, 32768, 4, 2), (64, 131072, 4, 4), (32, 8192, 4, 1), (64, 8192, 2, 1), (64, 300, 4, 1)])
def test_int4_past_one_wave_takes_two_chunks_per_sequence(batch, context, bits, per_sequence):
    """INT4 where one chunk per sequence is more than one wave of resident CTAs (64 x 8 KV heads > 3 x
    132): two chunks per sequence (H200 split sweep, bench/NOTES.md §27); INT2 and smaller batches keep
    the fitted count; a sequence too short for two 256-token chunks keeps one."""
    slots, fixed, target = splits.plan_work(batch, 8, context, H200_SMS, bits=bits)
    if slots == batch:  # one chunk per sequence, no room: one fixed split (NOTES §48)
        assert per_sequence == 1 and (fixed, target) == (1, 1)
    else:
        assert fixed == 0 and target == batch * per_sequence
    work = splits.schedule([context] * batch, slots, fixed, target)
    assert len(work) == batch * per_sequence and {e - s for _, s, e in work} == {context // per_sequence}


@pytest.mark.parametrize("capacity, room", [(1, False), (16, False), (512, False), (513, True), (32768, True)])
def test_no_room_where_no_sequence_can_take_two_chunks(capacity, room):
    """Batch 64 over 8 KV heads fills the H200 (512 CTAs >= 3 x 132), so a ragged batch gets 64 spare
    slots, except where the capacity is at most the smallest chunk of such a grid (512 tokens): every sequence is then
    one chunk and the spare slots would be CTAs with nothing to do (bench/NOTES.md §36, §39)."""
    slots, fixed, target = splits.plan_work(64, 8, capacity, H200_SMS)
    assert (slots, fixed, target) == ((128, 0, 64) if room else (64, 1, 1))  # no room: one fixed split (§48)
    assert splits.merges(64, slots) is room
    if not room:  # ... and every sequence's one chunk still fits, whatever its length up to the capacity
        rng = random.Random(capacity)
        work = splits.schedule([rng.randrange(capacity + 1) for _ in range(64)], slots, fixed, target)
        assert [b for b, _, _ in work] == list(range(64))


def _cuda_constant(name):
    """A ``constexpr int`` of the CUDA kernel's source, as written there (a literal)."""
    import re
    from pathlib import Path

    src = (Path(splits.__file__).parent / "csrc" / "folded_decode_sm90.cuh").read_text()
    found = re.search(rf"constexpr int {name} = (\d+);", src)
    assert found, f"{name} is not a literal constexpr int in folded_decode_sm90.cuh"
    return int(found.group(1))


def test_the_chunk_constants_match_the_kernel():
    assert _cuda_constant("kMinChunk") == splits.MIN_CHUNK_TOKENS
    assert _cuda_constant("kShortChunk") == splits.SHORT_CHUNK_TOKENS
    assert _cuda_constant("kMaxChunk") == splits.MAX_SPLIT_TOKENS
    assert _cuda_constant("kWarps") * _cuda_constant("kTileTokens") == splits.CHUNK_ALIGN_TOKENS
    assert _cuda_constant("kMaxSeqChunks") == splits.MAX_CHUNKS_PER_SEQUENCE


@pytest.mark.parametrize("seed", range(4))
def test_no_sequence_takes_more_than_32_chunks(seed):
    """Where batch x num_kv_heads <= 4 the fit and the batch-1 rule asked for 64-256 chunks a sequence, which the
    in-kernel merge takes in rounds of 16 (INT2 1 x 32K at 8 query heads over 1 KV head: 20.5 us with 128 chunks,
    9.6 with 32, bench/NOTES.md §101). Now plans ask for at most 32 (past 32 x 32768 tokens, chunks of 32768: the
    longest chunk the plan asks for), and the length-aware schedule gives no sequence more; a fixed plan (batch 1)
    cuts a length in at most its count. A batch of one may take more, up to one program an SM, in chunks of at least
    the long chunks' floor (long_chunk_floor: 512, 256 in a cache of at most 16K; 4096 in sessions 60-69, bench/NOTES.md
    §105, §115), and its fixed path cuts a shorter length in more than 32 only in chunks that long; since session 61
    any batch at one or two KV heads (plan_long_chunk, §106), in the length-aware path too, and then at most one program
    an SM for the sequence."""
    rng = random.Random(seed)
    for _ in range(80):
        batch = rng.choice([1, 2, 3, 4, 8, rng.randrange(1, 129)])
        capacity = rng.choice([600, 4096, 8192, 10000, 12288, 16384, 20000, 32768, 100000, 131072, 262144, 1 << 19,
                               1 << 20, 1 << 21])
        heads = rng.choice([1, 2, 4, 8])
        sms = rng.choice([4, 132])
        floor = splits.long_chunk_floor(capacity)
        slots, fixed, target = splits.plan_work(batch, heads, capacity, sms, bits=rng.choice([2, 4]), head_dim=128)
        cap = max(splits.MAX_CHUNKS_PER_SEQUENCE, -(-capacity // splits.MAX_SPLIT_TOKENS))
        cap = max(cap, min(sms // (batch * heads), -(-capacity // floor)))
        assert splits.plan_chunks_per_sequence(batch, fixed, target) <= cap
        long_chunk = splits.plan_long_chunk(None, heads, sms, capacity, fixed_splits=fixed, batch=batch)
        assert long_chunk == 0 or (long_chunk >= floor and long_chunk % 256 == 0)
        lengths = _random_batch(rng, batch, capacity)
        work = splits.schedule(lengths, slots, fixed, target, splits.plan_min_chunk(target, heads, sms), long_chunk)
        for b, n in enumerate(lengths):
            chunks = [w for w in work if w[0] == b]
            # (a fixed plan cuts a length in its count, at most the cap of the capacity, or of the length)
            most = fixed or max(splits.MAX_CHUNKS_PER_SEQUENCE, -(-n // splits.MAX_SPLIT_TOKENS),
                                -(-n // long_chunk) if long_chunk else 1)
            assert len(chunks) <= most, (lengths, slots, fixed, target, b)
            if len(chunks) > splits.MAX_CHUNKS_PER_SEQUENCE:  # past 32 only in chunks of >= long_chunk (or 32768's)
                assert long_chunk or len(chunks) <= -(-n // splits.MAX_SPLIT_TOKENS)
                assert all(e - s >= min(long_chunk, splits.MAX_SPLIT_TOKENS) for _, s, e in chunks[:-1])
                if len(chunks) > -(-n // splits.MAX_SPLIT_TOKENS):  # (not chunks of 32768)
                    assert len(chunks) * heads <= sms  # at most one program an SM
            assert chunks[0][1] == 0 and chunks[-1][2] == n


@pytest.mark.parametrize("batch, context, chunks", [(1, 8192, 32), (1, 32768, 64), (1, 131072, 128), (2, 32768, 64),
                                                    (4, 131072, 32), (8, 32768, 32), (1, 262144, 128),
                                                    (1, 1 << 19, 128), (1, 1 << 21, 128), (2, 1 << 21, 64),
                                                    (2, 262144, 64), (2, 131072, 64), (3, 1 << 19, 32)])
def test_one_kv_head_plans_chunks_a_sequence(batch, context, chunks):
    """Llama-3.1-70B at tensor parallel 8 (8 query heads over 1 KV head) on the H100: 32 chunks a sequence was the
    fastest count at 19 of 24 points of batch 1-8 x 8K-128K, INT2 and INT4, while one CTA merged past 32 (bench/NOTES.md
    §101); a 2M-token sequence keeps chunks of at most 32768 tokens at batch 2. A batch of one or two takes more, up
    to one program an SM (128 on 132 SMs), in chunks of at least the long chunks' floor (§105, §106): 512 tokens since
    session 70 (§115: INT2 1 x 128K in 128 chunks of 1024 took 0.54 of its time in 32 of 4096, the floor of sessions
    60-69), so 1 x 32K takes 64 chunks and 1 x 128K 128; from batch 3 one an SM is 32 a sequence or fewer."""
    for bits in (2, 4):
        slots, fixed, target = splits.plan_work(batch, 1, context, 132, bits=bits, head_dim=128)
        work = splits.schedule([context] * batch, slots, fixed, target, splits.plan_min_chunk(target, 1, 132),
                               splits.plan_long_chunk(None, 1, 132, context, fixed_splits=fixed))
        assert len(work) == batch * chunks and max(e - s for _, s, e in work) <= splits.MAX_SPLIT_TOKENS


def _preset_grid():
    """(batch, capacity, lengths) of the h100 / h200 presets' grids: the uniform grid, the ragged grid's workloads, and
    lognormal batches of 1-64 in 8K-128K."""
    from bench.lengths import WorkloadSpec

    grid = [(b, c, (c,) * b) for b in (1, 8, 32, 64) for c in (8192, 32768, 131072)]
    grid += [(8, 131072, WorkloadSpec("one-long").lengths(8, 131072)), (8, 4096, (4096,) * 8),
             (8, 131072, (4096,) * 8)]
    grid += [(b, c, WorkloadSpec("lognormal", seed=seed).lengths(b, c)) for b in (1, 8, 32, 64)
             for c in (8192, 32768, 131072) for seed in (0, 1)]
    return grid


def test_the_chunk_cap_leaves_the_presets_grids_alone(monkeypatch):
    """At 8 KV heads (the h100 / h200 presets' shape) no point of the presets' grids gets another schedule from the
    32-chunk cap: the uniform grid, the ragged grid's workloads, and lognormal batches of 1-64 in 8K-128K. What it does
    change at 8 KV heads: one long sequence among 31 or 63 short ones (32 chunks of 4096 where the total asked for 64
    of 2048 or 86 of 1536), measured in bench/NOTES.md §101."""
    from bench.lengths import WorkloadSpec

    def schedules(cases):
        return [splits.schedule(list(lengths), *splits.plan_work(batch, 8, capacity, H200_SMS, bits=bits,
                                                                     head_dim=128))
                for batch, capacity, lengths in cases for bits in (2, 4)]
    grid = [(b, c, (c,) * b) for b in (1, 8, 32, 64) for c in (8192, 32768, 131072)]
    grid += [(8, 131072, WorkloadSpec("one-long").lengths(8, 131072)), (8, 4096, (4096,) * 8),
             (8, 131072, (4096,) * 8)]
    grid += [(b, c, WorkloadSpec("lognormal", seed=seed).lengths(b, c)) for b in (1, 8, 32, 64)
             for c in (8192, 32768, 131072) for seed in (0, 1)]
    changed = [(b, 131072, WorkloadSpec("one-long").lengths(b, 131072)) for b in (32, 64)]
    capped = schedules(grid), schedules(changed)
    monkeypatch.setattr(splits, "MAX_CHUNKS_PER_SEQUENCE", 1 << 20)
    assert schedules(grid) == capped[0]
    uncapped = schedules(changed)
    assert all(sum(w[0] == 0 for w in a) == 32 < sum(w[0] == 0 for w in b) for a, b in zip(capped[1], uncapped))


def _planned(lengths, num_kv_heads, capacity, bits=2, short=True, sms=132, long=True, programs=1, room=True,
             tokens=splits.LONG_CHUNK_TOKENS, short_capacity=True, ceil=True, short_tokens=True, wave=False):
    """The CUDA kernel's schedule of ``lengths`` under the plan for them (its least chunk too, plan_min_chunk, and
    its long chunk, plan_long_chunk; ``tokens``: the long chunks' floor, FOSCAR_LONG_CHUNK_TOKENS, which both take
    to 256 in a cache of at most 16K where ``short_capacity``, their long_short, FOSCAR_LONG_CHUNK_SHORT; ``ceil``:
    plan_work's long_ceil, FOSCAR_LONG_CHUNK_CEIL; ``short_tokens``: plan_short_tokens on, FOSCAR_SHORT_TOKENS=1, which
    ``short`` False turns off too, as decode_cuda.plan_short_tokens_of does; ``wave``: a FOSCAR_WAVE_FIT=1 build's
    wave fit, ``wave_slots = sms // num_kv_heads``). The defaults are the shipped plan's."""
    slots, fixed, target = splits.plan_work(len(lengths), num_kv_heads, capacity, sms, bits=bits, head_dim=128,
                                            short_chunks=short, long_chunks=long, long_programs=programs,
                                            long_tokens=tokens, long_ceil=ceil, long_short=short_capacity)
    min_chunk = splits.plan_min_chunk(target, num_kv_heads, sms, short)
    return splits.schedule(list(lengths), slots, fixed, target, min_chunk,
                           splits.plan_long_chunk(None, num_kv_heads, sms, capacity, long, fixed, programs,
                                                  len(lengths), room, tokens, short_capacity),
                           splits.plan_short_tokens(min_chunk, num_kv_heads, sms, short_tokens and short),
                           wave_slots=sms // num_kv_heads if wave else 0)



# plan_long_chunk and _planned at the long chunks' floor of sessions 60-69 (FOSCAR_LONG_CHUNK_TOKENS=4096; 512 by
# default since session 70, NOTES §115), for the tests of those sessions' rules
_long_chunk_4096 = functools.partial(splits.plan_long_chunk, long_tokens=4096)
_planned_4096 = functools.partial(_planned, tokens=4096)


@pytest.mark.parametrize("batch, num_kv_heads, context, chunks, before", [
    (2, 1, 8192, 32, 16), (4, 1, 8192, 32, 16), (8, 1, 4096, 16, 8), (2, 8, 2048, 8, 4), (4, 1, 600, 3, 2),
    (8, 1, 8192, 16, 16), (2, 8, 4096, 8, 8), (8, 8, 1024, 2, 2), (1, 8, 8192, 16, 16), (32, 1, 8192, 8, 8)])
def test_grids_of_at_most_one_cta_an_sm_take_chunks_of_one_iteration(batch, num_kv_heads, context, chunks, before):
    """Where the fit leaves the grid at most one CTA an SM, a sequence takes up to one program an SM in chunks of one
    256-token iteration or more: at 8 query heads over 1 KV head on an H100, INT2 / INT4 2-4 x 8K took 0.83-0.90 of
    the time in 32 chunks of 256 that they took in 16 of 512; the grids that would pass one CTA an SM keep the fit's
    count (Qwen3-8B's 2 x 4K: 1.09 with 16 of 256, bench/NOTES.md §103). ``before``: ``short_chunks=False``, the
    plans before session 59."""
    for bits in (2, 4):
        for short, want in ((True, chunks), (False, before)):
            work = _planned([context] * batch, num_kv_heads, context, bits, short)
            assert len(work) == batch * want, (bits, short)
            assert max(e - s for _, s, e in work) == -(-context // want // 256) * 256
            if short and batch * num_kv_heads * want <= 132 and want > before:
                assert min(e - s for _, s, e in work) <= 256


def test_the_least_chunk_is_one_iteration_only_below_one_cta_an_sm():
    """plan_min_chunk: 256 where the chunk target's CTAs fit one an SM, else 512; 512 without short chunks. A ragged
    batch then fills a small grid with chunks of 256 (8 lognormal lengths in 8K over 1 KV head: 12-13% less time on an
    H100), while past one CTA an SM, short sequences in a long cache keep chunks of 512 (8 x 1K in 32K over 8 KV heads:
    2 chunks a sequence, as before)."""
    from bench.lengths import WorkloadSpec

    assert splits.plan_min_chunk(128, 1, 132) == splits.SHORT_CHUNK_TOKENS == 256
    assert splits.plan_min_chunk(17, 8, 132) == splits.plan_min_chunk(128, 1, 132, False) == 512
    work = _planned([1024] * 8, 8, 32768)
    assert len(work) == 16 and work == _planned([1024] * 8, 8, 32768, short=False)
    lengths = WorkloadSpec("lognormal", seed=0).lengths(8, 8192)
    short, before = _planned(lengths, 1, 8192), _planned(lengths, 1, 8192, short=False)
    assert max(e - s for _, s, e in short) == 256 < max(e - s for _, s, e in before) and len(short) <= 128


def test_short_chunks_leave_the_presets_grids_alone():
    """At 8 KV heads (the h100 / h200 presets' shape) no point of the presets' grids gets another schedule from short
    chunks: their grids pass one CTA an SM, or a batch of one already took one program an SM. At one KV head
    (Llama-3.1-70B at tensor parallel 8) the ragged grid's 8 x 4K in a 4K cache does, the lognormal batch of 8 in 8K,
    and (by the short-batch bound, plan_short_tokens, which short chunks off turns off too) 8 x 4K in a 128K cache."""
    grid = _preset_grid()
    for heads in (8, 1):
        now = [_planned(lengths, heads, capacity, bits) for batch, capacity, lengths in grid for bits in (2, 4)]
        before = [_planned(lengths, heads, capacity, bits, short=False) for batch, capacity, lengths in grid
                  for bits in (2, 4)]
        changed = {(b, c, len(set(n)) > 1) for (b, c, n), x, y in zip([g for g in grid for _ in (2, 4)], now, before)
                   if x != y}
        assert changed == (set() if heads == 8 else {(8, 4096, False), (8, 8192, True), (8, 131072, False)}), heads


@pytest.mark.parametrize("var, choice, default", [("FOSCAR_SHORT_CHUNKS", splits.short_chunks_choice, True),
                                                  ("FOSCAR_LONG_CHUNKS", splits.long_chunks_choice, True),
                                                  ("FOSCAR_LONG_CHUNK_ROOM", splits.long_chunk_room_choice, True),
                                                  ("FOSCAR_LONG_CHUNK_SHORT", splits.long_chunk_short_choice, True),
                                                  ("FOSCAR_LONG_CHUNK_CEIL", splits.long_chunk_ceil_choice, True),
                                                  ("FOSCAR_SHORT_TOKENS", splits.short_tokens_choice, True)])
def test_chunk_settings(monkeypatch, var, choice, default):
    for value in ("0", "1"):
        monkeypatch.setenv(var, value)
        assert choice() is (value == "1")
    monkeypatch.delenv(var)
    assert choice() is default
    monkeypatch.setenv(var, "yes")
    with pytest.raises(ValueError, match=f"{var}: expected '1' or '0', got 'yes'"):
        choice()


def test_plan_short_tokens_bounds_the_batch_at_one_cta_an_sm():
    """256 tokens a CTA times one CTA an SM over the KV heads, where the plan's least chunk is 512; 0 where it is
    already 256 or the setting is off; bad arguments refused with what is allowed."""
    assert splits.plan_short_tokens(512, 1, 132) == 256 * 132
    assert splits.plan_short_tokens(512, 2, 132) == 256 * 66 and splits.plan_short_tokens(512, 8, 132) == 256 * 16
    assert splits.plan_short_tokens(256, 1, 132) == 0 and splits.plan_short_tokens(512, 1, 132, on=False) == 0
    for bad in ((384, 1, 132), (512, 0, 132), (512, 1, 0)):
        with pytest.raises(ValueError, match="plan_short_tokens: expected min_chunk 256 or 512, num_kv_heads >= 1"):
            splits.plan_short_tokens(*bad)
    assert splits.first_chunk(32768, 256, 4096, 512, 0, 256 * 132) == 256
    assert splits.first_chunk(32768, 256, 4096, 512, 0, 32767) == 512  # one token past the bound
    assert splits.first_chunk(32768, 256, 4096, 512) == 512  # 0: never
    assert splits.first_chunk(0, 256, 0, 512) == 512  # an empty batch (as find_work): empty chunks either way
    assert splits.first_chunk(32768, 256, 512, 512, 0, 256 * 132) == 512  # no sequence past min_chunk: kept
    assert splits.first_chunk(32768, 256, 513, 512, 0, 256 * 132) == 256


@pytest.mark.parametrize("num_kv_heads, capacity, lengths, ctas_off, ctas_on", [
    (1, 131072, [4096] * 8, 64, 128),   # the Llama bench's "capacity" point: as the same lengths in a 4K cache
    (1, 131072, [2048] * 16, 64, 128),
    (1, 131072, [1024] * 32, 64, 128),  # 32 sequences: the in-kernel merge (past the merge rule's 16 pairs)
    (1, 131072, [40000] + [100] * 7, 39, 39),  # 40700 tokens: past 256 x 132, unchanged
    (2, 65536, [4096] * 4, 64, 128),    # 256 x 66 = 16896 tokens at two KV heads (CTAs: both heads)
    (8, 131072, [4096] * 8, 256, 256),  # 8 KV heads: 32768 > 256 x 16, unchanged
    (1, 4096, [4096] * 8, 128, 128),    # a plan whose least chunk is 256 already: no bound
    (1, 4096, [512] * 64, 64, 64),      # no sequence past 512: one CTA a sequence, no merge (1.30x slower cut)
    (1, 4096, [257] * 128, 128, 128),   # the bound's worst case, kept (1.25x slower as 256 CTAs)
    (1, 4096, [1024] + [512] * 63, 65, 130),  # one sequence past 512 cuts them all (timed: 0.96-1.01, §119)
    (1, 8192, [1024] + [200] * 130, 132, 134),  # past 128 sequences (find_work's general path)
    (1, 8192, [600] + [257] * 129, 131, 131),  # cut, the chunks do not fit the slots: the chunk grows back to 512
])
def test_short_tokens_cut_a_short_batch_in_a_large_cache_in_chunks_of_256(num_kv_heads, capacity, lengths, ctas_off,
                                                                         ctas_on):
    """``FOSCAR_SHORT_TOKENS=1`` (plan_short_tokens): a batch whose tokens fit one CTA an SM in chunks of 256 takes
    them, whatever the capacity the plan was made for; past the bound, and where the plan's least chunk is 256
    already, the schedule is unchanged. CTAs = chunks x KV heads, on 132 SMs."""
    off = _planned(lengths, num_kv_heads, capacity, short_tokens=False)
    on = _planned(lengths, num_kv_heads, capacity)
    assert (len(off) * num_kv_heads, len(on) * num_kv_heads) == (ctas_off, ctas_on)
    assert (on == off) == (ctas_on == ctas_off)
    assert sum(e - s for _, s, e in on) == sum(lengths)


@pytest.mark.parametrize("lengths, capacity, default, kept", [
    ([1024] + [512] * 63, 4096, 130, 67),  # one sequence past 512: the 512s stay one chunk each
    ([600] + [257] * 129, 8192, 131, 132),  # the general path: 600 in chunks of 256, the 257s whole
    ([4096] * 8, 131072, 128, 128),  # no sequence of 257-512 tokens: the same
    ([1024, 300, 512, 0, 257, 513, 600, 1, 4096, 400], 131072, 36, 32),  # 4+2+2+1+2+3+3+1+16+2 and 4+1+...+1
])
def test_a_keep_short_build_keeps_short_sequences_whole_in_a_cut_batch(lengths, capacity, default, kept):
    """A FOSCAR_KEEP_SHORT=1 build (schedule's ``keep_short``; bench/NOTES.md §119) gives a sequence of at most the
    plan's least chunk (512) one chunk where the short-batch bound cuts the batch in chunks of 256; the default cuts
    it too. Every token in exactly one chunk either way; one KV head, 132 SMs."""
    slots, fixed, target = splits.plan_work(len(lengths), 1, capacity, 132, bits=2, head_dim=128)
    least = splits.plan_min_chunk(target, 1, 132)
    args = (lengths, slots, fixed, target, least, splits.plan_long_chunk(None, 1, 132, capacity),
            splits.plan_short_tokens(least, 1, 132))
    for keep, want in ((False, default), (True, kept)):
        work = splits.schedule(*args, keep_short=keep)
        assert len(work) == want, keep
        assert sorted((b, s) for b, s, _ in work) == [(b, s) for b, s, _ in work]
        assert sum(e - s for _, s, e in work) == sum(lengths)
        if keep:
            assert all(s == 0 and e == n for b, s, e in work for n in [lengths[b]] if n <= 512)


_wave_planned = functools.partial(_planned, wave=True)  # a FOSCAR_WAVE_FIT=1 build's schedule (NOTES §121)


@pytest.mark.parametrize("workload, batch, heads, capacity, ctas", [
    ("lognormal", 8, 1, 1 << 19, (165, 129)),  # 4352 -> 5632 tokens a chunk
    ("lognormal", 8, 1, 1 << 17, (140, 118)),
    ("lognormal", 8, 1, 1 << 18, (156, 129)),
    ("one-long", 16, 1, 1 << 17, (163, 119)),
    ("one-long", 32, 1, 1 << 19, (159, 129)),
    ("one-long", 32, 1, 8192, (197, 131)),
    ("lognormal", 4, 2, 1 << 19, (148, 126)),
    ("lognormal", 8, 2, 1 << 18, (168, 132)),
    ("uniform", 8, 1, 32768, (256, 256)),  # 1024 a chunk, 2048 to fit: twice as long, kept
    ("lognormal", 16, 1, 1 << 17, (226, 226)),  # 1792 -> 3328: 1.86x, kept
    ("lognormal", 8, 8, 1 << 17, (256, 256)),  # 64 sequence-heads: 2 CTAs an SM, 2 x 132 would be past 1.7x
])
def test_a_wave_fit_build_fills_the_sms_once(workload, batch, heads, capacity, ctas):
    """A FOSCAR_WAVE_FIT=1 build (schedule's ``wave_slots``, bench/NOTES.md §121) grows the length-aware chunks of a
    plan that would run more CTAs than the 132 SMs but at most twice as many until one CTA an SM holds them, where
    the grown chunk is at most 1.7 times as long; else the default schedule. Every token in exactly one chunk."""
    from bench.lengths import WorkloadSpec

    lengths = list(WorkloadSpec(name=workload).lengths(batch, capacity))
    default, wave = _planned(lengths, heads, capacity), _wave_planned(lengths, heads, capacity)
    assert (len(default) * heads, len(wave) * heads) == ctas
    assert sum(e - s for _, s, e in wave) == sum(lengths)
    assert sorted((b, s) for b, s, _ in wave) == [(b, s) for b, s, _ in wave]
    if ctas[0] == ctas[1]:
        assert wave == default
    else:
        grown, chunk = max(e - s for _, s, e in wave), max(e - s for _, s, e in default)
        assert len(wave) * heads <= 132 and chunk < grown <= 1.7 * chunk


def test_a_paged_plan_over_its_longest_sequence_keeps_the_default_schedule_there():
    """The paged case of tests/test_ragged_gpu.py's wave-fit GPU test: a paged cache's plan covers its longest
    sequence (foscar.paginate's ``max_seq_len``), so 8 lognormal lengths from a 128K cache plan over 67344 tokens:
    chunks of 768, 232 CTAs, which would have to grow 2x to fit 132 SMs, past the 1.7x bound; the wave fit keeps the
    default schedule (the contiguous cache's plan, over 131072: 140 -> 118). Session 77's H100 run of the GPU test
    expected at most 132 there."""
    from bench.lengths import WorkloadSpec

    lengths = list(WorkloadSpec(name="lognormal").lengths(8, 1 << 17))
    assert max(lengths) == 67344
    default, wave = _planned(lengths, 1, max(lengths)), _wave_planned(lengths, 1, max(lengths))
    assert len(default) == len(wave) == 232 and wave == default
    assert max(e - s for _, s, e in default) == 768


@pytest.mark.parametrize("seed", range(3))
def test_the_wave_fit_precheck_drops_no_grown_chunk(monkeypatch, seed):
    """find_work leaves the one-pass path only where splits.wave_fit_may_take says the grown chunk could pass 1.7x
    (its least chunk, ceil(T / wave_slots) rounded up, does): on random ragged batches of 1-132 sequences at 1, 2 and
    8 KV heads, the wave-fit schedule is the same without that precheck (the counts' bounds only), and it is the
    default one or fits the wave with a chunk at most 1.7 times the default's."""
    rng = random.Random(seed)
    precheck, grown_taken = splits.wave_fit_may_take, 0

    def counts_only(num_chunks, chunk, total_tokens, batch, wave_slots):
        return 0 < wave_slots and batch <= wave_slots < num_chunks <= 2 * wave_slots

    for _ in range(150):
        heads = rng.choice([1, 2, 8])
        batch = rng.randrange(1, 132 // heads + 1)
        capacity = rng.choice([4096, 32768, 131072, 1 << 19])
        lengths = _random_batch(rng, batch, capacity) if rng.random() < 0.5 else [
            min(capacity, max(1, round(capacity / 8 * 2.718281828 ** rng.gauss(0, 1)))) for _ in range(batch)]
        default, wave = _planned(lengths, heads, capacity), _wave_planned(lengths, heads, capacity)
        monkeypatch.setattr(splits, "wave_fit_may_take", counts_only)
        assert _wave_planned(lengths, heads, capacity) == wave, (heads, capacity, lengths)
        monkeypatch.setattr(splits, "wave_fit_may_take", precheck)
        assert sum(e - s for _, s, e in wave) == sum(lengths)
        if wave != default:
            grown_taken += 1
            assert len(wave) <= 132 // heads < len(default) <= 2 * (132 // heads)
            assert max(e - s for _, s, e in wave) <= 1.7 * max(e - s for _, s, e in default)
    assert grown_taken >= 5  # the rule fired


def test_short_tokens_leave_uniform_batches_at_their_capacity_alone():
    """The bound changes only batches shorter than the capacity their plan was made for: every uniform batch of 1-128
    sequences at its capacity (16 to 32K tokens, at most ~40K in all, where the bound could bind) at 1-8 KV heads on
    132 SMs keeps its schedule (where the target fits one CTA an SM the least chunk is 256 already)."""
    for heads in (1, 2, 4, 8):
        for batch in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128):
            for capacity in (16, 256, 300, 512, 600, 1024, 2048, 3000, 4096, 8192, 16384, 32768):
                if batch * capacity <= 40000:
                    lengths = [capacity] * batch
                    on, off = _planned(lengths, heads, capacity), _planned(lengths, heads, capacity, short_tokens=False)
                    assert on == off, (
                        heads, batch, capacity)


def test_long_chunk_tokens_setting_and_the_plans_it_gives(monkeypatch):
    """The long chunks' floor: 512 since session 70 (bench/NOTES.md §115; 4096 in sessions 60-69), and
    ``FOSCAR_LONG_CHUNK_TOKENS`` for A/B (§114): a multiple of 256 from 256 to 32768, anything else refused with the
    allowed range. By default at one KV head on 132 SMs a batch of one in a 128K cache takes 128 chunks (32 at 4096)
    with a fixed long chunk of 512, and one in a 32K cache 64 (32); two sequences of 128K take 64 chunks each (32);
    one 128K among seven of 4096 takes a length-aware long chunk of 1280 (room for the seven: 125 programs; 4096 at
    4096); a 512K batch of one keeps its 128 chunks and a 16K one its 64 (a floor of 256 in a cache of at most 16K
    whatever the setting, test_a_cache_of_at_most_16k_takes_long_chunks_of_256); 8 KV heads change nothing."""
    monkeypatch.delenv("FOSCAR_LONG_CHUNK_TOKENS", raising=False)
    assert splits.long_chunk_tokens_choice() == splits.LONG_CHUNK_TOKENS == 512
    for good in ("256", "1024", "4096", "32768"):
        monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", good)
        assert splits.long_chunk_tokens_choice() == int(good)
    for bad in ("1000", "0", "65536", "4k", "", " 1024", "+1024", "1_024"):
        monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", bad)
        with pytest.raises(ValueError, match=f"FOSCAR_LONG_CHUNK_TOKENS: expected a multiple of 256 from 256 to 32768 "
                                             f"tokens \\(default 512\\), got '{re.escape(bad)}'"):
            splits.long_chunk_tokens_choice()
    for bad in (0, 1000, 65536):
        with pytest.raises(ValueError, match="long_tokens: expected a multiple of 256"):
            splits.plan_work(1, 1, 131072, 132, bits=2, long_tokens=bad)
        with pytest.raises(ValueError, match="long_tokens: expected a multiple of 256"):
            splits.plan_long_chunk(None, 1, 132, 131072, long_tokens=bad)

    def plan(batch, context, heads=1, tokens=splits.LONG_CHUNK_TOKENS):
        slots, fixed, target = splits.plan_work(batch, heads, context, 132, bits=2, head_dim=128, long_tokens=tokens)
        return (slots, fixed, target), splits.plan_long_chunk(None, heads, 132, context, True, fixed, 1, batch, True,
                                                              tokens)

    assert plan(1, 131072) == ((128, 128, 1), 512) and plan(1, 131072, tokens=4096) == ((32, 32, 1), 4096)
    assert plan(1, 32768) == ((64, 64, 1), 512) and plan(1, 32768, tokens=4096) == ((32, 32, 1), 4096)
    assert plan(2, 131072) == ((128, 0, 128), 1024) and plan(2, 131072, tokens=4096) == ((64, 0, 64), 4096)
    assert plan(8, 131072)[1] == 1280 and plan(8, 131072, tokens=4096)[1] == 4096
    assert plan(1, 524288, tokens=4096)[0] == plan(1, 524288)[0] == (128, 128, 1)
    assert plan(1, 16384, tokens=4096)[0] == plan(1, 16384)[0] == (64, 64, 1)  # 256 at 16K whatever the setting
    for batch, context in ((1, 131072), (8, 131072), (1, 524288)):
        assert plan(batch, context, heads=8, tokens=4096)[0] == plan(batch, context, heads=8)[0]
    # the kernel's cut as the host mirror gives it: one 128K among seven of 4096 in 103 chunks of 1280 (32 of 4096)
    lengths = [131072] + [4096] * 7
    work = _planned(lengths, 1, 131072)
    assert sum(w[0] == 0 for w in work) == 103 and len(work) <= 132
    assert sum(w[0] == 0 for w in _planned(lengths, 1, 131072, tokens=4096)) == 32


def test_a_cache_of_at_most_16k_takes_long_chunks_of_256():
    """In a cache of at most 16K tokens (``splits.LONG_CHUNK_SHORT_CAPACITY``) the long chunks' floor is 256, not 512
    (``long_chunk_floor``; ``FOSCAR_LONG_CHUNK_SHORT=0`` turns it off; bench/NOTES.md §115). At one or two KV heads on
    132 SMs a batch of one at 16K then takes 64 chunks of 256 (32 of 512), at 12K 48 (24), two sequences of 16K 64 each
    (32); 8K, 24K, 4 or 8 sequences of 16K and 8 KV heads keep their plans. Bad values are refused as plan_work's."""
    assert splits.LONG_CHUNK_SHORT_CAPACITY == 16384
    assert [splits.long_chunk_floor(c) for c in (0, 8192, 16384, 16385, 1 << 20)] == [256, 256, 256, 512, 512]
    assert splits.long_chunk_floor(16384, 4096) == 256 and splits.long_chunk_floor(16385, 4096) == 4096
    assert splits.long_chunk_floor(16384, short_capacity=False) == 512
    with pytest.raises(ValueError, match="long_chunk_floor: expected max_seq_len >= 0, got -1"):
        splits.long_chunk_floor(-1)
    with pytest.raises(ValueError, match="long_tokens: expected a multiple of 256"):
        splits.long_chunk_floor(16384, 300)

    def counts(lengths, heads, capacity, short_capacity=True, bits=2):
        work = _planned(lengths, heads, capacity, bits=bits, short_capacity=short_capacity)
        return [sum(w[0] == i for w in work) for i in range(len(lengths))]

    for lengths, heads, capacity, now, before in [
            ([16384], 1, 16384, [64], [32]), ([12288], 1, 12288, [48], [24]),
            ([16384] * 2, 1, 16384, [64] * 2, [32] * 2),
            ([16384], 2, 16384, [64], [32]), ([10000], 1, 16384, [40], [20]),
            ([16384, 2000, 500], 1, 16384, [64, 8, 2], [32, 4, 1]),
            ([8192], 1, 8192, [32], [32]), ([24576], 1, 24576, [48], [48]), ([16384] * 4, 1, 16384, [32] * 4, [32] * 4),
            ([16384] * 8, 1, 16384, [32] * 8, [32] * 8), ([16384], 8, 16384, [16], [16])]:
        assert counts(lengths, heads, capacity) == now, (lengths, heads, capacity)
        assert counts(lengths, heads, capacity, short_capacity=False) == before, (lengths, heads, capacity)
    assert counts([16384], 1, 16384, bits=4) == [64]
    assert max(e - s for _, s, e in _planned([16384], 1, 16384)) == 256


def test_a_capacity_off_the_floor_takes_as_many_chunks_as_its_splits():
    """plan_work asks for ``ceil(capacity / floor)`` long chunks (up to one program an SM; ``long_ceil``,
    FOSCAR_LONG_CHUNK_CEIL, on by default), not ``capacity // floor`` (sessions 60-69, ``long_ceil=False``):
    the kernel aligns a chunk to 256 tokens, so ``capacity // floor`` splits of a capacity off a multiple of the floor
    were cut in chunks of two floors' length, half the splits empty (16000 tokens at a floor of 256: 62 splits, 32
    chunks of 512; 20000 at 512: 39 splits, 27 chunks of 768; bench/NOTES.md §115). At one KV head on 132 SMs: 16000
    takes 63 chunks of 256, 10000 40, 20000 40 of 512, 30000 59 of 512, two sequences of 16000 63 each; capacities on a
    multiple of the floor keep their plans (16384: 64, 32768: 64, 131072: 128)."""
    for capacity, batch, chunks, longest in [(16000, 1, 63, 256), (10000, 1, 40, 256), (20000, 1, 40, 512),
                                             (30000, 1, 59, 512), (16000, 2, 63, 256), (16384, 1, 64, 256),
                                             (32768, 1, 64, 512), (131072, 1, 128, 1024)]:
        work = _planned([capacity] * batch, 1, capacity)
        assert len(work) == batch * chunks, capacity
        assert max(e - s for _, s, e in work) == longest, capacity
    for capacity, batch, chunks, longest in [(16000, 1, 32, 512), (20000, 1, 27, 768), (16000, 2, 32, 512),
                                             (16384, 1, 64, 256), (131072, 1, 128, 1024)]:
        work = _planned([capacity] * batch, 1, capacity, ceil=False)
        assert len(work) == batch * chunks, capacity
        assert max(e - s for _, s, e in work) == longest, capacity


def test_a_long_sequence_alone_takes_chunks_of_at_least_4096_past_32():
    """A batch of one takes more than 32 chunks, up to one program an SM, where each keeps LONG_CHUNK_TOKENS at the
    capacity (at one KV head on 132 SMs: 64 at 256K, 128 at 512K; 32 at 128K as before; bench/NOTES.md §105). The
    kernel's fixed path cuts a shorter length in chunks of at least min(4096, length / 32): in a 256K cache planned at
    64, 40000 tokens take 32 chunks of 1280 (not 53 of 768), 200000 take 49 of 4096. A caller's fixed num_splits
    (long_chunk 0) is cut as asked. At 4 or 8 KV heads nothing changes (a length-aware plan's long_chunk is 0; a
    fixed plan's 4096 binds only past 32 chunks)."""
    assert _long_chunk_4096(None, 1, 132, 262144) == 4096
    assert _long_chunk_4096(64, 1, 132, 262144) == _long_chunk_4096(None, 1, 132, 262144, False) == 0
    # length-aware plans: the chunk of one program an SM at the capacity, at least 4096; fixed plans (batch 1): 4096
    assert [_long_chunk_4096(None, h, 132, c) for h, c in [(1, 1 << 19), (1, 1 << 20), (2, 1 << 18),
                                                                 (2, 1 << 19), (4, 1 << 19)]] == [4096, 8192, 4096,
                                                                                                  8192, 0]
    assert _long_chunk_4096(None, 2, 132, 1 << 19, fixed_splits=64) == 4096
    # fixed plans keep 4096 at any KV head count (past 1M tokens a fixed plan has more than 32 chunks at 3-8 KV heads)
    assert _long_chunk_4096(None, 4, 132, 1 << 21, fixed_splits=64) == 4096
    assert len(_planned_4096([65536], 4, 1 << 21)) == 32  # session 60's plan: 32 chunks of 2048, not 64 of 1024
    with pytest.raises(ValueError, match="num_sms >= 1, max_seq_len >= 0 and batch >= 0, got 0, 132"):
        _long_chunk_4096(None, 0, 132, 1 << 19)
    assert len(_planned_4096([200000], 2, 1 << 19)) == 49  # batch 1 at 2 KV heads: session 60's 4096 floor
    for capacity, chunks in [(131072, 32), (262144, 64), (1 << 19, 128), (1 << 20, 128)]:
        assert len(_planned_4096([capacity], 1, capacity)) == chunks, capacity
        assert len(_planned_4096([capacity], 1, capacity, long=False)) == max(32, capacity // 32768)
    work = _planned_4096([40000], 1, 262144)
    assert len(work) == 32 and work[0][2] == 1280
    assert [e - s for _, s, e in _planned_4096([200000], 1, 262144)][:-1] == [4096] * 48
    assert len(splits.schedule([40000], 64, 64, 1)) == 53  # a fixed num_splits=64: as asked
    assert len(_planned_4096([1 << 19], 2, 1 << 19)) == 64  # 2 KV heads: one an SM is 64
    for heads in (4, 8):
        for capacity in (262144, 1 << 19):
            assert _long_chunk_4096(None, heads, 132, capacity) == 0
            assert _planned_4096([capacity], heads, capacity) == _planned_4096([capacity], heads, capacity, long=False)


def test_long_chunks_over_two_programs_an_sm(monkeypatch):
    """``FOSCAR_LONG_CHUNK_PROGRAMS=2`` (an A/B knob; bench/NOTES.md §108) spreads a long sequence over up to two
    programs an SM: at one KV head on 132 SMs 2 x 512K takes 128 chunks of 4096 a sequence (256 CTAs, at most two an
    SM) instead of 64 of 8192; at two KV heads 2 x 512K 64 of 8192 instead of 32 of 16384 (long_chunk 4096, not
    8192). A batch of one at 512K keeps 128 (its chunks stay at least 4096); below a capacity of 32 x 4096 nothing
    changes. Another count is refused."""
    monkeypatch.delenv("FOSCAR_LONG_CHUNK_PROGRAMS", raising=False)
    assert splits.long_chunk_programs_choice() == 1
    for bad in (0, 3):
        with pytest.raises(ValueError, match=f"long_programs: expected 1 or 2 programs an SM, got {bad}"):
            splits.plan_work(2, 1, 1 << 19, 132, long_programs=bad)
        with pytest.raises(ValueError, match=f"long_programs: expected 1 or 2 programs an SM, got {bad}"):
            _long_chunk_4096(None, 1, 132, 1 << 19, long_programs=bad)
    for heads, chunks, twice in ((1, 64, 128), (2, 32, 64)):
        for programs, want in ((1, chunks), (2, twice)):
            work = _planned_4096([1 << 19] * 2, heads, 1 << 19, programs=programs)
            assert len(work) == 2 * want and max(e - s for _, s, e in work) == (1 << 19) // want, (heads, programs)
    assert _long_chunk_4096(None, 2, 132, 1 << 19, long_programs=2) == 4096
    assert _long_chunk_4096(None, 2, 132, 1 << 19) == 8192
    slots, _, target = splits.plan_work(2, 1, 1 << 19, 132, bits=2, head_dim=128, long_programs=2)
    assert splits.max_ctas_per_sm_choice(slots, 132, 128, 4096, False, 2) == 2  # 256 CTAs: two an SM
    assert len(_planned_4096([1 << 19], 1, 1 << 19, programs=2)) == 128
    for capacity in (65536, 131072):
        assert _planned_4096([capacity] * 2, 1, capacity, programs=2) == _planned_4096([capacity] * 2, 1, capacity)


def test_long_chunk_room_leaves_one_program_for_each_other_sequence_of_a_small_batch():
    """``FOSCAR_LONG_CHUNK_ROOM`` (on by default since session 68; bench/NOTES.md §112, §113): where the batch's other
    sequences are at most one in 8 of the programs (up to 17 sequences at one KV head on 132 SMs, 9 at two), a
    length-aware plan's long chunk spreads the long sequence over at most ``SMs / KV heads - (batch - 1)`` programs,
    so that it and one chunk of each other sequence fit one CTA an SM. One 512K among seven 4K at one KV head: 135
    working CTAs (128 chunks of 4096 for the long one) without it, 128 (121 of 4352) with it; at two KV heads one 512K
    among three 4K: 134 CTAs, then 132. Where the plan already fits (up to 5 sequences at one KV head, a 256K cache, a
    batch of one) nothing changes; nor past the bound (one-long 24, 32 and 100 measured slower with the room)."""
    # (the setting itself: test_chunk_settings)
    with pytest.raises(ValueError, match="batch >= 0, got 1, 132, 524288, -1"):
        _long_chunk_4096(None, 1, 132, 1 << 19, batch=-1)
    # an empty batch (plan_decode accepts one) plans as a batch of one
    assert _long_chunk_4096(None, 1, 132, 1 << 19, batch=0) == 4096
    one_long = [1 << 19] + [4096] * 7
    for room, long_chunk, ctas, long_count in ((False, 4096, 135, 128), (True, 4352, 128, 121)):
        assert _long_chunk_4096(None, 1, 132, 1 << 19, batch=8, room=room) == long_chunk
        work = _planned_4096(one_long, 1, 1 << 19, room=room)
        assert len(work) == ctas and sum(b == 0 for b, _, _ in work) == long_count, room
    for room, ctas in ((False, 2 * 67), (True, 2 * 66)):  # per KV head: the long one's chunks and three short ones
        assert len(_planned_4096([1 << 19] + [4096] * 3, 2, 1 << 19, room=room)) * 2 == ctas, room
    # unchanged: up to 5 sequences at one KV head (128 + 4 <= 132), a 256K cache (4096 binds), a batch of one
    for lengths, capacity in (([1 << 19] + [4096] * 4, 1 << 19), ([1 << 18] + [4096] * 7, 1 << 18),
                              ([1 << 19], 1 << 19), ([1 << 19] * 8, 1 << 19)):
        assert _planned_4096(lengths, 1, capacity) == _planned_4096(lengths, 1, capacity, room=False), (
            len(lengths), capacity)
    six = [1 << 19] + [4096] * 5
    assert _planned_4096(six, 1, 1 << 19) != _planned_4096(six, 1, 1 << 19, room=False)
    assert _long_chunk_4096(None, 1, 132, 1 << 19, fixed_splits=128) == 4096  # fixed: as before
    # the bound: 132 // 8 = 16 other sequences at one KV head, 66 // 8 = 8 at two, 132 // 8 at two with two programs
    for heads, programs, last in ((1, 1, 17), (2, 1, 9), (2, 2, 17)):
        default = _long_chunk_4096(None, heads, 132, 1 << 19, long_programs=programs)
        assert _long_chunk_4096(None, heads, 132, 1 << 19, long_programs=programs, batch=last) > default
        for batch in (last + 1, 32, 100, 101):
            assert _long_chunk_4096(None, heads, 132, 1 << 19, long_programs=programs, batch=batch) == default
    assert _long_chunk_4096(None, 1, 132, 1 << 19, batch=17) == 4608  # 132 - 16 = 116 programs
    assert _long_chunk_4096(None, 2, 132, 1 << 19, batch=9) == 9216  # 66 - 8 = 58 programs


def test_merge_groups_where_a_sequence_may_take_more_than_32_chunks():
    """Group counters for the in-kernel merge's two levels (NOTES §108): ceil(n / 16) where a sequence may take n >
    32 chunks: a fixed plan's count, or a length-aware plan's slots where it has a long chunk or a capacity past 32 x
    32768; else none."""
    assert splits.plan_merge_groups(128, 128, 4096, 1 << 19) == 8  # a batch of one at 512K, one KV head
    assert splits.plan_merge_groups(100, 100, 0, 70000) == 7  # a caller's num_splits=100
    assert splits.plan_merge_groups(64, 32, 0, 1 << 19) == 0  # 32 fixed chunks: one merging CTA
    assert splits.plan_merge_groups(128, 0, 4096, 1 << 19) == 8  # 2 x 512K at one KV head: 128 slots
    assert splits.plan_merge_groups(520, 0, 0, 32768) == 0  # no long chunk: at most 32 a sequence
    assert splits.plan_merge_groups(1100, 0, 0, 1 << 21) == 69  # past 32 x 32768: chunks of 32768, more than 32
    slots, fixed, target = splits.plan_work(2, 1, 1 << 19, 132, bits=2, head_dim=128)
    assert splits.plan_merge_groups(slots, fixed, splits.plan_long_chunk(None, 1, 132, 1 << 19), 1 << 19) == 8
    # long chunks of 4096 up to a capacity of 32 x 4096: no sequence past 32 chunks, so none (NOTES §110)
    assert splits.plan_merge_groups(128, 0, 4096, 1 << 17) == 0  # 8 x 128K at one KV head
    assert splits.plan_merge_groups(64, 64, 4096, 1 << 17) == 0  # a fixed plan at 128K
    assert splits.plan_merge_groups(64, 64, 4096, (1 << 17) + 1) == 4
    # a caller's 40 splits (no long chunk): chunks of at least 256 tokens, so none up to 32 x 256
    assert splits.plan_merge_groups(40, 40, 0, 8192) == 0 and splits.plan_merge_groups(40, 40, 0, 8193) == 3
    # a FOSCAR_SEQ_CHUNK_CAP=0 build: length-aware chunks bounded by the slots alone (NOTES §101)
    assert splits.plan_merge_groups(128, 0, 4096, 1 << 17, seq_chunk_cap=False) == 8
    assert splits.plan_merge_groups(520, 0, 0, 32768, seq_chunk_cap=False) == 33
    assert splits.plan_merge_groups(64, 64, 4096, 1 << 17, seq_chunk_cap=False) == 0  # the fixed path: no cap there


@pytest.mark.parametrize("seed", range(6))
def test_no_sequence_past_32_chunks_where_the_plan_says_none_can(seed):
    """may_take_more_than_32_chunks (where plans take the merge kernel, and the two levels' counters, NOTES §110-§111)
    against the kernel's schedule (splits.schedule, the host mirror): random lengths up to the capacity, full ones
    too, under the plans of 1-8 KV heads, one or two programs an SM, long chunks on or off, and a caller's
    num_splits; wherever it says False, no sequence takes more than 32 chunks. It says True at some points where one
    does (not a constant)."""
    rng = random.Random(seed)
    exceeded = 0
    for _ in range(120):
        heads, batch = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 3, 8, 16, 64])
        capacity = rng.choice([8192, 65536, 131072, 131073, 200000, 262144, 524288, 1 << 20, (1 << 20) + 4096])
        num_splits = rng.choice([None, None, None, 17, 40, 100])
        capacity = rng.choice([capacity, 4096, 8192, 8448]) if num_splits else capacity  # around 32 x 256
        long, programs, sms = rng.random() < 0.8, rng.choice([1, 2]), rng.choice([132, 114])
        room = rng.random() < 0.5
        slots, fixed, target = splits.plan_work(batch, heads, capacity, sms, num_splits, bits=2, head_dim=128,
                                                long_chunks=long, long_programs=programs)
        long_chunk = splits.plan_long_chunk(num_splits, heads, sms, capacity, long, fixed, programs, batch, room)
        lengths = [rng.choice([capacity, rng.randint(0, capacity)]) for _ in range(batch)]
        work = splits.schedule(lengths, slots, fixed, target, splits.plan_min_chunk(target, heads, sms), long_chunk)
        most = max(collections.Counter(b for b, _, _ in work).values())
        may = splits.may_take_more_than_32_chunks(fixed, long_chunk, capacity)
        assert may or most <= 32, (heads, batch, capacity, num_splits, long, programs, room, sms, lengths, most)
        exceeded += most > 32
    assert exceeded > 0


def test_long_chunk_programs_setting(monkeypatch):
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_PROGRAMS", "2")
    assert splits.long_chunk_programs_choice() == 2
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_PROGRAMS", "3")
    with pytest.raises(ValueError, match="FOSCAR_LONG_CHUNK_PROGRAMS: expected '1' or '2', got '3'"):
        splits.long_chunk_programs_choice()


def _one_pass(lengths, num_slots, target_chunks, slot, min_chunk=splits.MIN_CHUNK_TOKENS, long_chunk=0,
              short_tokens=0, keep_short=False, wave_slots=0):
    """find_work's one-pass path (csrc/folded_decode_sm90.cuh) step by step, for batches of up to 128:
    lane l holds sequences K*l .. K*l + K - 1 (K = 1 up to 32 sequences, else 4). Returns the slot's
    ``(sequence, start, end)``, ``()`` for a slot past the last chunk, or ``None`` where the chunks do not
    fit at the first chunk size (the kernel then takes the general path). ``min_chunk``: the plan's least chunk
    (``splits.plan_min_chunk``); ``long_chunk``: its long chunk (``splits.plan_long_chunk``); ``short_tokens``: its
    short-batch bound (``splits.plan_short_tokens``). A sequence of at most ``min_chunk`` tokens is one chunk
    in a ``FOSCAR_KEEP_SHORT=1`` build (``keep_short``; ``aware_chunks``, bench/NOTES.md §119), and a sequence's last
    chunk ends at its length. ``wave_slots``: a ``FOSCAR_WAVE_FIT=1`` build's (``splits.wave_fit_may_take``: where
    the grown chunk may be taken, the general path, ``None``; bench/NOTES.md §121)."""
    batch = len(lengths)
    k = 1 if batch <= 32 else 4
    lanes = [[lengths[b] for b in range(lane * k, min(lane * k + k, batch))] for lane in range(32)]
    total = sum(sum(held) for held in lanes)  # one reduction (64 bits in the kernel)
    longest = max(max(held, default=0) for held in lanes)  # one redux.sync max
    chunk = splits.first_chunk(total, target_chunks, longest, min_chunk, long_chunk, short_tokens)
    recip = (2**32 - 1) // chunk  # K > 1: one reciprocal for the lane's K counts
    counts = []
    for held in lanes:
        per = []
        for length in held:
            x = length + chunk - 1
            assert 0 <= x < 2**31
            if k > 1:
                q = (x * recip) >> 32  # __umulhi
                q += x - q * chunk >= chunk
            else:
                q = x // chunk
            assert q == x // chunk
            per.append(q if length > (min_chunk if keep_short else 0) else 1)
        counts.append(per)
    lane_n = [sum(per) for per in counts]
    incl = [sum(lane_n[: lane + 1]) for lane in range(32)]  # the warp scan
    if incl[31] > num_slots or splits.wave_fit_may_take(incl[31], chunk, total, batch, wave_slots):
        return None
    hits = [lane for lane in range(32) if lane_n[lane] > 0 and incl[lane] - lane_n[lane] <= slot < incl[lane]]
    if not hits:
        return ()
    lane = hits[0]
    first, nb, lb, bb = incl[lane] - lane_n[lane], counts[lane][0], lanes[lane][0], lane * k
    for j in range(1, k):  # the walk over the lane's sequences (unrolled in the kernel)
        nj, lj = (counts[lane][j], lanes[lane][j]) if j < len(counts[lane]) else (0, 0)
        if slot >= first + nb:
            first, nb, lb, bb = first + nb, nj, lj, lane * k + j
    start = (slot - first) * chunk
    return bb, start, start + chunk if slot - first + 1 < nb else lb


def _random_batch(rng, batch, capacity):
    kind = rng.choice(["ragged", "ragged", "uniform", "empty", "one-long", "short"])
    if kind == "uniform":
        return [rng.randrange(capacity + 1)] * batch
    if kind == "empty":
        return [0] * batch
    if kind == "one-long":
        lengths = [rng.randrange(min(capacity, 600) + 1) for _ in range(batch)]
        lengths[rng.randrange(batch)] = capacity
        return lengths
    if kind == "short":
        return [rng.randrange(min(capacity, 512) + 1) for _ in range(batch)]
    return [rng.choice([0, 1, rng.randrange(capacity + 1), capacity]) for _ in range(batch)]


@pytest.mark.parametrize("seed", range(6))
def test_the_one_pass_path_gives_the_general_schedule(seed):
    """find_work's one pass (up to 128 sequences, bench/NOTES.md §30, §39) on random ragged batches of 1..128
    sequences: every slot gets the chunk splits.schedule (the general path's mirror) gives it, wherever
    the first chunk size fits the slots; with the plan's short-batch bound (plan_short_tokens) half the time, and the
    schedule of a FOSCAR_KEEP_SHORT=1 build half the time, and of a FOSCAR_WAVE_FIT=1 build half the time."""
    rng = random.Random(seed)
    fitted = 0
    for _ in range(60):
        batch = rng.choice([1, 2, 31, 32, 33, rng.randrange(1, 129), 64, 127, 128])
        capacity = rng.choice([16, 512, 600, 4096, 32768, 131072, 1 << 19, 1 << 20])
        heads = rng.choice([1, 2, 8, 32])
        sms = rng.choice([4, 132])
        slots, fixed, target = splits.plan_work(batch, heads, capacity, sms, bits=rng.choice([None, 2, 4]))
        lengths = _random_batch(rng, batch, capacity)
        if fixed:  # one chunk per sequence: the kernel takes its fixed path (NOTES §48); check the length-aware
            fixed, target = 0, slots  # schedule over the same slots (these plans before §48) instead
        least = splits.plan_min_chunk(target, heads, sms)  # the plan's least chunk, 256 or 512 (NOTES §103)
        long_chunk = splits.plan_long_chunk(None, heads, sms, capacity)  # its long chunk (NOTES §106)
        bound = splits.plan_short_tokens(least, heads, sms, rng.random() < 0.5)  # its short-batch bound (§118, §119)
        keep = rng.random() < 0.5  # a FOSCAR_KEEP_SHORT=1 build's schedule
        wave = sms // heads if rng.random() < 0.5 else 0  # a FOSCAR_WAVE_FIT=1 build's
        work = splits.schedule(lengths, slots, fixed, target, least, long_chunk, bound, keep, wave)
        if _one_pass(lengths, slots, target, 0, least, long_chunk, bound, keep, wave) is None:
            continue
        fitted += 1
        # every slot with work, the first few past the last chunk, and the grid's last slot
        for slot in list(range(min(slots, len(work) + 3))) + [slots - 1]:
            want = work[slot] if slot < len(work) else ()
            got = _one_pass(lengths, slots, target, slot, least, long_chunk, bound, keep, wave)
            assert got == want, (lengths, slots, target, slot, bound, keep)
    assert fitted >= 20  # the one pass was exercised, not only the fall-through


def test_one_reciprocal_gives_exact_chunk_counts():
    """The K > 1 lanes' ceil(len / chunk) from one reciprocal floor((2^32 - 1) / chunk) and one correction
    step, at the extremes of what find_work feeds it (len 0..2^30, chunk 512..32768 in steps of 256)."""
    rng = random.Random(0)
    chunks = [512, 768, 32512, 32768] + [rng.randrange(2, 129) * 256 for _ in range(200)]
    for chunk in chunks:
        recip = (2**32 - 1) // chunk
        for length in [0, 1, chunk - 1, chunk, chunk + 1, (1 << 30) - 1, 1 << 30] + [
                rng.randrange((1 << 30) + 1) for _ in range(200)]:
            x = length + chunk - 1
            q = (x * recip) >> 32
            assert 0 <= x - q * chunk < 2 * chunk
            q += x - q * chunk >= chunk
            assert q == -(-length // chunk) if length > 0 else q == 0


@pytest.mark.parametrize("batch, capacity, bits", [(32, 8192, 2), (32, 32768, 4), (1, 16, 2), (8, 300, 4),
                                                   (64, 512, 2), (20, 1024, 2)])
def test_one_chunk_per_sequence_plans_need_no_merge(batch, capacity, bits):
    """Where the fitted target is one chunk per sequence and the grid has no room (batch 17-49 at 8 KV heads
    up to 32K on the H200, or any batch at a capacity of at most 512), the plan is one fixed split: every
    sequence, of any length up to the capacity and past it, is exactly one chunk in its own slot, so no
    merge kernel is needed (bench/NOTES.md §48)."""
    slots, fixed, target = splits.plan_work(batch, 8, capacity, H200_SMS, bits=bits)
    assert (slots, fixed, target) == (batch, 1, 1) and not splits.merges(batch, slots)
    rng = random.Random(batch * capacity)
    for lengths in ([capacity] * batch, [rng.randrange(capacity + 1) for _ in range(batch)], [4 * capacity] * batch):
        work = splits.schedule(lengths, slots, fixed, target)
        assert [(b, s, e) for b, s, e in work] == [(b, 0, n) for b, n in enumerate(lengths)]


@pytest.mark.parametrize("batch, capacity, bits", [(1, 8192, 2), (8, 4096, 4), (64, 8192, 2), (64, 8192, 4),
                                                   (32, 131072, 2)])
def test_plans_that_can_split_a_sequence_merge(batch, capacity, bits):
    slots, fixed, target = splits.plan_work(batch, 8, capacity, H200_SMS, bits=bits)
    assert fixed == (slots if batch == 1 else 0) and slots > batch and splits.merges(batch, slots)


@pytest.mark.parametrize("context, bits, chunks", [(8192, 2, 16), (8192, 4, 16), (32768, 2, 32), (32768, 4, 16),
                                                   (131072, 2, 32), (131072, 4, 16), (4096, 4, 16), (4096, 2, 16),
                                                   (16384, 2, 16), (1000, 2, 4), (512, 4, 1), (300, 2, 1)])
def test_batch_one_takes_one_program_per_sm_where_it_measured_faster(context, bits, chunks):
    """A single sequence over 8 KV heads on the H200: INT4 one program per SM (16 chunks), INT2 too while its
    chunks stay at most 1024 tokens (1 x 16K: 16; 1 x 32K: the fit's 32), in chunks of at least 256 tokens (1 x 4K:
    16; 1 x 1000: 4), and one chunk at a capacity of at most 512; bench/NOTES.md §48, §54."""
    slots, fixed, target = splits.plan_work(1, 8, context, H200_SMS, bits=bits)
    work = splits.schedule([context], slots, fixed, target)
    assert len(work) == chunks and slots == chunks
    fit = splits.choose_num_splits(1, 8, context, 256, H200_SMS)[0]
    assert splits.plan_work(1, 8, context, H200_SMS, short_chunks=False)[0] == fit  # no bits, no short chunks: the fit


@pytest.mark.parametrize("capacity, bits", [(8192, 2), (32768, 2), (131072, 2), (131072, 4), (4096, 4), (1000, 2)])
def test_a_batch_of_one_takes_the_fixed_path_with_the_length_aware_chunks(capacity, bits):
    """A single sequence is cut by the kernel's fixed path (no scan of the lengths, bench/NOTES.md §54), in at
    most n chunks of whole 256-token iterations: for a length above 256 n or of at most 256 the chunks of the
    length-aware schedule over the same slots; in between, chunks of exactly 256 where that one takes 512."""
    slots, fixed, target = splits.plan_work(1, 8, capacity, H200_SMS, bits=bits)
    assert fixed == slots > 1 and target == 1 and splits.merges(1, slots)
    rng = random.Random(capacity + bits)
    lengths = sorted({0, 1, 255, 256, 257, 512, 256 * slots, 256 * slots + 1, capacity}
                     | {rng.randrange(capacity + 1) for _ in range(40)})
    between = 0
    for length in (x for x in lengths if x <= capacity):
        work = splits.schedule([length], slots, fixed, target)
        assert len(work) <= slots and work[0][1] == 0 and work[-1][2] == length
        assert all(e - s == work[0][2] - work[0][1] and (e - s) % 256 == 0 for _, s, e in work[:-1])
        if length <= 256 or length > 256 * slots:
            assert work == splits.schedule([length], slots, 0, slots), length
        else:
            assert [e - s for _, s, e in work[:-1]] == [256] * (len(work) - 1) and len(work) == -(-length // 256)
            between += 1
    assert between >= 1  # the in-between case was exercised


@pytest.mark.parametrize("ctas, head_dim, chunk, want", [(396, 128, 8192, 0), (397, 128, 8192, 2),
                                                         (512, 128, 8192, 2), (528, 128, 8192, 2), (529, 128, 8192, 0),
                                                         (384, 128, 8192, 0), (768, 128, 4096, 0), (1024, 128, 8192, 0),
                                                         (512, 128, 513, 2), (512, 128, 512, 0), (512, 128, 8193, 2),
                                                         (512, 128, 32768, 2), (512, 128, 32769, 0),
                                                         (512, 64, 8192, 0), (512, 256, 4096, 0)])
def test_one_wave_and_a_tail_of_short_chunks_holds_two_ctas_an_sm(monkeypatch, ctas, head_dim, chunk, want):
    """bench/NOTES.md §67, §89: a head_dim-128 plan whose working CTAs at 3 an SM (132 SMs) would end in a wave of at
    most one CTA an SM (396 < ctas <= 528), of 513..32768-token chunks on a contiguous cache, runs at most 2 an SM; the
    grids that measured slower at 2 (384, 768, 1024 CTAs), one-iteration chunks and the head dims where it was not
    measured keep as many as fit (0). INT4's and a paged cache's chunks: at most 8192 tokens."""
    monkeypatch.delenv("FOSCAR_MAX_CTAS_PER_SM", raising=False)
    assert splits.max_ctas_per_sm_choice(ctas, 132, head_dim, chunk, bits=2) == want
    short_want = want if chunk <= splits.LARGE_GRID_MAX_CHUNK_TOKENS else 0  # paged, INT4 or no bit width given
    assert splits.max_ctas_per_sm_choice(ctas, 132, head_dim, chunk, paged=True, bits=2) == short_want
    assert splits.max_ctas_per_sm_choice(ctas, 132, head_dim, chunk, bits=4) == short_want
    assert splits.max_ctas_per_sm_choice(ctas, 132, head_dim, chunk) == short_want


@pytest.mark.parametrize("ctas, head_dim, chunk, want", [(1, 128, 16, 1), (8, 128, 8192, 1), (132, 128, 8192, 1),
                                                         (133, 128, 8192, 2), (256, 128, 8192, 2), (264, 64, 512, 2),
                                                         (264, 256, 32768, 2), (265, 128, 8192, 0), (0, 128, 8192, 0)])
def test_a_grid_of_at_most_two_ctas_an_sm_is_spread_evenly(monkeypatch, ctas, head_dim, chunk, want):
    """bench/NOTES.md §73: a grid of at most two CTAs an SM (132 SMs) is held to ceil(ctas / 132) an SM, so that a
    launch with PDL, scheduled while the kernel before it still holds SMs, cannot pile three on the free ones (32 x 8K
    ran 12% slower so); every head_dim and chunk; an empty grid keeps 0."""
    monkeypatch.delenv("FOSCAR_MAX_CTAS_PER_SM", raising=False)
    assert splits.max_ctas_per_sm_choice(ctas, 132, head_dim, chunk) == want


def test_max_ctas_per_sm_knob(monkeypatch):
    monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "0")
    assert splits.max_ctas_per_sm_choice(2048, 132, 128, 8192) == 0
    monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "3")
    assert splits.max_ctas_per_sm_choice(8, 132, 64, 16) == 3
    for bad in ("two", "-1", "33", ""):
        monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", bad)
        with pytest.raises(ValueError, match="FOSCAR_MAX_CTAS_PER_SM: expected 'auto' or an integer from 0 to 32"):
            splits.max_ctas_per_sm_choice(8, 132, 128, 8192)


@pytest.mark.parametrize("batch, context, head_dim, paged, per_sequence", [
    (64, 8192, 128, False, 1), (64, 4096, 128, False, 1), (64, 32768, 128, False, 2), (64, 32768, 128, True, 2),
    (64, 65536, 128, False, 2), (64, 8192, 64, False, 2), (64, 8192, None, False, 2), (128, 8192, 128, False, 2)])
def test_int4_keeps_one_chunk_where_the_grid_is_held_to_two_ctas_an_sm(batch, context, head_dim, paged, per_sequence):
    """INT4 past one wave takes two chunks a sequence (§27) but where the one-chunk grid is held to 2 CTAs an SM
    (head_dim 128, 397..528 CTAs of at most 8K tokens on either cache: bench/NOTES.md §67; INT2 takes 32K chunks there
    on a contiguous cache, INT4 not, §89); without a head_dim, the §27 rule."""
    slots, fixed, target = splits.plan_work(batch, 8, context, H200_SMS, bits=4, head_dim=head_dim, paged=paged)
    assert target == batch * per_sequence and fixed == 0 and slots == target + batch
    assert splits.plan_chunk_tokens(context, batch, fixed, target) == context // per_sequence
