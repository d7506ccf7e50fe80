"""Ragged batches and large caches on the CUDA kernel (issue 11): length-aware split-KV chunks, the
split merge inside the kernel, and lengths past what the cache holds (clamped in the kernel), each
against the fp64 reference on the dequantized cache. GPU only; the schedule itself is checked on the
CPU in tests/test_splits.py."""

import dataclasses

import pytest
import torch

import foscar
from tests.test_decode_triton import _case, _check
from tests.test_paged import _check_paged

pytestmark = pytest.mark.gpu


def _cuda():
    return torch.device("cuda")


@pytest.mark.parametrize("operand, method", [("bf16", "folded"), ("fp8", "folded"), ("bf16", "per-value")])
@pytest.mark.parametrize("bits", [2, 4])
def test_one_long_sequence_among_short_ones(bits, operand, method):
    q, cache = _case(_cuda(), batch=8, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[40000] + [4096, 0, 1, 300, 4096, 257, 4095], bits=bits, group_size=128)
    tol = 1e-1 if operand == "fp8" else 1e-2
    out, lse = foscar.decode(q, cache, backend="cuda", operand=operand, method=method, return_lse=True)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    for b, length in enumerate(cache.seq_lens.tolist()):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < tol, f"sequence {b} (length {length}): relative L2 error {err:.3g}"
        if operand == "bf16" and method == "folded":
            assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)


def test_many_sequences_and_fixed_splits():
    lens = torch.randint(0, 3000, (300,), generator=torch.Generator().manual_seed(1)).tolist()
    lens[5] = 0
    lens[7] = 9000
    q, cache = _case(_cuda(), batch=300, num_qo_heads=8, num_kv_heads=2, head_dim=64,
                     seq_lens=lens, bits=2, group_size=32)
    _check(q, cache, backend="cuda")
    _check(q, cache, backend="cuda", num_splits=5)


@pytest.mark.parametrize("paged", [False, True])
def test_same_lengths_same_answer_in_any_capacity(paged):
    """The chunks depend on the lengths only, so a 4K and a 64K cache give bit-identical outputs."""
    g = torch.Generator().manual_seed(3)
    k = torch.randn(4, 8, 65536, 128, generator=g).to(torch.bfloat16)
    v = torch.randn(4, 8, 65536, 128, generator=g).to(torch.bfloat16)
    q = torch.randn(4, 32, 128, generator=g).to(torch.bfloat16).cuda()
    lens = torch.tensor([4096, 1000, 4000, 17], dtype=torch.int32).cuda()
    small = foscar.quantize_kv(k[:, :, :4096].cuda(), v[:, :, :4096].cuda(), 2, 128, seq_lens=lens)
    large = foscar.quantize_kv(k.cuda(), v.cuda(), 2, 128, seq_lens=lens)
    _check(q, large, backend="cuda")
    if paged:
        small, large = foscar.paginate(small, 16), foscar.paginate(large, 16)
    a, la = foscar.decode(q, small, backend="cuda", return_lse=True)
    b, lb = foscar.decode(q, large, backend="cuda", return_lse=True)
    assert torch.equal(a, b) and torch.equal(la, lb)


def test_paged_ragged_against_the_reference():
    q, cache = _case(_cuda(), batch=8, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[33000] + [4096] * 6 + [5], bits=2, group_size=64)
    paged = foscar.paginate(cache, 16, shuffle=True)
    out, lse = foscar.decode(q, paged, backend="cuda", return_lse=True)
    ref, ref_lse = foscar.decode(q, cache, backend="cuda", return_lse=True)
    assert float((out.float() - ref.float()).norm() / ref.float().norm()) < 1e-3
    _check(q, cache, backend="cuda")
    _check_paged(q, cache, paged, backend="cuda")  # the paged output and LSE against fp64, not only the contiguous


def test_lengths_past_the_capacity_are_clamped_in_the_kernel():
    """append_kv(check_capacity=False) can advance seq_lens past max_seq_len without a host check:
    plan.run must read only what the cache holds (the answer at the capacity), never past it."""
    q, cache = _case(_cuda(), batch=3, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[2048, 2048, 100], bits=2, group_size=128)
    plan = foscar.plan_decode(cache, 8, backend="cuda")
    want = plan.run(q, cache).clone()
    cache.seq_lens.copy_(torch.tensor([2048 + 5000, 1 << 30, 100], dtype=torch.int32))  # no validate() here
    got = plan.run(q, cache)
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    cache.seq_lens.copy_(torch.tensor([-7, 2048, 100], dtype=torch.int32))
    got = plan.run(q, cache)
    assert not got[0].any() and torch.equal(got[1:], want[1:])


def test_paged_lengths_past_the_page_table_are_clamped_in_the_kernel():
    q, cache = _case(_cuda(), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[1008, 520], bits=4, group_size=64)
    paged = foscar.paginate(cache, 16)  # max_seq_len 1008 = 63 full pages: a full last page of either stays within
    plan = foscar.plan_decode(paged, 8, backend="cuda")
    want = plan.run(q, paged).clone()
    last = paged.kv_last_page_len.clone()
    paged.kv_last_page_len.fill_(10_000)  # more than a page: read as a full last page
    full = plan.run(q, paged).clone()
    paged.kv_last_page_len.copy_(last)
    paged.kv_indptr[-1] += 1000  # past the page list: clamped to len(kv_indices)
    got = plan.run(q, paged)
    torch.cuda.synchronize()
    paged.kv_indptr[-1] -= 1000  # (the reference validates the table it is given)
    # a full last page: the answer over every row of the last pages (the fp64 reference of that cache)
    as_full = dataclasses.replace(paged, kv_last_page_len=torch.full_like(last, 16))
    ref = foscar.reference_decode(q, as_full)
    for b in range(2):
        assert float((full[b].double() - ref[b]).norm() / ref[b].norm()) < 1e-2, b
    # past the page list: clamped to the pages listed, which are all of sequence 1's (paginate lists no extra page)
    ref = foscar.reference_decode(q, paged)
    assert torch.equal(got[0], want[0])
    assert float((got[1].double() - ref[1]).norm() / ref[1].norm()) < 1e-2


def test_a_captured_plan_follows_growing_lengths_and_leaves_its_counters_zero():
    """One plan, captured once, replayed while the lengths change (a decode loop): every replay
    gives the answer for the current lengths; the in-kernel merge's counters end at zero."""
    q, cache = _case(_cuda(), batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[8192, 8192, 8192, 8192], bits=2, group_size=128)
    cache.seq_lens.copy_(torch.tensor([100, 200, 300, 400], dtype=torch.int32))
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    plan.run(q, cache)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, cache)
    for lens in ([100, 200, 300, 400], [8192, 1, 0, 5000], [8000, 8100, 8192, 7]):
        cache.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        # an eager run of a new plan (the same merge; a one-shot decode would take the merge kernel)
        assert torch.equal(plan.out, foscar.plan_decode(cache, 32, backend="cuda").run(q, cache)), lens
        assert not plan._counters.any()
    _check(q, cache, backend="cuda")


