"""The HBM ceiling, measured once per run.

A device-to-device copy of a buffer far larger than L2 (1 GiB by default),
timed with :func:`bench.timing.time_gpu`; bandwidth counts the bytes read plus
the bytes written (``2 * nbytes``). Achieved TB/s of every kernel row is divided
by this number (``sol_fraction``), and a row above it is flagged: a kernel that
claims more bandwidth than a plain copy is mis-measured (DESIGN §6).
"""

from __future__ import annotations

import torch

from bench.timing import time_gpu

DEFAULT_COPY_BYTES = 1 << 30


def measure_hbm_tbps(device: torch.device, nbytes: int = DEFAULT_COPY_BYTES) -> float:
    """Median copy bandwidth in TB/s (1e12 bytes/s), read + write counted.

    Halves ``nbytes`` (down to 64 MiB) while the buffers do not fit in free memory.
    """
    free, _ = torch.cuda.mem_get_info(device)
    while 2 * nbytes > free // 2 and nbytes > (64 << 20):
        nbytes //= 2
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    t = time_gpu(lambda: dst.copy_(src), warmup_ms=25, rep_ms=200)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (t.median_us * 1e-6) / 1e12
