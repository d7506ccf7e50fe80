"""The GPU's clocks around every timed row: recorded, judged, never changed.

The harness never sets clocks (no locked clocks, no application clocks): it runs on
the GPU as it is and records what it found. Around every row's timing
(:func:`bench.sweep._run_row`) a :class:`ClockReader` reads, through NVML, the SM
clock (MHz) and the clock event reasons (formerly "throttle reasons": why the clock
is below its maximum), once just before and once just after. The readings go into
``results.csv``:

* ``sm_clock_before_mhz``, ``sm_clock_after_mhz``: the SM clock;
* ``clock_events_before``, ``clock_events_after``: the reasons set, as names joined
  by ``+`` (``"none"``: NVML reported none); empty when nothing was read (no GPU, no
  ``pynvml``, an NVML error);
* ``clock_note``: empty, or why the row's time may be off (:func:`add_clock_notes`);
* ``sm_clock_during_mhz``, ``clock_events_during``: what a :class:`ClockSampler` read every
  :data:`SAMPLE_INTERVAL_S` while the row's timed graph replays ran (the median SM clock of
  its samples; every reason any sample saw; empty on the eager and CPU fallbacks). The
  readings before and after can miss a clock held down only while the kernels run. At the
  points probed NVML's readings were not the SMs' clock under the decode: a CTA spinning on
  ``clock64`` beside the INT2 / INT4 8 x 32K decode read 1806-1810 MHz on an H200 and
  1836-1844 on an H100 (1801-1817 beside FlashInfer BF16 on the H200), while NVML read 1980
  (bench/NOTES.md §97). These two columns are information: no note is made from them (the
  notes, and so ``foscar compare``'s ``ambiguous``, keep the readings before and after).

A row gets a note when (a) a throttling reason (:data:`THROTTLE_REASONS`: power cap,
thermal or hardware slowdown, power brake) was set before or after its timing, or
(b) its SM clock is more than :data:`CLOCK_DROP` (5%) below the median over the
run's rows. The clock judged is the one read just after the timing, at the end of
its sustained load (:func:`judged_clock`); the reading before it may catch the
clock still ramping up from idle (an idle H200 reads ~345-435 MHz) and is used only
where the one after is missing, and never while NVML calls the GPU idle. ``foscar compare`` counts a row whose note is set in either run as
``ambiguous``: never a regression, never an improvement.

``pynvml`` (package ``nvidia-ml-py``) is optional: without it, on CPU, or when NVML
fails, the fields stay empty and nothing else changes.
"""

from __future__ import annotations

import math
import statistics
import threading
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bench.timing import GRAPH_TIMING

CLOCK_COLUMNS = ["sm_clock_before_mhz", "sm_clock_after_mhz", "clock_events_before", "clock_events_after",
                 "clock_note", "sm_clock_during_mhz", "clock_events_during"]  # fmt: skip
SAMPLE_INTERVAL_S = 0.02  # a ClockSampler's pause between readings (a row's 15 timed replays last ~150 ms)
CLOCK_DROP = 0.05  # an SM clock this far below the run's median gets a note

# NVML clock event reason bits (nvml.h: nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*)
EVENT_REASONS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# the reasons that mean the clock was held down while working (the others are settings or idling)
THROTTLE_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                    "hw_power_brake_slowdown")  # fmt: skip
NO_EVENTS = "none"


def event_names(mask: int) -> str:
    """The reasons set in an NVML clock event mask, joined by ``+`` (``"none"`` for 0).

    Unknown bits are named ``0x...`` so that nothing NVML says is dropped.
    """
    names = [name for bit, name in EVENT_REASONS.items() if mask & bit]
    rest = mask & ~sum(EVENT_REASONS)
    if rest:
        names.append(hex(rest))
    return "+".join(names) or NO_EVENTS


@dataclass(frozen=True)
class ClockReading:
    """One NVML reading: the SM clock (MHz) and the clock event reasons (``event_names`` form)."""

    sm_clock_mhz: int
    events: str


