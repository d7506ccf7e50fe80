"""A/B probes of CUDA kernel builds: the same points timed in one process per build and round.

Each session's kernel experiments (bench/NOTES.md) compare two builds of the extension (``FOSCAR_NVCC_DEFINES``
knobs, or an older source tree through ``FOSCAR_CSRC``) on a handful of points, in rounds alternated by the caller
(a b b a), so that a drift of the GPU's clock over the call falls on both builds. ``FOSCAR_CSRC`` works only while
the older sources' C entry takes the arguments this tree's :mod:`foscar.kernels.decode_cuda` passes (it gained
``max_ctas_per_sm`` and ``pdl``, bench/NOTES.md §67, §73); otherwise run that tree's own copy of this module from its
root (``git archive REV | tar -x -C old && cd old && python -m bench.ab run ...``), as sessions 32-33 did. This module
is that probe:

    FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 KNOB=1" \\
        python -m bench.ab run LABEL ROUND OUT.csv --point 2x1x16 --point 2x8x32768 --point 4x64x8192:paged
    python -m bench.ab table A.csv B.csv ... [--base LABEL]

``run`` builds (or loads) the extension of the environment's build, measures every point's error against the fp64
reference of the dequantized cache on fresh random data (seed 0; ``err``, the bench's ``max_rel_err``; a NaN is
flagged), then times it as ``foscar bench`` times (:func:`bench.timing.time_fn`: a CUDA-graph replay over rotating
copies of the cache, every call reading from HBM) with the SM clock and its event reasons read through NVML just before
and after (the bench's columns, :mod:`bench.clocks`; empty without ``pynvml``), and rewrites ``OUT.csv`` with this
call's rows after each point (one CSV per label and round; a point that fails records its error and the probe goes on;
the exit status is 1 when one failed). ``table`` prints the median us per point and (label, round), each label's mean
over its rounds over the base label's, the points whose outputs differ between builds or rounds (a SHA-1 of the output),
the largest error per label and whether any output held a NaN, the SM clock while each point's timed calls ran (per
label, over its rounds), and each (label, round, point) timed while the clock was held down
(:data:`bench.clocks.THROTTLE_REASONS` before, during or after its timing).

Points (:func:`parse_point`): ``BITSxBATCHxCONTEXT`` with optional ``:WORKLOAD`` (a name of
:data:`bench.lengths.WORKLOAD_NAMES`, default uniform), ``:paged`` (FOSCAR's page-16 cache, pages shuffled as in
the bench), ``:gN`` (quantization group size N: 32, 64 or 128, default 128), ``:hQ-K`` (query and KV heads),
``:cN`` (channel-wise K's block), ``:dN`` (head_dim N: 64, 128 or 256), ``:capN`` (a cache allocated for N tokens a
sequence, at least the context; default the context: the bench's ``capacity`` workload and caches sized for the longest
context), ``:sN`` (a ``one-long`` point's short sequences at N tokens; default the bench's 4096, at most the context)
and ``:fp8`` / ``:per-value`` (the kernel's mode; default folded BF16 operands). The shape is the bench's
unless ``:hQ-K`` / ``:dN`` give one: Qwen3-8B (32 query heads, 8 KV heads, head_dim 128).

``--query-copy``: each timed call first writes the query with a plain torch copy kernel (launched without
programmatic dependent launch, so it never triggers its dependents early), as a serving step's kernel before the
attention writes it; the decode then runs behind a kernel that does not trigger, not behind its own previous call
(bench/NOTES.md §73 measured what PDL does there). The times include the copy's.

``--no-sampler``: no :class:`bench.clocks.ClockSampler` thread reads NVML during the timed replays (the readings just
before and after stay); the columns ``sm_clock_during_mhz`` and ``clock_events_during`` stay empty and the column
``sampler`` is 0. Rounds with and without it are the A/A of the sampler: whether reading NVML every 20 ms from a second
host thread moves the times that ``foscar bench`` records.
"""

from __future__ import annotations

import argparse
import numbers
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.lengths import DEFAULT_SHORT_LEN, WORKLOAD_NAMES, WorkloadSpec

NUM_QO_HEADS, NUM_KV_HEADS, HEAD_DIM, GROUP_SIZE, PAGE_SIZE = 32, 8, 128, 128, 16
KEYS = ["bits", "batch", "context", "workload", "paged", "group_size", "num_qo_heads", "num_kv_heads", "k_block",
        "mode", "head_dim", "capacity", "short_len"]
