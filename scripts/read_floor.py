"""The fastest read of a decode point's bytes, timed as ``foscar bench`` times the decode: what fraction of the HBM
ceiling any kernel can reach at that size (bench/NOTES.md §84).

``foscar bench`` divides a row's bytes / time by the HBM ceiling (:mod:`bench.hbm`: a read stream over 16 GiB,
timed by ``do_bench``). A decode of 160 MiB (INT2 8 x 32K) lasts ~40 us, and its launch, the first loads' latency
and the last CTAs' tail are a share of that which a 16 GiB stream does not have. This script reads exactly a
point's bytes with read-only Triton kernels of several shapes (no arithmetic but an int32 sum per program), over
the same rotating copies and CUDA-graph replays as the bench (:func:`bench.timing.time_graph`, copies until a round
reads 4x the L2, ``bench.sweep.rotation_copies``), and reports the fastest shape's share of the ceiling
measured in the same process. Shapes:

* ``blocks-B-W``: one program per ``B`` int32 words (16-byte loads), ``W`` warps: many short programs
  (:mod:`bench.hbm`'s own two shapes, those of the ceiling and of ``foscar bench --read-floor``);
* ``grid-P``: ``P`` programs, each streaming one contiguous ``1/P`` of the bytes in 8 KiB steps (4 warps, a
  software-pipelined loop of 3 stages): ``P`` 256 is the decode's own CTA count at INT2 8 x 32K and 32 x 8K, 264 and
  396 are 2 and 3 an SM on 132 SMs.

    python scripts/read_floor.py OUT_DIR                      (the bench's points >= 256K tokens, INT2 and INT4)
    python scripts/read_floor.py OUT_DIR 2x8x32768 167903232  (INT2 8 x 32K's bytes, then a byte count)

Writes ``OUT_DIR/read_floor.csv`` (one row per size and shape: us, TB/s, share of the ceiling) and prints the best
shape per size. Needs a CUDA GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import torch
import triton
import triton.language as tl

from bench.hbm import READ_SHAPES, _read_stream, measure_hbm
from bench.sweep import rotation_copies
from bench.timing import time_graph

# the bench's uniform points of >= 256K tokens, (bits, batch, context): bytes from bench.plan.call_bytes at the h100 /
# h200 presets' shape (Qwen3-8B: 32 query heads, 8 KV heads, head_dim 128, G=128), the bench's own `bytes` column
POINTS = [(bits, batch, context) for bits in (2, 4) for batch in (8, 32, 64) for context in (8192, 32768, 131072)
          if batch * context >= 262144]


def point_bytes(bits: int, batch: int, context: int) -> int:
    """Bytes one FOSCAR decode call moves at a uniform point of the presets' shape (:func:`bench.plan.call_bytes`)."""
    from bench.plan import call_bytes
    from bench.workload import Point

    return call_bytes(Point(batch=batch, context=context, bits=bits, group_size=128, num_qo_heads=32, num_kv_heads=8,
                            head_dim=128, page_size=16), True)
GRID_SHAPES = (256, 264, 396, 528, 1056)
GRID_STEP_WORDS = 2048  # 8 KiB a step of a grid-P program


@triton.jit
def _read_grid(X, Out, n_words, per_prog, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * per_prog
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in tl.range(0, per_prog, BLOCK, num_stages=3):
        offs = base + i + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < n_words, other=0)
    tl.store(Out + pid, tl.sum(acc, axis=0))


def _reader(words: torch.Tensor, shape: str):
    """A callable that reads every word of ``words`` once with ``shape`` (see the module docstring)."""
    n = words.numel()
    if shape.startswith("blocks"):  # the ceiling's own read stream (bench.hbm, also the read floor's)
        _, block, warps = shape.split("-")
        return _read_stream(words.view(torch.uint8), int(block), int(warps))
    programs = int(shape.split("-")[1])
    per_prog = triton.cdiv(triton.cdiv(n, programs), GRID_STEP_WORDS) * GRID_STEP_WORDS
    out = torch.empty(programs, dtype=torch.int32, device=words.device)
    return lambda: _read_grid[(programs,)](words, out, n, per_prog, BLOCK=GRID_STEP_WORDS, num_warps=4)


def shapes() -> list[str]:
    return [f"blocks-{b}-{w}" for b, w in READ_SHAPES] + [f"grid-{p}" for p in GRID_SHAPES]


def main(out_dir: str, args: list[str] | None = None) -> int:
    """Time every size (``BITSxBATCHxCONTEXT`` points or byte counts; default :data:`POINTS`); see the module doc."""
    dev = torch.device("cuda")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hbm = measure_hbm(dev)
    ceiling = hbm["ceiling_tbps"]
    print(f"ceiling {ceiling:.3f} TB/s (read {hbm['read_tbps']:.3f}, copy {hbm['copy_tbps']:.3f}) over {hbm['bytes']} B",
          flush=True)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    keys = [tuple(int(v) for v in a.split("x")) if "x" in a else (None, None, None, int(a)) for a in args or []]
    points = [(k[:3], k[3] if len(k) == 4 else point_bytes(*k)) for k in keys] or [(k, point_bytes(*k)) for k in POINTS]
    rows = []
    for key, nbytes in points:
        copies = rotation_copies(nbytes, l2)
        bufs = [torch.randint(-2**31, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=dev) for _ in range(copies)]
        for shape in shapes():
            t = time_graph([_reader(b, shape) for b in bufs])
            tbps = nbytes / (t.median_us * 1e-6) / 1e12
            rows.append({"bits": key[0], "batch": key[1], "context": key[2], "bytes": nbytes, "copies": copies,
                         "shape": shape, "median_us": t.median_us, "tbps": tbps, "sol_fraction": tbps / ceiling,
                         "ceiling_tbps": ceiling})
            print(f"{key} {nbytes:>11} B {shape:>16}: {t.median_us:9.2f} us {tbps:.3f} TB/s {tbps / ceiling:.3f}",
                  flush=True)
        del bufs
        torch.cuda.empty_cache()
    df = pd.DataFrame(rows)
    df.to_csv(out / "read_floor.csv", index=False)
    best = df.loc[df.groupby("bytes")["median_us"].idxmin()]
    print(best[["bits", "batch", "context", "bytes", "shape", "median_us", "sol_fraction"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    raise SystemExit(main(sys.argv[1], sys.argv[2:]))
