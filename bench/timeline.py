"""Where a decode's time goes: per-CTA timelines from a profiling build of the CUDA kernel.

``python -m bench.timeline --point 1x16 --point 2x8x32768:paged`` (points as ``python -m bench.ab`` reads them,
``BITSxBATCHxCONTEXT[:WORKLOAD][:paged][:gN][:hQ-K][:cN][:dN][:capN][:sN][:fp8|:per-value]``, or without the bits at
``--bits``; the group size of points without ``:gN`` at ``--group-size``, default 128, their head counts without
``:hQ-K`` at ``--num-qo-heads`` / ``--num-kv-heads``, their head_dim without ``:dN`` at ``--head-dim``) builds the
extension with ``FOSCAR_TIMELINE=1`` (another extension name, beside the default build), checks each point against the
fp64 reference, replays a CUDA graph of 3 to 8 decodes over rotating copies of the cache (the bench's timing,
:mod:`bench.timing`; a rotation of fewer than 3 copies, as a cache past ~4x the L2 has, is repeated:
:func:`graph_rounds`), and prints each phase's median over the CTAs of each call (us):

* ``find_work``: from the CTA's entry to its work (the length-aware schedule); with the decode kernel launched with
  PDL (``FOSCAR_PDL``, the default) a CTA of calls 1-7 enters before the previous call has ended and waits in
  ``griddepcontrol.wait``, inside this phase (call 0 shows the CTA's own; bench/NOTES.md §73);
* ``to_loop``: the prologue until the loop starts (the query's load and conversion, the
  first sub-tiles' copies issued);
* ``first_wait``: step 0's wait for its sub-tile (included in ``loop``);
* ``loop``: the steps, from the loop's start to its end;
* ``epilogue``: the merge of the 4 warps and the output (with the wait for the CTA's slowest warp), and its parts:
  ``ep_barrier`` (to its first barrier passed: the wait for the CTA's slowest warp and its copies), ``ep_rows`` (the
  warps' row sums and output rows stored, the second barrier), ``ep_merge`` (the merge over the warps and the output
  or partial written), ``ep_end`` (the rest: the chunk bookkeeping for the split merge, the fused merge); each a
  median of its own over the CTAs, so the parts need not add up to the ``epilogue`` median exactly;
* ``span``: first CTA entry to last CTA exit; ``gap``: to the next call's first CTA (the launches, and the split
  merge kernel where the plan takes it, ``FOSCAR_MERGE=kernel``; the in-kernel merge is inside ``ep_end``; negative
  where the next call's CTAs enter, with PDL, before this call has ended);
* ``sm_tail``: over the SMs that ran two or more working CTAs (by ``%smid``), the median time between an SM's last two
  CTA exits, i.e. how long it ran its last CTA alone (at a one-wave point two CTAs an SM do not finish together:
  bench/NOTES.md §87); ``1-CTA SMs``: the SMs that ran one working CTA only;
* ``SM MHz``: the call's SM clock under load, ``clock64`` cycles over ``%globaltimer`` ns (the median over its
  working CTAs of 1 us or more). NVML does not show this clock: beside the decode a spinning CTA read 1806-1810 MHz
  on an H200 and 1836-1844 on an H100 while NVML read 1980, and this column read 1-6% below the spin, unexplained
  (bench/NOTES.md §96, §97);
* ``loop_kcyc``: the loop's median in thousands of SM cycles (its us at the call's clock). Between calls of different
  clocks, a loop held by the SMs' cycles keeps its ``loop_kcyc`` and a loop held by something on its own clock (the
  memory) keeps its us: §96 read the latter in the H200's records (pooled slope of log us on log MHz -0.12 +- 0.24).
  The phases' us are cycles over the call's clock, so that slope leans to -1 by construction: it says little where the
  calls' clocks span less than ~3% (§97).

``python -m bench.timeline --records DIR/timeline-2x8x32768.npy`` prints the same table from records saved with
``--save``, on any machine.

The record layout (13 u64 per CTA, written by thread 0) is :data:`FIELDS`, the kernel's
``kTimelineFields`` (``foscar/kernels/csrc/folded_decode_sm90.cuh``). ``clock64`` cycles are
converted at the rate of ``%globaltimer`` over the call's CTAs (the SM clock under load). The
profiling build's stamps cost 0.5-15% of a decode (bench/NOTES.md §66), so its phases bound the
default build's from above. Needs a CUDA GPU (sm_90) and nvcc.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass

import numpy as np

from bench.ab import (GROUP_SIZE, HEAD_DIMS, NUM_KV_HEADS, NUM_QO_HEADS, ProbePoint, build_point, is_group_suffix,
                      is_head_dim_suffix, parse_point)

# the record's fields, in order (the kernel's stamps 0-12)
FIELDS = ("gt_entry", "gt_exit", "clk_entry", "clk_found", "clk_loop", "clk_first", "clk_loop_end", "clk_exit",
          "meta", "tokens", "clk_cut1", "clk_cut2", "clk_cut3")
PHASES = ("find_work", "to_loop", "first_wait", "loop", "epilogue", "ep_barrier", "ep_rows", "ep_merge", "ep_end")
MAX_CALLS = 8  # decodes in the profiled graph (one record a CTA each)
# ... and at least this many: where the rotation has fewer copies (a cache past ~4x the L2 has one), the graph repeats
# them, so that the calls after the first show back-to-back decodes, as the bench times them (bench/NOTES.md §88: a
# one-call profile of INT2 64 x 32K spanned 1.32x the bench's time)
MIN_CALLS = 3
CLOCK_MIN_NS = 1000  # a CTA's clock64 / %globaltimer ratio counts toward its call's clock from this duration up
DEFINE = "FOSCAR_TIMELINE=1"


@dataclass(frozen=True)
class CallTimeline:
    """One call's CTAs: phase medians in us (working CTAs), the span and the gap to the next call (us)."""

    ctas: int
    working: int
    ghz: float  # clock64 cycles per globaltimer ns, the median over the call's working CTAs of >= 1 us
    phases: dict[str, float]
    span_us: float
    gap_us: float | None  # None for the last call
    # the median over SMs that ran two or more working CTAs of the time between the SM's last two exits: how long it
    # ran its last CTA alone (bench/NOTES.md §87); None where no SM ran two; and the SMs that ran one working CTA only
    sm_tail_us: float | None = None
    one_cta_sms: int = 0