class ClockReader:
    """Reads the SM clock and clock event reasons of one GPU; NVML stays open until :meth:`close`.

    Use :meth:`open`; :meth:`read` never raises (an NVML error gives ``None``).
    """

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml = nvml
        self._handle = handle
        # renamed in NVML 12.x; older pynvml only has the "throttle" name
        self._events = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons"
        )

    @classmethod
    def open(cls, uuid: str | None = None, index: int = 0) -> tuple[ClockReader | None, str | None]:
        """``(reader, None)``, or ``(None, why)`` when NVML is missing or fails (then no clock is recorded).

        Args:
            uuid: the GPU's UUID (as torch reports it; right under ``CUDA_VISIBLE_DEVICES``).
            index: NVML index, used when ``uuid`` is ``None``.
        """
        from bench.manifest import _handle, _nvml_reason

        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as e:  # ImportError, NVMLError (no driver)
            return None, _nvml_reason(e)
        try:
            reader = cls(pynvml, _handle(pynvml, uuid, index))
        except Exception as e:
            _shutdown(pynvml)
            return None, _nvml_reason(e)
        return reader, None

    def read(self) -> ClockReading | None:
        """The SM clock and event reasons now; ``None`` if NVML fails."""
        try:
            sm = int(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
            return ClockReading(sm, event_names(int(self._events(self._handle))))
        except Exception:
            return None

    def close(self) -> None:
        _shutdown(self._nvml)


class ClockSampler:
    """Reads a :class:`ClockReader` every ``interval_s`` seconds on a thread while its ``with`` block runs (the
    timed graph replays: :func:`bench.timing.time_fn`'s ``during``); :attr:`readings` holds what it read (failed
    reads left out), one reading each at the block's start and end and those between. Reads only, never sets.

    Each replay is timed by CUDA events around one graph launch, and the main thread waits for it with the GIL
    released, so the thread's few tens of us of Python every ``interval_s`` can delay a replay's launch after its
    start event only where the two coincide: at most that much on one of the 15 replays, whose median is taken. An
    A/A on an H100 (``python -m bench.ab run`` with and without ``--no-sampler``, six FOSCAR points of 7-227 us) moved
    the medians by at most 0.03%, inside the rounds' ~0.1% spread (bench/NOTES.md §98).
    """

    def __init__(self, reader: ClockReader, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self._reader = reader
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.readings: list[ClockReading] = []

    def _take(self) -> None:
        r = self._reader.read()
        if r is not None:
            self.readings.append(r)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._take()

    def __enter__(self) -> ClockSampler:
        self.readings = []
        self._stop.clear()
        self._take()
        self._thread = threading.Thread(target=self._loop, name="foscar-clock-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._take()

    def fields(self) -> dict[str, Any]:
        """The ``results.csv`` columns of :meth:`readings`: ``sm_clock_during_mhz`` (median, MHz, an integer) and
        ``clock_events_during`` (every reason any reading saw, in :data:`EVENT_REASONS`' order, :func:`event_names`
        form; ``"none"`` where none did); both ``None`` without readings."""
        return during_fields(self.readings)


def sampled_fields(sampler: ClockSampler | None, timing_mode: str) -> dict[str, Any]:
    """:meth:`ClockSampler.fields` where ``sampler`` read during CUDA-graph replays (``timing_mode`` is
    :data:`bench.timing.GRAPH_TIMING`); ``{}`` where there is no sampler or the timing fell back to eager calls (a
    graph that failed mid-way), whose readings would not be the replays'. The one rule of ``foscar bench``'s sweep and
    ``python -m bench.ab``."""
    return sampler.fields() if sampler is not None and timing_mode == GRAPH_TIMING else {}


def during_fields(readings: list[ClockReading]) -> dict[str, Any]:
    """``sm_clock_during_mhz`` (the median SM clock of ``readings``, MHz, rounded to an integer) and
    ``clock_events_during`` (the union of their reasons, :func:`event_names` form); ``None`` for both without
    readings."""
    if not readings:
        return {"sm_clock_during_mhz": None, "clock_events_during": None}
    seen = {e for r in readings for e in _events(r.events)}
    known = [name for name in EVENT_REASONS.values() if name in seen]
    return {"sm_clock_during_mhz": int(round(statistics.median(r.sm_clock_mhz for r in readings))),
            "clock_events_during": "+".join(known + sorted(seen - set(known))) or NO_EVENTS}


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


def clock_fields(before: ClockReading | None, after: ClockReading | None) -> dict[str, Any]:
    """The ``results.csv`` clock columns of one row from its two readings (missing ones stay empty)."""
    return {
        "sm_clock_before_mhz": before.sm_clock_mhz if before else None,
        "sm_clock_after_mhz": after.sm_clock_mhz if after else None,
        "clock_events_before": before.events if before else None,
        "clock_events_after": after.events if after else None,
    }


def _events(x: Any) -> list[str]:
    if not isinstance(x, str) or not x or x == NO_EVENTS:
        return []
    return x.split("+")


def throttle_reasons(events: Any) -> list[str]:
    """The throttling reasons (:data:`THROTTLE_REASONS`) among one reading's event reasons (a ``clock_events_*``
    value, :func:`event_names` form), in their order; none for a missing reading or ``"none"``."""
    return [e for e in _events(events) if e in THROTTLE_REASONS]


def judged_clock(row: pd.Series) -> float | None:
    """The row's SM clock for the median test: the reading just after its timing, else the
    one just before; a reading taken while the GPU was idle (``gpu_idle`` among its
    reasons) does not count. ``None`` when there is none."""
    for when in ("after", "before"):
        mhz = row.get(f"sm_clock_{when}_mhz")
        if mhz is None or mhz is pd.NA or (isinstance(mhz, float) and math.isnan(mhz)):
            continue
        if "gpu_idle" in _events(row.get(f"clock_events_{when}")):
            continue
        return float(mhz)
    return None


def add_clock_notes(df: pd.DataFrame, timed_statuses: tuple[str, ...] = ("ok", "suspect")) -> pd.DataFrame:
    """Fill ``clock_note`` of every timed row (a copy): throttling reasons seen around its
    timing, or an SM clock more than :data:`CLOCK_DROP` below the run's median (over
    the timed rows with a judged clock, :func:`judged_clock`). Rows without readings
    get no note; a run without any reading is returned unchanged but for the column.
    """
    df = df.copy()
    for c in CLOCK_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df["clock_note"] = df["clock_note"].astype(object)
    timed = df.index[df["status"].isin(timed_statuses)]
    clocks = {i: judged_clock(df.loc[i]) for i in timed}
    known = [c for c in clocks.values() if c is not None]
    median = float(pd.Series(known).median()) if known else None
    for i in timed:
        notes = []
        for when in ("before", "after"):
            hit = throttle_reasons(df.at[i, f"clock_events_{when}"])
            if hit:
                notes.append(f"throttled {when} timing ({'+'.join(hit)})")
        mhz = clocks[i]
        if median and mhz is not None and mhz < (1 - CLOCK_DROP) * median:
            notes.append(f"SM clock {mhz:.0f} MHz, {1 - mhz / median:.0%} below the run's median {median:.0f} MHz")
        df.at[i, "clock_note"] = "; ".join(notes) if notes else None
    return df


def has_clock_note(row: Any) -> bool:
    """Whether a row (a ``results.csv`` row, Series or dict) carries a clock note."""
    note = row.get("clock_note") if hasattr(row, "get") else None
    return isinstance(note, str) and bool(note.strip())
