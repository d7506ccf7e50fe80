"""The split merge inside the CUDA kernel (``FOSCAR_MERGE=fused``, the default; bench/NOTES.md §29, §79) against
the fp64 reference: ragged lengths with empty sequences, sequences of one chunk and of many (more chunks than one
batch of loads, 8 or 16: several batches; 17-32 chunks at head_dim 128 in one round), contiguous and paged caches, a
NaN partial, and the counters left at zero. GPU only, in a build that holds the fused merge (every build but
``FOSCAR_FUSED_MERGE=0``); each plan reads FOSCAR_MERGE, so these tests also run the merge kernel from the same build
to compare."""

import pytest
import torch

import foscar
from foscar.kernels import decode_cuda
from tests.test_decode_triton import _case, _check

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not decode_cuda.FUSED_MERGE_BUILT,
                       reason="the build lacks the fused merge (FOSCAR_FUSED_MERGE=0)"),
]


@pytest.fixture(autouse=True)
def two_levels(monkeypatch):
    """Folded BF16 plans where a sequence may take more than 32 chunks keep the in-kernel merge's two levels
    (``FOSCAR_MERGE_LEVELS=1``), and plans of few two-pass merges (gqa 8 at head_dim 128, at most 16 sequence-KV-head
    pairs) the in-kernel merge (``FOSCAR_MERGE_WIDE=0``), whatever the defaults, since these tests are of the in-kernel
    merge; a test of the other choice sets it itself."""
    monkeypatch.setenv("FOSCAR_MERGE_LEVELS", "1")
    monkeypatch.setenv("FOSCAR_MERGE_WIDE", "0")


@pytest.fixture
def fused(monkeypatch):
    """Plans made in the test merge inside the kernel."""
    monkeypatch.setenv("FOSCAR_MERGE", "fused")


def _decode(q, cache, merge, monkeypatch, **kw):
    monkeypatch.setenv("FOSCAR_MERGE", merge)
    plan = foscar.plan_decode(cache, q.shape[1], backend="cuda", **kw)
    assert plan.merge == merge
    out, lse = plan.run(q, cache, return_lse=True)
    torch.cuda.synchronize()
    assert not plan._counters.any()  # the fused merge leaves its counters at zero (kernel merge: empty)
    return out.clone(), lse.clone()


def _against_reference(q, cache, lens, num_splits=None, tol=1e-2):
    """Decode ``cache`` (contiguous or paged) with a new plan; every sequence against the fp64 reference. The plan
    merges in the kernel where the instance holds the fused merge, else with the merge kernel (NOTES §81)."""
    plan = foscar.plan_decode(cache, q.shape[1], backend="cuda", num_splits=num_splits)
    holds = decode_cuda.fused_merge_in(cache.bits, cache.head_dim, cache.group_size, "bf16",
                                       hasattr(cache, "kv_indptr"), False)
    assert plan.merge == ("fused" if holds else "kernel")
    out, lse = plan.run(q, cache, return_lse=True)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    torch.cuda.synchronize()
    assert not plan._counters.any()  # the last CTA of each (sequence, KV head) wrapped its counter to 0
    for b, length in enumerate(lens):
        if length == 0:
            assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
            continue
        err = float((out[b].double() - ref[b]).norm() / ref[b].norm())
        assert err < tol, f"sequence {b} (length {length}): relative L2 error {err:.3g}"
        assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3), b


@pytest.mark.parametrize("num_splits", [None, 40])
@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("bits, group_size, num_qo_heads", [(2, 128, 32), (4, 64, 32), (2, 32, 64), (4, 32, 64)])
def test_ragged_lengths_against_the_reference(fused, bits, group_size, num_qo_heads, paged, num_splits):
    """gqa 4 and 8 (INT2 G=32 paged takes the merge kernel, NOTES §81; INT4 G=32 keeps gqa 8 paged in the kernel's
    merge); a 70000-token sequence in 10-15 length-aware chunks or 40 fixed splits (the merging CTA
    holds 19 chunks per pass at INT2 D=128 G=128 gqa 4, 9 at gqa 8: one pass or several) beside
    one-chunk and empty sequences."""
    lens = [70000, 0, 4096, 1, 300, 20000]
    q, cache = _case(torch.device("cuda"), batch=6, num_qo_heads=num_qo_heads, num_kv_heads=8, head_dim=128,
                     seq_lens=lens, bits=bits, group_size=group_size)
    _against_reference(q, foscar.paginate(cache, 16, shuffle=True) if paged else cache, lens, num_splits)


