"""Where the time of a small decode goes: a decode (``plan.run``: the CUDA decode kernel, whose last CTA of each
sequence merges the split-KV partials, or the decode kernel then the Triton merge kernel ``merge_slots``), the
same decode on a cache of the same shapes whose sequences are all empty (the fixed cost: launches, prologue,
partial writes, merge; no KV read), and the launch floor of the timing method itself: one and two launches of a
kernel that does nothing but store one value per program, with the decode kernel's grid (batch x KV heads x
splits programs), timed the same way (bench/NOTES.md §16, §29, §79).

    python scripts/latency_floor.py OUT_DIR     (a GPU with the CUDA kernel; FOSCAR_CSRC etc. as usual)
    python scripts/latency_floor.py OUT_DIR 1x8192 8x32768    (only these BATCHxCONTEXT points, both bit widths)

Writes ``OUT_DIR/latency_floor.csv`` (one row per point, bits, merge and part; microseconds from
CUDA-graph replay over rotating input copies, as ``foscar bench`` times) and prints a table.
Qwen3-8B shape (32 query heads, 8 KV heads, head_dim 128), group 128, the split-KV heuristic.
The two decode parts are timed with each split merge, side by side in one process (plans read FOSCAR_MERGE and
FOSCAR_MERGE_SPECULATE when made): "fused" (in the decode kernel: plans' default), "kernel" (the merge kernel: the
chunk table in one load, then the partials) and "kernel-speculate" (``FOSCAR_MERGE_SPECULATE=1``: a uniform batch's
predicted partials loaded with the table; NOTES §32); a build without the fused merge
(``FOSCAR_NVCC_DEFINES=FOSCAR_FUSED_MERGE=0``) times the last two only. The null launches do not depend on the
merge (their rows: merge "-").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import torch
import triton
import triton.language as tl

import foscar
from bench.backends import Prepared, clone_cache
from bench.sweep import rotation
from bench.timing import time_fn
from bench.workload import Point, build_workload
from foscar.kernels import decode_cuda

POINTS = [(1, 8192), (1, 32768), (8, 4096), (8, 8192), (1, 131072), (8, 32768), (32, 8192), (64, 131072)]
SHAPE = (32, 8, 128)


@triton.jit
def _null_kernel(out_ptr):
    tl.store(out_ptr + tl.program_id(0), 1)


def _null_parts(programs: int, dev: torch.device) -> dict[str, Prepared]:
    """One and two back-to-back launches of a kernel that only stores one int per program: what any
    decode pays for its launches in a CUDA-graph replay, whatever it computes."""
    buf = torch.zeros(programs, dtype=torch.int32, device=dev)

    def one():
        _null_kernel[(programs,)](buf)

    def two():
        _null_kernel[(programs,)](buf)
        _null_kernel[(programs,)](buf)

    return {"one null launch": Prepared(fn=one, output=lambda: None, bytes=4 * programs),
            "two null launches": Prepared(fn=two, output=lambda: None, bytes=8 * programs)}


# the split merges a plan can have: label -> the environment it is made under (plans read both when made)
MERGE_ENV = {"kernel": {"FOSCAR_MERGE": "kernel", "FOSCAR_MERGE_SPECULATE": "0"},  # the merge kernel as it ships (NOTES §32)
             "kernel-speculate": {"FOSCAR_MERGE": "kernel", "FOSCAR_MERGE_SPECULATE": "1"},
             "fused": {"FOSCAR_MERGE": "fused", "FOSCAR_MERGE_SPECULATE": "0"}}


def _plan(cache, num_qo_heads: int, sm_scale: float, merge: str):
    """A CUDA plan whose split merge is ``merge`` (a :data:`MERGE_ENV` label; plans read FOSCAR_MERGE and
    FOSCAR_MERGE_SPECULATE when made: decode_cuda.merge_choice, merge_triton.speculate_choice)."""
    before = {k: os.environ.get(k) for k in MERGE_ENV[merge]}
    os.environ.update(MERGE_ENV[merge])
    try:
        return foscar.plan_decode(cache, num_qo_heads, sm_scale=sm_scale, backend="cuda")
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def _parts(w, merge: str) -> dict[str, Prepared]:
    """The timed callables of one workload with the split merge ``merge``, each with replicas over its own
    input copies."""
    qo = w.q.shape[1]

    def make(part: str, q, cache):
        plan = _plan(cache, qo, w.sm_scale, merge)
        return lambda: plan.run(q, cache)

    empty = clone_cache(w.cache)
    empty.seq_lens.zero_()
    out = {}
    for part, cache in (("decode", w.cache), ("decode, empty cache", empty)):
        rotate = part == "decode"  # the empty cache reads no KV: no rotating copies
        out[part] = Prepared(fn=make(part, w.q, cache), output=lambda: None, bytes=w.cache.bytes_read() + w.io_bytes(),
                             replica=(lambda part=part, cache=cache: make(part, w.q.clone(), clone_cache(cache)))
                             if rotate else None)
    return out


def parse_points(specs: list[str]) -> list[tuple[int, int]]:
    """``BATCHxCONTEXT`` strings (``"8x32768"``) as (batch, context) pairs; none given: :data:`POINTS`.

    Raises:
        ValueError: a spec that is not two positive integers joined by ``x``.
    """
    points = []
    for spec in specs:
        parts = spec.lower().split("x")
        if len(parts) != 2 or not all(x.isdigit() and int(x) > 0 for x in parts):
            raise ValueError(f"latency_floor: point {spec!r}: expected BATCHxCONTEXT, two positive integers (8x32768)")
        points.append((int(parts[0]), int(parts[1])))
    return points or list(POINTS)


def main(out_dir: str, points: list[tuple[int, int]] | None = None) -> int:
    dev = torch.device("cuda")
    why = decode_cuda.unavailable(dev, SHAPE[0] // SHAPE[1])
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    merges = ("kernel", "kernel-speculate") + (("fused",) if decode_cuda.FUSED_MERGE_BUILT else ())
    for bits in (2, 4):
        for batch, context in points or POINTS:
            pt = Point(batch, context, bits, 128, *SHAPE, 16)
            w = build_workload(pt, dev, seed=0, full_check_max_tokens=0)
            plan = foscar.plan_decode(w.cache, SHAPE[0], backend="cuda")
            programs = plan._o_part.shape[0] * SHAPE[1]  # the decode kernel's grid: work slots x KV heads
            timed = [(m, part, prep) for m in merges for part, prep in _parts(w, m).items()]
            timed += [("-", part, prep) for part, prep in _null_parts(programs, dev).items()]
            for merge, part, prep in timed:
                t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
                rows.append(dict(bits=bits, batch=batch, context=context, num_splits=plan.num_splits or 'auto', programs=programs,
                                 merge=merge, part=part,
                                 median_us=t.median_us, p20_us=t.p20_us, p80_us=t.p80_us, timing_mode=t.mode))
            del w
            torch.cuda.empty_cache()
            pd.DataFrame(rows).to_csv(out / "latency_floor.csv", index=False)
    df = pd.DataFrame(rows)
    table = df.pivot_table(index=["bits", "batch", "context", "num_splits", "programs"], columns=["part", "merge"], values="median_us")
    print(table.round(2).to_string())
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        raise SystemExit(2)
    try:
        chosen = parse_points(sys.argv[2:])
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], chosen))
