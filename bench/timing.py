"""Timing one zero-argument callable.

* GPU: ``triton.testing.do_bench`` (CUDA events around each call, L2 flushed
  before every call by zeroing a 256 MB buffer, warm-up first). We ask it for every
  sample (``return_mode="all"``) and report the median and the 20th/80th percentiles.
* CPU smoke: ``time.perf_counter`` median of a few calls. Under the Triton
  interpreter this times Python, not a kernel: it is labelled
  :data:`INTERPRETER_TIMING` and is never a performance number.

Triton is imported inside :func:`time_gpu` only, so importing this module never
fixes the interpreter choice.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

GPU_TIMING = "do_bench"  # CUDA events, L2 flushed before each call
INTERPRETER_TIMING = "interpreter"  # perf_counter on CPU
TIMING_LABELS = {
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


def time_cpu(fn: Callable[[], object], reps: int) -> Timing:
    """``perf_counter`` samples of ``fn`` (the caller has already run it once)."""
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return summarize(samples, INTERPRETER_TIMING)


def time_fn(fn: Callable[[], object], device_type: str, *, warmup_ms: float, rep_ms: float, cpu_reps: int) -> Timing:
    """Dispatch on the device: GPU timing for ``cuda``, perf_counter otherwise."""
    if device_type == "cuda":
        return time_gpu(fn, warmup_ms, rep_ms)
    return time_cpu(fn, cpu_reps)