# a point's columns in the CSV (rows written before session 58 have no head counts: the bench's 32 / 8, and no k_block:
# token-wise K, written 0; before session 65 no mode: folded BF16 operands; before session 71 no head_dim: 128; before
# session 72 no capacity: the context; before session 73 no short_len: a one-long point's DEFAULT_SHORT_LEN, else 0)
GROUP_SIZES = (32, 64, 128)  # the ``:gN`` suffixes
MODES = ("bf16", "fp8", "per-value")  # a point's kernel mode: folded BF16 operands (unlabelled), :fp8, :per-value
HEAD_DIMS = (64, 128, 256)  # the ``:dN`` suffixes (the CUDA kernel's head_dims)


@dataclass(frozen=True)
class ProbePoint:
    """One probe point: cache bits, batch, context (tokens), the length distribution, paged or contiguous, the
    quantization group size, the attention shape's head counts (None: the caller's, by default the bench's
    32 query heads over 8 KV heads; given as 32 / 8, they are stored as None, unlabelled as the default group is),
    channel-wise K's block (``k_block`` tokens; None: token-wise K), and the kernel's mode (one of :data:`MODES`:
    ``"bf16"``, folded with BF16 tensor-core operands, the default; ``"fp8"``, folded with FP8 e4m3 operands;
    ``"per-value"``, the per-value reconstruction variant; :func:`foscar.plan_decode`'s ``operand`` / ``method``), and
    the head_dim (None: the caller's, by default the bench's 128; given as 128, stored as None, unlabelled), and the
    cache's capacity, tokens a sequence (None: the context; given as the context, stored as None, unlabelled; the
    bench's paged copy holds the lengths' pages only, and keeps the capacity as its ``max_seq_len``, the bound its
    plans are made for), and a ``one-long`` point's short sequences' length, tokens (None: the bench's
    :data:`bench.lengths.DEFAULT_SHORT_LEN`, 4096, at most the context; given as that, stored as None, unlabelled;
    another workload takes none)."""

    bits: int
    batch: int
    context: int
    workload: str = "uniform"
    paged: bool = False
    group_size: int = GROUP_SIZE
    num_qo_heads: int | None = None
    num_kv_heads: int | None = None
    k_block: int | None = None
    mode: str = "bf16"
    head_dim: int | None = None
    capacity: int | None = None
    short_len: int | None = None

    @property
    def label(self) -> str:
        """The point as :func:`parse_point` reads it
        (``2x8x32768:lognormal:paged:g64:h8-1:c32:d256:cap131072:fp8``, ``2x64x1024:one-long:cap4096:s512``)."""
        return f"{self.bits}x{self.batch}x{self.context}" + (
            f":{self.workload}" if self.workload != "uniform" else "") + (":paged" if self.paged else "") + (
            f":g{self.group_size}" if self.group_size != GROUP_SIZE else "") + (
            f":h{self.num_qo_heads}-{self.num_kv_heads}" if self.num_qo_heads is not None else "") + (
            f":c{self.k_block}" if self.k_block else "") + (f":d{self.head_dim}" if self.head_dim else "") + (
            f":cap{self.capacity}" if self.capacity else "") + (f":s{self.short_len}" if self.short_len else "") + (
            f":{self.mode}" if self.mode != "bf16" else "")

    def plan_options(self) -> dict:
        """The keyword arguments of :func:`foscar.plan_decode` that give the point's mode."""
        if self.mode == "per-value":
            return {"method": "per-value"}
        return {"operand": self.mode}

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"ProbePoint: mode {self.mode!r}, expected one of {', '.join(MODES)}")
        if (self.num_qo_heads is None) != (self.num_kv_heads is None):
            raise ValueError(f"ProbePoint: give both head counts or neither, got num_qo_heads={self.num_qo_heads}, "
                             f"num_kv_heads={self.num_kv_heads}")
        if (self.num_qo_heads, self.num_kv_heads) == (NUM_QO_HEADS, NUM_KV_HEADS):  # the default: unlabelled
            object.__setattr__(self, "num_qo_heads", None)
            object.__setattr__(self, "num_kv_heads", None)
        if self.head_dim is not None and self.head_dim not in HEAD_DIMS:
            raise ValueError(f"ProbePoint: head_dim {self.head_dim}, expected one of {', '.join(map(str, HEAD_DIMS))}")
        if self.head_dim == HEAD_DIM:  # the default: unlabelled
            object.__setattr__(self, "head_dim", None)
        if self.head_dim is not None and self.head_dim % self.group_size:  # (the quantizer's rule, at build time)
            raise ValueError(f"ProbePoint: head_dim {self.head_dim} is not a multiple of the group size "
                             f"{self.group_size}: give a group size of at most {self.head_dim} (:g32 or :g64)")
        if self.capacity == self.context:  # the default: unlabelled
            object.__setattr__(self, "capacity", None)
        if self.capacity is not None and self.capacity < self.context:
            raise ValueError(f"ProbePoint: capacity {self.capacity} below the context {self.context}; a cache holds "
                             f"at least the point's longest sequence")
        if self.short_len == DEFAULT_SHORT_LEN:  # the default: unlabelled
            object.__setattr__(self, "short_len", None)
        if self.short_len is not None and (self.workload != "one-long" or self.short_len < 1):
            raise ValueError(f"ProbePoint: a short length ({self.short_len}) needs the one-long workload and at least "
                             f"1 token, got workload {self.workload!r}")
        if self.mode == "fp8" and (self.dim() * self.bits // 128) % 2:  # (decode_cuda.fp8_unsupported's rule)
            raise ValueError(f"ProbePoint: FP8 operands need head_dim * bits / 128 even, got INT{self.bits} at "
                             f"head_dim {self.dim()} (head_dim 128 / 256, or INT4 at 64)")

    def heads(self, num_qo_heads: int = NUM_QO_HEADS, num_kv_heads: int = NUM_KV_HEADS) -> tuple[int, int]:
        """``(num_qo_heads, num_kv_heads)``: the point's own where its ``:hQ-K`` suffix gave them, else the
        arguments (the bench's 32 / 8 by default)."""
        if self.num_qo_heads is None:
            return num_qo_heads, num_kv_heads
        return self.num_qo_heads, self.num_kv_heads

    def dim(self, head_dim: int = HEAD_DIM) -> int:
        """The head_dim: the point's own where its ``:dN`` suffix gave it, else the argument (the bench's 128)."""
        return head_dim if self.head_dim is None else self.head_dim

    def cache_tokens(self) -> int:
        """The cache's capacity, tokens a sequence: the ``:capN`` suffix's, else the context."""
        return self.context if self.capacity is None else self.capacity

    def short_tokens(self) -> int:
        """A ``one-long`` point's short sequences' length as asked, tokens (the ``:sN`` suffix's, else
        :data:`bench.lengths.DEFAULT_SHORT_LEN`; the lengths take at most the context); 0 for another workload."""
        if self.workload != "one-long":
            return 0
        return DEFAULT_SHORT_LEN if self.short_len is None else self.short_len


def is_group_suffix(suffix: str) -> bool:
    """Whether one ``:``-separated suffix of a point is a group size, ``gN`` (N digits; :func:`parse_point` checks N)."""
    return suffix[:1] == "g" and suffix[1:].isdigit()


def is_head_dim_suffix(suffix: str) -> bool:
    """Whether one ``:``-separated suffix of a point is a head_dim, ``dN`` (N digits; :func:`parse_point` checks N)."""
    return suffix[:1] == "d" and suffix[1:].isdigit()


def is_capacity_suffix(suffix: str) -> bool:
    """Whether one ``:``-separated suffix of a point is a capacity, ``capN`` (N digits)."""
    return suffix[:3] == "cap" and suffix[3:].isdigit()


def is_short_len_suffix(suffix: str) -> bool:
    """Whether one ``:``-separated suffix of a point is a one-long point's short length, ``sN`` (N digits)."""
    return suffix[:1] == "s" and suffix[1:].isdigit()


def parse_point(text: str, bits: int | None = None) -> ProbePoint:
    """``BITSxBATCHxCONTEXT[:WORKLOAD][:paged][:gN][:hQ-K][:cN][:dN][:capN][:sN][:fp8|:per-value]``, e.g. ``2x8x32768``,
    ``4x64x8192:paged``, ``2x8x32768:lognormal``, ``4x8x32768:g64`` (group size 64), ``4x1x32768:h8-1`` (8 query heads
    over 1 KV head: Llama-3.1-70B at tensor parallel 8; without it, or as ``:h32-8``, the bench's 32 over 8, unlabelled
    as the default group is), ``4x8x32768:c32`` (channel-wise K over blocks of 32 tokens, :mod:`foscar.quant`; without
    it token-wise K), ``2x1x8192:h16-4:d256`` (head_dim 256; 64, 128 or 256, without it the bench's 128, unlabelled),
    ``2x8x4096:h8-1:cap131072`` (eight sequences of 4096 tokens in a cache allocated for 128K; without it, or as the
    context, a cache of the context, unlabelled), ``2x64x1024:one-long:cap4096:s512`` (one sequence of 1024 tokens and
    63 of 512; ``:sN`` only with ``one-long``, whose short sequences are otherwise the bench's 4096 tokens, at most the
    context), ``2x1x524288:fp8`` (the folded kernel with FP8 operands; ``:per-value``, the per-value variant; without
    either, or as ``:bf16``, folded BF16 operands, unlabelled); where ``bits`` is given (``python -m bench.timeline
    --bits``), ``BATCHxCONTEXT[...]`` with the same suffixes too, at that bit width. The one point syntax of
    ``bench.ab`` and ``bench.timeline``.

    Raises:
        ValueError: not three (or, with ``bits``, two or three) positive integers joined by ``x``, bits other than 2
            or 4, a group size or k_block other than 32, 64 or 128, a head_dim other than 64, 128 or 256 (or not a
            multiple of the group size; or INT2 at 64 with FP8 operands), a capacity below the context, a short length
            of 0 or without the one-long workload, head counts
            that are not positive with the
            query heads a multiple of the KV heads, two modes (``:bf16``, ``:fp8``, ``:per-value``), or an unknown
            suffix (the allowed ones are named).
    """
    head, *suffixes = text.split(":")
    parts = head.split("x")
    short = bits is not None and len(parts) == 2
    if not (len(parts) == 3 or short) or not all(p.isdigit() and int(p) > 0 for p in parts):
        form = "BITSxBATCHxCONTEXT (or BATCHxCONTEXT)" if bits is not None else "BITSxBATCHxCONTEXT"
        raise ValueError(f"point {text!r}: expected {form} of positive integers, e.g. 2x8x32768")
    if short:
        parts = [str(bits), *parts]
    bits, batch, context = (int(p) for p in parts)
    if bits not in (2, 4):
        raise ValueError(f"point {text!r}: bits {bits}, expected 2 or 4")
    workload, paged, group_size, heads, k_block, mode = "uniform", False, GROUP_SIZE, (None, None), None, None
    head_dim = capacity = short_len = None
    for s in suffixes:
        if s in MODES:
            if mode is not None:
                raise ValueError(f"point {text!r}: two modes ({mode!r} and {s!r}); give at most one of "
                                 f"{', '.join(':' + m for m in MODES)}")
            mode = s
        elif s == "paged":
            paged = True
        elif s in WORKLOAD_NAMES:
            workload = s
        elif is_group_suffix(s):
            group_size = int(s[1:])
            if group_size not in GROUP_SIZES:
                raise ValueError(f"point {text!r}: group size {group_size}, expected one of "
                                 f"{', '.join(map(str, GROUP_SIZES))}")
        elif s[:1] == "h" and len(hk := s[1:].split("-")) == 2 and all(x.isdigit() for x in hk):
            q, k = int(hk[0]), int(hk[1])
            if q < 1 or k < 1 or q % k:
                raise ValueError(f"point {text!r}: {q} query heads over {k} KV heads; expected positive counts, "
                                 "the query heads a multiple of the KV heads")
            heads = (q, k)  # (32 / 8, the default, is stored unlabelled: ProbePoint)
        elif is_capacity_suffix(s):
            capacity = int(s[3:])
            if capacity < context:
                raise ValueError(f"point {text!r}: capacity {capacity} below the context {context}; expected at "
                                 f"least the context")
        elif is_short_len_suffix(s):
            short_len = int(s[1:])
            if short_len < 1:
                raise ValueError(f"point {text!r}: short length {short_len}, expected at least 1 token")
        elif s[:1] == "c" and s[1:].isdigit():
            k_block = int(s[1:])
            if k_block not in GROUP_SIZES:
                raise ValueError(f"point {text!r}: k_block {k_block}, expected one of "
                                 f"{', '.join(map(str, GROUP_SIZES))}")
        elif is_head_dim_suffix(s):
            head_dim = int(s[1:])
            if head_dim not in HEAD_DIMS:
                raise ValueError(f"point {text!r}: head_dim {head_dim}, expected one of "
                                 f"{', '.join(map(str, HEAD_DIMS))}")
        else:
            raise ValueError(f"point {text!r}: suffix {s!r}, expected 'paged', 'gN' (group size), 'hQ-K' (query and "
                             f"KV heads), 'cN' (channel-wise K's block), 'dN' (head_dim), 'capN' (the cache's "
                             f"capacity), 'sN' (one-long's short length), 'bf16', 'fp8' or "
                             f"'per-value' (the kernel's mode) or one of {', '.join(WORKLOAD_NAMES)}")
    if short_len is not None and workload != "one-long":
        raise ValueError(f"point {text!r}: a short length (:s{short_len}) needs the one-long workload, got {workload}")
    return ProbePoint(bits, batch, context, workload, paged, group_size, *heads, k_block, mode or MODES[0], head_dim,
                      capacity, short_len)


def build_point(pp: ProbePoint, dev, *, num_qo_heads: int = NUM_QO_HEADS, num_kv_heads: int = NUM_KV_HEADS,
                head_dim: int = HEAD_DIM):
    """One probe point's data as ``foscar bench`` makes it, on ``dev`` (a ``torch.device``): ``(workload, cache,
    bytes)``. ``workload``: the :class:`bench.workload.Workload` of :func:`bench.workload.build_workload` (fresh
    random data, seed 0: the bf16 query ``[batch, num_qo_heads, head_dim]``, the contiguous cache, its fp64
    reference; lengths from ``pp.workload`` at ``pp.context`` tokens (a one-long point's short ones at
    ``pp.short_tokens()``), in a cache of ``pp.cache_tokens()`` tokens a
    sequence). ``cache``: what FOSCAR reads, the contiguous ``QuantizedKVCache`` or, where ``pp.paged``, the bench's
    ``PagedQuantizedKVCache`` copy (pages of 16, shuffled). ``bytes``: what a decode reads, in bytes, as the
    foscar-cuda backend counts them (:mod:`bench.backends`). The shape is the point's head counts and head_dim where
    its ``:hQ-K`` and ``:dN`` suffixes gave them, else the arguments' (by default the bench's Qwen3-8B: 32 query
    heads, 8 KV heads, head_dim 128); the group size and K layout the point's. Used by :func:`run` and
    ``bench.timeline``. Errors are :func:`bench.workload.build_workload`'s (a shape the quantizer refuses).
    """
    from bench.backends import foscar_paged_cache
    from bench.workload import Point, build_workload

    num_qo_heads, num_kv_heads = pp.heads(num_qo_heads, num_kv_heads)
    head_dim = pp.dim(head_dim)
    pt = Point(batch=pp.batch, context=pp.context, bits=pp.bits, group_size=pp.group_size, num_qo_heads=num_qo_heads,
               num_kv_heads=num_kv_heads, head_dim=head_dim, page_size=PAGE_SIZE, k_block=pp.k_block,
               workload=WorkloadSpec(name=pp.workload, capacity=pp.capacity,
                                     short_len=pp.short_len or DEFAULT_SHORT_LEN).at(pp.context, pp.context))
    w = build_workload(pt, dev, seed=0, full_check_max_tokens=1 << 18)
    cache = foscar_paged_cache(w) if pp.paged else w.cache
    return w, cache, w.cache.bytes_read() + w.io_bytes()


def run(label: str, rnd: int, out_csv: Path, points: list[ProbePoint], query_copy: bool = False,
        sampler: bool = True) -> pd.DataFrame:
    """Measure the error of and time ``points`` with the environment's build; ``out_csv`` rewritten with this call's
    rows after each point. ``query_copy``: every timed call is a copy of the query (a plain kernel) and then the
    decode (the module's ``--query-copy``); the column ``query_copy`` says which. ``sampler``: read the clock during
    the timed replays (False: the module's ``--no-sampler``); the column ``sampler`` says which.

    Columns: the point (:data:`KEYS`), ``m`` (the label), ``rnd``, ``median_us`` (us), ``err`` (max relative L2
    error against the fp64 reference), ``sha`` (SHA-1 of the output and the LSE, 12 hex digits), ``nan`` (a NaN in
    either), ``error`` (a failed point's exception, else empty), and the clock columns of :mod:`bench.clocks`
    (``sm_clock_before_mhz``, ``sm_clock_after_mhz``, ``clock_events_before``, ``clock_events_after``: NVML's readings
    just before and after the timing; ``sm_clock_during_mhz``, ``clock_events_during``: the median clock and every
    reason of its readings every 20 ms during the timed graph replays, :class:`bench.clocks.ClockSampler`; empty where NVML
    is missing or fails). Needs a CUDA GPU with the CUDA kernel.

    Raises:
        FileNotFoundError: ``out_csv``'s folder does not exist (checked before any GPU work).
    """
    import hashlib

    import torch

    import foscar
    from bench.arch import detect_device
    from bench.backends import Prepared, clone_cache
    from bench.clocks import ClockReader, ClockSampler, clock_fields, during_fields, sampled_fields
    from bench.sweep import rotation
    from bench.timing import time_fn
    from bench.workload import max_rel_err

    if not out_csv.parent.is_dir():
        raise FileNotFoundError(f"ab run: no folder {out_csv.parent} for {out_csv.name}")
    dev = torch.device("cuda")
    info = detect_device()
    clocks, _ = ClockReader.open(info.uuid if info else None, torch.cuda.current_device())  # read only, never set
    rows: list[dict] = []
    for pp in points:
        num_qo_heads, num_kv_heads = pp.heads()
        row = dict(bits=pp.bits, batch=pp.batch, context=pp.context, workload=pp.workload, paged=int(pp.paged),
                   group_size=pp.group_size, num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                   k_block=pp.k_block or 0, mode=pp.mode, head_dim=pp.dim(), capacity=pp.cache_tokens(),
                   short_len=pp.short_tokens(),
                   m=label, rnd=rnd, median_us=float("nan"), err=float("nan"), sha="", nan=False, error="",
                   query_copy=int(query_copy), sampler=int(sampler), **clock_fields(None, None),
                   **during_fields([]))
        try:
            w, cache, nbytes = build_point(pp, dev)

            def make(q, c):
                plan = foscar.plan_decode(c, num_qo_heads, backend="cuda", **pp.plan_options())
                if query_copy:
                    src = q.clone()
                    return (lambda: (q.copy_(src), plan.run(q, c))), plan
                return lambda: plan.run(q, c), plan

            fn, plan = make(w.q, cache)
            out, lse = plan.run(w.q, cache, return_lse=True)
            torch.cuda.synchronize()
            digest = hashlib.sha1(out.float().cpu().numpy().tobytes() + lse.float().cpu().numpy().tobytes())
            row.update(err=max_rel_err(out, w.reference, w.rows), sha=digest.hexdigest()[:12],
                       nan=bool(torch.isnan(out).any() or torch.isnan(lse).any()))
            prep = Prepared(fn=fn, output=lambda: None, bytes=nbytes,
                            replica=lambda: make(w.q.clone(), clone_cache(cache))[0])
            before = clocks.read() if clocks else None
            during = ClockSampler(clocks) if clocks and sampler else None
            timing = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1, during=during)
            row["median_us"] = round(timing.median_us, 3)
            row.update(clock_fields(before, clocks.read() if clocks else None))
            row.update(sampled_fields(during, timing.mode))
        except Exception as e:  # recorded; the other points still run
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        finally:  # this point's tensors go before the next point is built, whether it ran or failed
            w = cache = fn = plan = prep = out = lse = None
        torch.cuda.empty_cache()
        rows.append(row)
        print(row, flush=True)
        pd.DataFrame(rows).to_csv(out_csv, index=False)
    if clocks:
        clocks.close()
    return pd.DataFrame(rows)


