"""Compile every kernel a sweep will call, once, before ``--devices`` starts its workers.

``foscar bench --devices`` runs one worker process per GPU, and each would compile
the first time it calls a kernel: FOSCAR's CUDA extension (``torch.utils.cpp_extension``,
about a minute, cached under ``TORCH_EXTENSIONS_DIR``), FlashInfer's JIT modules (cached
under its own cache directory, per dtype / head_dim / page size / decode kind) and the
Triton kernels (``~/.triton/cache``). :func:`warm` calls each backend of the config once
on the grid's smallest point of each bits (fewest tokens), for each operand mode, so those
caches are filled by one process; the workers then only load. A real point, not a tiny
one: FlashInfer's planner picks its kernel variant from the sizes too, and a warm-up at 32
tokens spent 8-24 s per FlashInfer module on the H200 compiling variants that no grid point
used (bench/NOTES.md §19).

Why one warm-up rather than a build cache per worker: the workers then share the
caches a single-GPU run uses (a warm cache from an earlier run is reused, and a cold
one costs one compile, not one per GPU), and no two processes compile the same module
at the same time. A kernel whose compile depends on something the tiny point does not
share with the grid's points (none of the current backends: their compiled modules
depend on dtypes, head_dim, group size, page size and the head ratio, which the tiny
point copies) would compile in the workers, where torch's extension loader and Triton's
cache are safe under concurrent builds (a file lock; atomic renames).

Imports torch when called, not at import time.
"""

from __future__ import annotations

import time
from typing import Any

from bench.lazy import torch


def warm(cfg, backends: list, device: "torch.device") -> list[dict[str, Any]]:
    """Build and call every row kind of ``cfg`` once on ``device``, on the grid's smallest point of each bits.

    Args:
        cfg: the resolved :class:`bench.config.BenchConfig`.
        backends: its :class:`bench.backends.Backend` list.
        device: the CUDA device to compile on.

    Returns:
        One record per (kernel, bits, operand): ``{"kernel", "bits", "operand", "seconds",
        "status"}`` with status ``"ok"``, ``"skipped: <why>"`` or ``"error: <why>"``. A
        failure is not fatal: the workers record the same error in that row.
    """
    from bench.backends import operand_unavailable
    from bench.engine import error_reason
    from bench.points import grid, row_specs
    from bench.workload import build_workload

    records: list[dict[str, Any]] = []
    points = grid(cfg)
    for bits in cfg.bits:
        of_bits = [p for p in points if p.bits == bits]
        if not of_bits:
            continue
        point = min(of_bits, key=lambda p: (p.batch * p.context, p.batch))  # the grid's smallest
        w = build_workload(point, device, cfg.seed, cfg.full_check_max_tokens)
        for be, row_bits, op in row_specs(point, backends, cfg.operand):
            rec: dict[str, Any] = {"kernel": be.name, "bits": row_bits, "operand": op}
            why = be.unavailable(device) or (operand_unavailable(device, op, be.name) if be.quantized else None)
            start = time.perf_counter()
            if why:
                rec["status"] = f"skipped: {why}"
            else:
                try:
                    be.build(w, op).fn()
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                    rec["status"] = "ok"
                except Exception as e:  # the worker will record it in the row
                    rec["status"] = "error: " + error_reason(e)
            rec["seconds"] = round(time.perf_counter() - start, 3)
            records.append(rec)
        del w
    return records
