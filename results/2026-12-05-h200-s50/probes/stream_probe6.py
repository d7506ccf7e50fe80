"""Session 50's copy of session 49's stream probe (bench/NOTES.md §94), with the decode's six streams a warp (mode 4,
`w-cp6`, stream_probe6.cu) and `--six`: 256 CTAs at 160 and 640 MiB, per-warp cp.async from one stream (`w-cp`) and
from six, 2 and 3 stages, no spin and 1000 cycles. Run from the repository root:
python results/2026-12-05-h200-s50/probes/stream_probe6.py --six
Session 52 added `--spins=0,1000,2000,3000` (the spins to run, clock cycles a stage, in place of the mode's; before it
ran): the decode's step is ~2300 cycles with its waits, its work between them at most that (bench/NOTES.md §96).

Session 49's text: can a one-wave grid of 128-thread CTAs, two an SM, read a decode's
bytes at >= 90% of the ceiling, and does the copy mechanism (every thread's 16-byte cp.async, as the decode does, or
one thread's cp.async.bulk) decide it? Run from the repository root:
python results/2026-12-05-h100-s49/probes/stream_probe.py [--quick | --short]

Each row: grid x stages x mode x copies a stage x spin, the median us of CUDA-graph replays over rotating copies (the
bench's timing, bench.timing.time_graph), TB/s and the fraction of the ceiling measured in the same process
(bench.hbm.measure_hbm), and of the Triton read floor of the same bytes (bench.hbm.read_floor_us).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import time

import torch
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, os.getcwd())
from bench.hbm import measure_hbm, read_floor_us  # noqa: E402
from bench.timing import time_graph  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STAGE = 20480  # the decode's INT2 D=128 G=128 stage: 256 tokens x 80 B


def build():
    src = open(os.path.join(HERE, "stream_probe6.cu")).read()
    decl = ("void stream_read(torch::Tensor src, int64_t per_cta_bytes, int64_t stage_bytes, int64_t stages, "
            "int64_t mode, int64_t ncopy, int64_t spin, torch::Tensor out, int64_t grid, int64_t stream);")
    return load_inline("foscar_stream_probe6", cpp_sources=decl, cuda_sources=src, functions=["stream_read"],
                       extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)


def main() -> None:
    quick = "--quick" in sys.argv
    dev = torch.device("cuda")
    t0 = time.time()
    ext = build()
    print(f"built in {time.time() - t0:.0f} s", flush=True)
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 60 << 20)
    ceil = measure_hbm(dev)["ceiling_tbps"]
    print(f"{props.name} sms={props.multi_processor_count} l2={l2} ceiling={ceil:.3f} TB/s", flush=True)
    # (grid, iterations a CTA): 8 x 32K / 32 x 8K (256 CTAs of 8K INT2 tokens), every SM two (264), four (528, half
    # each), 8 x 128K (256 of 32K tokens)
    shapes = [(256, 32), (264, 32), (528, 16), (256, 128)]
    # (mode, bulk copies a stage): 0 cp.async by the CTA, 1 bulk by the CTA (one copy / five of 4 KiB), 2 cp.async by
    # each warp (its quarter, as the decode), 3 bulk by each warp (one copy / five of 1 KiB), no CTA barrier
    modes = [(0, 1), (1, 1), (1, 5), (2, 1), (3, 1), (3, 5)]
    if "--short" in sys.argv:  # session 49's last call: fewer rows, so that a start with ~7 min left fits
        shapes, modes = [(256, 32), (264, 32), (256, 128)], [(0, 1), (2, 1), (3, 1)]
    if "--six" in sys.argv:  # session 50: one stream a warp against the decode's six
        shapes, modes = [(256, 32), (256, 128)], [(2, 1), (4, 1)]
    stages = [2, 3, 4]  # 20 KiB each: 2 (or more) CTAs an SM fit up to 4 stages (528 at 3 stages: 3 an SM)
    spins = [0, 2000] if quick else [0, 1200, 2000]
    if "--short" in sys.argv or "--six" in sys.argv:
        spins = [0, 1000]
    if "--six" in sys.argv:
        stages = [2, 3]
    for arg in sys.argv[1:]:  # session 52: --spins=0,1000,2000,3000 (clock cycles a stage) in place of the above
        if arg.startswith("--spins="):
            spins = [int(x) for x in arg.split("=", 1)[1].split(",")]
    floors = {}
    print("grid iters MiB stages mode ncopy spin us tbps of_ceiling of_floor", flush=True)
    for grid, iters in shapes:
        per_cta = iters * STAGE
        nbytes = grid * per_cta
        copies = max(2, math.ceil(4 * l2 / nbytes))
        if nbytes not in floors:
            floors[nbytes] = read_floor_us(nbytes, copies, dev)
            f = floors[nbytes]
            print(f"floor {nbytes / 2**20:.0f} MiB {f:.2f} us {nbytes / f / 1e6:.3f} TB/s {nbytes / f / 1e6 / ceil:.3f}",
                  flush=True)
        bufs = [torch.empty(nbytes, dtype=torch.uint8, device=dev) for _ in range(copies)]
        for b in bufs:
            b.view(torch.int32).random_()
        out = torch.empty(grid * 128, dtype=torch.int32, device=dev)
        for st, (mode, ncopy), spin in itertools.product(stages, modes, spins):
            if st * STAGE > 200 * 1024:
                continue
            fns = [lambda b=b: ext.stream_read(b, per_cta, STAGE, st, mode, ncopy, spin, out, grid,
                                                  torch.cuda.current_stream().cuda_stream) for b in bufs]
            try:
                us = time_graph(fns).median_us
            except Exception as e:  # noqa: BLE001 (a probe: record and go on)
                print(f"{grid} {iters} {nbytes / 2**20:.0f} {st} {mode} {ncopy} {spin} failed: {e!r}"[:300], flush=True)
                continue
            tbps = nbytes / us / 1e6
            print(f"{grid} {iters} {nbytes / 2**20:.0f} {st} {('cp.async', 'bulk', 'w-cp.async', 'w-bulk', 'w-cp6')[mode]} {ncopy} {spin} {us:.2f} "
                  f"{tbps:.3f} {tbps / ceil:.3f} {floors[nbytes] / us:.3f}", flush=True)
        del bufs
        torch.cuda.empty_cache()
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