def test_nan_in_the_query_gives_nan_lse_and_leaves_other_rows():
    q, cache = _case(_cuda(), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[40000, 17], bits=2, group_size=128)
    out0, lse0 = foscar.decode(q, cache, backend="cuda", return_lse=True)
    q[0, 1, 3] = float("nan")
    out, lse = foscar.decode(q, cache, backend="cuda", return_lse=True)
    assert torch.isnan(out[0, 1]).all() and torch.isnan(lse[0, 1])
    keep = torch.ones_like(lse, dtype=torch.bool)
    keep[0, 1] = False
    assert torch.equal(out[keep], out0[keep]) and torch.equal(lse[keep], lse0[keep])


def test_batch_zero():
    q, cache = _case(_cuda(), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[5, 7], bits=2, group_size=128)
    empty = foscar.quantize_kv(torch.zeros(0, 2, 16, 128, dtype=torch.bfloat16, device="cuda"),
                               torch.zeros(0, 2, 16, 128, dtype=torch.bfloat16, device="cuda"), 2, 128)
    out, lse = foscar.decode(q[:0], empty, backend="cuda", return_lse=True)
    assert out.shape == (0, 8, 128) and lse.shape == (0, 8)


def _expected_chunks(lengths, slots, fixed, target, min_chunk, long_chunk=0, short_tokens=0, wave_slots=0):
    """(first slot, chunk count) per sequence as foscar.kernels.splits.schedule (the host mirror of the
    kernel's find_work) hands them out, chunks of at least ``min_chunk`` tokens, the long chunk and the short-batch
    bound (the plan's), and the build's wave fit (``decode_cuda.wave_slots_of``; 0 in the default build)."""
    from foscar.kernels import splits

    first, count = {}, {}
    for slot, (b, _, _) in enumerate(splits.schedule(lengths, slots, fixed, target, min_chunk, long_chunk,
                                                     short_tokens, wave_slots=wave_slots)):
        first.setdefault(b, slot)
        count[b] = count.get(b, 0) + 1
    return [[first[b], count[b]] for b in range(len(lengths))]


def _plan_chunk_counts(plan, lengths, num_kv_heads=1):
    """Chunks per sequence of a CUDA ``plan`` (length-aware or fixed) at these lengths, as
    foscar.kernels.splits.schedule (the host mirror of the kernel's find_work and fixed path) hands them out with the
    plan's schedule, least and long chunk and short-batch bound, and the build's wave fit over ``num_kv_heads``."""
    from foscar.kernels import decode_cuda, splits

    (fixed, target), slots = plan._schedule, plan._o_part.shape[0]
    wave = decode_cuda.wave_slots_of(num_kv_heads, plan._o_part.device) if fixed == 0 else 0
    work = splits.schedule(lengths, slots, fixed, target, plan.min_chunk, plan.long_chunk, plan.short_tokens,
                           wave_slots=wave)
    return [sum(w[0] == i for w in work) for i in range(len(lengths))]


def _one_kv_head_case(lengths, capacity, bits):
    """A query and a cache at 8 query heads over 1 KV head (Llama-3.1-70B at tensor parallel 8), head_dim 128, group
    size 128, allocated for ``capacity`` tokens a sequence and holding ``lengths`` (one per sequence)."""
    b = len(lengths)
    q, cache = _case(_cuda(), batch=b, num_qo_heads=8, num_kv_heads=1, head_dim=128, seq_lens=[capacity] * b,
                     bits=bits, group_size=128)
    return q, dataclasses.replace(cache, seq_lens=torch.tensor(lengths, dtype=torch.int32, device=q.device))


# the merge and long-chunk settings (read when a plan is made) that the long-chunk tests clear: plans as shipped
LONG_CHUNK_SETTINGS = ("FOSCAR_MERGE", "FOSCAR_MERGE_TREE", "FOSCAR_MERGE_LEVELS", "FOSCAR_MERGE_WIDE",
                       "FOSCAR_LONG_CHUNKS", "FOSCAR_LONG_CHUNK_ROOM", "FOSCAR_LONG_CHUNK_PROGRAMS",
                       "FOSCAR_LONG_CHUNK_TOKENS", "FOSCAR_LONG_CHUNK_SHORT", "FOSCAR_LONG_CHUNK_CEIL")


def _run_one_kv_head(lengths, capacity, bits, paged=False, case=None):
    """Plans and runs :func:`_one_kv_head_case` (on 16-token shuffled pages where ``paged``; ``case``: that case's
    ``(q, cache)`` made already) as the settings say now; checks the chunk counts that splits.schedule mirrors against
    the merge kernel's chunk table where it runs, and every row within 1e-2 of the fp64 reference. Returns ``(plan,
    counts, SMs of the device)``."""
    from foscar.kernels import splits

    q, cache = case or _one_kv_head_case(lengths, capacity, bits)
    if paged:
        cache = foscar.paginate(cache, 16, shuffle=True)
    plan = foscar.plan_decode(cache, 8, backend="cuda")
    out = plan.run(q, cache)
    torch.cuda.synchronize()
    counts = _plan_chunk_counts(plan, lengths)
    if plan._seq_chunks is not None:  # the merge kernel's chunk table
        assert [int(n) for n in plan._seq_chunks[:, 1]] == counts, (lengths, counts)
    ref = foscar.reference_decode(q, cache)
    for i in range(len(lengths)):
        assert float((out[i].double() - ref[i]).norm() / ref[i].norm()) < 1e-2, (lengths, i)
    return plan, counts, splits.device_sm_count(q.device)

def _ragged_lengths(batch, seed, longest):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, longest, (batch,), generator=g).tolist()


@pytest.mark.parametrize("lengths", [
    [5000],
    [4096] * 8,
    _ragged_lengths(31, 4, 6000),
    _ragged_lengths(32, 5, 6000),                       # lane 31 holds a sequence
    _ragged_lengths(32, 0, 12000),                      # 32 whose first chunk does not fit: 136 chunks of 1536
                                                        # tokens for 128 slots, so the general path grows it
    _ragged_lengths(33, 7, 6000),                       # four sequences per lane, several chunks each: one pass
    [0] * 32,
    [600] * 33,                                         # one pass, 4 per lane, up to 128 (on an H200 with
                                                        # 2 KV heads; tests/test_splits.py checks which)
    [3000] * 64,
    _ragged_lengths(64, 8, 500),                        # short: one chunk each, fits at once
    _ragged_lengths(64, 9, 1800),                       # grows: the general path
    _ragged_lengths(100, 10, 700),                      # grows: the general path
    [0] * 128,
    _ragged_lengths(128, 11, 512),
    [5000] * 127 + [1],
    [6000] + _ragged_lengths(127, 12, 300),             # one long: does not fit at the first chunk, general
    _ragged_lengths(129, 13, 900),                      # past 128: the general path
    [40000] + [4096] * 7,                               # one long: its chunks from longest_chunk_floor, 53 of
                                                        # the long chunk's 768 since session 70 (§115; at most 32,
                                                        # of 1280, without long chunks: the next test, §101)
    [40000] + _ragged_lengths(63, 15, 300),             # the same floor in the one pass of 4 sequences a lane
    [40000] + _ragged_lengths(129, 14, 300),            # the same floor on the general path (past 128
                                                        # sequences)
    _ragged_lengths(4, 16, 3000),                       # a grid of at most one CTA an SM: chunks of 256 (34 of
    [2000, 300, 0, 1200, 50, 700],                      # them; 18 of 512 before), short and empty ones (20; 12)
], ids=["1", "8-uniform", "31", "32", "32-grows", "33", "32-empty", "33-uniform", "64-uniform", "64-short",
        "64", "100", "128-empty", "128-short", "128-uniform-last-short", "128-one-long", "129", "8-one-long-capped",
        "64-one-long-capped", "130-one-long-capped", "4-short-chunks", "6-short-chunks"])
