"""Session 53's clock probe (bench/NOTES.md §97). Run from the repository root on a GPU:
python results/2026-12-05-h200-s53/probes/clock_probe.py [--no-decode]

Why: the timeline build's clock (clock64 cycles over %globaltimer ns, per CTA) read 1.75-1.83 GHz on an H100 at INT2 8 x
32K, 32 x 8K and 1 x 8K while NVML read 1980 MHz with no clock event during bench.ab's timed replays of the same
points (results/2026-12-05-h100-s53/probes/call1); on the H200 the same method and ncu read 1.67-1.80 GHz (§96).
Either both GPUs run these decodes ~10% under the clock NVML reports, or the method reads low. This probe answers
with a kernel whose cycles are known (one thread a CTA spins on clock64), timed three ways: its own stamps (as the
timeline build takes them), %globaltimer over the whole grid, and CUDA events; with NVML read during the long runs.

(A) %globaltimer's steps: the first 512 changes seen by one thread (ns a step, SM cycles between changes).
(B) idle spins, 1 CTA and one CTA an SM, 2e3-2e8 cycles: the stamps' MHz (median, min, max over CTAs), the events'
    MHz (cycles / event time; launch overhead makes it low below ~1 ms) and NVML.
(C) one CTA spinning 3e7 cycles (~15 ms) while another stream keeps the GPU busy: with nothing (control), a 1 GiB
    device copy (DRAM only), the INT2 8 x 32K decode (CUDA graph of 50 calls, replayed), INT4 8 x 32K and FlashInfer
    BF16 at 8 x 32K (fa2 with tensor cores, XQA; added after the H100's call3, before the H200 ran it). The spin
    shares an SM with the load's CTAs, so its clock is the SMs' clock under that load, measured over ~15 ms where the
    stamps' own gap does not weigh.

Expected (written before): (A) steps of 32 ns or 1 us, regular; (B) the stamps' and the events' MHz agree within 1% at
>= 2e6 cycles and read NVML's clock (1980 on both GPUs while idle); at 2e3-2e4 cycles the stamps read low by the
stamps' own gap over the interval. (C) if the spin reads 1960-1980 under the decode, the SMs keep their clock there and
the timeline's 1.7-1.8 GHz is the method's bias on short (~60 us) multi-phase CTAs (then §96's clock reading falls); if
it reads 1.70-1.85 GHz under the decode and ~1980 idle, the clock drops under the decode's load and NVML's 20 ms
readings miss it.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

import torch
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, os.getcwd())
HERE = os.path.dirname(os.path.abspath(__file__))


def build():
    src = open(os.path.join(HERE, "clock_probe.cu")).read()
    decl = ("void spin(int64_t cycles, int64_t grid, torch::Tensor out);\n"
            "void timer_steps(torch::Tensor out, int64_t n);")
    return load_inline("foscar_clock_probe", cpp_sources=decl, cuda_sources=src, functions=["spin", "timer_steps"],
                       extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)


class Nvml:
    """NVML's SM clock every 5 ms on a thread while the ``with`` block runs (reads only)."""

    def __init__(self):
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(0)  # the GPU machine has one GPU
        except Exception as e:  # no NVML: the column stays empty
            print(f"NVML: {e!r}")
            self.nv = None
        self.vals: list[int] = []

    def read(self):
        try:
            return int(self.nv.nvmlDeviceGetClockInfo(self.h, self.nv.NVML_CLOCK_SM))
        except Exception:
            return None

    def __enter__(self):
        self.vals = []
        self.stop = threading.Event()
        if self.nv is not None:
            def loop():
                while True:
                    v = self.read()
                    if v is not None:
                        self.vals.append(v)
                    if self.stop.wait(0.005):
                        break
            self.th = threading.Thread(target=loop, daemon=True)
            self.th.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        if self.nv is not None:
            self.th.join()

    def text(self):
        if not self.vals:
            return "-"
        return f"{min(self.vals)}-{max(self.vals)} (n={len(self.vals)})"


def stamps(out: torch.Tensor, grid: int):
    r = out[:5 * grid].view(grid, 5).cpu().tolist()
    mhz = [(c1 - c0) / (t1 - t0) * 1e3 for t0, t1, c0, c1, _ in r if t1 > t0]
    span_ns = max(x[1] for x in r) - min(x[0] for x in r)
    return mhz, span_ns


def spin_once(ext, cycles: int, grid: int, out: torch.Tensor, stream=None):
    s = stream or torch.cuda.current_stream()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(s):
        e0.record()
        ext.spin(cycles, grid, out)
        e1.record()
    return e0, e1


def fmt(mhz):
    return f"{statistics.median(mhz):7.1f} [{min(mhz):7.1f}-{max(mhz):7.1f}]"


