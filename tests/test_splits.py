"""Length-aware split-KV (foscar.kernels.splits.plan_work / schedule, DESIGN §10): the chunks follow the
sequences' actual lengths, not the cache's capacity (CPU; the kernel's own schedule is checked against
the fp64 reference by the GPU tests in tests/test_ragged_gpu.py)."""

import random

import pytest

from foscar.kernels import splits

H200_SMS = 132


def _chunks(lengths, capacity, num_kv_heads=8, num_splits=None, sms=H200_SMS):
    slots, fixed, target = splits.plan_work(len(lengths), num_kv_heads, capacity, sms, num_splits)
    work = splits.schedule(lengths, slots, fixed, target)
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
    slots, _, target = splits.plan_work(batch, 8, context, H200_SMS)
    assert target == len(work)
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
    assert fixed == 0 and target == batch * per_sequence
    work = splits.schedule([context] * batch, slots, fixed, target)
    assert len(work) == batch * per_sequence and {e - s for _, s, e in work} == {context // per_sequence}


@pytest.mark.parametrize("capacity, room", [(1, False), (16, False), (512, False), (513, True), (32768, True)])
def test_no_room_where_no_sequence_can_take_two_chunks(capacity, room):
    """Batch 64 over 8 KV heads fills the H200 (512 CTAs >= 3 x 132), so a ragged batch gets 64 spare
    slots, except where the capacity is at most the smallest chunk (512 tokens): every sequence is then
    one chunk and the spare slots would be CTAs with nothing to do (bench/NOTES.md §36, §39)."""
    slots, fixed, target = splits.plan_work(64, 8, capacity, H200_SMS)
    assert fixed == 0 and target == 64
    assert slots == (128 if room else 64)
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
    assert _cuda_constant("kMaxChunk") == splits.MAX_SPLIT_TOKENS
    assert _cuda_constant("kWarps") * _cuda_constant("kTileTokens") == splits.CHUNK_ALIGN_TOKENS
