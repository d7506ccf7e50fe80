"""The cache as six token-major tensors against one buffer of 64-token blocks: issue 12's layout probe (bench/NOTES.md §87).

GPU only. The decode reads a (sequence, KV head) of a contiguous token-wise cache as six streams: K codes, V codes and
four scale arrays (at INT2 G=128 a warp's 64-token step reads 2 KB, 2 KB and four 256-byte runs). A kernel built with
``FOSCAR_NVCC_DEFINES="FOSCAR_TILE_PROBE=1"`` instead reads one buffer of 64-token blocks ``[K codes | V codes | ks |
kz | vs | vz]`` (5 KB a block at INT2 G=128) at ``k_codes``; its other instances and every copy's shared-memory layout
are the default build's. This script times the same points either way, as ``foscar bench`` times (CUDA-graph replays
over rotating copies, :func:`bench.timing.time_fn`), after checking each output against the fp64 reference:

    python scripts/tile_layout_probe.py t 0 t0.csv                                     # default build, six tensors
    FOSCAR_NVCC_DEFINES="FOSCAR_TILE_PROBE=1" python scripts/tile_layout_probe.py i 0 i0.csv   # the block buffer

LABEL ``i`` builds the block buffers (the probe build must read them: a default build given them computes garbage,
which the reference check reports); any other label the standard cache. Alternate rounds (t i i t) in separate
processes; both builds' outputs must be bit-identical (the ``sha`` column). Shape: Qwen3-8B's attention (32 query
heads, 8 KV heads, head_dim 128), group size 128.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib

import pandas as pd
import torch

import foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

POINTS = ((2, 8, 32768), (2, 32, 8192), (2, 64, 8192), (2, 8, 131072), (2, 32, 32768), (2, 64, 32768),
          (2, 1, 32768), (4, 8, 32768))  # (bits, batch, context)
NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM, GROUP_SIZE = 32, 8, 128, 128


def block_layout(cache: foscar.QuantizedKVCache) -> foscar.QuantizedKVCache:
    """``cache`` with ``k_codes`` a view of the start of a new uint8 buffer of 64-token blocks per (sequence, KV head),
    which the view keeps alive (what a ``FOSCAR_TILE_PROBE=1`` kernel reads); its other tensors are ``cache``'s (not
    read by that build's contiguous token-wise instances).

    Raises:
        ValueError: ``max_seq_len`` is not a multiple of 64, or the cache has channel-wise K.
    """
    B, H, cap, RB = cache.k_codes.shape
    if cap % 64 or cache.k_block is not None:
        raise ValueError(f"the block layout needs token-wise K and max_seq_len a multiple of 64, got k_block="
                         f"{cache.k_block}, max_seq_len={cap}")
    parts = [cache.k_codes.reshape(B, H, cap // 64, 64 * RB), cache.v_codes.reshape(B, H, cap // 64, 64 * RB)]
    for t in (cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset):
        parts.append(t.contiguous().view(torch.uint8).reshape(B, H, cap // 64, -1))
    buf = torch.cat(parts, dim=-1).contiguous().view(-1)
    return dataclasses.replace(cache, k_codes=buf[:cache.k_codes.numel()].view(B, H, cap, RB))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("label", help="i: the block buffers (a FOSCAR_TILE_PROBE=1 build); else the standard cache")
    ap.add_argument("round", type=int)
    ap.add_argument("out", help="CSV, rewritten after every point")
    args = ap.parse_args()
    dev = torch.device("cuda")
    layout = block_layout if args.label == "i" else clone_cache  # each rotating copy its own cache memory
    rows = []
    for bits, batch, context in POINTS:
        w = build_workload(Point(batch, context, bits, GROUP_SIZE, NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM, 16), dev, 0,
                           1 << 20)
        nbytes = w.cache.bytes_read()

        def make(c, q=w.q):
            plan = foscar.plan_decode(c, NUM_QO_HEADS, backend="cuda")
            return lambda: plan.run(q, c)

        first = block_layout(w.cache) if args.label == "i" else w.cache
        fns = rotation(Prepared(fn=make(first), output=lambda: None, bytes=nbytes,
                                replica=lambda: make(layout(w.cache))), dev)
        out = fns[0]()
        torch.cuda.synchronize()
        err = max_rel_err(out, w.reference, w.rows)
        sha = hashlib.sha256(out.float().cpu().numpy().tobytes()).hexdigest()[:12]
        t = time_fn(fns, "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
        rows.append(dict(m=args.label, rnd=args.round, bits=bits, batch=batch, context=context, median_us=t.median_us,
                         err=err, sha=sha, tb_s=nbytes / t.median_us / 1e6, copies=len(fns)))
        print(rows[-1], flush=True)
        pd.DataFrame(rows).to_csv(args.out, index=False)
        del first, fns, w, out
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