@pytest.mark.parametrize("paged", [False, True])
def test_the_kernel_schedule_is_the_host_mirror(monkeypatch, lengths, paged):
    """find_work's chunks, as the kernel reports them to the merge kernel (each sequence's first slot and
    chunk count in the plan's seq_chunks), equal splits.schedule's, on both sides of the one-pass path
    (batches of up to 128 whose first chunk fits, NOTES §30, §39) and the general one; outputs as the
    reference, contiguous and paged (the paged one pass reads kv_indptr pairs). The merge kernel's table is what
    this reads, so its plans take the merge kernel whatever FOSCAR_MERGE says (fused plans have no table)."""
    from foscar.kernels import decode_cuda

    monkeypatch.setenv("FOSCAR_MERGE", "kernel")

    q, cache = _case(_cuda(), batch=len(lengths), num_qo_heads=8, num_kv_heads=2, head_dim=64,
                     seq_lens=lengths, bits=2, group_size=32)
    run_cache = foscar.paginate(cache, 16, shuffle=True) if paged else cache
    plan = foscar.plan_decode(run_cache, 8, backend="cuda")
    slots, fixed, target = decode_cuda.plan_splits(run_cache, q.device)
    if fixed:  # one slot per sequence: planned as one fixed split since NOTES §48; run the length-aware
        fixed, target = 0, slots  # schedule over the same slots (these plans before §48), which is what this tests
        plan._schedule, plan.merge_launched = (fixed, target), True
        plan.merge_fixed_window, plan.merge_predicted = False, 0  # (a fixed plan's table-free merge: NOTES §58)
        plan.min_chunk = decode_cuda.plan_min_chunk_of(run_cache, q.device, target)
    out = plan.run(q, run_cache)
    torch.cuda.synchronize()
    wave = decode_cuda.wave_slots_of(2, q.device) if fixed == 0 else 0  # (0 in the default build)
    assert plan._seq_chunks.tolist() == _expected_chunks(lengths, slots, fixed, target, plan.min_chunk,
                                                         plan.long_chunk, plan.short_tokens, wave)
    ref = foscar.reference_decode(q, cache)
    for b, length in enumerate(lengths):
        if length == 0:
            assert not out[b].any()
        else:
            assert float((out[b].double() - ref[b]).norm() / ref[b].norm()) < 1e-2, (b, length)


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits", [2, 4])
def test_one_chunk_per_sequence_plans_launch_no_merge(monkeypatch, bits, paged):
    """Batch 20 over 8 KV heads at a capacity of 8K (the H200's fit: one chunk per sequence, no room) and any
    batch at a capacity of at most 512: the plan is one fixed split, the decode kernel writes every row and
    no merge kernel is launched (bench/NOTES.md §48); the outputs are the reference's, also in a captured
    graph replayed over other lengths. Plans take the merge kernel whatever FOSCAR_MERGE says (a fused plan never
    launches it)."""
    from foscar.kernels import merge_triton, splits

    for batch, capacity in ((20, 8192), (3, 512)):
        monkeypatch.setenv("FOSCAR_MERGE", "kernel")  # (again each round: the round's end undoes the patches)
        lens = _ragged_lengths(batch, batch, capacity)
        lens[0], lens[-1] = capacity, 0
        q, cache = _case(_cuda(), batch=batch, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                         seq_lens=lens, bits=bits, group_size=128)
        run_cache = foscar.paginate(cache, 16, shuffle=True) if paged else cache
        plan = foscar.plan_decode(run_cache, 32, backend="cuda")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        if splits.merges(batch, splits.plan_work(batch, 8, capacity, sms, bits=bits)[0]):
            pytest.skip(f"on this GPU ({sms} SMs) batch {batch} x 8 KV heads at {capacity} can split a sequence")
        assert not plan.merge_launched and plan.num_splits == 1

        def no_merge(*args, **kwargs):
            raise AssertionError("the merge kernel was launched for a plan of one chunk per sequence")

        monkeypatch.setattr(merge_triton, "merge_slots", no_merge)
        plan.out.fill_(float("nan"))
        out, lse = (t.clone() for t in plan.run(q, run_cache, return_lse=True))
        # the same chunks as the length-aware schedule over the same slots (the plan before NOTES §48), bit for bit
        old = foscar.plan_decode(run_cache, 32, backend="cuda")
        old._schedule = (0, batch)
        old_out, old_lse = old.run(q, run_cache, return_lse=True)
        assert torch.equal(out, old_out) and torch.equal(lse, old_lse)
        ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
        for b, length in enumerate(lens):
            if length == 0:
                assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
                continue
            err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
            assert err < 1e-2, (batch, b, length, err)
            assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)
        if not paged:  # a captured plan over other lengths: still one chunk each, still the reference
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                plan.run(q, cache)
            cache.seq_lens.copy_(torch.tensor(lens[::-1], dtype=torch.int32))
            plan.out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            ref2 = foscar.reference_decode(q, cache)
            for b, length in enumerate(lens[::-1]):
                if length == 0:  # every row rewritten by the replay, the empty sequence's too
                    assert not plan.out[b].any()
                    continue
                err = float((plan.out[b].double() - ref2[b]).norm() / ref2[b].norm())
                assert err < 1e-2, (batch, b, length, err)
        monkeypatch.undo()


@pytest.mark.parametrize("rows", ["1", "4", "8"])
def test_merge_programs_of_several_rows(monkeypatch, rows):
    """``FOSCAR_MERGE_ROWS`` (query heads of a sequence per merge program, bench/NOTES.md §61) on a ragged batch
    of 64 whose plan has room: a 12K sequence in 24 chunks (the merge's loop: rounds of 16 slots at 4 rows, 8 at
    8), eight of 2 chunks (one round), the rest of one chunk and one empty; against the fp64 reference. The merge
    kernel's own test: its plans take it whatever FOSCAR_MERGE says."""
    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    monkeypatch.setenv("FOSCAR_MERGE_ROWS", rows)
    g = torch.Generator().manual_seed(4)
    lens = [12000] + torch.randint(0, 400, (55,), generator=g).tolist() + torch.randint(513, 1000, (8,), generator=g).tolist()
    lens[9] = 0
    dev = _cuda()
    gd = torch.Generator(device=dev).manual_seed(5)
    k = torch.randn(64, 8, 12000, 64, device=dev, generator=gd) * 1.5 + 0.3
    v = torch.randn(64, 8, 12000, 64, device=dev, generator=gd)
    q = torch.randn(64, 32, 64, device=dev, generator=gd).to(torch.bfloat16)
    cache = foscar.quantize_kv(k, v, 2, 64, seq_lens=torch.tensor(lens, dtype=torch.int32, device=dev))
    del k, v
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    assert plan.merge_launched and plan.merge_rows == int(rows)
    _check(q, cache, backend="cuda")


