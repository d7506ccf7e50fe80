"""The CUDA kernel's split merge (``merge_triton.merge_slots``), its speculative one-round path
(the predicted window of partials loaded with the chunk table, bench/NOTES.md §32) against the
two-round path and an fp64 reference, on synthetic partials: through the Triton interpreter on the
CPU, on the GPU where there is one (the last test: a CUDA plan either way)."""

import math

import pytest
import torch

from foscar.kernels import merge_triton

HEADS, HEAD_DIM = 3, 64


def _partials(num_slots, seed=0):
    g = torch.Generator().manual_seed(seed)
    o = torch.randn(num_slots, HEADS, HEAD_DIM, generator=g)
    lse = torch.randn(num_slots, HEADS, generator=g) * 4  # base 2
    return o, lse


def _reference(o, lse, chunks):
    """fp64 merge of each sequence's slots ``[first, first + count)``: ``(out, lse)`` rows, ``None`` for
    a sequence of one chunk or none (the decode kernel writes those)."""
    rows = []
    for first, count in chunks:
        if count <= 1:
            rows.append(None)
            continue
        lo, lh = o[first:first + count].double(), lse[first:first + count].double()  # [count, H, D], [count, H]
        m = lh.max(dim=0).values
        w = torch.exp2(lh - m)
        rows.append(((w[:, :, None] * lo).sum(0) / w.sum(0)[:, None], (m + torch.log2(w.sum(0))) * math.log(2)))
    return rows


def _merge(o, lse, chunks, predicted, device, d_slices=1):
    """``merge_slots`` on ``device``; rows it must not touch hold a sentinel (7.0, LSE 5.0)."""
    batch = len(chunks)
    out = torch.full((batch, HEADS, HEAD_DIM), 7.0, dtype=torch.bfloat16, device=device)
    lse_out = torch.full((batch, HEADS), 5.0, device=device)
    table = torch.tensor(chunks, dtype=torch.int32, device=device)
    merge_triton.merge_slots(o.to(device), lse.to(device), table, out, lse_out, predicted, d_slices)
    return out.cpu(), lse_out.cpu()


def _check(o, lse, chunks, predicted, device, d_slices=1):
    """The speculative merge (``predicted``) against the two-round merge and the fp64 reference, each with
    ``d_slices`` programs a row."""
    spec, spec_lse = _merge(o, lse, chunks, predicted, device, d_slices)
    base, base_lse = _merge(o, lse, chunks, 0, device, d_slices)
    torch.testing.assert_close(spec.float(), base.float(), rtol=8e-3, atol=1e-3)  # a bf16 ulp at most
    torch.testing.assert_close(spec_lse, base_lse, rtol=1e-6, atol=1e-5)
    for b, ref in enumerate(_reference(o, lse, chunks)):
        if ref is None:  # left as the decode kernel wrote it
            assert bool((spec[b] == 7.0).all()) and bool((spec_lse[b] == 5.0).all()), f"sequence {b} was written"
            continue
        err = float((spec[b].double() - ref[0]).norm() / ref[0].norm())
        assert err < 1e-2, f"sequence {b}: relative L2 error {err:.3g}"
        torch.testing.assert_close(spec_lse[b].double(), ref[1], rtol=0, atol=1e-4)


@pytest.mark.parametrize("d_slices", [1, 4])
@pytest.mark.parametrize("batch, per", [(1, 16), (4, 4), (3, 3), (2, 32)])
def test_uniform_layout_hits_the_window(device, batch, per, d_slices):
    """Every sequence at ``b * per`` with ``per`` chunks (a uniform batch); ``per = 3``: a window of 4 whose
    last one reaches past the buffer (clipped)."""
    o, lse = _partials(batch * per)
    _check(o, lse, [(b * per, per) for b in range(batch)], per, device, d_slices)


@pytest.mark.parametrize("d_slices", [1, 2, 4])
def test_ragged_layout_misses_and_falls_back(device, d_slices):
    """Chunk counts 1, 7, 2, 3, 0-length (1 chunk) and 5 against a prediction of 3: most windows miss."""
    counts = [1, 7, 2, 3, 1, 5]
    firsts = [sum(counts[:b]) for b in range(len(counts))]
    o, lse = _partials(sum(counts) + 2, seed=1)
    _check(o, lse, list(zip(firsts, counts)), 3, device, d_slices)