def table(frames: list[pd.DataFrame], base: str | None = None) -> str:
    """The A/B table of :func:`run`'s rows: median us per point and (label, round), and ``LABEL/BASE``, each label's
    mean over the base label's (``base``; default the first label in the rows), both over the round numbers the two
    ran the point in (an order such as "t l l t" cancels drift only when every round is there: a round not run, or a
    point failed in one round, left the other label's extra round in its mean; such points are listed), then the points
    whose output differs between builds or rounds, the largest error per label, NaN seen and failed points.

    Raises:
        ValueError: no rows, or ``base`` not among the labels.
    """
    d = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if d.empty:
        raise ValueError("ab table: no rows")
    d["m"] = d["m"].astype(str)
    # rows written before the group size was a point's key (sessions up to 37) are group 128, before the head counts
    # and k_block were (up to 57) the bench's 32 / 8 with token-wise K (k_block 0), before the mode was (up to 64)
    # folded BF16 operands
    for key, default in (("group_size", GROUP_SIZE), ("num_qo_heads", NUM_QO_HEADS), ("num_kv_heads", NUM_KV_HEADS),
                         ("k_block", 0)):
        d[key] = d[key].fillna(default).astype(int) if key in d else default
    d["mode"] = d["mode"].fillna(MODES[0]).astype(str) if "mode" in d else MODES[0]
    d["head_dim"] = d["head_dim"].fillna(HEAD_DIM).astype(int) if "head_dim" in d else HEAD_DIM  # (up to session 70)
    d["capacity"] = (d["capacity"].fillna(d["context"]) if "capacity" in d else d["context"]).astype(int)  # (up to 71)
    before = (d["workload"] == "one-long") * DEFAULT_SHORT_LEN  # (up to session 72)
    d["short_len"] = (d["short_len"].fillna(before) if "short_len" in d else before).astype(int)
    labels = list(dict.fromkeys(d["m"]))
    if base is not None and base not in labels:
        raise ValueError(f"ab table: base {base!r} not among the labels {labels}")
    ok = d[d["error"].fillna("") == ""] if "error" in d else d
    ok_labels = list(dict.fromkeys(ok["m"]))
    if base is None and ok_labels:
        base = ok_labels[0]
    if base is not None and base not in ok_labels:
        raise ValueError(f"ab table: base {base!r} has no point that ran (all failed); pick another with --base")
    lines = []
    if not ok.empty:
        p = ok.pivot_table(index=KEYS, columns=["m", "rnd"], values="median_us", aggfunc="mean")
        unpaired = []
        for lab in labels:
            if lab != base and lab in ok_labels:
                ratio, short = _paired_ratio(p, lab, base)
                p[(f"{lab}/{base}", "")] = ratio
                unpaired += [f"{lab}/{base} at {_key_label(k)}: rounds {sorted(r)} of {n}"
                             for k, (r, n) in short.items()]
        lines.append(p.round(3).to_string())
        if unpaired:
            lines.append("ratios over the rounds both labels ran, not all their rounds (drift is not cancelled there): "
                         + "; ".join(unpaired))
        shas = ok.groupby(KEYS)["sha"].nunique()
        lines.append(f"points whose outputs differ between builds or rounds: {int((shas > 1).sum())} of {len(shas)}")
        lines.append(f"max err per label: {ok.groupby('m')['err'].max().to_dict()}; NaN seen: {bool(ok['nan'].any())}")
        lines += during_lines(ok)
    failed = d[d["error"].fillna("") != ""] if "error" in d else d.iloc[:0]
    for _, r in failed.iterrows():
        lines.append(f"failed: {r['m']} round {r['rnd']} {_row_label(r)}: {r['error']}")
    lines += throttled_lines(ok)
    return "\n".join(lines)