@pytest.mark.parametrize("lengths", [[40000] + [4096] * 7, [40000] + _ragged_lengths(63, 15, 300),
                                     [40000] + _ragged_lengths(129, 14, 300)], ids=["8", "64", "130"])
@pytest.mark.parametrize("paged", [False, True])
def test_the_32_chunk_floor_is_the_host_mirror(monkeypatch, lengths, paged):
    """The one-long-capped batches of the test above with ``FOSCAR_LONG_CHUNKS=0``: at 2 KV heads their longest
    sequence takes long chunks since session 70 (a floor of 512, §115), so the kernel's 32-chunk floor
    (longest_chunk_floor: at most 32 chunks of 1280, §101) is checked here, against the same host mirror."""
    monkeypatch.setenv("FOSCAR_LONG_CHUNKS", "0")
    test_the_kernel_schedule_is_the_host_mirror(monkeypatch, lengths, paged)


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("lens, num_kv_heads", [([40000, 4096, 0, 1, 300, 4096, 257, 4095], 8),
                                                ([5000] * 3 + [9000, 1], 8),
                                                ([40000, 4096, 0, 1, 300, 4096, 257, 4095], 1)],
                         ids=["one-long", "grows-not", "one-long-capped"])
def test_merge_ranges_from_the_lengths_are_the_kernels(monkeypatch, paged, lens, num_kv_heads):
    """``FOSCAR_MERGE_FROM_LENGTHS`` (bench/NOTES.md §61): the merge deriving every sequence's chunk range from the
    lengths gives the outputs and LSEs of the merge reading the kernel's chunk table, bit for bit; contiguous and
    paged, a batch whose chunk grows to fit the slots and one whose first chunk fits, and (one KV head, 4 query heads
    over it) one whose longest sequence sets the chunk (long chunks of 512 at one KV head since session 70, §115: 79
    for the 40000 tokens; at most 32 chunks a sequence before, §101). The merge kernel's own test: its plans take it
    whatever FOSCAR_MERGE says."""
    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    num_qo_heads = 4 * num_kv_heads
    q, contiguous = _case(_cuda(), batch=len(lens), num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                          head_dim=128, seq_lens=lens, bits=2, group_size=128)
    cache = foscar.paginate(contiguous, 16, shuffle=True) if paged else contiguous
    results = []
    for flag in ("0", "1"):
        monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", flag)
        plan = foscar.plan_decode(cache, num_qo_heads, backend="cuda")
        assert plan.merge_launched and plan.merge_from_lengths == (flag == "1")
        out, lse = plan.run(q, cache, return_lse=True)
        results.append((out.clone(), lse.clone()))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])
    _check(q, contiguous, backend="cuda")  # (FOSCAR_MERGE_FROM_LENGTHS=1) against the fp64 reference
    ref = foscar.decode(q, contiguous, backend="cuda")
    assert float((results[1][0].float() - ref.float()).norm() / ref.float().norm()) < 1e-3


@pytest.mark.parametrize("bits", [2, 4])
def test_short_chunks_at_one_kv_head(monkeypatch, bits):
    """8 query heads over 1 KV head (Llama-3.1-70B at tensor parallel 8), 4 ragged sequences: the plan's grid is at
    most one CTA an SM, so it takes chunks of one 256-token iteration (``plan.min_chunk`` 256, bench/NOTES.md §103).
    Against the fp64 reference with the in-kernel merge (``FOSCAR_MERGE_WIDE=0``: by default 4 sequences at gqa 8
    take the merge kernel, NOTES §116); the paged cache's output is the contiguous one's; with
    ``FOSCAR_SHORT_CHUNKS=0`` the plan takes chunks of 512 again (another schedule, the same answer within BF16
    rounding)."""
    monkeypatch.setenv("FOSCAR_MERGE_WIDE", "0")
    lens = [8192, 3000, 257, 6000]
    q, cache = _case(_cuda(), batch=4, num_qo_heads=8, num_kv_heads=1, head_dim=128, seq_lens=lens, bits=bits,
                     group_size=128)
    plan = foscar.plan_decode(cache, 8, backend="cuda")
    assert plan.min_chunk == 256 and plan.merge == "fused"
    _check(q, cache, backend="cuda")
    out = plan.run(q, cache).clone()
    paged = foscar.paginate(cache, 16, shuffle=True)
    assert foscar.plan_decode(paged, 8, backend="cuda").min_chunk == 256
    assert float((foscar.decode(q, paged, backend="cuda").float() - out.float()).norm() / out.float().norm()) < 1e-3
    monkeypatch.setenv("FOSCAR_SHORT_CHUNKS", "0")
    before = foscar.plan_decode(cache, 8, backend="cuda")
    assert before.min_chunk == 512
    assert float((before.run(q, cache).float() - out.float()).norm() / out.float().norm()) < 1e-2


@pytest.mark.parametrize("bits", [2, 4])
def test_a_long_sequence_alone_takes_more_than_32_chunks_of_at_least_4096(monkeypatch, bits):
    """A batch of one over 1 KV head (8 query heads: Llama-3.1-70B at tensor parallel 8) in a 256K-token cache: the plan
    cuts it in 64 chunks (one an SM at most, chunks of at least 4096 tokens at the capacity; 32 before, bench/NOTES.md
    §105), and the kernel's fixed path cuts a shorter length in chunks of at least min(4096, length / 32): 40000 tokens
    in 32 chunks, 200000 in 49, the full 262144 in 64, each count as splits.schedule mirrors it (the merge kernel's
    chunk table or its fixed window's finite LSEs), each output against the fp64 reference. A fixed ``num_splits=64``
    is cut as asked (40000 tokens in 53 chunks of 768), and ``FOSCAR_LONG_CHUNKS=0`` plans 32 chunks. At the floor of
    sessions 60-69, ``FOSCAR_LONG_CHUNK_TOKENS=4096`` (512 by default since session 70, NOTES §115; its plans:
    test_the_long_chunk_floor_gives_a_128k_sequence_128_chunks)."""
    from foscar.kernels import splits

    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", "4096")
    capacity = 262144
    q, full = _case(_cuda(), batch=1, num_qo_heads=8, num_kv_heads=1, head_dim=128, seq_lens=[capacity], bits=bits,
                    group_size=128)

    def chunks_run(lengths, num_splits=None):
        cache = dataclasses.replace(full, seq_lens=torch.tensor(lengths, dtype=torch.int32, device=q.device))
        plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=num_splits)
        out = plan.run(q, cache)
        torch.cuda.synchronize()
        fixed = plan.num_splits
        if plan.merge_fixed_window:  # every slot written, an empty chunk's LSE -inf
            got = int(torch.isfinite(plan._lse_part[:fixed, 0]).sum())
        else:
            got = int(plan._seq_chunks[0, 1])
        want = len(splits.schedule(lengths, fixed, fixed, 1, plan.min_chunk, plan.long_chunk))
        ref = foscar.reference_decode(q, cache)
        assert float((out[0].double() - ref[0]).norm() / ref[0].norm()) < 1e-2
        return plan, got, want

    for length, count in [(40000, 32), (200000, 49), (capacity, 64)]:
        plan, got, want = chunks_run([length])
        assert (plan.num_splits, plan.long_chunk) == (64, 4096)
        assert got == want == count, (length, got, want)
    plan, got, want = chunks_run([40000], num_splits=64)
    assert plan.long_chunk == 0 and got == want == 53
    monkeypatch.setenv("FOSCAR_LONG_CHUNKS", "0")
    plan, got, want = chunks_run([capacity])
    assert (plan.num_splits, plan.long_chunk, got) == (32, 0, 32)