def test_d_slices_choice_and_bad_values(monkeypatch):
    """``FOSCAR_MERGE_D_SLICES`` is read per call; "auto" (the default) gives 4 programs a row where they
    fit one per SM (batch 1 x 32 query heads on 132 SMs), else 1; ``merge_slots`` refuses a slice count that
    is not 1, 2, 4 or 8 or leaves fewer than 16 columns a program (head_dim 64: at most 4)."""
    monkeypatch.delenv("FOSCAR_MERGE_D_SLICES", raising=False)
    assert merge_triton.d_slices_choice(32, 132, 128) == 4
    assert merge_triton.d_slices_choice(33, 132, 128) == 4 and merge_triton.d_slices_choice(34, 132, 128) == 1
    assert merge_triton.d_slices_choice(256, 132, 128) == 1
    monkeypatch.setenv("FOSCAR_MERGE_D_SLICES", "2")
    assert merge_triton.d_slices_choice(256, 132, 128) == 2
    monkeypatch.setenv("FOSCAR_MERGE_D_SLICES", "8")  # at least 16 columns a program: head_dim 64 takes 4
    assert (merge_triton.d_slices_choice(32, 132, 128), merge_triton.d_slices_choice(32, 132, 64)) == (8, 4)
    monkeypatch.setenv("FOSCAR_MERGE_D_SLICES", "1")
    assert merge_triton.d_slices_choice(32, 132, 128) == 1
    monkeypatch.setenv("FOSCAR_MERGE_D_SLICES", "3")
    with pytest.raises(ValueError, match="FOSCAR_MERGE_D_SLICES: expected one of auto, 1, 2, 4, 8, got '3'"):
        merge_triton.d_slices_choice(32, 132, 128)
    o, lse = _partials(2)
    for bad in (3, 8, 0):
        with pytest.raises(ValueError, match="d_slices: expected 1, 2, 4 or 8"):
            merge_triton.merge_slots(o, lse, torch.zeros(1, 2, dtype=torch.int32),
                                     torch.empty(1, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(1, HEADS),
                                     0, bad)


def test_stale_slots_never_leak(device):
    """Slots inside the window but outside the sequence's range hold NaN, inf, -inf and huge values (the
    partials of an earlier step); none may reach the output, on a hit or a miss."""
    per = 8
    chunks = [(0, 5), (8, 8), (16, 2), (22, 6)]  # gaps inside the windows; the last one misses (22 < 24)
    o, lse = _partials(4 * per, seed=2)
    used = torch.zeros(4 * per, dtype=torch.bool)
    for first, count in chunks:
        used[first:first + count] = True
    stale = (~used).nonzero().flatten()
    garbage_lse = torch.tensor([float("nan"), float("inf"), 1e30, float("-inf")])
    garbage_o = torch.tensor([float("nan"), float("inf"), -1e38, float("-inf")])
    for i, s in enumerate(stale.tolist()):
        lse[s] = garbage_lse[i % 4]
        o[s] = garbage_o[(i + 1) % 4]
    _check(o, lse, chunks, per, device)
    out, out_lse = _merge(o, lse, chunks, per, device)
    assert bool(out.float().isfinite().all()) and bool(out_lse.isfinite().all())


def test_nan_lse_inside_the_range_gives_a_nan_row(device):
    per = 4
    o, lse = _partials(3 * per, seed=3)
    lse[per + 2, 1] = float("nan")  # sequence 1, head 1
    chunks = [(b * per, per) for b in range(3)]
    for predicted in (per, 0):
        out, out_lse = _merge(o, lse, chunks, predicted, device)
        assert bool(out[1, 1].float().isnan().all()) and bool(out_lse[1, 1].isnan())
        rest = torch.ones(3, HEADS, dtype=torch.bool)
        rest[1, 1] = False
        assert bool(out.float().isfinite().all(dim=-1)[rest].all()) and bool(out_lse[rest].isfinite().all())


def test_empty_sequences_and_all_empty_chunks(device):
    """Length-0 sequences (one chunk, written by the decode kernel: untouched) and a sequence whose chunks
    are all empty (LSE -inf: a zero row and LSE -inf, no NaN)."""
    per = 4
    o, lse = _partials(4 * per, seed=4)
    lse[per:2 * per] = float("-inf")
    chunks = [(0, 1), (per, per), (2 * per, 1), (3 * per, per)]
    for predicted in (per, 0):
        out, out_lse = _merge(o, lse, chunks, predicted, device)
        assert bool((out[0] == 7.0).all()) and bool((out[2] == 7.0).all()) and bool((out_lse[[0, 2]] == 5.0).all())
        assert not out[1].any() and bool(torch.isneginf(out_lse[1]).all())


def test_a_hit_takes_no_second_round(device, monkeypatch):
    """The outputs cannot tell the paths apart (both read the same slots): spy on the fallback loop in the
    interpreter. On a hit it runs over 0 chunks, on a miss over the sequence's count."""
    if device.type != "cpu":
        pytest.skip("spies on the Triton interpreter's calls")
    seen = []
    loop = merge_triton._merge_loop

    def spy(*args, **kwargs):
        seen.append(int(args[3]))  # the chunk count it merges
        return loop(*args, **kwargs)

    monkeypatch.setattr(merge_triton, "_merge_loop", spy)
    o, lse = _partials(12)
    _merge(o, lse, [(b * 4, 4) for b in range(3)], 4, device)
    assert seen == [0] * (3 * HEADS)
    seen.clear()
    _merge(o, lse, [(0, 4), (5, 4), (9, 3)], 4, device)  # sequence 1 misses (slots 5-8, window 4-7)
    assert seen == [0] * HEADS + [4] * HEADS + [0] * HEADS


def _fixed_reference(o, lse, batch, per):
    """fp64 merge of slots ``[b * per, (b + 1) * per)`` per sequence, empty chunks (LSE -inf) weighing 0 whatever
    their rows hold: ``(out, lse)`` rows, a zero row and -inf where every chunk is empty."""
    rows = []
    for b in range(batch):
        lo, lh = o[b * per:(b + 1) * per].double(), lse[b * per:(b + 1) * per].double()
        m = lh.max(dim=0).values
        w = torch.where(torch.isneginf(lh), 0.0, torch.exp2(lh - torch.where(torch.isneginf(m), 0.0, m)))
        lo = torch.where(torch.isneginf(lh)[:, :, None], 0.0, lo)
        den = w.sum(0)
        out = torch.where(den[:, None] > 0, (w[:, :, None] * lo).sum(0) / den.clamp_min(1e-300)[:, None], 0.0)
        rows.append((out, torch.where(den > 0, (m + torch.log2(den.clamp_min(1e-300))) * math.log(2), -math.inf)))
    return rows


@pytest.mark.parametrize("expected", [0, 2, 3, 4])
def test_sequences_within_the_expected_count_merge_in_one_small_round(device, expected):
    """``expected`` (a uniform batch's chunk count): sequences of at most its window's chunks (4 for 3 and 4,
    2 for 0 and 2) merge in one round of that many slots, longer ones in the rounds of the general loop; both
    against the fp64 reference and against the merge without ``expected``. Counts 2, 7, 3, 1 (written by the
    decode kernel), 4 and 5 put sequences on either side of every window tried."""
    counts = [2, 7, 3, 1, 4, 5]
    firsts = [sum(counts[:b]) for b in range(len(counts))]
    chunks = list(zip(firsts, counts))
    o, lse = _partials(sum(counts) + 3, seed=11)
    lse[firsts[1] + 2] = float("-inf")  # an empty chunk inside a long sequence
    lse[firsts[4] + 3] = float("-inf")  # and inside a short one (the window's last slot)
    base, base_lse = _merge(o, lse, chunks, 0, device)
    out = torch.full((len(counts), HEADS, HEAD_DIM), 7.0, dtype=torch.bfloat16, device=device)
    lse_out = torch.full((len(counts), HEADS), 5.0, device=device)
    table = torch.tensor(chunks, dtype=torch.int32, device=device)
    merge_triton.merge_slots(o.to(device), lse.to(device), table, out, lse_out, expected=expected)
    out, lse_out = out.cpu(), lse_out.cpu()
    torch.testing.assert_close(out.float(), base.float(), rtol=8e-3, atol=1e-3)  # a bf16 ulp at most
    torch.testing.assert_close(lse_out, base_lse, rtol=1e-6, atol=1e-5)
    for b, ref in enumerate(_reference(o, lse, chunks)):
        if ref is None:
            assert bool((out[b] == 7.0).all()) and bool((lse_out[b] == 5.0).all()), f"sequence {b} was written"
            continue
        err = float((out[b].double() - ref[0]).norm() / ref[0].norm())
        assert err < 1e-2, f"sequence {b}: relative L2 error {err:.3g}"
        torch.testing.assert_close(lse_out[b].double(), ref[1], rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="expected: a chunk count >= 0"):
        merge_triton.merge_slots(o.to(device), lse.to(device), table, out.to(device), lse_out.to(device), expected=-1)


@pytest.mark.parametrize("d_slices", [1, 4])
def test_fixed_window_merges_every_slot_without_the_table(device, d_slices):
    """``fixed=True`` (a fixed-path plan, the decode kernel's ``fixed_window``): sequence b's chunks are slots
    ``b * per ..``, every row is written (a sequence with one live chunk too), empty chunks carry LSE -inf and
    garbage rows (NaN, inf: never written by the decode kernel) that must not leak, and the chunk table is not
    read (it holds nonsense here)."""
    batch, per = 4, 5
    o, lse = _partials(batch * per, seed=6)
    lse[per + 1:2 * per] = float("-inf")  # sequence 1: one live chunk
    lse[2 * per:3 * per] = float("-inf")  # sequence 2: none (length 0)
    lse[3 * per + 4] = float("-inf")      # sequence 3: its last chunk empty
    for s in list(range(per + 1, 3 * per)) + [3 * per + 4]:
        o[s] = float("nan") if s % 2 else float("inf")
    out = torch.full((batch, HEADS, HEAD_DIM), 7.0, dtype=torch.bfloat16, device=device)
    lse_out = torch.full((batch, HEADS), 5.0, device=device)
    table = torch.full((batch, 2), -12345, dtype=torch.int32, device=device)
    merge_triton.merge_slots(o.to(device), lse.to(device), table, out, lse_out, per, d_slices, fixed=True)
    out, lse_out = out.cpu(), lse_out.cpu()
    for b, (ref, ref_lse) in enumerate(_fixed_reference(o, lse, batch, per)):
        if b == 2:
            assert not out[b].any() and bool(torch.isneginf(lse_out[b]).all())
            continue
        err = float((out[b].double() - ref).norm() / ref.norm())
        assert err < 1e-2, f"sequence {b}: relative L2 error {err:.3g}"
        torch.testing.assert_close(lse_out[b].double(), ref_lse, rtol=0, atol=1e-4)
    # one live chunk: its row (weight 1, the rest 0) within a bf16 rounding (the interpreter's cast truncates)
    torch.testing.assert_close(out[1].float(), o[per], rtol=8e-3, atol=0)


def test_fixed_window_keeps_a_nan_lse(device):
    per = 4
    o, lse = _partials(2 * per, seed=7)
    lse[per + 1, 2] = float("nan")
    out = torch.empty(2, HEADS, HEAD_DIM, dtype=torch.bfloat16, device=device)
    lse_out = torch.empty(2, HEADS, device=device)
    merge_triton.merge_slots(o.to(device), lse.to(device), torch.zeros(2, 2, dtype=torch.int32, device=device),
                             out, lse_out, per, fixed=True)
    assert bool(out[1, 2].float().isnan().all().cpu()) and bool(lse_out[1, 2].isnan().cpu())
    assert bool(out[0].float().isfinite().all().cpu()) and bool(out[1, :2].float().isfinite().all().cpu())


def test_fixed_window_refuses_what_it_cannot_take():
    o, lse = _partials(8)
    out, lse_out = torch.empty(2, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(2, HEADS)
    table = torch.zeros(2, 2, dtype=torch.int32)
    for predicted in (0, 1, 5):  # 5: two sequences need 10 slots, the buffer has 8
        with pytest.raises(ValueError, match="fixed: expected predicted >= 2"):
            merge_triton.merge_slots(o, lse, table, out, lse_out, predicted, fixed=True)


def test_fixed_window_choice_is_read_per_call(monkeypatch):
    monkeypatch.delenv("FOSCAR_MERGE_FIXED_WINDOW", raising=False)
    assert merge_triton.fixed_window_choice() is True
    monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "0")
    assert merge_triton.fixed_window_choice() is False
    monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "on")
    with pytest.raises(ValueError, match="FOSCAR_MERGE_FIXED_WINDOW: expected '1' or '0', got 'on'"):
        merge_triton.fixed_window_choice()