def _paired_ratio(p: pd.DataFrame, lab: str, base: str) -> tuple[pd.Series, dict]:
    """``lab``'s mean over ``base``'s per point of the (label, round) table ``p``, both over the round numbers where
    both have the point; and the points where those are fewer than the rounds either ran:
    ``{point: (rounds used, rounds either ran)}``."""
    ratio, short = pd.Series(float("nan"), index=p.index), {}
    lab_rounds = [r for m, r in p.columns if m == lab]
    base_rounds = [r for m, r in p.columns if m == base]
    for key in p.index:
        have_lab = {r for r in lab_rounds if pd.notna(p.at[key, (lab, r)])}
        have_base = {r for r in base_rounds if pd.notna(p.at[key, (base, r)])}
        both = sorted(have_lab & have_base)
        if both:
            ratio[key] = sum(p.at[key, (lab, r)] for r in both) / sum(p.at[key, (base, r)] for r in both)
        if have_lab != have_base:
            short[key] = (both, len(have_lab | have_base))
    return ratio, short


def _key_label(key: tuple) -> str:
    return " ".join(f"{k}={v}" for k, v in zip(KEYS, key) if k in ("bits", "batch", "context", "capacity", "workload"))


def read_rows(path: Path) -> pd.DataFrame:
    """One of :func:`run`'s CSVs, its labels, errors and hashes read as text (a label ``1`` or a hash of digits
    stays a string)."""
    return pd.read_csv(path, dtype={"m": str, "error": str, "sha": str})


