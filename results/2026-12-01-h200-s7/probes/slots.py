"""Grid slots vs chunk target: P0 (today: num_slots = target = batch x n) against P1 (num_slots = batch x n
+ batch, target = batch x n: room for a ragged batch's long sequences, empty slots on uniform ones).
plan.run CUDA-graph replay, L2 flushed before each, median of 60 (us); P1 checked against the fp64 reference."""
import statistics, sys, torch, foscar
sys.path.insert(0, ".")
from foscar.kernels import decode_cuda, splits
from bench.lengths import WorkloadSpec
dev = torch.device("cuda"); K = 1024
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
orig = splits.plan_work
def p1(batch, num_kv_heads, max_seq_len, num_sms, num_splits=None):
    slots, fixed, target = orig(batch, num_kv_heads, max_seq_len, num_sms, num_splits)
    return (slots + batch, fixed, target) if num_splits is None else (slots, fixed, target)
cases = [("uniform", 1, 8 * K, 8 * K), ("uniform", 8, 4 * K, 4 * K), ("uniform", 32, 8 * K, 8 * K), ("uniform", 32, 32 * K, 32 * K),
         ("uniform", 64, 8 * K, 8 * K), ("capacity", 8, 4 * K, 128 * K), ("one-long", 8, 128 * K, 128 * K),
         ("lognormal", 8, 32 * K, 32 * K), ("lognormal", 64, 32 * K, 32 * K)]
for name, b, ctx, cap in cases:
    lens = WorkloadSpec(name, seed=0, short_len=4096, capacity=cap if name == "capacity" else None).lengths(b, ctx)
    g = torch.Generator(device=dev).manual_seed(0)
    k = torch.randn(b, 8, cap, 128, device=dev, dtype=torch.bfloat16, generator=g)
    cache = foscar.quantize_kv(k, k, 2, 128, seq_lens=torch.tensor(lens, dtype=torch.int32, device=dev)); del k
    q = torch.randn(b, 32, 128, device=dev, dtype=torch.bfloat16, generator=g)
    res = {}
    for pol, fn in (("P0", orig), ("P1", p1)):
        decode_cuda.plan_work = fn
        plan = foscar.plan_decode(cache, 32, backend="cuda")
        res[pol] = gtime(lambda: plan.run(q, cache))
        if pol == "P1":
            out = plan.run(q, cache).double()
            ref = foscar.reference_decode(q, cache)
            err = max(float((out[i] - ref[i]).norm() / ref[i].norm()) for i in range(b) if lens[i] > 0)
            res["err"] = err
            res["slots"] = plan._o_part.shape[0]
    decode_cuda.plan_work = orig
    print(f"{name} {b} x {ctx} (cache {cap}, T={sum(lens)}): P0 {res['P0']:.2f} us, P1 {res['P1']:.2f} us ({res['slots']} slots), P1 rel err {res['err']:.2e}", flush=True)
