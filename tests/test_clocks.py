"""GPU clocks around each row's timing, with fake NVML readings: recorded (never set),
a throttled or slow-clocked row gets a note, and ``foscar compare`` counts it as
ambiguous, never as a regression or an improvement (issue 13, clocks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.backends import Backend, Prepared
from bench.clocks import (ClockReader, ClockReading, ClockSampler, add_clock_notes, clock_fields, event_names,
                          judged_clock, sampled_fields)
from bench.compare import compare_runs, exit_code
from bench.config import BenchConfig
from bench.results import add_speedups, new_row, to_frame
from bench.rundir import Run
from bench.sweep import Sweep, run_sweep
from bench.workload import Point

P = Point(8, 32768, 2, 128, 32, 8, 128, 16)


class FakeNvml:
    """``pynvml`` stand-in: an SM clock and an event mask that the test sets; counts calls that change clocks."""

    NVML_CLOCK_SM = 1

    def __init__(self, new_name: bool = True):
        self.sm, self.mask = 1980, 0
        self.fail = False
        self.shutdowns = 0
        if new_name:  # NVML >= 12.x name; older pynvml has only the "throttle" one
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons
        else:
            self.nvmlDeviceGetCurrentClocksThrottleReasons = self._reasons

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return "handle"

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return "handle"

    def nvmlDeviceGetClockInfo(self, handle, kind):
        if self.fail:
            raise RuntimeError("NVML: Unknown Error")
        assert kind == self.NVML_CLOCK_SM
        return self.sm

    def _reasons(self, handle):
        return self.mask

    def __getattr__(self, name):  # anything that would set clocks is a test failure
        if name.startswith(("nvmlDeviceSet", "nvmlDeviceReset")):
            raise AssertionError(f"the harness must never change clocks ({name})")
        raise AttributeError(name)


def test_event_names():
    assert event_names(0) == "none"
    assert event_names(0x001) == "gpu_idle"
    assert event_names(0x004 | 0x020) == "sw_power_cap+sw_thermal_slowdown"
    assert event_names(0x8000) == "0x8000"  # an unknown bit is kept, not dropped


@pytest.mark.parametrize("new_name", [True, False])
def test_reader_reads_sm_clock_and_reasons(monkeypatch, new_name):
    fake = FakeNvml(new_name)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    reader, why = ClockReader.open(None, 0)
    assert why is None
    assert reader.read() == ClockReading(1980, "none")
    fake.sm, fake.mask = 1500, 0x040
    assert reader.read() == ClockReading(1500, "hw_thermal_slowdown")
    fake.fail = True
    assert reader.read() is None  # an NVML error is no crash, and no reading
    reader.close()
    assert fake.shutdowns == 1


def test_no_pynvml_gives_no_reader_and_no_crash(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    reader, why = ClockReader.open(None, 0)
    assert reader is None and "pynvml not installed" in why
    assert clock_fields(None, None) == {"sm_clock_before_mhz": None, "sm_clock_after_mhz": None,
                                        "clock_events_before": None, "clock_events_after": None}  # fmt: skip


def _row(kernel, us, before=None, after=None, status="ok"):
    r = new_row(P, kernel, 2, "bf16", None)
    if us is not None:
        r.update(median_us=us, p20_us=us * 0.99, p80_us=us * 1.01, reps=15)
    r.update(status=status)
    r.update(clock_fields(before, after))
    return r


def _notes(rows) -> dict[str, str | None]:
    df = add_clock_notes(to_frame(rows))
    return dict(zip(df["kernel"], df["clock_note"].where(df["clock_note"].notna(), None)))


def test_notes_for_throttling_and_a_clock_below_the_median():
    ok = ClockReading(1980, "none")
    notes = _notes([
        _row("a", 10.0, ok, ok),
        _row("b", 10.0, ok, ClockReading(1980, "none")),
        _row("c", 10.0, ok, ClockReading(1900, "none")),  # 4% below: within 5%
        _row("d", 10.0, ok, ClockReading(1800, "none")),  # 9% below the median 1980
        _row("e", 10.0, ClockReading(1980, "sw_power_cap"), ok),  # throttled before its timing
        _row("f", 10.0, ClockReading(345, "gpu_idle"), ok),  # idle before: its low clock says nothing
        _row("i", 10.0, ClockReading(1200, "none"), ok),  # still ramping up before: the clock after is judged
        _row("j", 10.0, ClockReading(1500, "none"), None),  # no reading after: the one before is judged
        _row("g", 10.0),  # no readings (no NVML): no note
        _row("h", None, ClockReading(1000, "hw_slowdown"), ok, status="failed"),  # not timed: no note
    ])  # fmt: skip
    assert notes["a"] is None and notes["b"] is None and notes["c"] is None and notes["f"] is None
    assert notes["d"] == "SM clock 1800 MHz, 9% below the run's median 1980 MHz"
    assert notes["e"] == "throttled before timing (sw_power_cap)"
    assert notes["g"] is None and notes["h"] is None and notes["i"] is None
    assert notes["j"] == "SM clock 1500 MHz, 24% below the run's median 1980 MHz"


def test_judged_clock_ignores_idle_readings():
    s = pd.Series({"sm_clock_before_mhz": 345, "clock_events_before": "gpu_idle",
                   "sm_clock_after_mhz": 1950, "clock_events_after": "none"})  # fmt: skip
    assert judged_clock(s) == 1950
    s2 = pd.Series({"sm_clock_before_mhz": 1700, "clock_events_before": "none",
                    "sm_clock_after_mhz": 345, "clock_events_after": "gpu_idle"})  # fmt: skip
    assert judged_clock(s2) == 1700
    assert judged_clock(pd.Series({"sm_clock_before_mhz": None, "sm_clock_after_mhz": float("nan")})) is None


class _Readings:
    """A ClockReader stand-in that hands out readings in turn."""

    def __init__(self, readings):
        self.readings = list(readings)

    def read(self):
        return self.readings.pop(0)


def _exact(name: str, quantized: bool) -> Backend:
    def build(w, operand):
        last = {}

        def fn():
            last["out"] = w.reference.clone().to(torch.bfloat16)

        return Prepared(fn=fn, output=lambda: last["out"], bytes=1000)

    return Backend(name, build, quantized, None if quantized else "bf16", lambda dev: None, name)


def test_sweep_records_readings_before_and_after_each_timing(tmp_path):
    cfg = BenchConfig(num_qo_heads=2, num_kv_heads=1, head_dim=64, page_size=16, batch=[1], context=[16, 32], bits=[2],
                      group_size=32, kernels=["quant", "base"], cpu_reps=1)  # fmt: skip
    ok = ClockReading(1980, "none")
    readings = [ok, ok, ok, ok, ok, ok, ClockReading(1700, "hw_thermal_slowdown"), ClockReading(1690, "none")]
    sweep = Sweep(cfg, [_exact("quant", True), _exact("base", False)], torch.device("cpu"), None,
                  tmp_path / "results.csv", None, clocks=_Readings(readings))  # fmt: skip
    df = run_sweep(sweep)
    assert list(df["sm_clock_before_mhz"]) == [1980, 1980, 1980, 1700]
    assert list(df["clock_events_before"]) == ["none", "none", "none", "hw_thermal_slowdown"]
    assert list(df["sm_clock_after_mhz"]) == [1980, 1980, 1980, 1690]
    last = df.iloc[-1]["clock_note"]
    assert last.startswith("throttled before timing (hw_thermal_slowdown); SM clock 1690 MHz")
    assert df["clock_note"].iloc[:3].isna().all()
    back = pd.read_csv(tmp_path / "results.csv")
    assert back["clock_note"].iloc[-1] == last


def _run(path: Path, us: float, note: str | None = None) -> Run:
    rows = []
    for context in (8192, 32768):
        p = Point(8, context, 2, 128, 32, 8, 128, 16)
        r = new_row(p, "foscar-cuda", 2, "bf16", None)
        r.update(status="ok", median_us=us, p20_us=us * 0.99, p80_us=us * 1.01, reps=15,
                 clock_note=note if context == 32768 else None)  # fmt: skip
        rows.append(r)
    df = add_speedups(to_frame(rows))
    return Run(path=path, label=path.name, df=df, meta={}, summary={})


def test_compare_counts_clock_noted_rows_as_ambiguous(tmp_path):
    base = _run(tmp_path / "base", 10.0)
    slow = _run(tmp_path / "new", 13.0, note="throttled after timing (sw_thermal_slowdown)")
    result = compare_runs(base, slow, 0.05)
    by_ctx = {r["context"]: r for r in result["rows"]}
    assert by_ctx[32768]["verdict"] == "ambiguous" and "sw_thermal_slowdown" in by_ctx[32768]["clock_note"]
    assert by_ctx[8192]["verdict"] == "slower"  # the row without a note is judged as usual
    assert result["geomeans"][0]["num_points"] == 1  # the ambiguous row is out of the geomean

    only_noted = compare_runs(_run(tmp_path / "b2", 10.0, note="SM clock 1700 MHz, 14% below"),
                              _run(tmp_path / "n2", 10.0), 0.05)  # fmt: skip
    assert only_noted["counts"]["rows"]["ambiguous"] == 1

    base_noted = _run(tmp_path / "b3", 13.0, note="SM clock 1700 MHz, 14% below the run's median 1980 MHz")
    faster = _run(tmp_path / "n3", 10.0)
    r3 = compare_runs(base_noted, faster, 0.05)
    assert {r["context"]: r["verdict"] for r in r3["rows"]} == {8192: "faster", 32768: "ambiguous"}
    assert exit_code(r3) == 0


def _point_run(path: Path, foscar_us: float, flashinfer_note: str | None = None) -> Run:
    """FOSCAR and FlashInfer rows at 8 x 8K and 8 x 32K; the FlashInfer row at 32K may carry a clock note."""
    rows = []
    for context in (8192, 32768):
        p = Point(8, context, 2, 128, 32, 8, 128, 16)
        for kernel, bits, base, us, note in (("foscar-cuda", 2, None, foscar_us, None),
                                             ("flashinfer-fa2-tc", None, "bf16", 50.0,
                                              flashinfer_note if context == 32768 else None)):
            r = new_row(p, kernel, bits, "bf16" if bits else None, base)
            r.update(status="ok", median_us=us, p20_us=us * 0.999, p80_us=us * 1.001, reps=15, clock_note=note)
            rows.append(r)
    return Run(path=path, label=path.name, df=add_speedups(to_frame(rows)), meta={}, summary={})


def test_compare_counts_the_rows_beside_a_held_down_row_as_ambiguous(tmp_path):
    """A point's rows are timed one after another and the clock is read only around each: where one row of a
    point was held down (here FlashInfer's, in new), every row of that point is ambiguous, in either run; the
    rows of other points are judged as usual (bench/NOTES.md §48: session 15's three "slower" rows)."""
    base = _point_run(tmp_path / "base", 10.0)
    new = _point_run(tmp_path / "new", 10.3, flashinfer_note="throttled after timing (sw_power_cap)")
    result = compare_runs(base, new, 0.02)
    v = {(r["kernel"], r["context"]): r for r in result["rows"]}
    assert v[("foscar-cuda", 32768)]["verdict"] == "ambiguous"
    assert v[("foscar-cuda", 32768)]["clock_note"] == "same point, new flashinfer-fa2-tc: throttled after timing (sw_power_cap)"
    assert v[("flashinfer-fa2-tc", 32768)]["verdict"] == "ambiguous"
    assert v[("foscar-cuda", 8192)]["verdict"] == "slower" and v[("flashinfer-fa2-tc", 8192)]["verdict"] == "same"
    swapped = compare_runs(new, base, 0.02)  # the note in base: the same rows ambiguous
    assert {(r["kernel"], r["context"]): r["verdict"] for r in swapped["rows"]}[("foscar-cuda", 32768)] == "ambiguous"
    clean = compare_runs(base, _point_run(tmp_path / "n2", 10.3), 0.02)
    assert all(r["verdict"] == "slower" for r in clean["rows"] if r["kernel"] == "foscar-cuda")


@pytest.mark.gpu
def test_real_nvml_reading_and_a_bench_row_with_clocks(tmp_path):
    """On the GPU (with nvidia-ml-py): a real reading, and a timed row that carries it."""
    pytest.importorskip("pynvml")
    from bench.arch import Arch, detect_device
    from bench.run import BenchOptions, OutputFormat, run_bench

    info = detect_device()
    reader, why = ClockReader.open(info.uuid, torch.cuda.current_device())
    assert reader is not None, why
    r = reader.read()
    reader.close()
    assert 100 <= r.sm_clock_mhz <= 5000 and r.events
    out = tmp_path / "run"
    run_bench(BenchOptions(arch=Arch.h100, out=out, bits=[2], batch=[8], context=[32768], kernels=["foscar-triton"],
                           output=OutputFormat.quiet, argv=["foscar", "bench"]))  # fmt: skip
    df = pd.read_csv(out / "results.csv")
    ok = df[df["status"] == "ok"]
    assert len(ok) and ok["sm_clock_before_mhz"].notna().all() and ok["sm_clock_after_mhz"].notna().all()
    assert ok["clock_events_after"].notna().all()
    # the readings during the timed graph replays (session 52): a clock in range and the reasons seen
    graph = ok[ok["timing_mode"] == "cuda_graph"]
    assert len(graph) and graph["sm_clock_during_mhz"].between(100, 5000).all()
    assert graph["clock_events_during"].notna().all()


def test_sampler_reads_while_its_block_runs_and_summarizes():
    from bench.clocks import ClockSampler, during_fields

    fake = FakeNvml()
    reader = ClockReader(fake, "handle")
    fake.sm, fake.mask = 1755, 0x004  # sw_power_cap while the timed calls run
    with ClockSampler(reader, interval_s=0.001) as s:
        import time

        time.sleep(0.03)
    assert len(s.readings) >= 3  # one at each end and some between
    assert s.fields() == {"sm_clock_during_mhz": 1755, "clock_events_during": "sw_power_cap"}
    # the median clock and every reason any reading saw, in NVML's bit order; nothing read -> empty
    mixed = [ClockReading(1980, "none"), ClockReading(1700, "hw_slowdown"), ClockReading(1710, "sw_power_cap"),
             ClockReading(1720, "none")]
    assert during_fields(mixed) == {"sm_clock_during_mhz": 1715, "clock_events_during": "sw_power_cap+hw_slowdown"}
    assert during_fields([]) == {"sm_clock_during_mhz": None, "clock_events_during": None}
    fake.fail = True  # NVML errors: no readings, no exception
    with ClockSampler(reader, interval_s=0.001) as s:
        pass
    assert s.readings == [] and s.fields()["sm_clock_during_mhz"] is None


def test_sweep_records_the_clock_during_the_timed_calls(tmp_path, monkeypatch):
    # a real ClockReader over a fake NVML; the sweep hands its sampler to time_fn as `during`, which the graph path
    # enters around its timed replays (here a stand-in time_fn does, on the CPU); the columns are information, no note
    import time

    import dataclasses

    import bench.sweep as sweep_mod
    from bench.timing import GRAPH_TIMING, time_cpu

    cfg = BenchConfig(num_qo_heads=2, num_kv_heads=1, head_dim=64, page_size=16, batch=[1], context=[16], bits=[2],
                      group_size=32, kernels=["quant"], cpu_reps=1)  # fmt: skip
    fake = FakeNvml()
    fake.sm, fake.mask = 1980, 0

    def graph_like_time_fn(fns, device_type, *, during=None, cpu_reps=1, **kw):
        fake.sm, fake.mask = 1760, 0x004  # held down only while the timed calls run
        with during:
            time.sleep(0.1)
        fake.sm, fake.mask = 1980, 0
        return dataclasses.replace(time_cpu(fns[0], cpu_reps), mode=GRAPH_TIMING)  # as the graph path returns

    monkeypatch.setattr(sweep_mod, "time_fn", graph_like_time_fn)
    sweep = Sweep(cfg, [_exact("quant", True)], torch.device("cpu"), None, tmp_path / "results.csv", None,
                  clocks=ClockReader(fake, "handle"))  # fmt: skip
    df = run_sweep(sweep)
    row = df.iloc[0]
    assert row["sm_clock_before_mhz"] == 1980 and row["sm_clock_after_mhz"] == 1980
    assert row["sm_clock_during_mhz"] == 1760 and row["clock_events_during"] == "sw_power_cap"
    assert pd.isna(row["clock_note"])
    back = pd.read_csv(tmp_path / "results.csv")
    assert back["sm_clock_during_mhz"].iloc[0] == 1760
    # a timing that ended on a fallback (not the graph's replays) records no during-clock
    monkeypatch.setattr(sweep_mod, "time_fn", lambda fns, device_type, *, during=None, cpu_reps=1, **kw:
                        (during.__enter__(), during.__exit__(None, None, None), time_cpu(fns[0], cpu_reps))[-1])
    sweep = Sweep(cfg, [_exact("quant", True)], torch.device("cpu"), None, tmp_path / "r2.csv", None,
                  clocks=ClockReader(fake, "handle"))  # fmt: skip
    assert pd.isna(run_sweep(sweep).iloc[0]["sm_clock_during_mhz"])


def test_time_fn_enters_during_on_the_graph_path_only():
    # the CPU (and the eager do_bench fallback) time without the sampler: a thread could delay their launches
    from bench.timing import time_fn

    entered = []

    class Probe:
        def __enter__(self):
            entered.append(1)

        def __exit__(self, *exc):
            pass

    t = time_fn([lambda: None], "cpu", warmup_ms=1, rep_ms=1, cpu_reps=2, during=Probe())
    assert t.median_us >= 0 and entered == []


def test_sampled_fields_only_for_graph_replays():
    class Reader:
        def read(self):
            return ClockReading(sm_clock_mhz=1830, events="sw_power_cap")

    sampler = ClockSampler(Reader(), interval_s=0.001)
    with sampler:
        pass
    assert sampled_fields(sampler, "cuda_graph") == {"sm_clock_during_mhz": 1830, "clock_events_during": "sw_power_cap"}
    assert sampled_fields(sampler, "do_bench") == {} and sampled_fields(None, "cuda_graph") == {}
