"""Timing one zero-argument callable.

* GPU, default: CUDA-graph replay over rotating input copies (:func:`time_graph`).
  The callables (one per independent copy of the inputs, enough copies that their
  bytes exceed several times the L2) are captured into one CUDA graph, a few rounds
  each; every replay is timed with CUDA events and divided by the calls in it.
  Every call reads its inputs from HBM (the working set is far past the L2) and the
  host's launch overhead (Python, argument binding: ~185 us per ``foscar.decode``
  call measured on the H200 machine, ~11 us of device time) is out of the number, as in a
  serving engine that replays decode graphs. The median and 20th/80th percentiles
  are over the replays.
* GPU, fallback when a callable cannot be captured: ``triton.testing.do_bench``
  (CUDA events around each call, L2 flushed before every call by zeroing a 256 MB
  buffer, warm-up first); here host overhead can show at small points.
* CPU smoke: ``time.perf_counter`` median of a few calls. Under the Triton
  interpreter this times Python, not a kernel: it is labelled
  :data:`INTERPRETER_TIMING` and is never a performance number.

Triton is imported inside :func:`time_gpu` only, so importing this module never
fixes the interpreter choice.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass
from typing import Callable

GPU_TIMING = "do_bench"  # CUDA events, L2 flushed before each call
GRAPH_TIMING = "cuda_graph"  # CUDA-graph replay over rotating input copies
INTERPRETER_TIMING = "interpreter"  # perf_counter on CPU
DEVICE_TIMINGS = (GPU_TIMING, GRAPH_TIMING)  # modes that measure the device: bandwidth is meaningful
TIMING_LABELS = {
    GRAPH_TIMING: "CUDA-graph replay over rotating input copies (working set > L2), CUDA events, median of replays",
    GPU_TIMING: "triton.testing.do_bench: CUDA events, L2 flushed before every call, median of all reps",
    INTERPRETER_TIMING: "interpreter timing, not a performance number (perf_counter on CPU)",
}


@dataclass(frozen=True)
class Timing:
    """Microseconds: median and spread of ``reps`` samples."""

    median_us: float
    p20_us: float
    p80_us: float
    reps: int
    mode: str  # GPU_TIMING or INTERPRETER_TIMING


def summarize(samples_us: list[float], mode: str) -> Timing:
    """Median and 20th/80th percentiles (linear interpolation) of the samples."""
    if not samples_us:
        raise ValueError("samples_us: expected at least one sample, got none")
    xs = sorted(samples_us)
    return Timing(
        median_us=statistics.median(xs),
        p20_us=_quantile(xs, 0.2),
        p80_us=_quantile(xs, 0.8),
        reps=len(xs),
        mode=mode,
    )


def _quantile(sorted_xs: list[float], q: float) -> float:
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def time_gpu(fn: Callable[[], object], warmup_ms: float, rep_ms: float) -> Timing:
    """``do_bench`` samples of ``fn`` on the current CUDA device."""
    from triton.testing import do_bench

    samples_ms = do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    return summarize([t * 1e3 for t in samples_ms], GPU_TIMING)


def warm_for_capture(fns: list[Callable[[], object]]) -> None:
    """Call each of ``fns`` once on a side stream (allocator, handles), as a CUDA-graph capture
    needs, and wait for it."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()


def capture_graph(fns: list[Callable[[], object]], rounds: int = 1):
    """A ``torch.cuda.CUDAGraph`` of ``rounds`` rounds over ``fns`` (each called in turn), already
    replayed once (untimed) and synchronized. Call :func:`warm_for_capture` first.

    Raises:
        RuntimeError: from CUDA when a callable cannot be captured (host sync, ...).
    """
    import torch

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(rounds):
            for f in fns:
                f()
    graph.replay()  # untimed
    torch.cuda.synchronize()
    return graph