def _row_label(r: pd.Series) -> str:
    """The point of one of run's rows in parse_point's form (``ProbePoint.label``)."""
    return ProbePoint(int(r["bits"]), int(r["batch"]), int(r["context"]), str(r["workload"]), bool(r["paged"]),
                      int(r["group_size"]), int(r["num_qo_heads"]), int(r["num_kv_heads"]),
                      int(r["k_block"]) or None, str(r["mode"]), int(r["head_dim"]), int(r["capacity"]),
                      int(r["short_len"]) or None).label


def during_lines(rows: pd.DataFrame) -> list[str]:
    """The SM clock while the timed calls ran (``sm_clock_during_mhz``), per point and label: ``min-max`` MHz over
    the rounds; none where no row has the column's readings (rows written before session 52, or without NVML)."""
    if "sm_clock_during_mhz" not in rows or rows["sm_clock_during_mhz"].isna().all():
        return []
    g = rows.dropna(subset=["sm_clock_during_mhz"]).groupby(KEYS + ["m"])["sm_clock_during_mhz"]
    t = (g.min().astype(int).astype(str) + "-" + g.max().astype(int).astype(str)).unstack("m")
    return ["SM clock during the timed calls (MHz, min-max over the rounds; NVML every 20 ms):", t.to_string()]