def test_int2_group_32_paged_holds_no_fused_merge_and_plans_the_merge_kernel(fused):
    """INT2 D=128 G=32 folded BF16 on a paged cache is built without the in-kernel merge (its main loop lost 5-7%
    with the merge's call compiled in, NOTES §80, §81): its plans take the merge kernel even with
    FOSCAR_MERGE=fused, and a launch without seq_chunks is refused, not run; the other instances hold it."""
    assert not decode_cuda.fused_merge_in(2, 128, 32, "bf16", True, False)
    for args in [(2, 128, 32, "bf16", False, False), (2, 128, 128, "bf16", True, False),
                 (4, 128, 32, "bf16", True, False), (2, 128, 32, "per-value", True, False),
                 (2, 128, 32, "fp8", True, False), (2, 128, 32, "bf16", True, True), (2, 64, 32, "bf16", True, False)]:
        assert decode_cuda.fused_merge_in(*args), args
    with pytest.raises(ValueError, match="mode"):
        decode_cuda.fused_merge_in(2, 128, 32, "int8", True, False)
    lens = [40000, 17, 0]
    q, cache = _case(torch.device("cuda"), batch=3, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=lens, bits=2, group_size=32)
    paged = foscar.paginate(cache, 16, shuffle=True)
    _against_reference(q, paged, lens)
    plan = foscar.plan_decode(paged, 32, backend="cuda")
    assert plan.merge == "kernel"
    counters, _ = decode_cuda.merge_buffers(3, 8, q.device, "fused")
    for pv_pack in (True, False):  # both instances of the format (packed PV at gqa <= 4, and not)
        with pytest.raises(RuntimeError, match="invalid argument"):  # no seq_chunks: the fused merge asked for
            decode_cuda.launch(q, paged, plan._sm_scale, plan._o_part, plan._lse_part, plan.out, plan.lse, counters,
                               *plan._schedule, pv_pack=pv_pack)


@pytest.mark.parametrize("num_splits", [17, 24, 32])
@pytest.mark.parametrize("bits, num_qo_heads, operand, layout", [
    (2, 32, "bf16", "contiguous"), (4, 64, "bf16", "contiguous"), (2, 8, "fp8", "contiguous"),
    (2, 16, "bf16", "contiguous"), (2, 48, "bf16", "contiguous"), (2, 32, "bf16", "paged"), (2, 32, "bf16", "channel")])
def test_17_to_32_chunks_merge_in_one_round(monkeypatch, bits, num_qo_heads, operand, layout, num_splits):
    """17-32 chunks of a sequence at head_dim 128 in an instance bounded at 168 registers (G=128) take the merge in
    one round of loads (merge_rows_warp, NOTES §83). gqa 1 and 2 (warps idle), 4, 6 (warps with one row and with
    two) and 8 (two rows a warp); contiguous, paged (pages of 16, shuffled) and channel-wise K (k_block 64). Fixed
    splits cut the sequences into 17-32 chunks (70000 tokens: 17, 23 or 31; 40000: 23 or 32 at 24 or 32 splits;
    5000: 20 at 24 or 32), fewer (40000 at 17 splits: 16; 5000 at 17: 10; 300: 2), one (1 token) or none (0).
    Against the fp64 reference and against the merge kernel of the same build."""
    lens = [70000, 0, 5000, 1, 300, 40000]
    q, cache = _case(torch.device("cuda"), batch=6, num_qo_heads=num_qo_heads, num_kv_heads=8, head_dim=128,
                     seq_lens=lens, bits=bits, group_size=128)
    if layout == "channel":
        cache = foscar.quantize_kv(*foscar.dequantize_kv(cache), bits, 128, seq_lens=cache.seq_lens,
                                   k_layout="channel", k_block=64)
    elif layout == "paged":
        cache = foscar.paginate(cache, 16, shuffle=True)
    a, la = _decode(q, cache, "fused", monkeypatch, operand=operand, num_splits=num_splits)
    b, lb = _decode(q, cache, "kernel", monkeypatch, operand=operand, num_splits=num_splits)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    for s, length in enumerate(lens):
        if length == 0:
            assert not a[s].any() and bool(torch.isneginf(la[s]).all())
            continue
        err = float((a[s].double() - ref[s]).norm() / ref[s].norm())
        tol = 1e-1 if operand == "fp8" else 1e-2
        assert err < tol, f"sequence {s} (length {length}): relative L2 error {err:.3g}"
        assert float((a[s].float() - b[s].float()).norm() / b[s].float().norm()) < 1e-3, s
        assert torch.allclose(la[s], lb[s], rtol=0, atol=1e-4), s
        if operand == "bf16":
            assert torch.allclose(la[s].double(), ref_lse[s], rtol=0, atol=1e-3), s


