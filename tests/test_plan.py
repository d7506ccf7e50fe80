"""plan_decode + DecodePlan.run: the same numbers as foscar.decode, launch-only calls,
clear errors when a call does not match its plan."""

import pytest
import torch

import foscar
from tests.test_decode_triton import _case


@pytest.fixture(autouse=True)
def _one_merge(monkeypatch):
    """One split merge for plans and one-shot decodes alike (a one-shot decode takes the merge kernel where
    FOSCAR_MERGE is unset, plans the in-kernel merge: bench/NOTES.md §80), so that their outputs compare bit for bit;
    a test may set another; a build without the in-kernel merge runs the merge kernel for both."""
    from foscar.kernels import decode_cuda

    monkeypatch.setenv("FOSCAR_MERGE", "fused" if decode_cuda.FUSED_MERGE_BUILT else "kernel")


def _pair(device, **kw):
    args = dict(batch=2, num_qo_heads=4, num_kv_heads=2, head_dim=128, seq_lens=[150, 33], bits=2, group_size=64)
    args.update(kw)
    return _case(device, **args)


def test_run_matches_decode_and_reuses_its_buffers(device):
    q, cache = _pair(device)
    plan = foscar.plan_decode(cache, q.shape[1], num_splits=3)
    out, lse = plan.run(q, cache, return_lse=True)
    ref_out, ref_lse = foscar.decode(q, cache, num_splits=3, return_lse=True)
    assert torch.equal(out, ref_out) and torch.equal(lse, ref_lse)
    # the Triton kernel caps the count at its 128-token tiles (150 tokens: 2); the CUDA kernel keeps the fixed count
    assert out is plan.out and lse is plan.lse and plan.num_splits == (2 if plan.kernel == "triton" else 3)
    q2, cache2 = _pair(device, seq_lens=[7, 150], seed=5)  # same layout, other contents and lengths
    again = plan.run(q2, cache2)
    assert again is out  # the plan's buffer, overwritten
    assert torch.equal(again, foscar.decode(q2, cache2, num_splits=3))


def test_one_shot_decode_plans_with_the_merge_kernel_by_default(device, monkeypatch):
    """foscar.decode makes its one-call plan with merge_default="kernel" (a fused plan made for one call would zero
    its counters with a memset every call, bench/NOTES.md §80); plan_decode keeps the fused default."""
    import importlib

    decode_mod = importlib.import_module("foscar.decode")  # the module (foscar.decode the attribute is the function)

    seen = []
    real = decode_mod._plan
    monkeypatch.setattr(decode_mod, "_plan", lambda *a, **kw: seen.append(kw.get("merge_default", "fused")) or real(*a, **kw))
    q, cache = _pair(device)
    foscar.decode(q, cache)
    foscar.plan_decode(cache, q.shape[1])
    assert seen == ["kernel", "fused"]