def throttled_lines(rows: pd.DataFrame) -> list[str]:
    """One line per row of ``rows`` (run's columns) whose clock event reasons before, during (from session 52) or after
    its timing include a throttling reason (:data:`bench.clocks.THROTTLE_REASONS`), and a count line; none where no row
    has clock readings (rows written before session 50, or without NVML)."""
    from bench.clocks import throttle_reasons

    cols = [c for c in ("clock_events_before", "clock_events_during", "clock_events_after") if c in rows]
    if rows.empty or not cols or rows[cols].isna().all().all():
        return []
    out = []
    for _, r in rows.iterrows():
        hit = sorted({e for c in cols for e in throttle_reasons(r[c])})
        if hit:
            mhz = "".join(f", SM {float(v):.0f} MHz {when}" for when in ("during", "after")
                          if isinstance(v := r.get(f"sm_clock_{when}_mhz"), numbers.Real) and pd.notna(v))
            out.append(f"throttled: {r['m']} round {r['rnd']} {_row_label(r)} ({'+'.join(hit)}{mhz})")
    return out + [f"rows timed while the clock was held down: {len(out)} of {len(rows)}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="check and time points with this environment's build")
    r.add_argument("label")
    r.add_argument("round", type=int)
    r.add_argument("out_csv", type=Path)
    r.add_argument("--point", action="append", required=True,
                   help="BITSxBATCHxCONTEXT[:WORKLOAD][:paged][:gN][:hQ-K][:cN][:dN][:capN][:sN][:fp8|:per-value]")
    r.add_argument("--query-copy", action="store_true",
                   help="write the query with a plain copy kernel before every timed call (the decode behind a kernel "
                        "that does not trigger its dependents)")
    r.add_argument("--no-sampler", action="store_true",
                   help="no NVML readings during the timed replays (the sampler's A/A; before and after stay)")
    t = sub.add_parser("table", help="the A/B table of run's CSVs")
    t.add_argument("csv", nargs="+", type=Path)
    t.add_argument("--base", default=None, help="the label the others are divided by (default: the first)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            points = [parse_point(s) for s in a.point]
            rows = run(a.label, a.round, a.out_csv, points, a.query_copy, not a.no_sampler)
            return 1 if (rows["error"] != "").any() else 0
        print(table([read_rows(f) for f in a.csv], a.base))
    except (ValueError, FileNotFoundError) as e:
        print(f"bench.ab: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