def split_calls(records: np.ndarray, calls: int) -> list[np.ndarray]:
    """The records of ``calls`` serialized launches of one grid, in launch order.

    Args:
        records: int64 ``[n, 13]`` as the kernel wrote them (record order = arrival at the counter).
        calls: launches profiled; ``n`` must be a multiple.

    Raises:
        ValueError: ``records`` is not ``[n, 13]`` or ``n`` is not a multiple of ``calls``.
    """
    if records.ndim != 2 or records.shape[1] != len(FIELDS):
        raise ValueError(f"records: expected [n, {len(FIELDS)}], got {list(records.shape)}")
    if calls < 1 or len(records) % calls:
        raise ValueError(f"records: {len(records)} is not a multiple of calls={calls}")
    per = len(records) // calls
    # launches of one stream run one after another: each call's CTAs took the counter before the next call's
    return [records[i * per:(i + 1) * per] for i in range(calls)]


def graph_rounds(copies: int) -> int:
    """Rounds over ``copies`` rotating copies in the profiled graph: enough that it holds at least :data:`MIN_CALLS`
    decodes (``copies`` is at most :data:`MAX_CALLS`).

    Raises:
        ValueError: ``copies`` is not in ``1..MAX_CALLS``.
    """
    if not 1 <= copies <= MAX_CALLS:
        raise ValueError(f"copies: expected 1..{MAX_CALLS}, got {copies}")
    return -(-MIN_CALLS // copies)


def calls_in(records: np.ndarray) -> int:
    """How many launches of one grid ``records`` holds (a saved ``--save`` file), from the CTA indices in the meta
    field: every launch records each of its CTAs once, so the grid is the largest index + 1 (a loss of whole grids'
    records is not seen: the buffer holds every call's whole grid up to ``1 << 16`` CTAs).

    Raises:
        ValueError: ``records`` is not ``[n, 13]``, or ``n`` is not a multiple of the grid (records dropped: a grid
            past the buffer's ``1 << 16`` CTAs a call).
    """
    if records.ndim != 2 or records.shape[1] != len(FIELDS) or len(records) == 0:
        raise ValueError(f"records: expected [n, {len(FIELDS)}] with n > 0, got {list(records.shape)}")
    grid = int(((records[:, 8].astype(np.int64) >> 8) & 0xFFFF).max()) + 1
    if len(records) % grid:
        raise ValueError(f"records: {len(records)} is not a multiple of the grid ({grid} CTAs): records were dropped")
    return len(records) // grid


def summarize_call(rec: np.ndarray, next_rec: np.ndarray | None = None) -> CallTimeline:
    """Phase medians over the working CTAs of one call (``iters > 0`` in the meta field).

    Raises:
        ValueError: no CTA of the call has work.
    """
    rec = rec.astype(np.int64)
    iters = (rec[:, 8] >> 40) & 0xFFFF
    work = iters > 0
    if not work.any():
        raise ValueError("no CTA of this call has work (empty sequences?)")
    dur_ns = (rec[:, 1] - rec[:, 0]).astype(float)
    dur_cyc = (rec[:, 7] - rec[:, 2]).astype(float)
    # the clock from the working CTAs that ran at least CLOCK_MIN_NS: an empty or sub-us CTA's ratio reads low (the
    # stamps' own gap and %globaltimer's steps weigh on a short interval; at INT2 64 x 8K, where half the grid is
    # empty, all CTAs gave 1671 MHz against the working CTAs' 1747, bench/NOTES.md §96)
    ok = work & (dur_ns >= CLOCK_MIN_NS)
    if not ok.any():
        ok = dur_ns > 0
    ghz = float(np.median(dur_cyc[ok] / dur_ns[ok])) if ok.any() else float("nan")
    w = rec[work]

    def us(cycles: np.ndarray) -> float:
        return float(np.median(cycles)) / ghz / 1e3

    phases = {
        "find_work": us(w[:, 3] - w[:, 2]),
        "to_loop": us(w[:, 4] - w[:, 3]),
        "first_wait": us(w[:, 5] - w[:, 4]),
        "loop": us(w[:, 6] - w[:, 4]),
        "epilogue": us(w[:, 7] - w[:, 6]),
        "ep_barrier": us(w[:, 10] - w[:, 6]),
        "ep_rows": us(w[:, 11] - w[:, 10]),
        "ep_merge": us(w[:, 12] - w[:, 11]),
        "ep_end": us(w[:, 7] - w[:, 12]),
    }
    t0, t1 = rec[:, 0].min(), rec[:, 1].max()
    gap = None if next_rec is None else float(next_rec[:, 0].min() - t1) / 1e3
    sm = w[:, 8] & 0xFF  # %smid
    tails, one = [], 0
    for s in np.unique(sm):
        exits = np.sort(w[sm == s, 1])
        if len(exits) >= 2:
            tails.append(float(exits[-1] - exits[-2]) / 1e3)
        else:
            one += 1
    return CallTimeline(ctas=len(rec), working=int(work.sum()), ghz=ghz, phases=phases, span_us=float(t1 - t0) / 1e3,
                        gap_us=gap, sm_tail_us=float(np.median(tails)) if tails else None, one_cta_sms=one)


def summarize(records: np.ndarray, calls: int) -> list[CallTimeline]:
    """:func:`summarize_call` of each call in ``records`` (see :func:`split_calls`)."""
    parts = split_calls(records, calls)
    return [summarize_call(p, parts[i + 1] if i + 1 < len(parts) else None) for i, p in enumerate(parts)]


def profile_point(pp: ProbePoint, num_qo_heads: int, num_kv_heads: int) -> tuple[float, list[CallTimeline], np.ndarray]:
    """``(max_rel_err, per-call timelines, raw records)`` of one point on the GPU: ``pp`` as ``bench.ab`` reads it
    (bits, batch, context, the length distribution, paged or contiguous, the group size, the head counts where its
    ``:hQ-K`` suffix gives them, else ``num_qo_heads`` / ``num_kv_heads``, the head_dim: its ``:dN``, else 128), its
    data as :func:`bench.ab.build_point` makes it.

    Raises:
        RuntimeError: the extension was built without ``FOSCAR_TIMELINE`` (set it before importing
            :mod:`foscar.kernels.decode_cuda`, as :func:`main` does).
    """
    import torch

    import foscar
    from bench.backends import Prepared, clone_cache
    from bench.sweep import rotation
    from bench.timing import capture_graph, warm_for_capture
    from bench.workload import max_rel_err
    from foscar.kernels import decode_cuda

    ext = decode_cuda.extension()
    dev = torch.device("cuda")
    num_qo_heads, num_kv_heads = pp.heads(num_qo_heads, num_kv_heads)  # a point's :hQ-K suffix wins
    w, cache, nbytes = build_point(pp, dev, num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads)

    def make(q, c):
        plan = foscar.plan_decode(c, num_qo_heads, backend="cuda", **pp.plan_options())
        return lambda: plan.run(q, c)

    fn = make(w.q, cache)
    out = fn()
    torch.cuda.synchronize()
    err = max_rel_err(out, w.reference, w.rows)
    prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes, replica=lambda: make(w.q.clone(), clone_cache(cache)))
    fns = rotation(prep, dev)[:MAX_CALLS]
    warm_for_capture(fns)
    rounds = graph_rounds(len(fns))
    calls = rounds * len(fns)
    grid_max = 1 << 16  # CTAs a call at most (records past it are dropped by the kernel)
    buf = torch.zeros(1 + len(FIELDS) * grid_max * calls, dtype=torch.int64, device=dev)
    if not ext.set_timeline(buf):
        raise RuntimeError(f"this CUDA extension was built without {DEFINE}: set FOSCAR_NVCC_DEFINES before import")
    try:  # launches captured now take the buffer (a graph keeps the Params it was captured with)
        graph = capture_graph(fns, rounds)  # replayed once: its records are dropped by zeroing the counter
        buf[0] = 0
        graph.replay()
        torch.cuda.synchronize()
    finally:
        ext.set_timeline(None)
    n = min(int(buf[0].item()), grid_max * calls)
    records = buf[1:1 + len(FIELDS) * n].view(n, len(FIELDS)).cpu().numpy()
    return err, summarize(records, calls), records