def test_a_bad_chunk_table_is_refused():
    o, lse = _partials(4)
    out, lse_out = torch.empty(2, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(2, HEADS)
    for table in (torch.zeros(2, 2, dtype=torch.int64), torch.zeros(1, 2, dtype=torch.int32),
                  torch.zeros(2, 4, dtype=torch.int32)[:, :2]):
        with pytest.raises(ValueError, match=r"seq_chunks: expected a contiguous int32 \[2, 2\] tensor"):
            merge_triton.merge_slots(o, lse, table, out, lse_out)


def test_one_chunk_per_sequence_does_not_speculate(device):
    """Batches of one chunk per sequence (batch 32/64 on the H200) get no window: the two-round merge."""
    assert merge_triton.speculation_window(1, 128) == 0
    assert merge_triton.speculation_window(0, 128) == 0
    o, lse = _partials(6, seed=5)
    _check(o, lse, [(b, 1) for b in range(6)], 1, device)


def test_window_sizes():
    assert merge_triton.speculation_window(2, 128) == 2
    assert merge_triton.speculation_window(3, 128) == 4
    assert merge_triton.speculation_window(16, 128) == 16
    assert merge_triton.speculation_window(33, 128) == 64  # 8192 values: MAX_BLOCK_ELEMS
    assert merge_triton.speculation_window(65, 128) == 0
    assert merge_triton.speculation_window(65, 64) == 128


def test_predicted_chunks_follow_the_schedule():
    """The prediction is the kernel's schedule (splits.schedule, the mirror of find_work) on uniform
    batches at the planned capacity, fixed splits included."""
    from foscar.kernels import splits

    for batch, length, bits in [(1, 8192, 2), (8, 4096, 2), (1, 131072, 4), (8, 32768, 2), (32, 8192, 2),
                                (64, 8192, 4), (64, 131072, 2)]:  # 8 KV heads on the H200's 132 SMs
        slots, fixed, target = splits.plan_work(batch, 8, length, 132, bits=bits)
        per = merge_triton.predicted_chunks(batch, fixed, target)
        work = splits.schedule([length] * batch, slots, fixed, target)
        firsts = {b: next(i for i, w in enumerate(work) if w[0] == b) for b in range(batch)}
        assert all(firsts[b] == b * per for b in range(batch)), (batch, length)
        assert all(sum(w[0] == b for w in work) == per for b in range(batch)), (batch, length)
    assert merge_triton.predicted_chunks(3, 5, 1) == 5  # fixed splits: slot b * 5
    assert merge_triton.predicted_chunks(0, 0, 1) == 0
    with pytest.raises(ValueError, match="target_chunks >= 1"):
        merge_triton.predicted_chunks(2, 0, 0)


def test_speculate_choice_is_read_per_call(monkeypatch):
    monkeypatch.delenv("FOSCAR_MERGE_SPECULATE", raising=False)
    assert merge_triton.speculate_choice() is False
    monkeypatch.setenv("FOSCAR_MERGE_SPECULATE", "0")
    assert merge_triton.speculate_choice() is False
    monkeypatch.setenv("FOSCAR_MERGE_SPECULATE", "yes")
    with pytest.raises(ValueError, match="FOSCAR_MERGE_SPECULATE: expected '1' or '0', got 'yes'"):
        merge_triton.speculate_choice()


def test_pdl_choice_is_read_per_call(monkeypatch):
    """FOSCAR_MERGE_PDL (default "1") asks for PDL, which only a CUDA device of compute capability >= 9.0 has."""
    monkeypatch.delenv("FOSCAR_MERGE_PDL", raising=False)
    assert merge_triton.pdl_choice(torch.device("cpu")) is False  # no griddepcontrol off the GPU
    if torch.cuda.is_available():
        assert merge_triton.pdl_choice(torch.device("cuda")) is (torch.cuda.get_device_capability() >= (9, 0))
    monkeypatch.setenv("FOSCAR_MERGE_PDL", "0")
    assert merge_triton.pdl_choice(torch.device("cpu")) is False
    monkeypatch.setenv("FOSCAR_MERGE_PDL", "on")
    with pytest.raises(ValueError, match="FOSCAR_MERGE_PDL: expected '1' or '0', got 'on'"):
        merge_triton.pdl_choice(torch.device("cpu"))


def test_negative_prediction_is_refused():
    o, lse = _partials(2)
    with pytest.raises(ValueError, match="predicted: expected a chunk count >= 0"):
        merge_triton.merge_slots(o, lse, torch.zeros(1, 2, dtype=torch.int32),
                                 torch.empty(1, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(1, HEADS), -1)


def _two_plans_agree(monkeypatch, lengths, knob, first, second):
    """Two CUDA plans of one INT2 batch (32 query heads, 8 KV heads, head_dim 128) made with the environment
    variable ``knob`` at ``first`` and at ``second``: both run, and their outputs agree to a bf16 ulp (sums in
    another order) and their LSEs to 1e-5, and the first's rows are within 1e-2 of the fp64 reference (an empty
    sequence: zeros). The merge kernel's knobs: both plans take it whatever FOSCAR_MERGE says. Returns the two
    plans."""
    import foscar
    from tests.test_decode_triton import _case

    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    q, cache = _case(torch.device("cuda"), batch=len(lengths), num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=lengths, bits=2, group_size=128)
    if knob != "FOSCAR_MERGE_FIXED_WINDOW":  # the other knobs of the merge: with the chunk table at batch 1 too
        monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "0")
    monkeypatch.setenv(knob, first)
    one = foscar.plan_decode(cache, 32, backend="cuda")
    monkeypatch.setenv(knob, second)
    two = foscar.plan_decode(cache, 32, backend="cuda")
    a, la = (t.clone() for t in one.run(q, cache, return_lse=True))
    b, lb = two.run(q, cache, return_lse=True)
    torch.testing.assert_close(a.float(), b.float(), rtol=8e-3, atol=1e-3)
    torch.testing.assert_close(la, lb, rtol=1e-6, atol=1e-5)
    ref = foscar.reference_decode(q, cache)  # not only two plans of one kernel against each other
    for s, n in enumerate(lengths):
        assert (float((a[s].double() - ref[s]).norm() / ref[s].norm()) < 1e-2) if n else not a[s].any(), s
    return one, two


@pytest.mark.gpu
@pytest.mark.parametrize("lengths", [[8192], [4096] * 8, [4096, 100, 0, 4096, 3000, 4096, 1, 4096]])
def test_plans_with_and_without_speculation_agree(monkeypatch, lengths):
    """A CUDA plan made with FOSCAR_MERGE_SPECULATE=1 predicts the uniform batch's chunks; one made with 0
    does not; both give the same output (uniform: hit; ragged: misses)."""
    spec, base = _two_plans_agree(monkeypatch, lengths, "FOSCAR_MERGE_SPECULATE", "1", "0")
    assert spec.merge == "kernel" and spec.merge_predicted >= 2
    assert base.merge_predicted == 0


@pytest.mark.gpu
@pytest.mark.parametrize("lengths", [[8192], [4096, 100, 0, 4096, 3000, 4096, 1, 4096]])
def test_plans_with_one_and_four_merge_programs_a_row_agree(monkeypatch, lengths):
    """CUDA plans made with FOSCAR_MERGE_D_SLICES=4 and =1 agree (each program of a row merges the same
    LSEs over its quarter of the columns)."""
    four, one = _two_plans_agree(monkeypatch, lengths, "FOSCAR_MERGE_D_SLICES", "4", "1")
    assert (four.merge_d_slices, one.merge_d_slices) == (4, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("lengths", [[8192], [4096, 100, 0, 4096, 3000, 4096, 1, 4096]])
def test_plans_with_and_without_pdl_agree(monkeypatch, lengths):
    """CUDA plans made with FOSCAR_MERGE_PDL=1 and =0 agree: the merge launched before the decode kernel has
    finished waits for its partials (bench/NOTES.md §43)."""
    pdl, plain = _two_plans_agree(monkeypatch, lengths, "FOSCAR_MERGE_PDL", "1", "0")
    assert (pdl.merge_pdl, plain.merge_pdl) == (True, False)


@pytest.mark.gpu
@pytest.mark.parametrize("lengths", [[8192], [3000], [600], [1], [0]])
def test_plans_with_and_without_the_fixed_window_agree(monkeypatch, lengths):
    """A batch of one (fixed chunks) planned with FOSCAR_MERGE_FIXED_WINDOW=1 (every slot written, merged
    without the chunk table) and =0 (the table, then the partials) agree, for lengths that leave most chunks
    empty or one chunk live (bench/NOTES.md §58); an 8K capacity, so that the plan has 16 chunks. The merge kernel's
    knob: both plans take it whatever FOSCAR_MERGE says."""
    import foscar
    from tests.test_decode_triton import _case

    monkeypatch.setenv("FOSCAR_MERGE", "kernel")
    q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[8192], bits=2, group_size=128)
    cache.seq_lens.fill_(lengths[0])
    monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "1")
    one = foscar.plan_decode(cache, 32, backend="cuda")
    monkeypatch.setenv("FOSCAR_MERGE_FIXED_WINDOW", "0")
    two = foscar.plan_decode(cache, 32, backend="cuda")
    assert one.merge_fixed_window and not two.merge_fixed_window and one.num_splits == two.num_splits >= 2
    a, la = (t.clone() for t in one.run(q, cache, return_lse=True))
    b, lb = two.run(q, cache, return_lse=True)
    assert torch.equal(a, b) and torch.equal(la, lb)  # the same sums: one live chunk's row exactly, else one order
    if lengths[0] == 0:
        assert not a.any() and bool(torch.isneginf(la).all())
    else:
        ref = foscar.reference_decode(q, cache)
        assert float((a[0].double() - ref[0]).norm() / ref[0].norm()) < 1e-2