def main() -> None:
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    nsm = props.multi_processor_count
    t0 = time.time()
    ext = build()
    print(f"{props.name} sms={nsm}; built in {time.time() - t0:.0f} s", flush=True)
    nv = Nvml()
    print(f"NVML SM clock now: {nv.read() if nv.nv else '-'} MHz", flush=True)
    out = torch.zeros(5 * 4 * nsm, dtype=torch.int64, device=dev)

    # (A)
    n = 512
    st = torch.zeros(2 * n, dtype=torch.int64, device=dev)
    ext.timer_steps(st, n)
    torch.cuda.synchronize()
    ext.timer_steps(st, n)
    torch.cuda.synchronize()
    v = st.view(n, 2).cpu().tolist()[8:]
    steps = sorted({a for a, _ in v})
    tot_ns = sum(a for a, _ in v)
    tot_cyc = sum(b for _, b in v)
    print(f"(A) %globaltimer steps (ns, distinct, first 20): {steps[:20]}; median {statistics.median(a for a, _ in v)}"
          f" ns; cycles over ns across {len(v)} steps: {tot_cyc / tot_ns * 1e3:.1f} MHz", flush=True)

    # (B)
    print("(B) idle spins: grid cycles | stamps' MHz median [min-max over CTAs] | grid span us | events us | events'"
          " MHz | NVML MHz during", flush=True)
    for grid in (1, nsm):
        for cycles in (2_000, 20_000, 120_000, 2_000_000, 20_000_000, 200_000_000):
            ext.spin(min(cycles, 2_000_000), grid, out)  # warm
            torch.cuda.synchronize()
            for rep in range(3 if cycles < 20_000_000 else 1):
                with nv:
                    e0, e1 = spin_once(ext, cycles, grid, out)
                    torch.cuda.synchronize()
                mhz, span = stamps(out, grid)
                ev_us = e0.elapsed_time(e1) * 1e3
                print(f"  {grid:4d} {cycles:11d} | {fmt(mhz)} | {span / 1e3:10.2f} | {ev_us:10.2f} | "
                      f"{cycles / ev_us:7.1f} | {nv.text() if cycles >= 2_000_000 else '-'}", flush=True)

    # (C)
    loads = {"none": None}
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    loads["copy 1 GiB"] = lambda: dst.copy_(src)
    dst.copy_(src)
    if "--no-decode" not in sys.argv:
        import foscar
        from bench.ab import build_point, parse_point
        keep = []
        for label in ("2x8x32768", "4x8x32768"):
            try:
                w, cache, _ = build_point(parse_point(label), dev)
                plan = foscar.plan_decode(cache, w.q.shape[1], backend="cuda")
                for _ in range(3):
                    plan.run(w.q, cache)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(50):
                        plan.run(w.q, cache)
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                g.replay()
                e1.record()
                torch.cuda.synchronize()
                print(f"  decode {label}: {e0.elapsed_time(e1) * 1e3 / 50:.2f} us a call (graph of 50)", flush=True)
                loads[f"decode {label}"] = (lambda g=g: g.replay())
                keep.append((w, cache, plan, g))  # the graph reads these: they must outlive it
            except Exception as e:  # the probe goes on without this load
                print(f"  decode {label}: failed: {e!r}", flush=True)
        # the baseline at the INT2 point's shape (BF16 cache), as foscar bench builds it
        from bench.backends import registered_backends
        for name in ("flashinfer-fa2-tc", "flashinfer-xqa"):
            try:
                w, _, _ = build_point(parse_point("2x8x32768"), dev)
                be = registered_backends()[name]
                why = be.unavailable(dev)
                if why:
                    raise RuntimeError(why)
                prep = be.build(w, None)
                for _ in range(3):
                    prep.fn()
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(50):
                        prep.fn()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                g.replay()
                e1.record()
                torch.cuda.synchronize()
                print(f"  {name} bf16 8x32768: {e0.elapsed_time(e1) * 1e3 / 50:.2f} us a call (graph of 50)", flush=True)
                loads[f"{name} 8x32768"] = (lambda g=g: g.replay())
                keep.append((w, prep, g))
            except Exception as e:  # the probe goes on without this load
                print(f"  {name}: failed: {e!r}", flush=True)
    print("(C) one CTA spinning 3e7 cycles beside a load on another stream: load | stamps' MHz | spin us (stamps) | "
          "load us (events) | load calls | NVML MHz during", flush=True)
    sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
    reps = {}
    for name, fn in loads.items():  # each load's launches for ~25 ms, from one timed launch
        if fn is None:
            continue
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        reps[name] = max(1, int(25.0 / max(e0.elapsed_time(e1), 1e-3)) + 1)
    cycles = 30_000_000
    for rep in range(2):
        for name, fn in loads.items():
            torch.cuda.synchronize()
            with nv:
                ea = spin_once(ext, cycles, 1, out, sa)
                calls = 0
                with torch.cuda.stream(sb):
                    b0, b1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    b0.record()
                    if fn is not None:  # ~25 ms of load, past the spin's ~15-17 ms
                        for calls in range(1, reps[name] + 1):
                            fn()
                    b1.record()
                torch.cuda.synchronize()
            mhz, span = stamps(out, 1)
            print(f"  {name:26s} | {fmt(mhz)} | {span / 1e3:9.1f} | {b0.elapsed_time(b1) * 1e3:9.1f} | {calls:5d} | "
                  f"{nv.text()}", flush=True)
    print(f"NVML SM clock at the end: {nv.read() if nv.nv else '-'} MHz", flush=True)


if __name__ == "__main__":
    main()
