"""Session 52 (no GPU): is the H200's INT2 one-wave decode its step at the H200's clock under load?

Reads only files already in results/ (run from the repository root, `python results/2026-12-05-h200-s52/probes/
clock_model.py`; output in clock_model.txt beside it):
- the step alone, at 1980 MHz: session 51's `FOSCAR_L2_ONLY` ("l") rows on an H100 (every copy an L2 hit, no DRAM
  stream; the same die as the H200's; bench/NOTES.md §95), `results/2026-12-05-h100-s51/probes/call2/c1.tgz`;
- the H200's SM clock while the decode runs: `clock64` cycles over `%globaltimer` ns per CTA (median per call) in the
  profiling build's records of sessions 43 (`results/2026-12-04-h200-s43/probes/call1/c1.tgz`) and 48 (skew 0, the
  default order: `results/2026-12-05-h200-s48/probes/call2/tl.tgz`);
- the H200's bench times of the default build: sessions 42, 45, 46 (two runs), with their NVML clocks before and after.
Prints per point: the step at 1980 MHz, each profiled call's clock under load and loop (us and thousands of cycles),
the step's time at those clocks (x 1980 / MHz), how the loop's time moves with the clock over the calls (the slope of
log us on log MHz: -1 where the SM's cycles hold the loop, 0 where something on its own clock does), the bench's times
and the time that 85% of each run's ceiling allows; then every ncu page's SM frequency, and the loop cycles of a CTA
alone on its SM against one sharing it.
"""

import glob
import io
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd

from bench.timeline import calls_in, split_calls, summarize

POINTS = [(8, 32768), (32, 8192), (64, 8192), (8, 131072)]
TL = {"s43": ("results/2026-12-04-h200-s43/probes/call1/c1.tgz", "tl/"),
      "s48": ("results/2026-12-05-h200-s48/probes/call2/tl.tgz", "s0/")}
BENCH = {"s42": "results/2026-12-04-h200-s42/bench-bf3777b/results.csv",
         "s45": "results/2026-12-05-h200-s45/bench-foscar-5ddb108/results.csv",
         "s46": "results/2026-12-05-h200-s46/bench-f705ebf/results.csv",
         "s46-r2": "results/2026-12-05-h200-s46/bench-f705ebf-r2/results.csv"}


def members(tgz: str, prefix: str, suffix: str) -> dict[str, bytes]:
    with tarfile.open(tgz) as t:
        return {Path(m.name).name: t.extractfile(m).read() for m in t.getmembers()
                if m.isfile() and m.name.lstrip("./").startswith(prefix) and m.name.endswith(suffix)}


def calls(records: np.ndarray) -> list[tuple[float, float]]:
    """Each call's (SM clock in MHz, the loop's median in us) by bench.timeline.summarize: the clock is the median
    over the working CTAs of >= 1 us of clock64 cycles per globaltimer ns."""
    return [(t.ghz * 1e3, t.phases["loop"]) for t in summarize(records, calls_in(records))]


ab = pd.concat(pd.read_csv(io.BytesIO(b)) for b in
               members("results/2026-12-05-h100-s51/probes/call2/c1.tgz", "ab-", ".csv").values())
bench = {k: pd.read_csv(v) for k, v in BENCH.items()}
clocks = {}
for sess, (tgz, prefix) in TL.items():
    for name, data in members(tgz, prefix, ".npy").items():
        clocks.setdefault(name, []).extend((sess, i, m, us) for i, (m, us) in
                                           enumerate(calls(np.load(io.BytesIO(data)))))

print("INT2 G=128 BF16 operands, contiguous, uniform. Step = H100 'l' (no DRAM stream, 1980 MHz, 3 rounds).")
for batch, context in POINTS:
    sel = ab[(ab.bits == 2) & (ab.batch == batch) & (ab.context == context)]
    step = sel[sel.m == "l"].median_us
    base = sel[sel.m == "t"].median_us
    mhz = clocks.get(f"timeline-2x{batch}x{context}.npy", [])
    print(f"\n{batch} x {context}: step at 1980 MHz {step.min():.1f}-{step.max():.1f} us (H100 decode 't' "
          f"{base.min():.1f}-{base.max():.1f} us)")
    if mhz:
        ms = np.array([m for _, _, m, _ in mhz])
        loop = np.array([us for _, _, _, us in mhz])
        kcyc = loop * ms / 1e3
        print("  H200 profiled calls (the profiling build): "
              + ", ".join(f"{s} call {i}: {m:.0f} MHz, loop {us:.2f} us = {us * m / 1e3:.1f} kcyc"
                          for s, i, m, us in mhz))
        print(f"  the step at those clocks: {step.median() * 1980 / ms.max():.1f}-{step.median() * 1980 / ms.min():.1f}"
              f" us (median clock {np.median(ms):.0f} MHz: {step.median() * 1980 / np.median(ms):.1f} us)")
        if len(ms) > 2:  # the loop's time against the clock: -1 if held by SM cycles, 0 if by a clock of its own
            slope = np.polyfit(np.log(ms), np.log(loop), 1)[0]
            print(f"  d log(loop us) / d log(MHz) over the {len(ms)} calls: {slope:+.2f} (clock {ms.min():.0f}-"
                  f"{ms.max():.0f} MHz, loop {loop.min():.2f}-{loop.max():.2f} us, "
                  f"{kcyc.min():.1f}-{kcyc.max():.1f} kcyc)")
    for k, d in bench.items():
        r = d[(d.kernel == "foscar-cuda") & (d.bits == 2) & (d.operand == "bf16") & (d.workload == "uniform")
              & (d.batch == batch) & (d.context == context)].iloc[0]
        t85 = r.bytes / (0.85 * r.hbm_ceiling_tbps * 1e12) * 1e6
        print(f"  H200 bench {k:6s}: {r.median_us:6.1f} us = {r.sol_fraction:.1%} of {r.hbm_ceiling_tbps:.3f} TB/s "
              f"(85% needs <= {t85:.1f} us); NVML SM clock {r.sm_clock_before_mhz:.0f} -> {r.sm_clock_after_mhz:.0f}"
              f" MHz, after: {r.clock_events_after}")

