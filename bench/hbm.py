"""The HBM ceiling, measured once per run: the larger of a copy and a read-only stream.

* read: a Triton kernel that only reads a buffer far larger than L2 (16 GiB by default;
  16-byte loads, one program per 16 KiB or 64 KiB block so that many blocks are in
  flight, one int32 sum written per program so nothing is optimised away); the faster
  of the two shapes;
* copy: a device-to-device copy of the buffer's first half into its second half,
  counting the bytes read plus the bytes written.

Decode attention is a read stream, and on the H200 a read stream runs faster than
a copy (4.36 against 4.24 TB/s over 1 GiB), so the ceiling is the larger of the two.

The buffer is large because every timed call carries a fixed cost besides the stream
(the launch, and presumably the write-back of the lines that ``do_bench``'s L2 flush leaves
dirty; not separated). Measured on an H200 (bench/NOTES.md §60): the read stream took 246 us
over 1 GiB, 943 us over 4 GiB and 3728 us over 16 GiB, which is ~14.5 us + bytes / 4.63 TB/s
(least squares); so 1 GiB read 4.36 TB/s, 4 GiB 4.55 and 16 GiB 4.61 (0.4% below the fit's
4.63). Until session 22 the probe read 1 GiB, and FlashInfer's tensor-core decode read up to
4.63 TB/s against it, up to 4% above it (its rows ``suspect``). Where half the free memory holds less, the buffer halves
and the ceiling is lower by the fixed cost's share (15 us of each call; ``meta.json`` records
the bytes as ``hbm_bytes``).

It is a measured lower bound of what the memory can stream: a kernel that beats it is
flagged ``suspect``, not dropped (bench/results.py). Achieved TB/s of every kernel row is
divided by it (``sol_fraction``): a kernel that claims more bandwidth than the memory
can stream is mis-measured (DESIGN §6). Both figures are timed with
:func:`bench.timing.time_gpu` (do_bench).

The read floor (:func:`read_floor_us`, ``foscar bench --read-floor``) is the same read stream over a row's bytes,
timed as the row is (CUDA-graph replays over its rotating copies): a reference for what reading those bytes takes at
that size and with that timing (from ~100 MiB up; smaller reads are mostly launch and drain).
"""

from __future__ import annotations

import functools

import torch

from bench.timing import time_gpu, time_graph

DEFAULT_BYTES = 16 << 30
MIN_BYTES = 64 << 20
READ_SHAPES = ((4096, 4), (16384, 8))  # the read stream's shapes: (int32 words a program, warps); the faster counts


def measure_hbm(device: torch.device, nbytes: int = DEFAULT_BYTES) -> dict[str, float]:
    """``{"copy_tbps", "read_tbps", "ceiling_tbps", "bytes"}``: TB/s (1e12 bytes/s), medians, and the
    buffer's size in bytes.

    Halves ``nbytes`` (down to 64 MiB) while the buffer would take more than half the free memory.

    Raises:
        ValueError: ``nbytes`` below 64 MiB (the stream would sit in L2 and time the launch).
    """
    if nbytes < MIN_BYTES:
        raise ValueError(f"nbytes: at least {MIN_BYTES} (64 MiB) so the stream is not served from L2, got {nbytes}")
    free, _ = torch.cuda.mem_get_info(device)
    while nbytes > free // 2 and nbytes > MIN_BYTES:
        nbytes //= 2
    nbytes -= nbytes % (1 << 20)  # whole MiB: both halves and every read block stay aligned
    buf = torch.empty(nbytes, dtype=torch.uint8, device=device)
    buf.view(torch.int32).random_()
    half = nbytes // 2
    src, dst = buf[:half], buf[half:]
    copy = time_gpu(lambda: dst.copy_(src), warmup_ms=25, rep_ms=200)
    # two read shapes (more bytes in flight per thread in the second); the faster counts
    read = min(
        (time_gpu(_read_stream(buf, block, warps), warmup_ms=25, rep_ms=200) for block, warps in READ_SHAPES),
        key=lambda t: t.median_us,
    )
    del buf, src, dst
    torch.cuda.empty_cache()
    copy_tbps = 2 * half / (copy.median_us * 1e-6) / 1e12
    read_tbps = nbytes / (read.median_us * 1e-6) / 1e12
    return {"copy_tbps": copy_tbps, "read_tbps": read_tbps, "ceiling_tbps": max(copy_tbps, read_tbps), "bytes": nbytes}


