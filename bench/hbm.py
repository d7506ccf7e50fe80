"""The HBM ceiling, measured once per run: the larger of a copy and a read-only stream.

* copy: a device-to-device copy of a buffer far larger than L2 (1 GiB by default),
  counting the bytes read plus the bytes written;
* read: a Triton kernel that only reads the same buffer (16-byte loads, one program
  per 16 KiB or 64 KiB block so that many blocks are in flight, one int32 sum written
  per program so nothing is optimised away); the faster of the two shapes.

Decode attention is a read stream, and on the H200 a read stream runs faster than
a copy (FlashInfer's tensor-core decode read 4.5 TB/s against a 4.25 TB/s copy in
our first run; this read probe measured 4.44 TB/s), so the ceiling is the larger of
the two. It is a measured lower bound of what the memory can stream: a kernel that
beats it is flagged ``suspect``, not dropped (bench/results.py). Achieved TB/s of every
kernel row is divided by it (``sol_fraction``), and a row above it is flagged: a
kernel that claims more bandwidth than the memory can stream is mis-measured
(DESIGN §6). Both figures are timed with :func:`bench.timing.time_gpu` (do_bench).
"""

from __future__ import annotations

import torch

from bench.timing import time_gpu

DEFAULT_COPY_BYTES = 1 << 30


def measure_hbm(device: torch.device, nbytes: int = DEFAULT_COPY_BYTES) -> dict[str, float]:
    """``{"copy_tbps", "read_tbps", "ceiling_tbps"}`` in TB/s (1e12 bytes/s), medians.

    Halves ``nbytes`` (down to 64 MiB) while the buffers do not fit in free memory.
    """
    free, _ = torch.cuda.mem_get_info(device)
    while 2 * nbytes > free // 2 and nbytes > (64 << 20):
        nbytes //= 2
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    copy = time_gpu(lambda: dst.copy_(src), warmup_ms=25, rep_ms=200)
    del dst
    # two read shapes (more bytes in flight per thread in the second); the faster counts
    read = min(
        (time_gpu(_read_stream(src, block, warps), warmup_ms=25, rep_ms=200) for block, warps in ((4096, 4), (16384, 8))),
        key=lambda t: t.median_us,
    )
    del src
    torch.cuda.empty_cache()
    copy_tbps = 2 * nbytes / (copy.median_us * 1e-6) / 1e12
    read_tbps = nbytes / (read.median_us * 1e-6) / 1e12
    return {"copy_tbps": copy_tbps, "read_tbps": read_tbps, "ceiling_tbps": max(copy_tbps, read_tbps)}


def measure_hbm_tbps(device: torch.device, nbytes: int = DEFAULT_COPY_BYTES) -> float:
    """The ceiling alone (TB/s): max of copy and read-only bandwidth, see :func:`measure_hbm`."""
    return measure_hbm(device, nbytes)["ceiling_tbps"]


def _read_stream(buf: torch.Tensor, block: int, num_warps: int):
    """A callable that reads every byte of ``buf`` once (an int32 sum per ``block`` words)."""
    import triton
    import triton.language as tl

    @triton.jit
    def _read_kernel(X, Out, n_words, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_words, other=0)
        tl.store(Out + pid, tl.sum(x, axis=0))

    words = buf.view(torch.int32)
    programs = triton.cdiv(words.numel(), block)
    out = torch.empty(programs, dtype=torch.int32, device=buf.device)
    return lambda: _read_kernel[(programs,)](words, out, words.numel(), BLOCK=block, num_warps=num_warps)