# ncu's own reading: "SM Frequency" (elapsed SM cycles over the duration) of every H200 details page in results/
print("\nncu details pages on H200s (`--clock-control none`): the kernel's SM Frequency, its duration and grid")
for f in sorted(glob.glob("results/*h200*/probes/**/*details*.csv", recursive=True)
                + glob.glob("results/*h200*/probes/**/det-*.csv.gz", recursive=True)):
    d = pd.read_csv(f, compression="infer", dtype=str)
    d = d[d["Section Name"] == "GPU Speed Of Light Throughput"]
    for (_, kernel, grid), g in d.groupby(["ID", "Kernel Name", "Grid Size"]):
        v = dict(zip(g["Metric Name"], g["Metric Value"]))
        if "folded_decode_kernel" in kernel and "SM Frequency" in v:
            print(f"  {v['SM Frequency']} GHz, {v['Duration']:>7} us, grid {grid:12s} {kernel.split('(')[0][5:]:42s} "
                  f"{f.split('/', 1)[1]}")

# a CTA alone on its SM against one that shares its SM with a second CTA: the loop's median in thousands of SM cycles
# (clk_loop_end - clk_loop), working CTAs of the one-wave points (124 SMs hold two, 8 hold one)
print("\nLoop cycles (k) of a CTA alone on its SM / sharing it with one other, per profiled call (H200 records above)")
for sess, (tgz, prefix) in TL.items():
    for name, data in sorted(members(tgz, prefix, ".npy").items()):
        records = np.load(io.BytesIO(data)).astype(np.int64)
        for i, p in enumerate(split_calls(records, calls_in(records))):  # (p[:, 8] >> 40) & 0xFFFF: the CTA's steps
            w = p[((p[:, 8] >> 40) & 0xFFFF) > 0]
            sm = w[:, 8] & 0xFF
            per_sm = pd.Series(sm).map(pd.Series(sm).value_counts()).to_numpy()
            loop = (w[:, 6] - w[:, 4]) / 1e3
            if (per_sm == 1).any() and (per_sm == 2).any():
                one, two = np.median(loop[per_sm == 1]), np.median(loop[per_sm == 2])
                print(f"  {sess} {name} call {i}: alone {one:.1f} ({(per_sm == 1).sum()} CTAs), sharing {two:.1f} "
                      f"({(per_sm == 2).sum()}): {one / two:.3f}")

# the loop's time against the clock over all profiled calls at once: log(loop us) on log(MHz), each (point, session)
# with a level of its own (demeaned); and without each graph's first call
print("\nPooled over the INT2 one-wave points' calls, each (point, session) its own level: d log(us) / d log(MHz)")
groups = []
for sess, (tgz, prefix) in TL.items():
    for name, data in sorted(members(tgz, prefix, ".npy").items()):
        if "64x" in name:  # two waves, one call (below)
            continue
        ts = summarize(np.load(io.BytesIO(data)), calls_in(np.load(io.BytesIO(data))))
        if len(ts) > 1:
            groups.append((sess, name, ts))


def pooled(part, skip_first=False):
    xs, ys = [], []
    for _, _, ts in groups:
        ts = ts[1:] if skip_first else ts
        if len(ts) < 2:
            continue
        x = np.log([t.ghz for t in ts])
        y = np.log([part(t) for t in ts])
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    x, y = np.concatenate(xs), np.concatenate(ys)
    slope = float((x * y).sum() / (x * x).sum())
    dof = len(x) - 1 - len(xs)
    se = float(np.sqrt(((y - slope * x) ** 2).sum() / dof / (x * x).sum()))
    return slope, se, len(x)


for label, part in [("loop", lambda t: t.phases["loop"])]:  # (outside the loop, calls 1+ wait for PDL in find_work)
    for skip in (False, True):
        b, se, n = pooled(part, skip)
        print(f"  {label}{' (first calls left out)' if skip else ''}: {b:+.2f} +- {se:.2f} (SE, {n} calls in "
              f"{len(groups)} groups)")

# INT2 64 x 8K: one call of two waves; the clock of each wave's working CTAs (>= 1 us), by entry time
for sess, (tgz, prefix) in TL.items():
    for name, data in members(tgz, prefix, ".npy").items():
        if name != "timeline-2x64x8192.npy":
            continue
        p = np.load(io.BytesIO(data)).astype(np.int64)
        w = p[((p[:, 8] >> 40) & 0xFFFF) > 0]
        first = w[:, 0] < w[:, 0].min() + 2000  # entered within 2 us of the first CTA
        for lab, sel in (("first wave", first), ("second wave", ~first)):
            ns, cyc = w[sel, 1] - w[sel, 0], w[sel, 7] - w[sel, 2]
            print(f"  {sess} INT2 64 x 8K {lab}: {sel.sum()} working CTAs, {np.median(cyc / ns) * 1e3:.0f} MHz, "
                  f"loop {np.median((w[sel, 6] - w[sel, 4]) / (cyc / ns)) / 1e3:.1f} us")