def _against_the_reference_and(q, cache, lens, out, lse, *others):
    """Each sequence of ``out`` / ``lse`` (the two-level merge's) against the fp64 reference (an empty one: zeros and
    LSE -inf) and against each ``(out, lse)`` of ``others`` (one merging CTA, the merge kernel) within fp32 rounding."""
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    for s, length in enumerate(lens):
        if length == 0:
            assert not out[s].any() and bool(torch.isneginf(lse[s]).all())
            continue
        err = float((out[s].double() - ref[s]).norm() / ref[s].norm())
        assert err < 1e-2, f"sequence {s} (length {length}): relative L2 error {err:.3g}"
        assert torch.allclose(lse[s].double(), ref_lse[s], rtol=0, atol=1e-3), s
        for other, l_other in others:
            assert float((out[s].float() - other[s].float()).norm() / other[s].float().norm()) < 1e-3, s
            assert torch.allclose(lse[s], l_other[s], rtol=0, atol=1e-4), s


@pytest.mark.parametrize("num_splits", [33, 64, 100, 128])
@pytest.mark.parametrize("num_qo_heads, layout", [(32, "contiguous"), (64, "contiguous"), (32, "paged"),
                                                  (32, "channel")])
def test_more_than_32_chunks_merge_in_two_levels(monkeypatch, num_qo_heads, layout, num_splits):
    """A sequence of more than 32 chunks merges in two levels where the plan gives group counters (folded BF16
    operands; NOTES §108): the last CTA of each 16 chunks merges them, the last of those the groups. Fixed splits cut
    70000 tokens in 33 chunks (two full groups and one of one), 64 (four), 100 (92 of 768 tokens and 8 empty: a
    group of empty chunks) or 128 (8 groups); 40000 in 33-100; shorter sequences in fewer, an empty one in none.
    gqa 4 and 8, contiguous, paged (16-token pages, shuffled) and channel-wise K. Against the fp64 reference, against
    one merging CTA (``FOSCAR_MERGE_TREE=0``) and the merge kernel of the same build; the counters, group counters
    too, left at zero."""
    lens = [70000, 0, 5000, 1, 300, 40000]
    q, cache = _case(torch.device("cuda"), batch=6, num_qo_heads=num_qo_heads, num_kv_heads=8, head_dim=128,
                     seq_lens=lens, bits=2, group_size=128)
    if layout == "channel":
        cache = foscar.quantize_kv(*foscar.dequantize_kv(cache), 2, 128, seq_lens=cache.seq_lens,
                                   k_layout="channel", k_block=64)
    elif layout == "paged":
        cache = foscar.paginate(cache, 16, shuffle=True)
    plan = foscar.plan_decode(cache, num_qo_heads, backend="cuda", num_splits=num_splits)
    assert plan._counters.shape == (6, 8, 1 + -(-num_splits // 16))
    a, la = _decode(q, cache, "fused", monkeypatch, num_splits=num_splits)
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    assert foscar.plan_decode(cache, num_qo_heads, backend="cuda", num_splits=num_splits)._counters.shape == (6, 8)
    one, l_one = _decode(q, cache, "fused", monkeypatch, num_splits=num_splits)
    b, lb = _decode(q, cache, "kernel", monkeypatch, num_splits=num_splits)
    _against_the_reference_and(q, cache, lens, a, la, (one, l_one), (b, lb))


def _long_splits(plan):
    """The split count of a batch of one of 200000 tokens at one KV head planned by itself: 128 (one an SM) on 132 SMs
    (bench/NOTES.md §115); elsewhere the plan's own, which must be more than 32."""
    from foscar.kernels import splits

    if splits.device_sm_count(torch.device("cuda")) == 132:
        return 128
    assert plan.num_splits > 32, plan.num_splits
    return plan.num_splits


def test_a_long_sequence_alone_merges_in_two_levels(monkeypatch):
    """The plans that give a sequence more than 32 chunks by themselves (long chunks, NOTES §105): 200000 tokens at
    one KV head in a fixed plan of 128 splits on 132 SMs (112 chunks of 1792: long chunks of at least 512, NOTES §115;
    48 splits of 4096 before), one group counter per 16 splits, against the reference and one merging CTA."""
    monkeypatch.delenv("FOSCAR_MERGE_TREE", raising=False)
    q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=8, num_kv_heads=1, head_dim=128,
                     seq_lens=[200000], bits=2, group_size=128)
    plan = foscar.plan_decode(cache, 8, backend="cuda")
    assert plan.merge == "fused" and plan.num_splits == _long_splits(plan)
    assert plan._counters.shape == (1, 1, 1 + -(-plan.num_splits // 16))
    a, la = _decode(q, cache, "fused", monkeypatch)
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    one, l_one = _decode(q, cache, "fused", monkeypatch)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    assert float((a.double() - ref).norm() / ref.norm()) < 1e-2
    assert torch.allclose(la.double(), ref_lse, rtol=0, atol=1e-3)
    assert float((a.float() - one.float()).norm() / one.float().norm()) < 1e-3
    assert torch.allclose(la, l_one, rtol=0, atol=1e-4)


@pytest.mark.parametrize("mode", [{"operand": "fp8"}, {"method": "per-value"}])
@pytest.mark.parametrize("num_splits", [None, 64])
def test_fp8_and_per_value_past_32_chunks_take_the_merge_kernel(monkeypatch, mode, num_splits):
    """The FP8 and per-value instances merge on one CTA in the kernel (no two levels, NOTES §108), so where a sequence
    may take more than 32 chunks their plans take the merge kernel (NOTES §110): 200000 tokens alone at one KV head
    (more than 32 long chunks: 128 splits on 132 SMs) or 64 fixed chunks. With ``FOSCAR_MERGE_TREE=0`` they merge on
    one CTA, as before. Both against the fp64 reference and each other; a plan of at most 32 chunks keeps the
    in-kernel merge."""
    monkeypatch.setenv("FOSCAR_MERGE", "fused")
    monkeypatch.delenv("FOSCAR_MERGE_TREE", raising=False)
    q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=8, num_kv_heads=1, head_dim=128,
                     seq_lens=[200000], bits=2, group_size=128)
    plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=num_splits, **mode)
    assert plan.merge == "kernel" and plan._counters.numel() == 0
    assert plan.num_splits == (num_splits or _long_splits(plan))
    assert foscar.plan_decode(cache, 8, backend="cuda", num_splits=32, **mode).merge == "fused"
    out, lse = plan.run(q, cache, return_lse=True)
    out, lse = out.clone(), lse.clone()
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    one_plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=num_splits, **mode)
    assert one_plan.merge == "fused" and one_plan._counters.shape == (1, 1)
    one, l_one = one_plan.run(q, cache, return_lse=True)
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    torch.cuda.synchronize()
    assert not one_plan._counters.any()
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    tol = 1e-1 if mode.get("operand") == "fp8" else 1e-2  # FP8 e4m3 operands (test_17_to_32_chunks_merge_in_one_round)
    assert float((out.double() - ref).norm() / ref.norm()) < tol
    assert float((out.float() - one.float()).norm() / one.float().norm()) < 1e-3
    assert torch.allclose(lse, l_one, rtol=0, atol=1e-4)
    if "method" in mode:
        assert torch.allclose(lse.double(), ref_lse, rtol=0, atol=1e-3)


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("num_splits", [None, 64])
def test_bf16_past_32_chunks_without_the_levels_takes_the_merge_kernel(monkeypatch, paged, num_splits):
    """``FOSCAR_MERGE_LEVELS=0`` (the default since NOTES §111): a folded BF16 plan where a sequence may take more than
    32 chunks takes the merge kernel, as FP8 and per-value plans do: 200000 tokens alone at one KV head (more than 32
    long chunks: 128 splits on 132 SMs) or 64 fixed chunks, contiguous and paged (16-token pages, shuffled). Against the
    fp64 reference and the two levels (``FOSCAR_MERGE_LEVELS=1``); a plan of at most 32 chunks keeps the in-kernel merge
    either way."""
    monkeypatch.setenv("FOSCAR_MERGE", "fused")
    monkeypatch.delenv("FOSCAR_MERGE_TREE", raising=False)
    q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=8, num_kv_heads=1, head_dim=128,
                     seq_lens=[200000], bits=2, group_size=128)
    if paged:
        cache = foscar.paginate(cache, 16, shuffle=True)
    results = {}
    for levels in ("0", "1"):
        if levels == "0":
            monkeypatch.delenv("FOSCAR_MERGE_LEVELS")  # the default (the fixture set 1)
        else:
            monkeypatch.setenv("FOSCAR_MERGE_LEVELS", levels)
        plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=num_splits)
        assert plan.num_splits == (num_splits or _long_splits(plan))
        if levels == "0":
            assert plan.merge == "kernel" and plan._counters.numel() == 0
        else:
            assert plan.merge == "fused" and plan._counters.shape == (1, 1, 1 + -(-plan.num_splits // 16))
        assert foscar.plan_decode(cache, 8, backend="cuda", num_splits=32).merge == "fused"
        out, lse = plan.run(q, cache, return_lse=True)
        torch.cuda.synchronize()
        assert not plan._counters.any()
        results[levels] = out.clone(), lse.clone()
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    (out, lse), (two, l_two) = results["0"], results["1"]
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-2
    assert torch.allclose(lse.double(), ref_lse, rtol=0, atol=1e-3)
    assert float((out.float() - two.float()).norm() / two.float().norm()) < 1e-3
    assert torch.allclose(lse, l_two, rtol=0, atol=1e-4)


def test_a_nan_partial_in_a_group_makes_its_rows_nan(monkeypatch):
    """A NaN K scale in one chunk of a 64-chunk sequence: its group's partial and LSE are NaN, so the rows of its KV
    head are NaN after the second level; the other KV head's rows and the other sequence as one merging CTA's."""
    q, cache = _case(torch.device("cuda"), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[40000, 17], bits=2, group_size=128)
    cache.k_scale[0, 1, 30000] = float("nan")  # sequence 0, KV head 1 (query heads 4..7)
    a, la = _decode(q, cache, "fused", monkeypatch, num_splits=64)
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    b, lb = _decode(q, cache, "fused", monkeypatch, num_splits=64)
    assert torch.isnan(a[0, 4:]).all() and torch.isnan(la[0, 4:]).all()
    assert not torch.isnan(a[0, :4]).any() and not torch.isnan(a[1]).any()
    assert float((a[0, :4].float() - b[0, :4].float()).norm() / b[0, :4].float().norm()) < 1e-3
    assert torch.equal(a[1], b[1])


@pytest.mark.parametrize("head_dim", [64, 256])
def test_two_levels_at_other_head_dims(monkeypatch, head_dim):
    """merge_group's steps at head_dim 64 (8 heads a step of 512 floats) and 256 (2 heads): 64 fixed chunks a
    sequence (4 groups of 16), gqa 8, INT4 G=64. Against the fp64 reference and one merging CTA
    (``FOSCAR_MERGE_TREE=0``); the counters, group counters too, left at zero (NOTES §109)."""
    lens = [70000, 5, 0, 9000]
    q, cache = _case(torch.device("cuda"), batch=4, num_qo_heads=16, num_kv_heads=2, head_dim=head_dim,
                     seq_lens=lens, bits=4, group_size=64)
    assert foscar.plan_decode(cache, 16, backend="cuda", num_splits=64)._counters.shape == (4, 2, 5)
    a, la = _decode(q, cache, "fused", monkeypatch, num_splits=64)
    monkeypatch.setenv("FOSCAR_MERGE_TREE", "0")
    one, l_one = _decode(q, cache, "fused", monkeypatch, num_splits=64)
    _against_the_reference_and(q, cache, lens, a, la, (one, l_one))


@pytest.mark.parametrize("head_dim, num_splits", [(64, None), (256, None), (128, 7)])
def test_other_head_dims_and_fixed_splits(fused, head_dim, num_splits):
    q, cache = _case(torch.device("cuda"), batch=4, num_qo_heads=16, num_kv_heads=2, head_dim=head_dim,
                     seq_lens=[70000, 5, 0, 9000], bits=4, group_size=64)
    plan = foscar.plan_decode(cache, 16, backend="cuda", num_splits=num_splits)
    assert plan.merge == "fused"
    _check(q, cache, backend="cuda", num_splits=num_splits)


@pytest.mark.parametrize("num_qo_heads, num_kv_heads, head_dim, bits, batch, kernel_by_default", [
    (8, 1, 128, 2, 4, True), (16, 2, 128, 4, 4, True), (64, 8, 128, 2, 2, True), (64, 8, 128, 2, 4, False),
    (8, 1, 128, 2, 20, False), (24, 4, 128, 2, 4, False), (32, 8, 128, 2, 2, False), (8, 1, 64, 4, 4, False),
    (32, 8, 256, 2, 2, True), (8, 1, 256, 4, 4, True), (32, 8, 256, 2, 4, False), (16, 8, 256, 4, 2, False)])
@pytest.mark.parametrize("paged", [False, True])
def test_few_wide_merges_take_the_merge_kernel(monkeypatch, num_qo_heads, num_kv_heads, head_dim, bits, batch,
                                               kernel_by_default, paged):
    """``FOSCAR_MERGE_WIDE`` unset (the default since NOTES §116): a plan takes the merge kernel where its merging CTAs
    take two passes over their ``gqa x head_dim`` partials (gqa 8 at head_dim 128, gqa 4-8 at 256) and at most 16
    (sequence, KV head) pairs merge (:func:`decode_cuda.merge_kernel_preferred`), with ``FOSCAR_MERGE=fused`` too,
    for plans and one-shot decodes alike, and keeps the in-kernel merge elsewhere and with ``FOSCAR_MERGE_WIDE=0``.
    Either plan against the fp64 reference (ragged lengths: an empty sequence, one of one
    chunk, several of many; length-aware and 32 fixed chunks) and against the other merge within fp32 rounding."""
    lens = ([8192, 0, 300, 5000] * 5)[:batch]
    q, cache = _case(torch.device("cuda"), batch=batch, num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                     head_dim=head_dim, seq_lens=lens, bits=bits, group_size=64)
    cache = foscar.paginate(cache, 16, shuffle=True) if paged else cache
    gqa = num_qo_heads // num_kv_heads
    assert decode_cuda.merge_kernel_preferred(gqa, head_dim, batch, num_kv_heads) is kernel_by_default
    monkeypatch.setenv("FOSCAR_MERGE", "fused")
    results = {}
    for wide in ("1", "0"):
        monkeypatch.setenv("FOSCAR_MERGE_WIDE", wide)
        for num_splits in (None, 32):
            plan = foscar.plan_decode(cache, num_qo_heads, backend="cuda", num_splits=num_splits)
            assert plan.merge == ("kernel" if kernel_by_default and wide == "1" else "fused"), (wide, num_splits)
            out, lse = plan.run(q, cache, return_lse=True)
            torch.cuda.synchronize()
            assert not plan._counters.any()
            results[wide, num_splits] = out.clone(), lse.clone()
        one_shot = foscar.decode(q, cache, backend="cuda")
        assert torch.equal(one_shot, results[wide, None][0])  # the same merge and plan
    for num_splits in (None, 32):
        _against_the_reference_and(q, cache, lens, *results["1", num_splits], results["0", num_splits])


def test_fused_and_kernel_merge_agree(monkeypatch):
    """Both merges against the fp64 reference and each other (sequence by sequence; NaN fails, an empty sequence
    is zeros with LSE -inf)."""
    lens = [40000] + [4096, 0, 1, 300, 4096, 257, 4095]
    q, cache = _case(torch.device("cuda"), batch=8, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=lens, bits=2, group_size=128)
    a, la = _decode(q, cache, "fused", monkeypatch)
    b, lb = _decode(q, cache, "kernel", monkeypatch)
    assert float((a.float() - b.float()).norm() / b.float().norm()) < 1e-3
    _against_the_reference_and(q, cache, lens, a, la, (b, lb))


def test_one_shot_decode_takes_the_merge_kernel_and_plans_the_fused_merge(monkeypatch):
    """With FOSCAR_MERGE unset, foscar.decode (a plan for one call) merges split sequences with the merge kernel,
    whose buffers need no zeroing, and plan_decode's plans merge in the decode kernel (NOTES §80); same result."""
    from foscar.kernels import merge_triton

    monkeypatch.delenv("FOSCAR_MERGE", raising=False)
    calls = []
    real = merge_triton.merge_slots
    monkeypatch.setattr(merge_triton, "merge_slots", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    q, cache = _case(torch.device("cuda"), batch=2, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[40000, 300], bits=2, group_size=128)
    one_shot = foscar.decode(q, cache, backend="cuda")
    torch.cuda.synchronize()
    assert calls == [1]
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    assert plan.merge == "fused"
    planned = plan.run(q, cache)
    torch.cuda.synchronize()
    assert calls == [1]
    assert float((planned.float() - one_shot.float()).norm() / one_shot.float().norm()) < 1e-3


@pytest.mark.parametrize("num_splits", [None, 24])
def test_a_nan_partial_makes_its_rows_nan_and_leaves_the_others(monkeypatch, num_splits):
    """A NaN K scale in one chunk of a many-chunk sequence (~79 chunks of 512: five batches of 16 loads; with 24
    fixed splits 23 chunks, merged in one round, NOTES §83): that chunk's partial and LSE are NaN, so the
    merged rows of its KV head's query heads are NaN (LSE too); every other row as the merge kernel's."""
    q, cache = _case(torch.device("cuda"), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[40000, 17], bits=2, group_size=128)
    cache.k_scale[0, 1, 30000] = float("nan")  # sequence 0, KV head 1 (query heads 4..7)
    a, la = _decode(q, cache, "fused", monkeypatch, num_splits=num_splits)
    b, lb = _decode(q, cache, "kernel", monkeypatch, num_splits=num_splits)
    assert torch.isnan(a[0, 4:]).all() and torch.isnan(la[0, 4:]).all()
    assert not torch.isnan(a[0, :4]).any() and not torch.isnan(a[1]).any()
    assert float((a[0, :4].float() - b[0, :4].float()).norm() / b[0, :4].float().norm()) < 1e-3
    assert torch.equal(a[1], b[1])  # one chunk: written by its CTA, no merge either way


def test_a_captured_plan_replays_with_growing_lengths(fused):
    """CUDA-graph replays while the lengths change: the counters return to zero after every launch,
    so every replay merges right."""
    q, cache = _case(torch.device("cuda"), batch=4, num_qo_heads=32, num_kv_heads=8, head_dim=128,
                     seq_lens=[65536, 8192, 8192, 8192], bits=2, group_size=128)
    cache.seq_lens.copy_(torch.tensor([100, 200, 300, 400], dtype=torch.int32))
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    assert plan.merge == "fused"
    plan.run(q, cache)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, cache)
    for lens in ([100, 200, 300, 400], [65536, 1, 0, 5000], [60000, 8100, 8192, 7], [0, 0, 0, 0]):
        cache.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        assert not plan._counters.any(), lens
        assert torch.equal(plan.out, foscar.decode(q, cache, backend="cuda")), lens
        ref = foscar.reference_decode(q, cache)  # each replay against fp64, not only against another decode
        for b, n in enumerate(lens):
            got = plan.out[b].double()
            assert (float((got - ref[b]).norm() / ref[b].norm()) < 1e-2) if n else not got.any(), (lens, b)
    cache.seq_lens.copy_(torch.tensor([60000, 8100, 8192, 7], dtype=torch.int32))
    _check(q, cache, backend="cuda")
