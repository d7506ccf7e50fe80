"""Session 22: what the HBM ceiling probe misses. Reads / copies of several sizes and shapes,
timed by do_bench (as bench/hbm.py does) and by CUDA-graph replay over rotating buffers (as the
bench's rows are timed). Prints one CSV line per measurement."""
import sys
import time

import torch
import triton
import triton.language as tl

from bench.hbm import measure_hbm, _read_stream
from bench.timing import time_gpu, time_graph

dev = torch.device("cuda")
GiB = 1 << 30


@triton.jit
def _read_persistent(X, Out, n_blocks, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for b in tl.range(pid, n_blocks, nprog, num_stages=STAGES):
        offs = b.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(X + offs)
    tl.store(Out + pid, tl.sum(acc, axis=0))


@triton.jit
def _read_hint(X, Out, n_words, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n_words, other=0, cache_modifier=".cg", eviction_policy="evict_first")
    tl.store(Out + pid, tl.sum(x, axis=0))


def persistent(buf, block, warps, per_sm, stages):
    words = buf.view(torch.int32)
    n_blocks = words.numel() // block
    progs = per_sm * torch.cuda.get_device_properties(dev).multi_processor_count
    out = torch.empty(progs, dtype=torch.int32, device=dev)
    return lambda: _read_persistent[(progs,)](words, out, n_blocks, BLOCK=block, STAGES=stages, num_warps=warps)


def hint(buf, block, warps):
    words = buf.view(torch.int32)
    progs = triton.cdiv(words.numel(), block)
    out = torch.empty(progs, dtype=torch.int32, device=dev)
    return lambda: _read_hint[(progs,)](words, out, words.numel(), BLOCK=block, num_warps=warps)


def line(*a):
    print(",".join(str(x) for x in a), flush=True)


t0 = time.time()
line("what", "mode", "bytes_per_call", "shape", "median_us", "tbps")
r = measure_hbm(dev)
line("measure_hbm", "do_bench", GiB, "copy", "", f"{r['copy_tbps']:.4f}")
line("measure_hbm", "do_bench", GiB, "read", "", f"{r['read_tbps']:.4f}")

big = torch.empty(16 * GiB, dtype=torch.uint8, device=dev)
big.view(torch.int64).random_()
shapes = [(4096, 4), (16384, 8), (8192, 4), (32768, 8), (16384, 16)]
# do_bench over one buffer of n bytes (the probe's way), sizes 1..16 GiB
for n in (1 * GiB, 4 * GiB, 16 * GiB):
    for block, warps in shapes[:2]:
        t = time_gpu(_read_stream(big[:n], block, warps), warmup_ms=25, rep_ms=200)
        line("read", "do_bench", n, f"{block}/{warps}", f"{t.median_us:.2f}", f"{n / t.median_us / 1e6:.4f}")
# graph replay over rotating slices (the bench's way), 16 slices
for n in (256 << 20, 1 * GiB):
    k = 16 * GiB // n
    for block, warps in shapes:
        t = time_graph([_read_stream(big[i * n:(i + 1) * n], block, warps) for i in range(k)])
        line("read", "graph", n, f"{block}/{warps}", f"{t.median_us:.2f}", f"{n / t.median_us / 1e6:.4f}")
    t = time_graph([hint(big[i * n:(i + 1) * n], 16384, 8) for i in range(k)])
    line("read-cg-evict", "graph", n, "16384/8", f"{t.median_us:.2f}", f"{n / t.median_us / 1e6:.4f}")
    for block, warps, per_sm, stages in ((4096, 4, 4, 1), (4096, 4, 8, 1), (2048, 4, 8, 3), (4096, 8, 4, 3), (8192, 8, 2, 2)):
        try:
            t = time_graph([persistent(big[i * n:(i + 1) * n], block, warps, per_sm, stages) for i in range(k)])
            line("persistent", "graph", n, f"{block}/{warps}/x{per_sm}/s{stages}", f"{t.median_us:.2f}", f"{n / t.median_us / 1e6:.4f}")
        except Exception as e:  # noqa: BLE001
            line("persistent", "graph", n, f"{block}/{warps}/x{per_sm}/s{stages}", "error", repr(e)[:80])
    # the copy, graph-timed: half the slices source, half destination
    half = k // 2
    fns = [(lambda s=big[i * n:(i + 1) * n], d=big[(half + i) * n:(half + i + 1) * n]: d.copy_(s)) for i in range(half)]
    t = time_graph(fns)
    line("copy", "graph", 2 * n, "copy_", f"{t.median_us:.2f}", f"{2 * n / t.median_us / 1e6:.4f}")
    # torch's own reduction
    t = time_graph([(lambda s=big[i * n:(i + 1) * n]: s.view(torch.int32).sum()) for i in range(k)])
    line("torch.sum", "graph", n, "int32", f"{t.median_us:.2f}", f"{n / t.median_us / 1e6:.4f}")
line("wall_s", "", "", "", "", f"{time.time() - t0:.1f}")