_SASS_SCRIPT = """
import subprocess, sys, tempfile
from pathlib import Path
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from foscar.kernels import merge_triton
sig = {"O_part": "*fp32", "Lse_part": "*fp32", "Seq_chunks": "*i64", "Out": "*bf16", "Lse_out": "*fp32",
       "num_qo_heads": "i32", "num_slots": "i32", "predicted": "i32", "HEAD_DIM": "constexpr",
       "BLOCK_S": "constexpr", "BLOCK_W": "constexpr", "SPECULATE": "constexpr", "BLOCK_D": "constexpr",
       "PDL": "constexpr"}
tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
for speculate, pdl in ((True, False), (False, False), (False, True)):
    src = ASTSource(fn=merge_triton._merge_slots_kernel, signature=sig,
                    constexprs={"HEAD_DIM": 128, "BLOCK_S": 32, "BLOCK_W": 16, "SPECULATE": speculate,
                                "BLOCK_D": 128, "PDL": pdl})
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "launch_pdl": pdl})
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "merge.cubin"
        cubin.write_bytes(kernel.asm["cubin"])
        sass = subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    loads = wide = 0
    waits_first = None  # griddepcontrol.wait (ACQBULK) before the first global load
    for line in sass.splitlines():
        if " ACQBULK" in line and waits_first is None:
            waits_first = True
        if " LDG" in line and waits_first is None:
            waits_first = False
        if " BRA " in line or " EXIT" in line:
            break
        loads += " LDG" in line
        wide += " LDG.E.64" in line
    print(loads, wide, int(bool(waits_first)))
"""


