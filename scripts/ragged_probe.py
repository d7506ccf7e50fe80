"""The CUDA kernel on ragged batches and large caches (issue 11's cases), timed as ``foscar bench``
times (CUDA-graph replay over rotating input copies, every call reading from HBM).

    python scripts/ragged_probe.py OUT_DIR      (a GPU with the CUDA kernel; FOSCAR_PROBE_BITS=2 for INT2 only)

Writes ``OUT_DIR/ragged_probe.csv`` (one row per case, bits and cache kind: median/p20/p80 us,
TB/s over the tokens actually read, the split-KV chunk count) and prints a table. Qwen3-8B shape
(32 query heads, 8 KV heads, head_dim 128), group 128, FOSCAR's default split-KV. The FlashInfer
comparison of the same workloads is ``foscar bench``'s ragged grid; this script isolates the
kernel, for bench/NOTES.md §17 (the before/after of length-aware split-KV). Also times a decode
over a cache whose sequences are all empty (the fixed cost, as scripts/latency_floor.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import torch

import foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from foscar.kernels import decode_cuda, splits

K = 1024
SHAPE = (32, 8, 128)
CASES = [  # (name, lengths, capacity)
    ("8 x 4K", [4 * K] * 8, 4 * K),
    ("8 x 4K in 128K", [4 * K] * 8, 128 * K),
    ("1 x 128K + 7 x 4K", [128 * K] + [4 * K] * 7, 128 * K),
    ("1 x 128K", [128 * K], 128 * K),
    ("8 from 1K to 32K", [1 * K, 2 * K, 4 * K, 8 * K, 12 * K, 16 * K, 24 * K, 32 * K], 32 * K),
    ("64 x 2K in 32K", [2 * K] * 64, 32 * K),
    ("1 x 8K", [8 * K], 8 * K),
    ("8 x 0 (empty)", [0] * 8, 8 * K),
]


def _cache(lengths, capacity, bits, dev, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    b, (qo, kv, d) = len(lengths), SHAPE
    k = torch.randn(b, kv, capacity, d, device=dev, dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, kv, capacity, d, device=dev, dtype=torch.bfloat16, generator=g)
    lens = torch.tensor(lengths, dtype=torch.int32, device=dev)
    cache = foscar.quantize_kv(k, v, bits, 128, seq_lens=lens)
    del k, v
    q = torch.randn(b, qo, d, device=dev, dtype=torch.bfloat16, generator=g)
    return q, cache


def _prepared(q, cache) -> Prepared:
    def make(q, cache):
        plan = foscar.plan_decode(cache, q.shape[1], backend="cuda")
        return lambda: plan.run(q, cache)

    read = cache.bytes_read() if hasattr(cache, "seq_lens") else 0
    return Prepared(fn=make(q, cache), output=lambda: None, bytes=max(read, 1),
                    replica=lambda: make(q.clone(), clone_cache(cache)))


def main(out_dir: str) -> int:
    dev = torch.device("cuda")
    why = decode_cuda.unavailable(dev, SHAPE[0] // SHAPE[1])
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for bits in [int(b) for b in os.environ.get("FOSCAR_PROBE_BITS", "2,4").split(",")]:
        for name, lengths, capacity in CASES:
            q, cache = _cache(lengths, capacity, bits, dev)
            try:  # the length-aware schedule (absent before it existed: scripts/gpu_ab-style old trees)
                slots, fixed, target = decode_cuda.plan_splits(cache, dev)
                extra = []  # the plan's least chunk (session 59 on) and long chunk (session 61's signature; a
                # session-60 tree's raises TypeError below: chunks -1)
                if hasattr(decode_cuda, "plan_min_chunk_of"):
                    extra.append(decode_cuda.plan_min_chunk_of(cache, dev, target))
                if hasattr(decode_cuda, "plan_long_chunk_of"):
                    extra.append(decode_cuda.plan_long_chunk_of(cache, dev, None, fixed))
                if hasattr(decode_cuda, "plan_short_tokens_of"):  # (session 72 on; on by default since 73)
                    extra.append(decode_cuda.plan_short_tokens_of(cache, dev, extra[0]))
                chunks = len(splits.schedule(lengths, slots, fixed, target, *extra))
            except (TypeError, AttributeError):
                chunks = -1
            read = cache.bytes_read()
            for kind in ("contiguous", "paged 16"):
                c = cache if kind == "contiguous" else foscar.paginate(cache, 16, shuffle=True)
                ref = foscar.plan_decode(cache, SHAPE[0], backend="cuda").run(q, cache)  # the same merge as got's
                got = foscar.plan_decode(c, SHAPE[0], backend="cuda").run(q, c)
                ok = bool(torch.equal(got, ref)) if kind == "paged 16" else True
                t = time_fn(rotation(_prepared(q, c), dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
                rows.append(dict(bits=bits, case=name, cache=kind, capacity=capacity, batch=len(lengths),
                                 tokens=sum(lengths), chunks=chunks, median_us=t.median_us, p20_us=t.p20_us,
                                 p80_us=t.p80_us, tb_s=read / t.median_us / 1e6, same_as_contiguous=ok,
                                 timing_mode=t.mode))
                print(rows[-1], flush=True)
            del q, cache
            torch.cuda.empty_cache()
            pd.DataFrame(rows).to_csv(out / "ragged_probe.csv", index=False)
    df = pd.DataFrame(rows)
    print(df.pivot_table(index=["bits", "case", "chunks"], columns="cache", values="median_us", sort=False)
          .round(2).to_string())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1]))
