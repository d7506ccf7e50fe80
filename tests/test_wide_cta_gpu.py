"""Wide CTAs on the CUDA kernel (bench/NOTES.md §50, DESIGN §10): CTAs of 8 and 12 warps (groups of 4, each
streaming a contiguous run of the chunk, merged in shared memory) against the fp64 reference and against
4-warp CTAs, on ragged lengths, contiguous and paged, token- and channel-wise K, BF16 and FP8 operands; the
plan's choice; the binding's refusal of a count the instance lacks. GPU only; the choice itself is checked
on the CPU in tests/test_splits.py."""

import pytest
import torch

import foscar
from tests.test_decode_triton import _case

pytestmark = pytest.mark.gpu

LENS = [40000, 4096, 0, 1, 300, 4096, 257, 4095]


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def _run(monkeypatch, warps, q, cache, operand="bf16", method="folded", num_splits=None):
    monkeypatch.setenv("FOSCAR_CTA_WARPS", str(warps))
    plan = foscar.plan_decode(cache, q.shape[1], backend="cuda", operand=operand, method=method, num_splits=num_splits)
    plan.out.fill_(float("nan"))
    out, lse = plan.run(q, cache, return_lse=True)
    return plan, out.clone(), lse.clone()


@pytest.mark.parametrize("paged", [False, True])
@pytest.mark.parametrize("operand", ["bf16", "fp8"])
@pytest.mark.parametrize("bits", [2, 4])
def test_wide_ctas_match_the_reference(monkeypatch, bits, operand, paged):
    q, cache = _case(torch.device("cuda"), batch=8, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=LENS,
                     bits=bits, group_size=128)
    run_cache = foscar.paginate(cache, 16, shuffle=True) if paged else cache
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    tol = 1e-1 if operand == "fp8" else 1e-2
    _, base, _ = _run(monkeypatch, 4, q, run_cache, operand)
    for warps in (8, 12):
        for num_splits in (None, 3):
            plan, out, lse = _run(monkeypatch, warps, q, run_cache, operand, num_splits=num_splits)
            if plan.merge != "kernel":
                pytest.skip("FOSCAR_MERGE=fused builds have 4-warp CTAs only")
            assert plan.cta_warps == warps
            for b, length in enumerate(LENS):
                if length == 0:
                    assert not out[b].any() and bool(torch.isneginf(lse[b]).all())
                    continue
                assert _rel(out[b], ref[b]) < tol, (warps, num_splits, b, length)
                assert _rel(out[b], base[b]) < 1e-2, (warps, num_splits, b, length)  # 4 warps: another summation order
                if operand == "bf16":
                    assert torch.allclose(lse[b].double(), ref_lse[b], rtol=0, atol=1e-3)


@pytest.mark.parametrize("case", ["int2-g64", "channel-k", "channel-k-paged"])
def test_wide_ctas_in_the_other_wide_instances(monkeypatch, case):
    """INT2 group 64 (held to 3 CTAs per SM by its own bound) and channel-wise K (k_block 32: two K blocks a
    sub-tile)."""
    dev = torch.device("cuda")
    if case == "int2-g64":
        q, cache = _case(dev, batch=8, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=LENS, bits=2,
                         group_size=64)
    else:
        g = torch.Generator().manual_seed(5)
        k = (torch.randn(8, 8, max(LENS), 128, generator=g) * 1.5 + 0.3).to(dev)
        v = torch.randn(8, 8, max(LENS), 128, generator=g).to(dev)
        q = torch.randn(8, 32, 128, generator=g).to(torch.bfloat16).to(dev)
        cache = foscar.quantize_kv(k, v, 2, 128, seq_lens=torch.tensor(LENS, dtype=torch.int32, device=dev), k_block=32)
    run_cache = foscar.paginate(cache, 32, shuffle=True) if case.endswith("paged") else cache
    ref = foscar.reference_decode(q, cache)
    plan, out, _ = _run(monkeypatch, 12, q, run_cache)
    if plan.merge != "kernel":
        pytest.skip("FOSCAR_MERGE=fused builds have 4-warp CTAs only")
    assert plan.cta_warps == 12
    for b, length in enumerate(LENS):
        if length:
            assert _rel(out[b], ref[b]) < 1e-2, (case, b, length)


def test_instances_without_wide_ctas_keep_4_warps(monkeypatch):
    """Per-value reconstruction and group 32 have no wide CTAs: the plan keeps 4 warps whatever is asked, and the
    binding refuses another count with a message that names it."""
    from foscar.kernels import decode_cuda

    q, cache = _case(torch.device("cuda"), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                     seq_lens=[3000, 17], bits=2, group_size=32)
    plan, out, _ = _run(monkeypatch, 12, q, cache)
    assert plan.cta_warps == 4 and decode_cuda.max_cta_warps(cache) == 4
    assert _rel(out, foscar.reference_decode(q, cache)) < 1e-2
    plan, _, _ = _run(monkeypatch, 12, q, cache, method="per-value")
    assert plan.cta_warps == 4
    with pytest.raises(RuntimeError, match="cta_warps"):
        decode_cuda.launch(q, cache, 0.1, plan._o_part, plan._lse_part, plan.out, plan.lse, plan._counters,
                           *plan._schedule, "bf16", plan._seq_chunks, cta_warps=12)
    _, wide_cache = _case(torch.device("cuda"), batch=2, num_qo_heads=8, num_kv_heads=2, head_dim=128,
                          seq_lens=[3000, 17], bits=2, group_size=128)
    assert decode_cuda.max_cta_warps(wide_cache) == 12
    wide = foscar.plan_decode(wide_cache, 8, backend="cuda")
    with pytest.raises(RuntimeError, match="cta_warps: this instance takes 4, 8 or 12"):  # not a multiple of 4
        decode_cuda.launch(q, wide_cache, 0.1, wide._o_part, wide._lse_part, wide.out, wide.lse, wide._counters,
                           *wide._schedule, "bf16", wide._seq_chunks, cta_warps=6)


def test_auto_gives_small_grids_wide_ctas_and_a_captured_plan_follows_the_lengths(monkeypatch):
    from foscar.kernels import splits

    monkeypatch.delenv("FOSCAR_CTA_WARPS", raising=False)
    q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=[8192],
                     bits=2, group_size=128)
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ctas = plan._o_part.shape[0] * 8
    assert plan.cta_warps == splits.cta_warps_choice(ctas, sms, 12 if plan.merge == "kernel" else 4)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, cache)
    for length in (8192, 5000, 1, 0, 700):
        cache.seq_lens.fill_(length)
        plan.out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        if length == 0:
            assert not plan.out.any()
            continue
        assert _rel(plan.out, foscar.reference_decode(q, cache)) < 1e-2, length