@pytest.mark.parametrize("merge", ["fused", "kernel", "lengths"])
@pytest.mark.parametrize("bits", [2, 4])
def test_long_sequences_past_batch_one_take_chunks_of_at_least_4096(monkeypatch, bits, merge):
    """Past batch 1 at 1 KV head (8 query heads) in a 256K-token cache (bench/NOTES.md §106): two sequences at the
    capacity take 64 chunks each (32 before), and one 256K sequence among three of 4096 tokens takes 64 chunks of
    4096 in the length-aware path, whose least chunk is now min(ceil(longest / 32), long_chunk) (32 of 8192 before).
    Each count as splits.schedule mirrors it (checked against the kernel's chunk table where the merge kernel runs),
    and every row against the fp64 reference, through the in-kernel merge (its two levels past 32 chunks:
    ``FOSCAR_MERGE_LEVELS=1``, NOTES §111), the merge kernel's table and the merge kernel's ranges derived from the
    lengths (merge_triton._derived_chunks). ``FOSCAR_LONG_CHUNKS=0`` gives 32. At the floor of sessions 60-69,
    ``FOSCAR_LONG_CHUNK_TOKENS=4096`` (512 by default since session 70, NOTES §115)."""
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", "4096")
    if merge == "lengths":
        monkeypatch.setenv("FOSCAR_MERGE", "kernel")
        monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", "1")
    else:
        monkeypatch.setenv("FOSCAR_MERGE", merge)
    # the in-kernel merge past 32 chunks: its two levels (the default there is the merge kernel, NOTES §111), and at
    # gqa 8 for 2-4 sequences (the default there is the merge kernel too, NOTES §116)
    monkeypatch.setenv("FOSCAR_MERGE_LEVELS", "1")
    monkeypatch.setenv("FOSCAR_MERGE_WIDE", "0")
    capacity = 262144

    def run(lengths):  # (the in-kernel merge has no chunk table: its outputs are checked)
        plan, counts, _ = _run_one_kv_head(lengths, capacity, bits)
        assert plan.merge == ("fused" if merge == "fused" else "kernel")
        return plan, counts

    plan, counts = run([capacity, capacity])
    assert plan.long_chunk == 4096 and counts == [64, 64]
    plan, counts = run([capacity, 4096, 4096, 4096])
    assert plan.long_chunk == 4096 and counts == [64, 1, 1, 1]
    monkeypatch.setenv("FOSCAR_LONG_CHUNKS", "0")
    plan, counts = run([capacity, 4096, 4096, 4096])
    assert plan.long_chunk == 0 and counts == [32, 1, 1, 1]


@pytest.mark.parametrize("bits", [2, 4])
def test_long_chunk_room_gives_one_long_sequence_among_seven_fewer_chunks(monkeypatch, bits):
    """``FOSCAR_LONG_CHUNK_ROOM`` (on by default since session 68; bench/NOTES.md §112, §113): one 524288-token sequence
    among seven of 4096 in a 512K cache at 1 KV head (8 query heads) takes chunks of 4352 (121 on 132 SMs) instead
    of 4096 (128), so the batch's CTAs fit one an SM; unset, the room is on. The kernel's chunk table (the merge
    kernel's, which plans past 32 chunks take) equals the host mirror in both settings, and every row is within 1e-2
    of the fp64 reference."""
    from foscar.kernels import splits

    monkeypatch.delenv("FOSCAR_MERGE", raising=False)
    monkeypatch.delenv("FOSCAR_MERGE_LEVELS", raising=False)
    capacity = 1 << 19
    lengths = [capacity] + [4096] * 7
    q, cache = _one_kv_head_case(lengths, capacity, bits)
    ref = foscar.reference_decode(q, cache)
    sms = splits.device_sm_count(q.device)
    for room in ("0", "1", None):  # None: unset, the default
        if room is None:
            monkeypatch.delenv("FOSCAR_LONG_CHUNK_ROOM", raising=False)
        else:
            monkeypatch.setenv("FOSCAR_LONG_CHUNK_ROOM", room)
        plan = foscar.plan_decode(cache, 8, backend="cuda")
        assert plan.merge == "kernel" and plan._seq_chunks is not None
        want_long = splits.plan_long_chunk(None, 1, sms, capacity, batch=8, room=room != "0")
        assert plan.long_chunk == want_long
        out = plan.run(q, cache)
        torch.cuda.synchronize()
        counts = _plan_chunk_counts(plan, lengths)
        assert [int(n) for n in plan._seq_chunks[:, 1]] == counts, (room, counts)
        if sms == 132:
            assert counts[0] == (128 if room == "0" else 121), room
        for i in range(8):
            assert float((out[i].double() - ref[i]).norm() / ref[i].norm()) < 1e-2, (room, i)