def describe(pp: ProbePoint) -> str:
    """A point as the table's heading names it: ``8 x 32768 lognormal paged G=64`` (the workload where not uniform,
    ``paged``, the group size where not the bench's 128, the head counts where the point gives them, channel-wise K's
    block, the head_dim where the point gives it, the cache's capacity where the point gives it, a one-long point's
    short length where the point gives it, the mode where not folded BF16: ``8 x 32768 heads 8/1 channel-K 32 D=256 cap
    131072 fp8``, ``64 x 1024 one-long cap 4096 short 512``)."""
    return f"{pp.batch} x {pp.context}" + (f" {pp.workload}" if pp.workload != "uniform" else "") + (
        " paged" if pp.paged else "") + (f" G={pp.group_size}" if pp.group_size != GROUP_SIZE else "") + (
        f" heads {pp.num_qo_heads}/{pp.num_kv_heads}" if pp.num_qo_heads is not None else "") + (
        f" channel-K {pp.k_block}" if pp.k_block else "") + (f" D={pp.head_dim}" if pp.head_dim else "") + (
        f" cap {pp.capacity}" if pp.capacity else "") + (f" short {pp.short_len}" if pp.short_len else "") + (
        f" {pp.mode}" if pp.mode != "bf16" else "")


def record_file(pp: ProbePoint) -> str:
    """The file name of a point's raw records (``--save``): ``timeline-2x8x32768-lognormal-paged.npy``."""
    return f"timeline-{pp.label.replace(':', '-')}.npy"