def _sass_loads_before_first_branch() -> list[tuple[int, int, int]]:
    """Global loads the sm_90 build of the merge kernel issues before its first branch or exit, how many
    of them are 64-bit, and whether ``griddepcontrol.wait`` (SASS ``ACQBULK``) comes before the first
    global load, ``[(loads, wide, waits_first)]`` for the speculative build, the default one, and the
    default one with PDL: compiled with Triton's bundled ptxas (no GPU needed; a process without
    ``TRITON_INTERPRET``, which would hand it interpreted functions) and read with its cuobjdump."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import triton

    if not (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump").exists():
        pytest.skip("no cuobjdump in Triton's NVIDIA backend to read the SASS")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _SASS_SCRIPT], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[1])
    if run.returncode != 0:
        pytest.skip(f"cannot build the sm_90 kernel here: {run.stderr.strip().splitlines()[-1:]}")
    return [tuple(int(x) for x in line.split()) for line in run.stdout.splitlines()]


def test_the_merge_loads_its_table_in_one_round():
    """Checked in the sm_90 SASS (bench/NOTES.md §32). The default merge issues one load before its
    one-chunk exit, the 64-bit table entry (first slot and chunk count together: as two 32-bit loads,
    ptxas sank the first slot's behind the exit). The speculative one issues the
    window's loads (1 x 8K's 16 chunks, head_dim 128) before its first branch too, in the table's round."""
    (spec_loads, spec_wide, _), (loads, wide, _), (pdl_loads, pdl_wide, pdl_waits) = _sass_loads_before_first_branch()
    assert (loads, wide) == (1, 1)
    assert spec_wide >= 1 and spec_loads >= 1 + 16, f"only {spec_loads} loads before the first branch"
    # launched with PDL (NOTES §43): the same one load, and only after griddepcontrol.wait (the decode
    # kernel finished and its partials visible)
    assert (pdl_loads, pdl_wide, pdl_waits) == (1, 1, 1)


@pytest.mark.gpu
def test_the_synthetic_cases_on_cuda():
    """The first cases above, compiled, on the GPU (``pytest -m gpu`` deselects them: they take the ``device``
    fixture, which is CUDA only when a run includes unmarked tests). The fixed-window, expected-count, several-rows
    and length-derived cases run here only in the interpreter; on a GPU their paths run end to end, against the fp64
    reference, in the plans of test_ragged_gpu.py and this file's plan tests."""
    dev = torch.device("cuda")
    for d_slices in (1, 4):
        for batch, per in [(1, 16), (4, 4), (3, 3), (2, 32)]:
            test_uniform_layout_hits_the_window(dev, batch, per, d_slices)
        test_ragged_layout_misses_and_falls_back(dev, d_slices)
    test_stale_slots_never_leak(dev)
    test_nan_lse_inside_the_range_gives_a_nan_row(dev)
    test_empty_sequences_and_all_empty_chunks(dev)
    test_one_chunk_per_sequence_does_not_speculate(dev)