@pytest.mark.parametrize("bits", [2, 4])
def test_the_long_chunk_floor_gives_a_128k_sequence_128_chunks(monkeypatch, bits):
    """The long chunks' floor at 1 KV head (8 query heads) in a 128K cache: 512 by default since session 70
    (``splits.LONG_CHUNK_TOKENS``, bench/NOTES.md §115), 4096 with ``FOSCAR_LONG_CHUNK_TOKENS=4096`` (sessions
    60-69). By default a batch of one at the capacity takes 128 chunks of 1024 on 132 SMs (32 of 4096 at 4096), a
    length of 40000 79 chunks of 512 (32 at 4096), and one 128K sequence among seven of 4096 103 chunks of 1280 (32
    at 4096). Each count as splits.schedule mirrors it; where the merge kernel runs (the plans past 32 chunks) equal
    to its chunk table; every row within 1e-2 of the fp64 reference."""
    from foscar.kernels import splits

    for knob in LONG_CHUNK_SETTINGS:
        monkeypatch.delenv(knob, raising=False)
    capacity = 131072

    def run(lengths):
        return _run_one_kv_head(lengths, capacity, bits)

    one_long = [capacity] + [4096] * 7
    assert splits.LONG_CHUNK_TOKENS == 512
    plan, counts, sms = run([capacity])
    assert plan.long_chunk == 512 and plan.merge == "kernel" and plan._seq_chunks is not None
    if sms == 132:
        assert plan.num_splits == 128 and counts == [128]
    _, counts, sms = run([40000])
    assert counts[0] > 32 and (sms != 132 or counts == [79]), counts
    plan, counts, sms = run(one_long)
    assert plan.merge == "kernel" and counts[0] > 32, counts
    if sms == 132:
        assert plan.long_chunk == 1280 and counts == [103] + [4] * 7, counts
    monkeypatch.setenv("FOSCAR_LONG_CHUNK_TOKENS", "4096")
    plan, counts, _ = run([capacity])
    assert (plan.num_splits, plan.long_chunk, counts) == (32, 4096, [32])
    _, counts, _ = run([40000])
    assert counts == [32], counts
    _, counts, _ = run(one_long)
    assert counts[0] == 32, counts


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits", [2, 4])
def test_a_16k_cache_takes_long_chunks_of_256(monkeypatch, bits, paged):
    """In a cache of at most 16K tokens the long chunks' floor is 256 (splits.long_chunk_floor, bench/NOTES.md §115): at
    1 KV head (8 query heads) on 132 SMs a batch of one at 16K takes 64 chunks of 256 (32 of 512 with
    ``FOSCAR_LONG_CHUNK_SHORT=0``), 10000 tokens 40 (20), and 16K with two short sequences 64 + 8 + 2 (32 + 4 + 1), on a
    contiguous and a paged cache (16-token pages, shuffled; a paged cache's capacity is its longest sequence: 10000
    tokens alone there plan ceil(10000 / 256) = 40 fixed splits, test_splits' off-the-floor test). Each count as
    splits.schedule mirrors it, equal to the merge kernel's chunk table where it runs, every row within 1e-2 of the fp64
    reference."""
    for knob in LONG_CHUNK_SETTINGS:
        monkeypatch.delenv(knob, raising=False)
    capacity = 16384
    for setting, want in (("1", ([64], [40], [64, 8, 2])), ("0", ([32], [20], [32, 4, 1]))):
        monkeypatch.setenv("FOSCAR_LONG_CHUNK_SHORT", setting)
        for lengths, count in zip(([capacity], [10000], [capacity, 2000, 500]), want):
            plan, counts, sms = _run_one_kv_head(lengths, capacity, bits, paged)
            assert plan.long_chunk == (256 if setting == "1" else 512), (setting, lengths)
            if sms == 132:
                assert counts == count, (setting, lengths, counts)


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits", [2, 4])
def test_short_tokens_cut_a_short_batch_in_chunks_of_256(monkeypatch, bits, paged):
    """``FOSCAR_SHORT_TOKENS=1`` (splits.plan_short_tokens; the default since bench/NOTES.md §118): at 1 KV head (8
    query heads) on 132 SMs a batch whose tokens fit one CTA an SM in chunks of 256 takes them, whatever the capacity
    its plan was made for: one sequence of 8192 and 24 of 1024 (32768 tokens) in an 8K cache, contiguous and paged
    (16-token pages, shuffled), and eight of 4096 in a 128K cache (contiguous; foscar.paginate's capacity is the
    longest sequence), take 128 chunks (64 of 512 with the setting off); 64 sequences of 512 in a 4K cache
    (contiguous), none past the least chunk of 512, keep their 64 either way; one of 1024 among 63 of 512 in 4K cuts
    them all (65 -> 130: find_work's one pass of four sequences a lane; bench/NOTES.md §119), one of 1024 among 130 of
    200 and one of 600 among 129 of 257 in 8K take its general path (132 -> 134; 131 either way: cut, the chunks do
    not fit the slots and the chunk grows back to 512). With the in-kernel merge (one merging CTA:
    ``FOSCAR_MERGE_TREE=0``, since a 128K plan would take the merge kernel where a sequence may take more than 32
    chunks; ``FOSCAR_MERGE_WIDE=0``), the merge kernel reading the chunk table and the merge kernel deriving the ranges
    from the lengths: each count as splits.schedule mirrors it, equal to the merge kernel's chunk table where it runs
    (the two merge-kernel cases are the ones that show the kernel's chunks), every row within 1e-2 of the fp64
    reference."""
    for knob in LONG_CHUNK_SETTINGS + ("FOSCAR_SHORT_TOKENS", "FOSCAR_SHORT_CHUNKS", "FOSCAR_MERGE_FROM_LENGTHS"):
        monkeypatch.delenv(knob, raising=False)
    monkeypatch.setenv("FOSCAR_MERGE_WIDE", "0")
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    cases = [([8192] + [1024] * 24, 8192, 64, 128)]
    if not paged:  # (foscar.paginate sizes the paged copy for its longest sequence, so these plans would differ)
        cases += [([4096] * 8, 131072, 64, 128), ([512] * 64, 4096, 64, 64),
                  ([1024] + [512] * 63, 4096, 65, 130),  # find_work's one pass of 4 sequences a lane, cut
                  ([1024] + [200] * 130, 8192, 132, 134),  # past 128 sequences: its general path, cut
                  ([600] + [257] * 129, 8192, 131, 131)]  # the same, the chunk grown back to 512
    for lengths, capacity, whole, cut in cases:
        case = _one_kv_head_case(lengths, capacity, bits)
        for merge, from_lengths in (("fused", "0"), ("kernel", "0"), ("kernel", "1")):
            monkeypatch.setenv("FOSCAR_MERGE", merge)
            monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", from_lengths)
            totals = {}
            for setting in ("0", "1"):
                monkeypatch.setenv("FOSCAR_SHORT_TOKENS", setting)
                plan, counts, sms = _run_one_kv_head(lengths, capacity, bits, paged, case)
                assert plan.merge == merge and plan.merge_from_lengths == (from_lengths == "1"), (merge, from_lengths)
                assert plan.min_chunk == 512 and plan.short_tokens == (256 * sms if setting == "1" else 0)
                totals[setting] = sum(counts)
            if sms == 132:
                assert totals == {"0": whole, "1": cut}, (lengths, merge, from_lengths, totals)


def test_a_build_without_the_chunk_cap_reads_the_chunk_table(monkeypatch):
    """A FOSCAR_SEQ_CHUNK_CAP=0 build (the schedule before the 32-chunk bound, for A/B; bench/NOTES.md §101) makes
    length-aware plans whose merge reads the kernel's chunk table even where FOSCAR_MERGE_FROM_LENGTHS=1 asks for
    ranges derived from the lengths: the Triton derivation assumes the bound, and would merge other chunks. So does
    a FOSCAR_KEEP_SHORT=1 build (short sequences whole in a cut batch, which the derivation does not follow; §119)."""
    from foscar.kernels import decode_cuda

    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", "1")
    _, cache = _case(_cuda(), batch=8, num_qo_heads=4, num_kv_heads=1, head_dim=128,
                     seq_lens=[40000, 4096, 0, 1, 300, 4096, 257, 4095], bits=2, group_size=128)
    assert foscar.plan_decode(cache, 4, backend="cuda").merge_from_lengths
    monkeypatch.setattr(decode_cuda, "SEQ_CHUNK_CAP_BUILT", False)
    plan = foscar.plan_decode(cache, 4, backend="cuda")
    assert plan.merge_launched and not plan.merge_from_lengths
    monkeypatch.setattr(decode_cuda, "SEQ_CHUNK_CAP_BUILT", True)  # nor a FOSCAR_KEEP_SHORT=1 build (§119)
    monkeypatch.setattr(decode_cuda, "KEEP_SHORT_BUILT", True)
    plan = foscar.plan_decode(cache, 4, backend="cuda")
    assert plan.merge_launched and not plan.merge_from_lengths
    monkeypatch.setattr(decode_cuda, "KEEP_SHORT_BUILT", False)  # nor a FOSCAR_WAVE_FIT=1 build (§121)
    monkeypatch.setattr(decode_cuda, "WAVE_FIT_BUILT", True)
    plan = foscar.plan_decode(cache, 4, backend="cuda")
    assert plan.merge_launched and not plan.merge_from_lengths