def test_run_on_paged_and_channel_wise_caches(device):
    q, cache = _pair(device, seed=2)
    paged = foscar.paginate(cache, page_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
    assert torch.equal(foscar.plan_decode(paged, 4).run(q, paged), foscar.decode(q, paged))
    g = torch.Generator().manual_seed(3)
    k = torch.randn(2, 2, 150, 128, generator=g).to(device)
    ck = foscar.quantize_kv(k, k, 2, 64, k_layout="channel", k_block=64)
    assert torch.equal(foscar.plan_decode(ck, 4).run(q, ck), foscar.decode(q, ck))


def test_run_refuses_what_was_not_planned(device):
    q, cache = _pair(device)
    plan = foscar.plan_decode(cache, 4)
    with pytest.raises(ValueError, match=r"q: expected shape \[2, 4, 128\], got \[2, 2, 128\]"):
        plan.run(q[:, :2], cache)
    with pytest.raises(ValueError, match="q: expected dtype in {bfloat16}, got float32"):
        plan.run(q.float(), cache)
    with pytest.raises(ValueError, match="last dimension contiguous"):
        plan.run(torch.empty(2, 4, 256, dtype=torch.bfloat16, device=q.device)[:, :, ::2], cache)
    _, longer = _pair(device, seq_lens=[300, 33])  # max_seq_len 300: another layout
    with pytest.raises(ValueError, match=r"cache: max_seq_len differs from the plan's \(planned 150, got 300\)"):
        plan.run(q, longer)
    _, int4 = _pair(device, bits=4)
    with pytest.raises(ValueError, match=r"cache: bits differs from the plan's \(planned 2, got 4\); make a new plan"):
        plan.run(q, int4)


def test_plan_checks_its_arguments(device):
    _, cache = _pair(device)
    with pytest.raises(ValueError, match="num_qo_heads: expected a positive int, got 0"):
        foscar.plan_decode(cache, 0)
    with pytest.raises(ValueError, match="multiple of num_kv_heads=2"):
        foscar.plan_decode(cache, 3)
    with pytest.raises(ValueError, match="num_splits"):
        foscar.plan_decode(cache, 4, num_splits=-1)
    with pytest.raises(ValueError, match="operand: expected one of"):
        foscar.plan_decode(cache, 4, operand="fp4")


@pytest.mark.gpu
def test_gpu_run_in_a_cuda_graph():
    """A captured run replays with new query values (what a serving engine does)."""
    dev = torch.device("cuda")
    q, cache = _pair(dev, num_qo_heads=32, num_kv_heads=8, seq_lens=[4096, 1000])
    plan = foscar.plan_decode(cache, 32)
    plan.run(q, cache)  # compile / first launch outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, cache)
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(plan.out, foscar.decode(q, cache))


@pytest.mark.gpu
@pytest.mark.parametrize("lens, paged", [([16] * 8, False), ([4096, 1000], False), ([4096, 1000, 0, 77], True)])
def test_gpu_pdl_launch_keeps_the_output_back_to_back(monkeypatch, lens, paged):
    """The decode kernel launched with programmatic dependent launch (``FOSCAR_PDL``, read when a plan is made;
    bench/NOTES.md §73) gives the output of a plain launch bit for bit, eagerly and in a CUDA graph of back-to-back
    runs of one plan (each decode scheduled while the previous run's decode still runs, or as its merge ends, and
    overwriting the partials the previous run's kernels read): one-chunk sequences (no merge kernel), split
    sequences, a paged cache with an empty sequence."""
    dev = torch.device("cuda")
    q, cache = _pair(dev, batch=len(lens), num_qo_heads=32, num_kv_heads=8, seq_lens=lens, seed=len(lens))
    if paged:
        cache = foscar.paginate(cache, page_size=16, shuffle=True, generator=torch.Generator().manual_seed(1))
    queries = [torch.randn(q.shape, generator=torch.Generator().manual_seed(10 + i)).to(q) for i in range(3)]
    results = {}
    for knob in ("0", "1"):
        monkeypatch.setenv("FOSCAR_PDL", knob)
        plan = foscar.plan_decode(cache, 32, backend="cuda")
        assert plan.pdl is (knob == "1")
        if knob == "1":  # never behind a merge that derives its ranges from the lengths (its programs may not wait)
            monkeypatch.setenv("FOSCAR_MERGE_FROM_LENGTHS", "1")
            derived = foscar.plan_decode(cache, 32, backend="cuda")
            assert not (derived.pdl and derived.merge_from_lengths)
            monkeypatch.delenv("FOSCAR_MERGE_FROM_LENGTHS")
        eager = [tuple(t.clone() for t in plan.run(x, cache, return_lse=True)) for x in queries]  # each run's own
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for x in queries:  # back to back, one plan: the last run's output is left
                plan.run(x, cache)
        plan.out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        results[knob] = (eager, plan.out.clone())
    ref = foscar.decode(queries[-1], cache, backend="cuda")
    for knob in ("0", "1"):
        eager, replayed = results[knob]
        assert torch.equal(replayed, eager[-1][0]) and not torch.isnan(replayed).any()
        assert torch.equal(eager[-1][0], ref)
    for (o0, l0), (o1, l1) in zip(results["0"][0], results["1"][0]):
        assert torch.equal(o0, o1) and torch.equal(l0, l1)


@pytest.mark.gpu
def test_gpu_graph_of_a_padded_launch_replays_after_an_unpadded_one(monkeypatch):
    """A plan held to one CTA an SM (its launch's dynamic shared memory padded, ``FOSCAR_MAX_CTAS_PER_SM``) captured
    in a CUDA graph replays correctly after another plan of the same kernel instance launched unpadded: ``launch()``
    only ever raises the kernel's max-dynamic-shared-memory attribute (``csrc/folded_decode_sm90.cuh``), so the
    captured launch's size stays allowed. (The instance, INT2 G=64 D=128 with 4 query heads a KV head, fits more than
    one CTA an SM unpadded, by its registers and shared memory, so that k = 1 pads. The old launch, which lowered the
    attribute, passed this test too on driver 580: bench/NOTES.md §74.)"""
    dev = torch.device("cuda")
    q, cache = _pair(dev, num_qo_heads=32, num_kv_heads=8, seq_lens=[4096, 1000])
    monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "1")
    padded = foscar.plan_decode(cache, 32, backend="cuda")
    monkeypatch.setenv("FOSCAR_MAX_CTAS_PER_SM", "0")
    plain = foscar.plan_decode(cache, 32, backend="cuda")
    assert (padded.max_ctas_per_sm, plain.max_ctas_per_sm) == (1, 0)
    padded.run(q, cache)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        padded.run(q, cache)
    q.copy_(torch.randn_like(q))
    ref = plain.run(q, cache).clone()  # the unpadded launch, after the capture
    padded.out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(padded.out, ref) and not torch.isnan(ref).any()
    assert torch.equal(plain.run(q, cache), ref)  # and the unpadded plan again after the replay