@pytest.mark.parametrize("rows, expected, d_slices", [(4, 2, 1), (2, 4, 1), (8, 0, 1), (4, 4, 2)])
def test_several_rows_a_program_merge_as_one_row_a_program(device, rows, expected, d_slices):
    """``rows`` query heads of a sequence per program (one chunk-table load for them, bench/NOTES.md §61) against
    one row a program and the fp64 reference: 8 query heads; counts 2, 1 (written by the decode kernel), 9 (the
    loop: rounds of 4096 / (rows * head_dim) slots), 0 chunks' length (1), 2 with an empty chunk, 3, and a NaN
    LSE in one head of the last sequence (its row NaN, the other heads' not)."""
    heads, head_dim = 8, 64
    counts = [2, 1, 9, 1, 2, 3]
    firsts = [sum(counts[:b]) for b in range(len(counts))]
    chunks = list(zip(firsts, counts))
    g = torch.Generator().manual_seed(12)
    o = torch.randn(sum(counts) + 2, heads, head_dim, generator=g)
    lse = torch.randn(sum(counts) + 2, heads, generator=g) * 4
    lse[firsts[4] + 1] = float("-inf")  # an empty chunk
    lse[firsts[5] + 2, 5] = float("nan")
    table = torch.tensor(chunks, dtype=torch.int32, device=device)
    results = []
    for r in (1, rows):
        out = torch.full((len(counts), heads, head_dim), 7.0, dtype=torch.bfloat16, device=device)
        lse_out = torch.full((len(counts), heads), 5.0, device=device)
        merge_triton.merge_slots(o.to(device), lse.to(device), table, out, lse_out, 0, d_slices, expected=expected,
                                 rows=r)
        results.append((out.cpu(), lse_out.cpu()))
    (one, one_lse), (out, lse_out) = results
    torch.testing.assert_close(out.float(), one.float(), rtol=8e-3, atol=1e-3, equal_nan=True)  # a bf16 ulp at most
    torch.testing.assert_close(lse_out, one_lse, rtol=1e-6, atol=1e-5, equal_nan=True)
    for b, (first, count) in enumerate(chunks):
        if count <= 1:  # left as the decode kernel wrote it
            assert bool((out[b] == 7.0).all()) and bool((lse_out[b] == 5.0).all()), f"sequence {b} was written"
            continue
        lo, lh = o[first:first + count].double(), lse[first:first + count].double()
        m = lh.max(dim=0).values
        w = torch.exp2(lh - m)
        ref, ref_lse = (w[:, :, None] * lo).sum(0) / w.sum(0)[:, None], (m + torch.log2(w.sum(0))) * math.log(2)
        for h in range(heads):
            if b == 5 and h == 5:
                assert bool(out[b, h].float().isnan().all()) and bool(lse_out[b, h].isnan())
                continue
            err = float((out[b, h].double() - ref[h]).norm() / ref[h].norm())
            assert err < 1e-2, f"sequence {b}, head {h}: relative L2 error {err:.3g}"
            torch.testing.assert_close(lse_out[b, h].double(), ref_lse[h], rtol=0, atol=1e-4)