@pytest.mark.gpu
@pytest.mark.parametrize("workload, batch, capacity", [("lognormal", 8, 1 << 17), ("one-long", 16, 1 << 17),
                                                       ("one-long", 32, 8192), ("uniform", 8, 32768)])
@pytest.mark.parametrize("paged", [False, True])
def test_a_wave_fit_build_schedule_is_the_host_mirror(monkeypatch, workload, batch, capacity, paged):
    """In a FOSCAR_WAVE_FIT=1 build (``FOSCAR_NVCC_DEFINES``; skipped in others; bench/NOTES.md §121) find_work's
    grown chunks, as the merge kernel's chunk table reports them, are splits.schedule's with the build's
    ``wave_slots``, and every row is within 1e-2 of the fp64 reference, at one KV head, contiguous and paged. On 132
    SMs the ragged batches run at most 132 CTAs (140, 163 and 197 in the default build) and the uniform one keeps its
    256, but for the paged lognormal batch: a paged cache's plan covers its longest sequence (67344 tokens, not the
    131072 of the contiguous cache), whose chunks of 768 (232 CTAs) would have to grow 2x to fit, past the 1.7x bound,
    so it keeps its 232 (session 77's H100 run found the test's old expectation wrong there, not the kernel)."""
    from bench.lengths import WorkloadSpec
    from foscar.kernels import decode_cuda

    if not decode_cuda.WAVE_FIT_BUILT:
        pytest.skip("needs a FOSCAR_WAVE_FIT=1 build (FOSCAR_NVCC_DEFINES=FOSCAR_WAVE_FIT=1)")
    for var in LONG_CHUNK_SETTINGS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FOSCAR_MERGE", "kernel")  # the chunk table
    lengths = list(WorkloadSpec(name=workload).lengths(batch, capacity))
    plan, counts, sms = _run_one_kv_head(lengths, capacity, 2, paged)
    assert plan._seq_chunks is not None
    if sms == 132:
        want = {"uniform": 256, "lognormal": 232 if paged else 118, "one-long": 119 if batch == 16 else 131}[workload]
        assert sum(counts) == want, counts


@pytest.mark.gpu
@pytest.mark.parametrize("bad_id", [-1, "num_pages", 1 << 30])
@pytest.mark.parametrize("seq, page", [(0, 5), (1, 5), (0, -1), (1, -1)])
@pytest.mark.parametrize("operand, method", [("bf16", "folded"), ("fp8", "folded"), ("bf16", "per-value")])
def test_a_page_check_build_gives_nan_rows_for_a_page_outside_the_pool(operand, method, seq, page, bad_id):
    """In a FOSCAR_PAGE_CHECK=1 build (``FOSCAR_NVCC_DEFINES``; skipped in others; NOTES §124, §125), a page id
    outside the pool in the table that ``plan.run`` is handed (-1 as padding, ``num_pages``, a garbage id) makes the
    rows of its sequence NaN, output and LSE, where the default build reads past the pool. The other sequences' rows
    are bit for bit those of the clean table and match the fp64 reference, and the context stays usable: the clean
    table again gives the first answer. Sequence 0 is split into chunks (one bad chunk among several, merged), 1 is
    one chunk. The bad id is the sequence's sixth page (tokens 80-95: warp 1's first sub-tile) or its last (in the
    sequence's last sub-tile; a part of a page in the 700-token one), since each warp checks only its own sub-tiles'
    pages (§125)."""
    from foscar.kernels import decode_cuda

    if not decode_cuda.PAGE_CHECK_BUILT:
        pytest.skip("needs a FOSCAR_PAGE_CHECK=1 build (FOSCAR_NVCC_DEFINES=FOSCAR_PAGE_CHECK=1)")
    q, cache = _case(_cuda(), batch=3, num_qo_heads=8, num_kv_heads=2, head_dim=128, seq_lens=[6000, 700, 40],
                     bits=2, group_size=128)
    paged = foscar.paginate(cache, 16)
    plan = foscar.plan_decode(paged, 8, backend="cuda", operand=operand, method=method)
    out, lse = (t.clone() for t in plan.run(q, paged, return_lse=True))
    ref = foscar.reference_decode(q, paged)
    tol = 1e-1 if operand == "fp8" else 1e-2
    for b in range(3):
        assert float((out[b].double() - ref[b]).norm() / ref[b].norm()) < tol, b
    slot = int(paged.kv_indptr[seq]) + 5 if page == 5 else int(paged.kv_indptr[seq + 1]) - 1
    clean = paged.kv_indices[slot].clone()
    paged.kv_indices[slot] = paged.k_codes.shape[0] if bad_id == "num_pages" else bad_id
    got, got_lse = (t.clone() for t in plan.run(q, paged, return_lse=True))
    torch.cuda.synchronize()
    assert torch.isnan(got[seq]).all() and torch.isnan(got_lse[seq]).all()
    others = [b for b in range(3) if b != seq]
    assert torch.equal(got[others], out[others]) and torch.equal(got_lse[others], lse[others])
    paged.kv_indices[slot] = clean
    again, again_lse = plan.run(q, paged, return_lse=True)
    assert torch.equal(again, out) and torch.equal(again_lse, lse)


# the fields of a quantized cache, contiguous or paged, that hold per-token data
_CACHE_FIELDS = ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset")


def _decode_matches_clean(q, clean, dirty, operand, method, num_splits):
    """Decode ``clean`` and ``dirty`` (the same cache with junk where no token is) with the CUDA kernel: the output and
    LSE bit for bit the same, no NaN in the output. Returns the dirty cache's ``(out, lse)``."""
    want = foscar.decode(q, clean, backend="cuda", operand=operand, method=method, num_splits=num_splits,
                         return_lse=True)
    got = foscar.decode(q, dirty, backend="cuda", operand=operand, method=method, num_splits=num_splits,
                        return_lse=True)
    assert not torch.isnan(got[0]).any()
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    return got


@pytest.mark.parametrize("operand, method", [("bf16", "folded"), ("fp8", "folded"), ("bf16", "per-value")])
@pytest.mark.parametrize("bits, group_size", [(2, 128), (4, 64), (2, 32)])
@pytest.mark.parametrize("lens, num_splits", [([40, 200, 0, 64, 1, 255], None), ([100], None), ([3000], None),
                                              ([700, 5], 3)])
def test_rows_past_the_length_are_never_used(bits, group_size, operand, method, lens, num_splits):
    """Rows between a sequence's length and the cache's capacity hold whatever the serving engine left there: NaN
    scales and offsets and all-ones codes here. The output and LSE are those of the same cache with those rows
    cleaned, bit for bit: one chunk a sequence, a batch of one in several chunks, a fixed split count (the fixed path,
    whose chunks are cut from the length the kernel reads). A copy that read such rows before the length was known
    (bench/NOTES.md §74 measured one) would have to zero their scales; this is the test it passed."""
    cap = 256 if max(lens) <= 256 else 4096
    q, clean = _case(_cuda(), batch=len(lens), num_qo_heads=16, num_kv_heads=4, head_dim=128,
                     seq_lens=[cap] + lens[1:], bits=bits, group_size=group_size, seed=sum(lens))
    clean.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
    dirty = foscar.quantize_kv(torch.zeros(len(lens), 4, cap, 128, device="cuda"),
                               torch.zeros(len(lens), 4, cap, 128, device="cuda"), bits, group_size,
                               seq_lens=clean.seq_lens.clone())
    for name in _CACHE_FIELDS:
        t, src = getattr(dirty, name), getattr(clean, name)
        t.copy_(src)
        for b, n in enumerate(lens):
            t[b, :, n:] = 0xFF if t.dtype == torch.uint8 else float("nan")
            src[b, :, n:] = 0
    _decode_matches_clean(q, clean, dirty, operand, method, num_splits)
    if operand == "bf16" and method == "folded":
        _check(q, clean, backend="cuda", num_splits=num_splits)