def time_graph(fns: list[Callable[[], object]], *, replay_ms: float = 10.0, replays: int = 15, sustain_s: float = 0.0,
               on_sustained: Callable[[], object] | None = None,
               during: contextlib.AbstractContextManager | None = None) -> Timing:
    """Median time of one call, from CUDA-graph replays of ``fns`` (each called in turn).

    Args:
        fns: callables reading independent copies of the inputs (rotation), already
            run once (compiled, planned). They must not synchronize with the host.
        replay_ms: rounds over ``fns`` are captured until one replay lasts about this
            long (at least one round), estimated from a one-round graph.
        replays: timed replays (after one untimed replay); the statistics are over these.
        sustain_s: before the timed replays, untimed replays of the same graph back to back for this many seconds
            (``foscar bench --sustain-s``), so that the timed ones run in the power and clock state of sustained
            decoding: an H200 reaches its 700 W cap within a second, and INT2 at the large points slows with the
            clock (bench/NOTES.md §77, §82). The timed replays follow at once (no capture in between, in which an
            idle GPU's clock would recover).
        on_sustained: called between those and the timed replays (the harness reads the SM clock there).
        during: a context manager entered for the timed replays only (the harness's
            :class:`bench.clocks.ClockSampler`).

    Returns:
        :class:`Timing` in microseconds per call, mode :data:`GRAPH_TIMING`.

    Raises:
        RuntimeError: from CUDA when a callable cannot be captured (host sync, ...).
    """
    import torch

    warm_for_capture(fns)

    def replay_ms_of(graph) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    probe = capture_graph(fns, 1)
    one_round = replay_ms_of(probe)
    del probe
    rounds = max(1, round(replay_ms / max(one_round, 1e-3)))
    graph = capture_graph(fns, rounds)
    calls = rounds * len(fns)
    sustain([graph.replay], sustain_s, torch.cuda.synchronize, on_sustained)
    with during if during is not None else contextlib.nullcontext():
        samples = [replay_ms_of(graph) * 1e3 / calls for _ in range(replays)]
    del graph
    return summarize(samples, GRAPH_TIMING)


def sustain(fns: list[Callable[[], object]], seconds: float, sync: Callable[[], object] | None = None,
            on_sustained: Callable[[], object] | None = None) -> int:
    """Call ``fns`` in turn, whole rounds, until ``seconds`` of wall time have passed (``sync`` after each round, so
    that the work is done, not only queued), untimed; then ``on_sustained()``. Returns the calls made (0 for
    ``seconds <= 0``)."""
    calls, end = 0, time.perf_counter() + seconds
    while seconds > 0 and time.perf_counter() < end:
        for f in fns:
            f()
        calls += len(fns)
        if sync is not None:
            sync()
    if on_sustained is not None:
        on_sustained()
    return calls


def time_cpu(fn: Callable[[], object], reps: int) -> Timing:
    """``perf_counter`` samples of ``fn`` (the caller has already run it once)."""
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return summarize(samples, INTERPRETER_TIMING)


def time_fn(
    fns: list[Callable[[], object]], device_type: str, *, warmup_ms: float, rep_ms: float, cpu_reps: int,
    sustain_s: float = 0.0, on_sustained: Callable[[], object] | None = None,
    during: contextlib.AbstractContextManager | None = None,
) -> Timing:
    """Dispatch on the device.

    ``cuda``: :func:`time_graph` over the rotating copies ``fns``; if capture fails,
    :func:`time_gpu` (do_bench with L2 flush) on ``fns[0]``. Otherwise perf_counter.
    ``sustain_s`` (``foscar bench --sustain-s``): that many seconds of untimed calls right before the timed ones
    (:func:`time_graph`'s replays; eager calls, synchronized, on the do_bench fallback and the CPU), then
    ``on_sustained()``. ``during``: a context manager entered for :func:`time_graph`'s timed replays only (the
    harness's clock sampler, a thread); not on the fallbacks, whose eager launches or CPU timing a thread could delay.
    """
    if device_type == "cuda":
        try:
            return time_graph(fns, sustain_s=sustain_s, on_sustained=on_sustained, during=during)
        except Exception:  # not capturable: time it eagerly with the L2 flushed
            import torch

            torch.cuda.synchronize()
            sustain(fns, sustain_s, torch.cuda.synchronize, on_sustained)
            return time_gpu(fns[0], warmup_ms, rep_ms)
    sustain(fns, sustain_s, on_sustained=on_sustained)
    return time_cpu(fns[0], cpu_reps)