def test_rows_choice_and_what_merge_slots_refuses(monkeypatch):
    """``FOSCAR_MERGE_ROWS`` is read per call; "auto" (the default) gives the fewest rows a program (1, 2, 4) that
    leave at most one program per SM, 4 where more are left (32 query heads on 132 SMs: batch 4 one row, 5-8 two,
    9 and more four); any choice is capped to a power of two dividing the query heads; ``merge_slots`` refuses rows
    that are not 1, 2, 4 or 8, that do not divide the heads, or that come with the speculation or the fixed window
    (their single-row kernel)."""
    monkeypatch.delenv("FOSCAR_MERGE_ROWS", raising=False)
    assert [merge_triton.rows_choice(b * 32, 132, 32) for b in (1, 4, 5, 8, 9, 16, 64)] == [1, 1, 2, 2, 4, 4, 4]
    assert merge_triton.rows_choice(64 * 6, 4, 6) == 2 and merge_triton.rows_choice(64 * 3, 4, 3) == 1
    monkeypatch.setenv("FOSCAR_MERGE_ROWS", "8")
    assert merge_triton.rows_choice(8, 132, 32) == 8 and merge_triton.rows_choice(8, 132, 12) == 4
    monkeypatch.setenv("FOSCAR_MERGE_ROWS", "1")
    assert merge_triton.rows_choice(64 * 32, 132, 32) == 1
    monkeypatch.setenv("FOSCAR_MERGE_ROWS", "16")
    with pytest.raises(ValueError, match="FOSCAR_MERGE_ROWS: expected one of auto, 1, 2, 4, 8, got '16'"):
        merge_triton.rows_choice(64 * 32, 132, 32)
    o, lse = _partials(8)  # 3 query heads
    out, lse_out = torch.empty(2, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(2, HEADS)
    table = torch.zeros(2, 2, dtype=torch.int32)
    for rows, predicted, fixed in ((3, 0, False), (2, 0, False), (0, 0, False), (1, 0, False)):
        if rows == 1:  # 1 always goes: the single-row kernel
            merge_triton.merge_slots(o, lse, table, out, lse_out, predicted, fixed=fixed, rows=rows)
            continue
        with pytest.raises(ValueError, match="rows: expected 1, 2, 4 or 8 dividing num_qo_heads 3"):
            merge_triton.merge_slots(o, lse, table, out, lse_out, predicted, fixed=fixed, rows=rows)
    o4, lse4 = torch.zeros(8, 4, HEAD_DIM), torch.zeros(8, 4)
    out4, lse_out4 = torch.empty(2, 4, HEAD_DIM, dtype=torch.bfloat16), torch.empty(2, 4)
    for predicted, fixed in ((2, False), (2, True)):
        with pytest.raises(ValueError, match="and 1 with predicted or fixed"):
            merge_triton.merge_slots(o4, lse4, table, out4, lse_out4, predicted, fixed=fixed, rows=2)


def _derive_case(lengths, capacity, num_sms, paged, page=16, clamp=None, short=True, num_kv_heads=2,
                 short_tokens=True):
    """Partials over the CUDA kernel's length-aware schedule of ``lengths`` (the host mirror,
    ``splits.schedule``), its chunk table, and the :class:`merge_triton.ChunkLengths` that derive the same
    ranges; ``clamp``: raw inputs past what the cache holds, ``(lens, kv_indptr, num_indices)``; ``short``: the
    plan's short chunks (``splits.plan_work``, ``plan_min_chunk``); the plan's long chunk too (``plan_long_chunk``);
    ``short_tokens``: the plan's short-batch bound on (``plan_short_tokens``, ``FOSCAR_SHORT_TOKENS=1``, the default;
    ``short`` False turns it off too, as decode_cuda.plan_short_tokens_of does), else 0."""
    from foscar.kernels import splits

    batch = len(lengths)
    num_slots, fixed, target = splits.plan_work(batch, num_kv_heads, capacity, num_sms, bits=2, short_chunks=short)
    assert fixed == 0, "a length-aware plan"
    min_chunk = splits.plan_min_chunk(target, num_kv_heads, num_sms, short)
    long_chunk = splits.plan_long_chunk(None, num_kv_heads, num_sms, capacity)
    bound = splits.plan_short_tokens(min_chunk, num_kv_heads, num_sms, short_tokens and short)
    table = [[0, 0] for _ in range(batch)]
    for slot, (b, start, _) in enumerate(splits.schedule(lengths, num_slots, fixed, target, min_chunk, long_chunk,
                                                         bound)):
        if start == 0:
            table[b][0] = slot
        table[b][1] += 1
    if paged:
        pages = [-(-n // page) for n in lengths]
        indptr = [0]
        for p in pages:
            indptr.append(indptr[-1] + p)
        last = [n - (p - 1) * page if p else 0 for n, p in zip(lengths, pages)]
        lens, ptr, num_indices = (clamp or (last, indptr, indptr[-1]))
        src = merge_triton.ChunkLengths(torch.tensor(lens, dtype=torch.int32), torch.tensor(ptr, dtype=torch.int32),
                                        0, num_indices, page, target, min_chunk, long_chunk, bound)
    else:
        lens = clamp[0] if clamp else lengths
        src = merge_triton.ChunkLengths(torch.tensor(lens, dtype=torch.int32), None, capacity, 0, 0, target, min_chunk,
                                        long_chunk, bound)
    return num_slots, table, src


def _merge_by_table_and_lengths(num_slots, table, src, heads, head_dim, device, seed, **merge_args):
    """Random partials merged twice, through the chunk table and through ``src`` (:class:`merge_triton.ChunkLengths`;
    the table then holds nonsense, as it is never read): the two ``(out, lse)`` pairs, on the CPU; rows the merge
    leaves alone hold 7.0 and LSE 5.0."""
    g = torch.Generator().manual_seed(seed)
    o = torch.randn(num_slots, heads, head_dim, generator=g).to(device)
    lse = (torch.randn(num_slots, heads, generator=g) * 4).to(device)
    batch = len(table)
    results = []
    for derive in (False, True):
        out = torch.full((batch, heads, head_dim), 7.0, dtype=torch.bfloat16, device=device)
        lse_out = torch.full((batch, heads), 5.0, device=device)
        chunks = torch.full((batch, 2), -7, dtype=torch.int32) if derive else torch.tensor(table, dtype=torch.int32)
        lengths = src._replace(lens=src.lens.to(device), kv_indptr=None if src.kv_indptr is None
                               else src.kv_indptr.to(device)) if derive else None
        merge_triton.merge_slots(o, lse, chunks.to(device), out, lse_out, lengths=lengths, **merge_args)
        results.append((out.cpu(), lse_out.cpu()))
    return results


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("rows", [1, 4])
@pytest.mark.parametrize("case", ["one-long", "uniform", "ragged-grows", "short-and-empty", "cut-mixed"])
def test_chunk_ranges_derived_from_the_lengths_match_the_table(device, case, rows, paged):
    """``lengths`` (the merge derives each sequence's chunk range from the lengths, bench/NOTES.md §61) against the
    kernel's chunk table built by the host mirror of its schedule: the same merged rows, bit for bit, and rows of
    one chunk untouched; a uniform batch, one long sequence among short ones (the chunk grows once to fit the
    slots), a ragged batch of 40 on 132 SMs' plan with room, short and empty sequences, and a short batch in a large
    cache cut in chunks of 256 (the plan's short-batch bound; bench/NOTES.md §118, §119)."""
    heads, head_dim = 4, 32
    lengths, capacity, sms = {
        "one-long": ([131072] + [4096] * 7, 131072, 132),
        "uniform": ([8192] * 8, 8192, 132),
        "ragged-grows": (torch.randint(0, 20000, (40,), generator=torch.Generator().manual_seed(8)).tolist(), 20000, 132),
        "short-and-empty": ([0, 700, 1, 0, 5000, 513], 8192, 4),
        "cut-mixed": ([1024, 300, 512, 0, 257, 513, 600, 1, 4096, 400], 131072, 132),
    }[case]
    num_slots, table, src = _derive_case(lengths, capacity, sms, paged)
    if case == "cut-mixed":
        assert src.short_tokens == 256 * 66 and [c for _, c in table] == [4, 2, 2, 1, 2, 3, 3, 1, 16, 2]
    assert max(c for _, c in table) > 1, "something to merge"
    (t_out, t_lse), (d_out, d_lse) = _merge_by_table_and_lengths(num_slots, table, src, heads, head_dim, device, 9,
                                                                 rows=rows, expected=2)
    assert torch.equal(t_out, d_out) and torch.equal(t_lse, d_lse)
    for b, (_, count) in enumerate(table):
        assert bool((d_out[b] == 7.0).all()) == (count <= 1), f"sequence {b} ({count} chunks)"


@pytest.mark.parametrize("short, min_chunk, chunks", [(True, 256, 4), (False, 512, 2)])
def test_derived_ranges_follow_the_plans_least_chunk(device, short, min_chunk, chunks):
    """Two sequences of 1024 tokens in a 32K cache over 2 KV heads on 132 SMs: the plan's 64 chunks (128 CTAs, at most
    one an SM) ask for chunks shorter than 256 tokens, so the plan's least chunk decides: 4 chunks of 256 a sequence
    (``plan_min_chunk`` 256, the default), or 2 of 512 (``short_chunks=False``, the plans before session 59). The
    ranges derived from the lengths merge as the table does, bit for bit."""
    num_slots, table, src = _derive_case([1024] * 2, 32768, 132, False, short=short)
    assert [c for _, c in table] == [chunks] * 2 and src.min_chunk == min_chunk
    (t_out, t_lse), (d_out, d_lse) = _merge_by_table_and_lengths(num_slots, table, src, 4, 32, device, 3)
    assert torch.equal(t_out, d_out) and torch.equal(t_lse, d_lse) and not (d_out == 7.0).any()


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("lengths, short_tokens, chunks", [([4096] * 8, True, [16] * 8), ([4096] * 8, False, [8] * 8),
                                                           ([1024] + [512] * 7, True, [4] + [2] * 7),
                                                           ([512] * 7 + [300], True, [1] * 8)])
def test_derived_ranges_take_the_plans_short_batch_bound(device, paged, lengths, short_tokens, chunks):
    """Eight sequences of 4096 tokens in a 128K cache at one KV head on 132 SMs: the plan, made for the capacity, has
    a least chunk of 512 (8 chunks a sequence); with its short-batch bound (``plan_short_tokens``: 256 x 132 tokens)
    the batch's 32K tokens take chunks of 256 (16 a sequence, 128 CTAs), as the same lengths in a 4K cache do. A
    batch whose longest sequence is past 512 takes them too, for every sequence in it (bench/NOTES.md §119); one
    whose sequences are all at most 512 keeps one chunk a sequence. The ranges derived from the lengths merge as the
    table does, bit for bit."""
    num_slots, table, src = _derive_case(lengths, 131072, 132, paged, page=256, num_kv_heads=1,
                                         short_tokens=short_tokens)
    assert [c for _, c in table] == chunks and src.min_chunk == 512
    assert src.short_tokens == (256 * 132 if short_tokens else 0)
    (t_out, t_lse), (d_out, d_lse) = _merge_by_table_and_lengths(num_slots, table, src, 4, 32, device, 4)
    assert torch.equal(t_out, d_out) and torch.equal(t_lse, d_lse)
    for b, count in enumerate(chunks):  # a sequence of one chunk: its CTA writes the row, the merge leaves it
        assert bool((d_out[b] == 7.0).all()) == (count == 1), f"sequence {b} ({count} chunks)"


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("num_kv_heads, long_chunks", [(1, 128), (2, 64)])
def test_derived_ranges_take_the_plans_long_chunk(device, paged, num_kv_heads, long_chunks):
    """One 512K-token sequence among seven of 4096 in a 512K cache on 132 SMs (bench/NOTES.md §106): at one KV head
    the plan's long chunk is 4096 and the long sequence takes 128 chunks (32 of 16K before), at two it is 8192 and
    64; the ranges derived from the lengths merge as the table does, bit for bit."""
    num_slots, table, src = _derive_case([1 << 19] + [4096] * 7, 1 << 19, 132, paged, page=256,
                                         num_kv_heads=num_kv_heads)
    assert table[0][1] == long_chunks and src.long_chunk == 4096 * 128 // long_chunks
    (t_out, t_lse), (d_out, d_lse) = _merge_by_table_and_lengths(num_slots, table, src, 4, 32, device, 5)
    assert torch.equal(t_out, d_out) and torch.equal(t_lse, d_lse)


@pytest.mark.parametrize("paged", [False, True])
def test_derived_ranges_clamp_lengths_as_the_kernel_does(device, paged):
    """Raw lengths past what the cache holds derive the ranges of the clamped lengths (the kernel's clamps):
    contiguous, -5 and 9000 in a cache of 4096 are 0 and 4096; paged, a last-page length above the page is
    the page, a kv_indptr past kv_indices' entries is clipped to it."""
    heads, head_dim = 4, 32
    if paged:
        clamped = [4096, 1000, 0, 3000]  # the lengths the kernel sees
        # sequence 0: 256 pages, last-page length 40 (> 16: a full page); sequence 3: its pages run past the
        # 300 + 188 = 488 listed entries, clipped there
        raw = ([40, 1000 - 62 * 16, 0, 3000 - 187 * 16], [0, 256, 319, 319, 999], 319 + 188)
        num_slots, table, src = _derive_case(clamped, 4096, 132, True, clamp=raw)
    else:
        clamped = [0, 4096, 1000, 4096]
        num_slots, table, src = _derive_case(clamped, 4096, 132, False, clamp=([-5, 9000, 1000, 4096], None, 0))
    (t_out, t_lse), (d_out, d_lse) = _merge_by_table_and_lengths(num_slots, table, src, heads, head_dim, device, 10)
    assert torch.equal(t_out, d_out) and torch.equal(t_lse, d_lse)
    assert max(c for _, c in table) > 1


def test_derived_ranges_refuse_what_they_cannot_take():
    o, lse = _partials(8)
    out, lse_out = torch.empty(2, HEADS, HEAD_DIM, dtype=torch.bfloat16), torch.empty(2, HEADS)
    table = torch.zeros(2, 2, dtype=torch.int32)
    good = merge_triton.ChunkLengths(torch.tensor([5, 6], dtype=torch.int32), None, 4096, 0, 0, 4)
    with pytest.raises(ValueError, match="lengths: expected a length-aware plan"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, 2, lengths=good)
    with pytest.raises(ValueError, match="lengths: expected a length-aware plan"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, lengths=good._replace(target_chunks=0))
    with pytest.raises(ValueError, match="min_chunk 256 or 512, .* min_chunk 384"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, lengths=good._replace(min_chunk=384))
    with pytest.raises(ValueError, match="long_chunk 0 or a multiple of 256 up to 32768 and .* long_chunk 300"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, lengths=good._replace(long_chunk=300))
    with pytest.raises(ValueError, match="short_tokens 0 to 2\\^31 - 1, .* short_tokens -1"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, lengths=good._replace(short_tokens=-1))
    with pytest.raises(ValueError, match=r"lengths.lens: expected a contiguous int32 \[2\] tensor"):
        merge_triton.merge_slots(o, lse, table, out, lse_out, lengths=good._replace(lens=torch.tensor([5, 6])))
    with pytest.raises(ValueError, match=r"lengths.kv_indptr: expected a contiguous int32 \[3\] tensor"):
        merge_triton.merge_slots(o, lse, table, out, lse_out,
                                 lengths=good._replace(kv_indptr=torch.zeros(2, dtype=torch.int32), page_size=16))
    with pytest.raises(ValueError, match="lengths.page_size: expected a power of two"):
        merge_triton.merge_slots(o, lse, table, out, lse_out,
                                 lengths=good._replace(kv_indptr=torch.zeros(3, dtype=torch.int32), page_size=12))
