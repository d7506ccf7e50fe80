"""Where does the small-point gap come from? Times plan.run, the decode kernel alone and the merge alone
(CUDA-graph replay, L2 flushed before each replay, median of 60) for this tree (new) or 4ca534b (old).
Usage: python .ab/gap.py new|old [ncu]"""
import sys, statistics, torch, foscar
from foscar.kernels import decode_cuda, merge_triton
tree = sys.argv[1]; under_ncu = len(sys.argv) > 2
K = 1024; dev = torch.device("cuda")
import os
cases = [(1, 8 * K), (8, 4 * K), (1, 32 * K), (1, 128 * K), (32, 8 * K), (8, 32 * K)]
if os.environ.get("GAP_CASES"): cases = [tuple(int(x) for x in c.split("x")) for c in os.environ["GAP_CASES"].split(",")]
flush = torch.empty(512 * 2**20, dtype=torch.uint8, device=dev)
def gtime(fn, reps=60):
    fn(); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    ts = []
    for _ in range(reps):
        flush.zero_()
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)
for b, L in cases:
    g = torch.Generator(device=dev).manual_seed(0)
    k = torch.randn(b, 8, L, 128, device=dev, dtype=torch.bfloat16, generator=g)
    cache = foscar.quantize_kv(k, k, 2, 128); del k
    q = torch.randn(b, 32, 128, device=dev, dtype=torch.bfloat16, generator=g)
    plan = foscar.plan_decode(cache, 32, backend="cuda")
    p = plan
    if tree == "new":
        kern = lambda: decode_cuda.launch(q, cache, p._sm_scale, p._o_part, p._lse_part, p.out, p.lse, p._counters, *p._schedule, p._mode, p._seq_chunks)
        merge = (lambda: merge_triton.merge_slots(p._o_part, p._lse_part, p._seq_chunks, p.out, p.lse)) if p._seq_chunks is not None else (lambda: None)
        extra = f"schedule={p._schedule} slots={p._o_part.shape[0]}"
    else:
        kern = lambda: decode_cuda.launch(q, cache, p._sm_scale, p._o_part, p._lse_part, p._per, p._mode)
        merge = lambda: merge_triton.merge_splits(p._o_part, p._lse_part, p.out, p.lse)
        extra = f"o_part={tuple(p._o_part.shape)} per={p._per}"
    run = lambda: plan.run(q, cache)
    if under_ncu:
        run(); torch.cuda.synchronize()
        torch.cuda.profiler.start(); run(); torch.cuda.synchronize(); torch.cuda.profiler.stop()
        print(f"{tree} {b}x{L}: {extra}", flush=True)
        continue
    ref = foscar.reference.decode_reference(q, cache) if hasattr(foscar, "reference") and hasattr(foscar.reference, "decode_reference") else None
    t_run, t_k, t_m = gtime(run), gtime(kern), gtime(merge)
    t_e = gtime(lambda: None)
    print(f"{tree} {b}x{L}: run {t_run:.2f} kernel {t_k:.2f} merge {t_m:.2f} empty {t_e:.2f} us  {extra}", flush=True)