def format_calls(title: str, timelines: list[CallTimeline]) -> str:
    """The table ``python -m bench.timeline`` prints for one point: a heading line (``title``, then the units), then
    one row a call: CTAs, each phase's median (us), span, gap, sm_tail (us), the 1-CTA SMs, the SM clock in MHz
    (``CallTimeline.ghz``: ``clock64`` cycles per ``%globaltimer`` ns over the call's working CTAs, the clock under
    load) and the loop's median in thousands of SM cycles (``loop_kcyc``; whether a loop's time follows its cycles or
    the wall clock is what comparing calls of different clocks tells, bench/NOTES.md §96)."""
    lines = [f"{title}: medians over the working CTAs, us (SM MHz: MHz; loop_kcyc: thousands of SM cycles):",
             "  call  CTAs  " + "  ".join(f"{p:>10}" for p in PHASES) + "        span          gap     sm_tail"
             "  1-CTA SMs  SM MHz  loop_kcyc"]
    for i, t in enumerate(timelines):
        gap = f"{t.gap_us:11.2f}" if t.gap_us is not None else " " * 11
        tail = f"{t.sm_tail_us:10.2f}" if t.sm_tail_us is not None else " " * 10
        lines.append(f"  {i:4d} {t.ctas:5d}  " + "  ".join(f"{t.phases[p]:10.2f}" for p in PHASES)
                     + f"  {t.span_us:10.2f}  {gap}  {tail}  {t.one_cta_sms:9d}  {t.ghz * 1e3:6.0f}"
                     + f"  {t.phases['loop'] * t.ghz:9.2f}")
    return "\n".join(lines)