def _fill_rows_without_tokens(pool, value):
    """Set, in every per-token field of the paged ``pool``, the rows that hold no token (each sequence's last page
    past ``kv_last_page_len``, and the pages ``kv_indices`` does not list) to ``value(tensor)``."""
    listed = set(pool.kv_indices.tolist())
    indptr, indices, last = pool.kv_indptr.tolist(), pool.kv_indices.tolist(), pool.kv_last_page_len.tolist()
    for name in _CACHE_FIELDS:
        t = getattr(pool, name)
        v = value(t)
        for page in range(t.shape[0]):
            if page not in listed:
                t[page] = v
        for b in range(len(indptr) - 1):
            if indptr[b + 1] > indptr[b]:  # a full last page: an empty slice
                t[indices[indptr[b + 1] - 1], :, last[b]:] = v


@pytest.mark.parametrize("operand, method", [("bf16", "folded"), ("fp8", "folded"), ("bf16", "per-value")])
@pytest.mark.parametrize("bits, group_size", [(2, 128), (4, 64)])
@pytest.mark.parametrize("lens, num_splits", [([40, 200, 0, 64, 1, 255], None), ([700, 5], 3)])
def test_paged_rows_past_the_length_are_never_used(bits, group_size, operand, method, lens, num_splits):
    """The paged form of the test above: the rows of each sequence's last page past ``kv_last_page_len`` and the pool's
    unlisted pages hold NaN scales and offsets and all-ones codes (pages of 16, shuffled). The output and LSE are
    those of the same pool with those rows zero, bit for bit, and none is NaN."""
    cap = 256 if max(lens) <= 256 else 1024
    q, contiguous = _case(_cuda(), batch=len(lens), num_qo_heads=16, num_kv_heads=4, head_dim=128,
                          seq_lens=[cap] + lens[1:], bits=bits, group_size=group_size, seed=sum(lens) + 1)
    contiguous.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
    clean = foscar.paginate(contiguous, 16, shuffle=True, extra_pages=3, fill=0.0,
                            generator=torch.Generator().manual_seed(7))
    _fill_rows_without_tokens(clean, lambda t: 0)  # the clean pool: zero past each length and on unlisted pages
    dirty = dataclasses.replace(clean, **{name: getattr(clean, name).clone() for name in _CACHE_FIELDS})
    _fill_rows_without_tokens(dirty, lambda t: 0xFF if t.dtype == torch.uint8 else float("nan"))
    got = _decode_matches_clean(q, clean, dirty, operand, method, num_splits)
    if operand == "bf16" and method == "folded":
        ref = foscar.reference_decode(q, contiguous)
        for b, n in enumerate(lens):
            if n:
                assert float((got[0][b].double() - ref[b]).norm() / ref[b].norm()) < 1e-2, (b, n)


# tails of a sequence's last 64-token sub-tile, on its first step (lengths 1..256) and after full sub-tiles (512 +),
# on both sides of each m16 tile's bound (16, 32, 48, 64 tokens)
_TAILS = list(range(1, 257, 3)) + [512 + t for t in (15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 200)]


@pytest.mark.parametrize("operand, method", [("bf16", "folded"), ("fp8", "folded"), ("bf16", "per-value")])
@pytest.mark.parametrize("bits, group_size, layout", [(2, 128, "token"), (4, 64, "token"), (2, 32, "token"),
                                                      (2, 64, "channel"), (4, 64, "channel")])
@pytest.mark.parametrize("paged", [False, True])
def test_every_tail_of_the_last_sub_tile(operand, method, bits, group_size, layout, paged):
    """A sub-tile that ends before its 64 tokens: the tails above, one chunk a sequence and a fixed split count,
    contiguous and paged (page 16; channel-wise K page 32, a page holds whole K blocks), token-wise and channel-wise K
    (k_block 32: two K blocks a sub-tile), against the fp64 reference (output within 1e-2, FP8 1e-1; LSE for BF16
    operands), no NaN. (bench/NOTES.md §75: a step that skipped its m16 tiles past the end passed this, and was slower.)"""
    g = torch.Generator().manual_seed(bits * 100 + group_size)
    n = len(_TAILS)
    k = torch.randn(n, 2, max(_TAILS), 128, generator=g) * 1.5 + 0.3
    v = torch.randn(n, 2, max(_TAILS), 128, generator=g)
    q = torch.randn(n, 8, 128, generator=g).to(torch.bfloat16).cuda()
    lens = torch.tensor(_TAILS, dtype=torch.int32).cuda()
    extra = {"k_layout": "channel", "k_block": 32} if layout == "channel" else {}
    cache = foscar.quantize_kv(k.cuda(), v.cuda(), bits, group_size, seq_lens=lens, **extra)
    target = foscar.paginate(cache, 32 if layout == "channel" else 16) if paged else cache
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    tol = 1e-1 if operand == "fp8" else 1e-2
    for num_splits in (None, 2):
        out, lse = foscar.decode(q, target, backend="cuda", operand=operand, method=method, num_splits=num_splits,
                                 return_lse=True)
        assert not torch.isnan(out).any() and not torch.isnan(lse).any()
        for b, length in enumerate(_TAILS):
            err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
            assert err < tol, f"length {length}, num_splits {num_splits}: relative L2 error {err:.3g}"
            if operand == "bf16" and method == "folded":
                lse_err = float((lse[b].double() - ref_lse[b]).abs().max())
                assert lse_err < 3e-3, f"length {length}, num_splits {num_splits}: LSE off by {lse_err:.3g}"


def test_more_slots_than_a_grid_dimension_holds():
    """70000 sequences of 1..16 tokens over one KV head: one chunk each, so 70000 slots, past gridDim.y's 65535; the
    decode grid falls back to one dimension, where a CTA divides its block index by num_kv_heads (FOSCAR_GRID_2D,
    bench/NOTES.md §77). Rows on both sides of slot 65535 against the fp64 reference, no NaN anywhere."""
    from foscar.kernels import decode_cuda

    batch = 70000
    lens = [(b * 7) % 16 + 1 for b in range(batch)]
    q, cache = _case(_cuda(), batch=batch, num_qo_heads=4, num_kv_heads=1, head_dim=128, seq_lens=lens, bits=2,
                     group_size=128)
    slots, _, _ = decode_cuda.plan_splits(cache, q.device)
    assert slots > 65535, slots
    out = foscar.decode(q, cache, backend="cuda")
    assert not torch.isnan(out).any()
    rows = [0, 1, 65534, 65535, 65536, batch - 1]
    ref = foscar.reference_decode(q, cache, batch_indices=rows)
    for b in rows:
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < 1e-2, (b, lens[b], err)