def measure_hbm_tbps(device: torch.device, nbytes: int = DEFAULT_BYTES) -> float:
    """The ceiling alone (TB/s): max of copy and read-only bandwidth, see :func:`measure_hbm`."""
    return measure_hbm(device, nbytes)["ceiling_tbps"]


def read_floor_us(nbytes: int, copies: int, device: torch.device, sustain_s: float = 0.0) -> float | None:
    """The read floor of a row: the median time (us) of the faster of :data:`READ_SHAPES`' read streams (the ceiling's
    two read kernels) over ``nbytes`` bytes (rounded up to whole 64-byte blocks, at most 60 bytes more), timed as
    ``foscar bench`` times a row (:func:`bench.timing.time_graph`: CUDA-graph replays over ``copies`` buffers, called
    in turn; ``copies`` as the row's rotation, :func:`bench.sweep.rotation`). A reference read of those bytes at that
    size, not a bound: a row's ``floor_fraction`` is this over its median, and can pass 1 where the read's launch and
    drain are a large share (a few MiB: the 5 MiB floor of INT2 1 x 8K is 3.3 us, 34% of the ceiling) and a decode
    overlaps consecutive calls (PDL); from ~100 MiB up it is what reading the bytes takes.

    ``sustain_s`` (``foscar bench --sustain-s``): before each read stream's timed replays, that many seconds of untimed
    replays of the same read (:func:`bench.timing.time_graph`), so that a sustained run's floor is timed after the same
    warm-up as its rows (the read's own power state: a plain read draws less power than a decode).

    The ceiling (:func:`measure_hbm`) is a 16 GiB stream; a decode of 160 MiB lasts ~45 us, and the launch and the
    first loads' latency are a larger share of that. Measured on two H200s (bench/NOTES.md §84): 93.5-95% of the
    ceiling at 160 MiB, 96-98% at 320-640 MiB, 99-100% from 1.25 GiB.

    Returns ``None`` where the buffers would leave less than 1 GiB of the free device memory (nothing is read).

    Raises:
        ValueError: ``nbytes`` or ``copies`` below 1.
    """
    if nbytes < 1 or copies < 1:
        raise ValueError(f"nbytes and copies: expected >= 1, got {nbytes} and {copies}")
    words = -(-nbytes // 64) * 16  # whole 64-byte blocks: Triton gives the loads 16 bytes only where n_words % 16 == 0
    free, _ = torch.cuda.mem_get_info(device)
    if 4 * words * copies > free - (1 << 30):
        return None
    bufs = [torch.empty(4 * words, dtype=torch.uint8, device=device) for _ in range(copies)]
    for b in bufs:
        b.view(torch.int32).random_()
    try:
        return min(time_graph([_read_stream(b, block, warps) for b in bufs], sustain_s=sustain_s).median_us
                   for block, warps in READ_SHAPES)
    finally:
        del bufs
        torch.cuda.empty_cache()


@functools.lru_cache(maxsize=None)
def _read_kernel():
    """The read stream's Triton kernel (compiled once per process and shape)."""
    import triton
    import triton.language as tl

    @triton.jit
    def read_kernel(X, Out, n_words, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_words, other=0)
        tl.store(Out + pid, tl.sum(x, axis=0))

    return read_kernel


def _read_stream(buf: torch.Tensor, block: int, num_warps: int):
    """A callable that reads every byte of ``buf`` once (an int32 sum per ``block`` words)."""
    import triton

    kernel = _read_kernel()
    words = buf.view(torch.int32)
    programs = triton.cdiv(words.numel(), block)
    out = torch.empty(programs, dtype=torch.int32, device=buf.device)
    return lambda: kernel[(programs,)](words, out, words.numel(), BLOCK=block, num_warps=num_warps)