def read_records(paths: list[str]) -> int:
    """``--records``: the table of each saved ``--save`` file (``timeline-POINT.npy``), on the CPU; the number of
    calls from the records themselves (:func:`calls_in`). A file that cannot be read is named with the reason on
    stderr and the others still print. Returns the exit status: 2 where a file is missing, is not one ``.npy`` array
    (an archive of them is to be extracted first) or is not a record array of this layout (records written before
    session 31's epilogue stamps have 10 fields, not 13)."""
    status = 0
    for path in paths:
        try:
            records = np.load(path, allow_pickle=False)
            if not isinstance(records, np.ndarray):
                raise ValueError("not one .npy array (an .npz archive?): pass the timeline-POINT.npy files")
            timelines = summarize(records, calls_in(records))
        except Exception as e:  # reported per file; the rest still print
            hint = " (a .tgz of records? extract it and pass its .npy files)" if "pickle" in str(e) else ""
            print(f"bench.timeline: {path}: {e}{hint}", file=sys.stderr)
            status = 2
            continue
        print(format_calls(os.path.basename(path), timelines))
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.timeline``: per-phase medians of the INT2/INT4 CUDA decode at the given points."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--point", action="append",
                    help="BITSxBATCHxCONTEXT[:WORKLOAD][:paged][:gN][:hQ-K][:cN][:dN][:capN][:sN][:fp8|:per-value] "
                         "as python -m bench.ab reads it, or "
                         "BATCHxCONTEXT[...] at --bits (repeat); default 1x16, 1x8192, 8x32768")
    ap.add_argument("--bits", type=int, choices=(2, 4), default=2, help="the bit width of points without one")
    ap.add_argument("--group-size", type=int, default=None,
                    help="the group size of points without a :gN suffix (default 128)")
    ap.add_argument("--num-qo-heads", type=int, default=None,
                    help="query heads of points without a :hQ-K suffix (default 32)")
    ap.add_argument("--num-kv-heads", type=int, default=None,
                    help="KV heads of points without a :hQ-K suffix (default 8)")
    ap.add_argument("--head-dim", type=int, choices=HEAD_DIMS, default=None,
                    help="the head_dim of points without a :dN suffix (default 128)")
    ap.add_argument("--save", metavar="DIR", help="also write each point's raw records as DIR/timeline-POINT.npy "
                    "(record_file)")
    ap.add_argument("--records", action="append", metavar="FILE", help="print the table of records saved with "
                    "--save (repeat), on the CPU; no GPU work, the other options ignored")
    args = ap.parse_args(argv)
    if args.records:
        return read_records(args.records)
    try:
        points = [parse_point(t, bits=args.bits) for t in args.point or ["1x16", "1x8192", "8x32768"]]
    except ValueError as e:
        ap.error(f"--point: {e}")
    def clashing(has_suffix, differs) -> list[str]:
        """The ``--point`` texts whose own suffix (``has_suffix``) gives a value other than a flag's (``differs``):
        args.point, when given, is the points' text one to one; the default points have no suffixes."""
        return [t for t, pp in zip(args.point or [], points)
                if differs(pp) and any(has_suffix(x) for x in t.split(":")[1:])]

    if args.group_size is not None:  # points without a :gN suffix take --group-size
        clash = clashing(is_group_suffix, lambda pp: pp.group_size != args.group_size)
        if clash:
            ap.error(f"--group-size {args.group_size} and the points' own group sizes differ: {', '.join(clash)}")
        points = [dataclasses.replace(pp, group_size=args.group_size) for pp in points]  # (the :gN ones agree)
    heads = (args.num_qo_heads or NUM_QO_HEADS, args.num_kv_heads or NUM_KV_HEADS)
    if args.num_qo_heads is not None or args.num_kv_heads is not None:  # points without :hQ-K take them
        clash = clashing(lambda x: x[:1] == "h", lambda pp: pp.heads() != heads)
        if clash:
            ap.error(f"--num-qo-heads / --num-kv-heads {heads[0]} / {heads[1]} and the points' own head counts "
                     f"differ: {', '.join(clash)}")
    if args.head_dim is not None:  # points without a :dN suffix take --head-dim
        clash = clashing(is_head_dim_suffix, lambda pp: pp.dim() != args.head_dim)
        if clash:
            ap.error(f"--head-dim {args.head_dim} and the points' own head_dims differ: {', '.join(clash)}")
        try:
            points = [dataclasses.replace(pp, head_dim=args.head_dim) for pp in points]  # (the :dN ones agree)
        except ValueError as e:  # a head_dim the point's group size or mode refuses
            ap.error(f"--head-dim {args.head_dim}: {e}")
    defines = os.environ.get("FOSCAR_NVCC_DEFINES", "").split()
    if DEFINE not in defines:  # before foscar.kernels.decode_cuda is imported (it reads the variable once)
        os.environ["FOSCAR_NVCC_DEFINES"] = " ".join([*defines, DEFINE])
    import torch

    if not torch.cuda.is_available():
        print("bench.timeline needs a CUDA GPU (sm_90)", file=sys.stderr)
        return 2
    for pp in points:
        err, timelines, records = profile_point(pp, *heads)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            np.save(os.path.join(args.save, record_file(pp)), records)
        print(format_calls(f"INT{pp.bits} {describe(pp)} (max_rel_err {err:.2e})", timelines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
