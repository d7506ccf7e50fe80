"""The sm_90 CUDA C++ folded decode kernel: build at first use, launch, heuristics.

Source: ``csrc/folded_decode_sm90.cuh`` (the kernel, no torch headers), one
``csrc/decode_mode_*.cu`` per operand mode and cache kind (instantiations, built in parallel),
``csrc/folded_decode_sm90.cu`` (C entry point, declared in ``folded_decode_sm90.h``) and ``csrc/binding.cpp`` (torch binding). It is compiled for ``sm_90a`` with nvcc and
ninja through ``torch.utils.cpp_extension.load`` the first time it is used (about
a minute), into ``TORCH_EXTENSIONS_DIR`` (default ``~/.cache/torch_extensions``),
under a name that includes a hash of the sources, so a changed source rebuilds and
an unchanged one loads in a second. ``scripts/gpu_offline.sh`` saves and restores
that directory.

Why a CUDA kernel beside the Triton one: bench/NOTES.md ("Triton ceiling").
Supported: INT2/INT4, head_dim 64/128/256, group_size 32/64/128, 1 <= GQA <= 8,
token-wise or channel-wise K (k_block 32/64/128), contiguous or paged caches (page sizes
that are powers of two), compute capability 9.x. Split-KV chunks are sized on the device from
the actual lengths (:func:`foscar.kernels.splits.plan_work`, DESIGN §10); sequences of one chunk are
written by the kernel, the others merged by the last CTA of each sequence inside the kernel (the default), or
by :func:`foscar.kernels.merge_triton.merge_slots` after it (``FOSCAR_MERGE=kernel``: :func:`merge_choice`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
from pathlib import Path

import torch

from foscar.kernels.knobs import env_flag, pdl_capable
from foscar.kernels.splits import (LONG_CHUNK_TOKENS, MIN_CHUNK_TOKENS, device_sm_count, long_chunk_ceil_choice,
                                   long_chunk_programs_choice, long_chunk_room_choice, long_chunk_short_choice,
                                   long_chunk_tokens_choice, long_chunks_choice,
                                   max_ctas_per_sm_setting, plan_long_chunk, plan_min_chunk, plan_short_tokens,
                                   plan_work, short_chunks_choice, short_tokens_choice)

KERNEL_NAME = "foscar-cuda"
# Experiments (A/B of kernel variants in one GPU session, scripts/gpu_ab.sh): FOSCAR_CSRC builds the
# sources of another directory (same file names), FOSCAR_NVCC_DEFINES adds -D knobs of the kernel
# header ("FOSCAR_MIN_BLOCKS=4 FOSCAR_PLANE_SCALE=0"), FOSCAR_NVCC_FLAGS adds raw nvcc flags ("-Xptxas -O0":
# tests/test_decode_cuda.py checks that ptxas's optimiser does not change the FP8 results). All enter the
# extension's name.
# Paged pools: at most this many token rows, num_pages * num_kv_heads * page_size (the kernel computes rows
# in 32-bit unsigned integers; bench/NOTES.md §37)
MAX_PAGED_ROWS = 2**32
DEFAULT_CSRC = Path(__file__).parent / "csrc"
CSRC = Path(os.environ.get("FOSCAR_CSRC") or DEFAULT_CSRC)
SOURCES = (CSRC / "binding.cpp", CSRC / "folded_decode_sm90.cu") + tuple(  # one object each, built in parallel
    CSRC / f"decode_mode_{mode}{cache}{k}.cu" for mode in ("bf16", "per_value", "fp8") for cache in ("", "_paged")
    for k in ("", "_channel"))
HEADERS = (CSRC / "folded_decode_sm90.cuh", CSRC / "folded_decode_sm90.h")  # the kernel; the C entry point
# Where the split-KV merge runs (bench/NOTES.md §17, §29, §79, §80): "fused" (the last CTA of each sequence, in the
# decode kernel; plans' default since session 37) or "kernel" (merge_triton.merge_slots after the decode kernel).
# Every build holds both unless -DFOSCAR_FUSED_MERGE=0 (FOSCAR_NVCC_DEFINES="FOSCAR_FUSED_MERGE=0", another extension
# name) leaves the fused merge out; each plan reads FOSCAR_MERGE when it is made (:func:`merge_choice`), so one build
# times both.
MERGES = ("kernel", "fused")
if os.environ.get("FOSCAR_MERGE", "fused") not in MERGES:  # checked at import too: a typo stops it early
    raise ValueError(f"FOSCAR_MERGE: expected 'fused' or 'kernel', got {os.environ['FOSCAR_MERGE']!r}")
_DEFINES = os.environ.get("FOSCAR_NVCC_DEFINES", "").split()
BASE_NVCC_FLAGS = ("-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-lineinfo")  # the shipped build
NVCC_FLAGS = BASE_NVCC_FLAGS + tuple(f"-D{d}" for d in _DEFINES) + tuple(os.environ.get("FOSCAR_NVCC_FLAGS", "").split())


def defined_value(flags: tuple[str, ...], name: str) -> str | None:
    """The value the nvcc ``flags`` give macro ``name`` (``-DNAME=V`` or ``-D NAME=V``; ``"1"`` for a bare
    ``-DNAME``; the last definition wins), or ``None`` where they define none."""
    value = None
    for i, flag in enumerate(flags):
        if flag == "-D" and i + 1 < len(flags):
            define = flags[i + 1]
        elif flag.startswith("-D") and flag != "-D":
            define = flag[2:]
        else:
            continue
        key, eq, val = define.partition("=")
        if key == name:
            value = val if eq else "1"
    return value


def defined_on(flags: tuple[str, ...], name: str) -> bool:
    """Whether an off-by-default knob ``name`` is on in a build of the nvcc ``flags``, as the kernel's ``#if NAME``
    reads it (its ``#define NAME 0`` default where the flags define none): defined by them (:func:`defined_value`)
    and not ``"0"`` (``-DNAME=2`` is on too)."""
    return defined_value(flags, name) not in (None, "0")


# the extension holds the in-kernel merge: unless FOSCAR_FUSED_MERGE=0 came through FOSCAR_NVCC_DEFINES or _FLAGS
FUSED_MERGE_BUILT = defined_value(NVCC_FLAGS, "FOSCAR_FUSED_MERGE") != "0"
# the kernel's length-aware schedule gives no sequence more than 32 chunks, or only chunks of at least the plan's
# long_chunk (longest_chunk_floor), as the host mirror (splits.schedule) and the merge kernel's ranges from the lengths
# (merge_triton._derived_chunks) assume: unless built
# with FOSCAR_SEQ_CHUNK_CAP=0 (an A/B build, bench/NOTES.md §101), whose plans then read the kernel's chunk table
SEQ_CHUNK_CAP_BUILT = defined_value(NVCC_FLAGS, "FOSCAR_SEQ_CHUNK_CAP") != "0"
# built with FOSCAR_KEEP_SHORT=1 (an A/B build, bench/NOTES.md §119): the kernel's length-aware schedule keeps a
# sequence of at most the plan's least chunk one chunk (aware_chunks) where a short batch is cut in chunks of 256, which
# the merge kernel's ranges from the lengths do not follow, so its plans read the kernel's chunk table
KEEP_SHORT_BUILT = defined_on(NVCC_FLAGS, "FOSCAR_KEEP_SHORT")
# built with FOSCAR_WAVE_FIT=1 (an A/B build, bench/NOTES.md §121: 4.5% faster at one point, 1.38x slower at another on
# an H200): the kernel's length-aware chunks grow to one CTA an SM where they would run two on some SMs and one on
# others (find_work's wave fit; splits.schedule's wave_slots), which the merge kernel's ranges from the lengths do not
# follow, so its plans read the kernel's chunk table
WAVE_FIT_BUILT = defined_on(NVCC_FLAGS, "FOSCAR_WAVE_FIT")
# built with FOSCAR_PAGE_CHECK=1 (an A/B build, bench/NOTES.md §124-§125): each warp of a paged CTA checks its
# sub-tiles' page ids once, and on an id outside the pool reads no token; the rows are then NaN (output and LSE)
# instead of reads past the pool
PAGE_CHECK_BUILT = defined_on(NVCC_FLAGS, "FOSCAR_PAGE_CHECK")


def merge_choice(default: str = "fused") -> str:
    """Where a plan made now merges the split-KV partials: ``"kernel"`` or ``"fused"``.

    Reads ``FOSCAR_MERGE`` at every call, ``default`` where it is unset, so that one build (which holds both
    merges unless built with ``FOSCAR_FUSED_MERGE=0``, :data:`FUSED_MERGE_BUILT`) can make plans of either kind. A
    build without the fused merge takes ``"kernel"`` where ``FOSCAR_MERGE`` is unset, whatever ``default`` says.
    A plan whose kernel instance lacks the fused merge (:func:`fused_merge_in`) takes ``"kernel"`` whatever this says,
    and so does a plan where a sequence may take more than 32 chunks, unless ``FOSCAR_MERGE_TREE=0``
    (:func:`merge_tree_choice`; bench/NOTES.md §110) or, for folded BF16 operands, ``FOSCAR_MERGE_LEVELS=1``
    (:func:`merge_levels_choice`; §111), and so does a plan whose few merging CTAs would each take two passes over
    their partials (:func:`merge_kernel_preferred`: gqa 8 at head_dim 128, gqa 4-8 at 256, batch x num_kv_heads <=
    16), unless ``FOSCAR_MERGE_WIDE=0`` (:func:`merge_wide_choice`; §116-§117). That rule comes first: where it
    applies, neither ``FOSCAR_MERGE_TREE=0`` nor ``FOSCAR_MERGE_LEVELS=1`` gives the in-kernel merge unless
    ``FOSCAR_MERGE_WIDE=0`` too.
    :func:`foscar.plan_decode` takes the default ``"fused"``; a one-shot :func:`foscar.decode` passes ``"kernel"``:
    its plan is made for one call, and the fused merge's arrival counters would need zeroing at every call (a memset
    launch between two decode kernels, which also ends their programmatic dependent launch overlap: about 2-3 us
    more a call at the bench's batch-1 and batch-8 points, bench/NOTES.md §80).

    Raises:
        ValueError: ``default`` or ``FOSCAR_MERGE`` is neither ``"kernel"`` nor ``"fused"``, or ``FOSCAR_MERGE=fused``
            in a process whose build left the fused merge out (``FOSCAR_FUSED_MERGE=0``).
    """
    if default not in MERGES:
        raise ValueError(f"default: expected 'fused' or 'kernel', got {default!r}")
    merge = os.environ.get("FOSCAR_MERGE", default if FUSED_MERGE_BUILT else "kernel")
    if merge not in MERGES:
        raise ValueError(f"FOSCAR_MERGE: expected 'fused' or 'kernel', got {merge!r}")
    if merge == "fused" and not FUSED_MERGE_BUILT:
        raise ValueError("FOSCAR_MERGE=fused: this process's CUDA kernel is built without the fused merge "
                         "(-DFOSCAR_FUSED_MERGE=0 in FOSCAR_NVCC_DEFINES or FOSCAR_NVCC_FLAGS); set FOSCAR_MERGE=kernel "
                         "or leave it unset, or build without that define")
    return merge


def merge_buffers(batch: int, num_kv_heads: int, device: torch.device, merge: str,
                  groups: int = 0) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The merge's buffers of a plan: ``(counters, seq_chunks)``, both int32 on ``device``.

    ``merge="fused"``: ``counters`` ``[batch, num_kv_heads]`` zeros (the kernel's arrival counts; each
    launch leaves them zero again), or ``[batch, num_kv_heads, 1 + groups]`` where ``groups`` > 0 (the two-level
    merge's group counters after each (sequence, KV head)'s own, :func:`foscar.kernels.splits.plan_merge_groups`),
    ``seq_chunks`` ``None``. ``merge="kernel"``: ``counters`` empty (unread), ``seq_chunks`` ``[batch, 2]``
    (rewritten whole by every launch, for :func:`foscar.kernels.merge_triton.merge_slots`).

    Raises:
        ValueError: ``merge`` is not one of :data:`MERGES`, or ``groups`` is negative.
    """
    if groups < 0:
        raise ValueError(f"groups: expected 0 or more group counters, got {groups}")
    i32 = dict(dtype=torch.int32, device=device)
    if merge == "fused":
        shape = (batch, num_kv_heads, 1 + groups) if groups else (batch, num_kv_heads)
        return torch.zeros(*shape, **i32), None
    if merge == "kernel":
        return torch.empty(0, **i32), torch.empty(batch, 2, **i32)
    raise ValueError(f"merge: expected 'fused' or 'kernel', got {merge!r}")


MAX_GQA = 8  # query heads of one KV head fill the mma's N = 8


def source_hash() -> str:
    """Short hash of the kernel sources and flags (part of the extension's name)."""
    h = hashlib.sha256()
    for src in SOURCES + HEADERS:
        h.update(src.read_bytes())
    h.update(" ".join(NVCC_FLAGS).encode())
    return h.hexdigest()[:12]


def build_settings() -> dict[str, object]:
    """How this process builds the CUDA extension, for a run's manifest (``meta.json``).

    Returns:
        ``{"nvcc_flags": [...], "csrc": path or None (the package's own sources), "merge": "kernel" |
        "fused" (what plans made now take: :func:`merge_choice`; an instance without the fused merge,
        :func:`fused_merge_in`, takes "kernel", as plans past 32 chunks a sequence do,
        :func:`merge_tree_choice`, :func:`merge_levels_choice`, and plans of few two-pass merges,
        :func:`merge_kernel_preferred`), "fused_merge_built": bool, "merge_speculate": bool
        (``FOSCAR_MERGE_SPECULATE`` now, :func:`foscar.kernels.merge_triton.speculate_choice`),
        "merge_pdl": bool (``FOSCAR_MERGE_PDL`` now, :func:`foscar.kernels.merge_triton.pdl_wanted`),
        "merge_fixed_window": bool (``FOSCAR_MERGE_FIXED_WINDOW`` now,
        :func:`foscar.kernels.merge_triton.fixed_window_choice`), "merge_from_lengths": bool
        (``FOSCAR_MERGE_FROM_LENGTHS`` now, :func:`foscar.kernels.merge_triton.from_lengths_choice`), "pv_pack": bool
        (``FOSCAR_PV_PACK`` now, :func:`pv_pack_choice`), "max_ctas_per_sm": str (``FOSCAR_MAX_CTAS_PER_SM`` now,
        ``"auto"`` unless set; :func:`foscar.kernels.splits.max_ctas_per_sm_setting`), "pdl": bool (``FOSCAR_PDL``
        now, :func:`pdl_wanted`), "merge_tree": bool (``FOSCAR_MERGE_TREE`` now, :func:`merge_tree_choice`),
        "merge_levels": bool (``FOSCAR_MERGE_LEVELS`` now, :func:`merge_levels_choice`), "merge_wide": bool
        (``FOSCAR_MERGE_WIDE`` now, :func:`merge_wide_choice`),
        "short_chunks": bool, "long_chunks": bool, "long_chunk_programs": int, "long_chunk_room": bool,
        "long_chunk_tokens": int, "long_chunk_short": bool, "long_chunk_ceil": bool, "short_tokens": bool
        (``FOSCAR_SHORT_CHUNKS``, ``FOSCAR_LONG_CHUNKS``, ``FOSCAR_LONG_CHUNK_PROGRAMS``, ``FOSCAR_LONG_CHUNK_ROOM``,
        ``FOSCAR_LONG_CHUNK_TOKENS``, ``FOSCAR_LONG_CHUNK_SHORT``, ``FOSCAR_LONG_CHUNK_CEIL``, ``FOSCAR_SHORT_TOKENS``
        now: the plan rules of :mod:`foscar.kernels.splits`), "merge_rows": str, "merge_d_slices": str
        (``FOSCAR_MERGE_ROWS``, ``FOSCAR_MERGE_D_SLICES`` now: the merge kernel's programs),
        "source_hash": str, "default_build": bool}``;
        ``default_build`` is False when any experiment knob (``FOSCAR_CSRC``, ``FOSCAR_NVCC_DEFINES``,
        ``FOSCAR_NVCC_FLAGS``, ``FOSCAR_MERGE=kernel``, ``FOSCAR_MERGE_SPECULATE=1``, ``FOSCAR_MERGE_PDL=0``,
        ``FOSCAR_MERGE_FIXED_WINDOW=0``, ``FOSCAR_MERGE_FROM_LENGTHS=1``, ``FOSCAR_PV_PACK=0``, a
        ``FOSCAR_MAX_CTAS_PER_SM`` other than ``"auto"``, ``FOSCAR_PDL=0``, ``FOSCAR_MERGE_TREE=0``,
        ``FOSCAR_MERGE_LEVELS=1``, ``FOSCAR_MERGE_WIDE=0``,
        ``FOSCAR_SHORT_CHUNKS=0``, ``FOSCAR_LONG_CHUNKS=0``, ``FOSCAR_LONG_CHUNK_PROGRAMS=2``,
        ``FOSCAR_LONG_CHUNK_ROOM=0``, a ``FOSCAR_LONG_CHUNK_TOKENS`` other than 512, ``FOSCAR_LONG_CHUNK_SHORT=0``,
        ``FOSCAR_LONG_CHUNK_CEIL=0``, ``FOSCAR_SHORT_TOKENS=0``, a ``FOSCAR_MERGE_ROWS`` or ``FOSCAR_MERGE_D_SLICES``
        other than ``"auto"``) is set, i.e. the numbers are not those of the shipped kernel.

    Raises:
        ValueError: what :func:`merge_choice` raises; a ``FOSCAR_MERGE_SPECULATE``,
            ``FOSCAR_MERGE_PDL``, ``FOSCAR_MERGE_FIXED_WINDOW``, ``FOSCAR_MERGE_FROM_LENGTHS``, ``FOSCAR_PV_PACK``,
            ``FOSCAR_PDL``, ``FOSCAR_MERGE_TREE``, ``FOSCAR_MERGE_LEVELS``, ``FOSCAR_MERGE_WIDE``,
            ``FOSCAR_SHORT_CHUNKS``,
            ``FOSCAR_LONG_CHUNKS``, ``FOSCAR_LONG_CHUNK_ROOM``, ``FOSCAR_LONG_CHUNK_SHORT``,
            ``FOSCAR_LONG_CHUNK_CEIL`` or ``FOSCAR_SHORT_TOKENS`` other than ``"1"`` / ``"0"``; a
            ``FOSCAR_MAX_CTAS_PER_SM`` other than ``"auto"`` or an integer 0..32; a ``FOSCAR_LONG_CHUNK_PROGRAMS``
            other than ``"1"`` / ``"2"``; a ``FOSCAR_LONG_CHUNK_TOKENS`` other than a multiple of 256 from 256 to
            32768; a ``FOSCAR_MERGE_ROWS`` or ``FOSCAR_MERGE_D_SLICES`` other than ``"auto"``, ``"1"``, ``"2"``,
            ``"4"``, ``"8"``.
    """
    from foscar.kernels import merge_triton
    from foscar.kernels.merge_triton import fixed_window_choice, from_lengths_choice, speculate_choice

    custom_csrc = CSRC.resolve() != DEFAULT_CSRC.resolve()
    speculate, pdl, fixed_window = speculate_choice(), merge_triton.pdl_wanted(), fixed_window_choice()
    from_lengths, pv_pack = from_lengths_choice(), pv_pack_choice()
    max_ctas, decode_pdl = max_ctas_per_sm_setting(), pdl_wanted()
    merge = merge_choice()
    merge_tree, merge_levels, wide = merge_tree_choice(), merge_levels_choice(), merge_wide_choice()
    short, long_, long_programs = short_chunks_choice(), long_chunks_choice(), long_chunk_programs_choice()
    long_room, long_tokens, long_short = long_chunk_room_choice(), long_chunk_tokens_choice(), long_chunk_short_choice()
    long_ceil, short_tokens = long_chunk_ceil_choice(), short_tokens_choice()
    merge_rows, d_slices = merge_triton.rows_setting(), merge_triton.d_slices_setting()
    return {"nvcc_flags": list(NVCC_FLAGS), "csrc": str(CSRC) if custom_csrc else None, "merge": merge,
            "fused_merge_built": FUSED_MERGE_BUILT, "merge_speculate": speculate, "merge_pdl": pdl,
            "merge_fixed_window": fixed_window, "merge_from_lengths": from_lengths, "pv_pack": pv_pack,
            "max_ctas_per_sm": max_ctas, "pdl": decode_pdl, "merge_tree": merge_tree,
            "merge_levels": merge_levels, "merge_wide": wide, "short_chunks": short,
            "long_chunks": long_, "long_chunk_programs": long_programs, "long_chunk_room": long_room,
            "long_chunk_tokens": long_tokens, "long_chunk_short": long_short, "long_chunk_ceil": long_ceil,
            "short_tokens": short_tokens, "merge_rows": merge_rows, "merge_d_slices": d_slices,
            "source_hash": source_hash(),
            "default_build": (not custom_csrc and NVCC_FLAGS == BASE_NVCC_FLAGS and merge == "fused"
                              and not speculate and pdl and fixed_window and not from_lengths and pv_pack and max_ctas == "auto"
                              and decode_pdl and merge_tree and not merge_levels and wide and short and long_
                              and long_programs == 1 and long_room and long_tokens == LONG_CHUNK_TOKENS
                              and long_short and long_ceil and short_tokens and merge_rows == "auto"
                              and d_slices == "auto")}


def unavailable(device: torch.device, gqa: int | None = None) -> str | None:
    """Why the CUDA kernel cannot run on ``device`` (or for this GQA ratio), or ``None``."""
    if device.type != "cuda":
        return f"the CUDA kernel needs a CUDA device, got {device}"
    if not torch.cuda.is_available():
        return "the CUDA kernel needs a CUDA device, and torch sees none (torch.cuda.is_available() is False)"
    why = _device_unavailable(device.index if device.index is not None else torch.cuda.current_device())
    if why is None and gqa is not None and not 1 <= gqa <= MAX_GQA:
        why = f"the CUDA kernel handles 1..{MAX_GQA} query heads per KV head, got {gqa}"
    return why


def kernel_knobs(csrc: Path | None = None) -> set[str]:
    """Every ``-D`` knob of the kernel source in ``csrc`` (default: the one built, :data:`CSRC`): the ``FOSCAR_*`` names
    its headers and units test with ``#ifndef`` / ``#ifdef`` / ``defined()`` (docs/TUNING.md lists them).

    Raises:
        FileNotFoundError: ``csrc`` holds no ``.cuh`` or ``.cu`` file.
    """
    files = sorted(p for p in Path(csrc or CSRC).glob("*") if p.suffix in (".cuh", ".cu"))
    if not files:
        raise FileNotFoundError(f"{csrc or CSRC}: no .cuh or .cu file (not a FOSCAR kernel source)")
    src = "\n".join(p.read_text() for p in files)
    knobs = set(re.findall(r"^\s*#\s*(?:ifndef|ifdef)\s+(FOSCAR_\w+)", src, re.M))
    return knobs | set(re.findall(r"defined\s*\(\s*(FOSCAR_\w+)\s*\)", src))


def misaligned(cache) -> str | None:
    """Why the CUDA kernel cannot read ``cache``'s tensors where they lie, or ``None``: it copies the code rows
    (``k_codes``, ``v_codes``) and a channel-wise K's ``k_scale`` / ``k_offset`` rows 16 bytes at a time, so each must
    start 16-byte aligned (the binding refuses them otherwise). A view at a storage offset may not; token-wise scales
    take a 4-byte copy there and need nothing. :func:`foscar.decode`'s ``backend='auto'`` then takes the Triton
    kernel, which reads any offset."""
    names = ["k_codes", "v_codes"] + (["k_scale", "k_offset"] if getattr(cache, "k_block", None) is not None else [])
    for name in names:
        t = getattr(cache, name)
        if t.data_ptr() % 16:
            return (f"the CUDA kernel copies {', '.join(names)} 16 bytes at a time and needs each 16-byte aligned; "
                    f"{name} starts {t.data_ptr() % 16} bytes past a multiple of 16 (a view at a storage offset "
                    f"{t.storage_offset()}: .clone() it)")
    return None


@functools.lru_cache(maxsize=None)
def _device_unavailable(index: int) -> str | None:
    major, minor = torch.cuda.get_device_capability(index)
    if major != 9:
        return f"the CUDA kernel is built for sm_90 (Hopper); this GPU is sm_{major}{minor}"
    if find_nvcc() is None:
        return "nvcc not found (the CUDA kernel is compiled at first use; set CUDA_HOME)"
    return None


def find_nvcc() -> str | None:
    """Path of nvcc (``$CUDA_HOME/bin/nvcc`` or on PATH), or ``None``."""
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME and Path(CUDA_HOME, "bin", "nvcc").exists():
        return str(Path(CUDA_HOME, "bin", "nvcc"))
    return shutil.which("nvcc")


@functools.lru_cache(maxsize=1)
def extension():
    """The compiled extension module (builds it on first call; raises on a compile error)."""
    from torch.utils.cpp_extension import load

    return load(
        name=f"foscar_sm90_{source_hash()}",
        sources=[str(s) for s in SOURCES],
        # binding.cpp includes torch's headers: compiled at the C++ standard torch's own build flags give (C++17
        # up to torch 2.11, C++20 after), not one of ours, which would follow theirs on the command line
        extra_cflags=["-O3"],
        extra_cuda_cflags=list(NVCC_FLAGS),
        verbose=False,
    )


def plan_splits(cache, device: torch.device, num_splits: int | None = None) -> tuple[int, int, int]:
    """``(num_slots, fixed_splits, target_chunks)`` for ``cache`` (:func:`foscar.kernels.splits.plan_work`; its short
    and long chunks as ``FOSCAR_SHORT_CHUNKS``, ``FOSCAR_LONG_CHUNKS``, ``FOSCAR_LONG_CHUNK_PROGRAMS``,
    ``FOSCAR_LONG_CHUNK_TOKENS``, ``FOSCAR_LONG_CHUNK_SHORT`` and ``FOSCAR_LONG_CHUNK_CEIL`` say now,
    :func:`foscar.kernels.splits.short_chunks_choice`, :func:`foscar.kernels.splits.long_chunks_choice`,
    :func:`foscar.kernels.splits.long_chunk_programs_choice`, :func:`foscar.kernels.splits.long_chunk_floor`,
    :func:`foscar.kernels.splits.long_chunk_ceil_choice`).

    Raises:
        ValueError: ``FOSCAR_SHORT_CHUNKS``, ``FOSCAR_LONG_CHUNKS``, ``FOSCAR_LONG_CHUNK_SHORT`` or
            ``FOSCAR_LONG_CHUNK_CEIL`` other than ``"0"`` or ``"1"``; ``FOSCAR_LONG_CHUNK_PROGRAMS`` other than ``"1"``
            or ``"2"``; ``FOSCAR_LONG_CHUNK_TOKENS`` other than a multiple of 256 from 256 to 32768.
    """
    return plan_work(cache.batch_size, cache.num_kv_heads, cache.max_seq_len, device_sm_count(device), num_splits,
                     bits=cache.bits, head_dim=cache.head_dim, paged=hasattr(cache, "kv_indptr"),
                     short_chunks=short_chunks_choice(), long_chunks=long_chunks_choice(),
                     long_programs=long_chunk_programs_choice(), long_tokens=long_chunk_tokens_choice(),
                     long_ceil=long_chunk_ceil_choice(), long_short=long_chunk_short_choice())


def plan_short_tokens_of(cache, device: torch.device, min_chunk: int) -> int:
    """The short-batch bound, tokens, of :func:`plan_splits`' plan for ``cache`` whose least chunk is ``min_chunk``:
    :func:`foscar.kernels.splits.plan_short_tokens` over the cache's KV heads and the device's SMs, on where
    ``FOSCAR_SHORT_TOKENS`` is ``"1"`` now (:func:`foscar.kernels.splits.short_tokens_choice`, the default) and
    short chunks are (``FOSCAR_SHORT_CHUNKS``, :func:`foscar.kernels.splits.short_chunks_choice`: ``"0"`` gives the
    plans before session 59, without chunks of 256 from either rule).

    Raises:
        ValueError: ``FOSCAR_SHORT_TOKENS`` or ``FOSCAR_SHORT_CHUNKS`` other than ``"0"`` or ``"1"``.
    """
    on = short_tokens_choice() and short_chunks_choice()
    return plan_short_tokens(min_chunk, cache.num_kv_heads, device_sm_count(device), on)


def plan_min_chunk_of(cache, device: torch.device, target_chunks: int) -> int:
    """The least length-aware chunk, tokens (256 or 512), of :func:`plan_splits`' plan for ``cache`` whose chunk
    target is ``target_chunks``: :func:`foscar.kernels.splits.plan_min_chunk` over the cache's KV heads and the
    device's SMs, with short chunks as ``FOSCAR_SHORT_CHUNKS`` says now (bench/NOTES.md §103).

    Raises:
        ValueError: ``FOSCAR_SHORT_CHUNKS`` other than ``"0"`` or ``"1"``.
    """
    return plan_min_chunk(target_chunks, cache.num_kv_heads, device_sm_count(device), short_chunks_choice())


def wave_slots_of(num_kv_heads: int, device: torch.device) -> int:
    """The slots a KV head that the kernel's wave fit fills with one CTA an SM (``Params::wave_slots``, which
    ``foscar_folded_decode_sm90`` sets for length-aware launches): the device's SMs // ``num_kv_heads`` in a
    ``FOSCAR_WAVE_FIT=1`` build (:data:`WAVE_FIT_BUILT`), else 0 (no wave fit). The host mirror
    (:func:`foscar.kernels.splits.schedule`'s ``wave_slots``) takes it; bench/NOTES.md §121."""
    return device_sm_count(device) // max(1, num_kv_heads) if WAVE_FIT_BUILT else 0


def plan_long_chunk_of(cache, device: torch.device, num_splits: int | None, fixed_splits: int = 0) -> int:
    """The kernel's ``long_chunk`` (tokens, :func:`launch`) of :func:`plan_splits`' plan for ``cache``, whose fixed split
    count is ``fixed_splits`` (0: length-aware): :func:`foscar.kernels.splits.plan_long_chunk` over the cache's KV
    heads and capacity and the device's SMs. Where the plan chose the split count (``num_splits`` None) and
    ``FOSCAR_LONG_CHUNKS`` allows long chunks: 512 for a fixed plan, 512 or more for a length-aware plan at one or two
    KV heads on 132 SMs (4096 in sessions 60-69, §115); else 0 (bench/NOTES.md §105, §106).
    ``FOSCAR_LONG_CHUNK_PROGRAMS=2`` spreads over two programs an SM instead of one (then length-aware plans at up to 4
    KV heads take it too; §108);
    ``FOSCAR_LONG_CHUNK_ROOM`` (on by default; ``"0"`` for A/B) leaves one program an SM for each other sequence of a
    batch of up to 17 sequences at one KV head, 9 at two (§112, §113,
    :func:`foscar.kernels.splits.long_chunk_room_choice`). ``FOSCAR_LONG_CHUNK_TOKENS`` (for A/B) stands for the 512
    (:func:`foscar.kernels.splits.long_chunk_tokens_choice`); in a cache of at most 16K tokens the floor is 256 unless
    ``FOSCAR_LONG_CHUNK_SHORT=0`` (:func:`foscar.kernels.splits.long_chunk_floor`, §115).

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNKS``, ``FOSCAR_LONG_CHUNK_ROOM`` or ``FOSCAR_LONG_CHUNK_SHORT`` other than
            ``"0"`` or ``"1"``; ``FOSCAR_LONG_CHUNK_PROGRAMS`` other than ``"1"`` or ``"2"``;
            ``FOSCAR_LONG_CHUNK_TOKENS`` other than a multiple of 256 from 256 to 32768.
    """
    return plan_long_chunk(num_splits, cache.num_kv_heads, device_sm_count(device), cache.max_seq_len,
                           long_chunks_choice(), fixed_splits, long_chunk_programs_choice(), cache.batch_size,
                           long_chunk_room_choice(), long_chunk_tokens_choice(), long_chunk_short_choice())


MODES = {"bf16": 0, "per-value": 1, "fp8": 2}  # kernel operand modes (csrc: enum Mode)


def fused_merge_in(bits: int, head_dim: int, group_size: int, mode: str, paged: bool, channel_k: bool) -> bool:
    """Whether this build's kernel instance for the format, operand mode and cache kind holds the in-kernel split
    merge (the extension's answer: the rule is ``fused_merge_in`` in ``csrc/folded_decode_sm90.cuh``).

    Every instance does in a default build but INT2 head_dim 128 group_size 32 ``"bf16"`` on a paged cache with
    token-wise K: compiling the merge's call into it moved ptxas's register allocation of the main loop, and it ran
    5-7% slower at batch 8 and 64 with either merge (bench/NOTES.md §80, §81). A build with ``FOSCAR_FUSED_MERGE=0``
    holds it in none. Builds the extension on first use.

    Args:
        mode: a key of :data:`MODES` (``"bf16"``, ``"per-value"``, ``"fp8"``).

    Raises:
        ValueError: ``mode`` is not a key of :data:`MODES`.
    """
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {sorted(MODES)}, got {mode!r}")
    return bool(extension().fused_merge_in(bits, head_dim, group_size, MODES[mode], paged, channel_k))


def fp8_unsupported(head_dim: int, bits: int) -> str | None:
    """Why the FP8 operand mode cannot take this format, or ``None``.

    The FP8 k32 steps pair two 16-byte chunks of a packed row, so a row needs an even
    number of them: ``head_dim * bits / 128`` even (not INT2 at head_dim 64).
    """
    if (head_dim * bits // 8 // 16) % 2:
        return f"operand='fp8' needs head_dim * bits / 128 even (head_dim 128/256, or INT4 at 64); got INT{bits}, head_dim {head_dim}"
    return None


def launch(q: torch.Tensor, cache, sm_scale: float, o_part: torch.Tensor, lse_part: torch.Tensor,
           out: torch.Tensor, lse: torch.Tensor, counters: torch.Tensor, fixed_splits: int, target_chunks: int,
           mode: str = "bf16", seq_chunks: torch.Tensor | None = None, fixed_window: bool = False,
           pv_pack: bool = True, max_ctas_per_sm: int = 0, pdl: bool = False,
           min_chunk: int = MIN_CHUNK_TOKENS, long_chunk: int = 0, short_tokens: int = 0) -> None:
    """Decode ``q`` over ``cache`` into ``out`` ``[batch, num_qo_heads, head_dim]`` bf16 and ``lse``
    ``[batch, num_qo_heads]`` fp32 (natural log): split-KV chunks sized from the actual lengths;
    with ``seq_chunks`` the caller merges multi-chunk sequences next (``merge_choice() == "kernel"``),
    without it the last CTA of each sequence merges (``"fused"``, the default; needs an instance that holds it,
    :func:`fused_merge_in`, else the extension raises ``RuntimeError``: invalid argument). The buffers:
    :func:`merge_buffers`.

    ``o_part`` ``[num_slots, num_qo_heads, head_dim]`` / ``lse_part`` ``[num_slots,
    num_qo_heads]`` fp32 hold the partials; ``counters`` ``[batch, num_kv_heads]`` or ``[batch, num_kv_heads, 1 +
    groups]`` int32 (the fused merge's, :func:`merge_buffers`, read only without ``seq_chunks``; zero before the
    first launch, each launch leaves them zero; with ``seq_chunks`` any int32 tensor, e.g. empty). ``seq_chunks``
    ``[batch, 2]`` int32 receives each sequence's first slot and chunk count for
    :func:`foscar.kernels.merge_triton.merge_slots`. ``num_slots``, ``fixed_splits`` and
    ``target_chunks`` from :func:`plan_splits`. Inputs are assumed validated (see
    :func:`foscar.decode`). Buffers are the plan's: one plan must not run on two streams at once.

    ``cache``: a contiguous ``QuantizedKVCache`` or a ``PagedQuantizedKVCache`` (page
    size a power of two). ``mode``: ``"bf16"`` (folded, BF16 operands), ``"fp8"`` (folded,
    FP8 e4m3 operands) or ``"per-value"`` (the same kernel reconstructing every operand
    as bf16(s * code + z) instead of folding: the ablation baseline).

    ``fixed_window`` (``fixed_splits >= 2`` and ``seq_chunks``): every slot's partial is written, a sequence of
    one chunk's too and an empty chunk's LSE as ``-inf``, for :func:`foscar.kernels.merge_triton.merge_slots`
    with ``fixed=True`` (no output row is written by this launch then).

    ``pv_pack``: where a KV head has at most 4 query heads, the integer PV with packed columns (:func:`pv_pack_choice`,
    which plans read when they are made); False keeps the previous forms.

    ``max_ctas_per_sm``: 0 lets as many CTAs share an SM as fit; ``k`` > 0 at most ``k`` (the launch's dynamic shared
    memory padded where more would fit; :func:`foscar.kernels.splits.max_ctas_per_sm_choice`). Same outputs.

    ``pdl``: launch with programmatic dependent launch (:func:`pdl_choice`): the kernel may be scheduled while the
    kernel before it in the stream finishes and waits (``griddepcontrol.wait``) before it reads anything. Same outputs.

    ``min_chunk``: the length-aware chunks' least length, 512 or 256 tokens (the plan's,
    :func:`foscar.kernels.splits.plan_min_chunk`; the extension raises ``RuntimeError`` for another value).

    ``long_chunk``: 0, or (a plan's, :func:`foscar.kernels.splits.plan_long_chunk`) a multiple of 256 tokens up to
    32768: where ``fixed_splits`` is above 32, each length is cut in chunks of at least ``min(long_chunk, ceil(length /
    32))`` tokens, so a sequence shorter than the capacity the plan was made for takes no more than 32 chunks unless
    they stay that long (bench/NOTES.md §105); in the length-aware mode the least chunk ``ceil(longest / 32)`` is at
    most ``long_chunk`` (§106). The extension raises ``RuntimeError`` for another value.

    ``short_tokens``: 0 (never), or (a plan's, :func:`foscar.kernels.splits.plan_short_tokens`) a token count: where
    the batch's tokens are at most this and its longest sequence is past ``min_chunk``, the length-aware chunks' least
    length is 256 instead of ``min_chunk``. The extension raises ``RuntimeError`` for a negative value.
    """
    lens, kv_indptr = _kernel_lengths(cache)
    extension().folded_decode(
        q, cache.k_codes, cache.v_codes, cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset,
        lens, kv_indptr, cache.kv_indices if kv_indptr is not None else None,
        o_part, lse_part, out, lse, counters, seq_chunks, cache.bits, cache.group_size, cache.k_block or 0,
        fixed_splits, target_chunks, min_chunk, long_chunk, short_tokens, sm_scale * 1.4426950408889634,
        MODES[mode], int(fixed_window), int(pv_pack), int(max_ctas_per_sm), int(pdl),
    )


def merge_tree_choice() -> bool:
    """Whether a plan made now spreads the merge of a sequence that may take more than 32 chunks
    (:func:`foscar.kernels.splits.may_take_more_than_32_chunks`; bench/NOTES.md §108-§111) past one CTA:
    ``FOSCAR_MERGE_TREE``, ``"1"`` (the default) or ``"0"`` (one CTA merges every chunk of a sequence in the kernel,
    as before session 64; for A/B). On, such plans take the merge kernel (:class:`foscar.DecodePlan`'s ``merge``;
    the FP8 and per-value instances hold no two levels, §110; at BF16 it beat them, §111), unless
    ``FOSCAR_MERGE_LEVELS=1`` gives folded BF16 plans the in-kernel merge's two levels
    (:func:`foscar.kernels.splits.plan_merge_groups`, :func:`merge_levels_choice`).

    Raises:
        ValueError: ``FOSCAR_MERGE_TREE`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_MERGE_TREE", "1")


# floats of one (sequence, KV head)'s gqa x head_dim block of partials that the in-kernel merge's last CTA covers in
# one pass: its kWarps * 32 = 128 threads a float4 each (merge_rows / merge_rows_warp and kWarps = 4 in
# csrc/folded_decode_sm90.cuh; change them together)
MERGE_PASS_FLOATS = 4 * 128
# at most this many (sequence, KV head) pairs in the batch for merge_kernel_preferred (bench/NOTES.md §116)
WIDE_MERGE_MAX_PAIRS = 16


def merge_kernel_preferred(gqa: int, head_dim: int, batch: int, num_kv_heads: int) -> bool:
    """Whether a plan takes the merge kernel instead of the in-kernel merge by the wide-block rule (where
    :func:`merge_wide_choice` is on). The in-kernel merge's last CTA of a (sequence, KV head) walks its ``gqa x
    head_dim`` partials :data:`MERGE_PASS_FLOATS` (512) floats a pass, each pass a dependent round of L2 loads after
    the sequence's last chunk, where the merge kernel spreads the rows over programs after one PDL wait. The rule: two
    full passes or more (``gqa * head_dim >= 2 * MERGE_PASS_FLOATS``: gqa 8 at head_dim 128, gqa 4-8 at 256, never at
    64, the kernel taking gqa <= :data:`MAX_GQA`), and at most :data:`WIDE_MERGE_MAX_PAIRS` (sequence, KV head) pairs
    in the batch (``batch * num_kv_heads <= 16``, empty sequences counted), where one merging CTA's passes are the
    call's tail. Measured on an H100, the merge kernel's time over the in-kernel merge's, INT2 unless said.
    head_dim 128 (bench/NOTES.md §116-§117): 8 query heads over 1 KV head 1 x 4K 0.78, 1 x 8K 0.80-0.81
    (6.75 -> 5.41 us), INT4 1 x 8K 0.87, INT4 1 x 4K 0.81, paged 0.88, FP8 operands 0.83-0.91, per-value 1 x 8K 0.71,
    2 x 8K 0.96, 4 x 8K 1.01, 8 x 4K 0.97, 8 x 8K 0.95, 12 x 8K 0.96, 16 x 8K 0.98 (INT4 0.97, paged 0.99),
    16 x 32K 1.00; 16 over 2 KV heads 1 x 8K 0.88, 2 x 8K 1.01; 64 over 8 KV heads 1 x 8K 0.94, 1 x 32K 1.00. head_dim
    256 (§117): 8 over 1 KV head 1 x 8K 0.53-0.54 (15.2 -> 8.1 us; FP8 operands 0.65, per-value 0.76), INT4 1 x 4K
    0.69, 16 x 8K 0.88; 16 over 4 KV heads 1 x 8K 0.77, 4 x 8K 0.97; 32 over 8 KV heads 2 x 8K 0.96. Left to the
    in-kernel merge: 32 x 8K (1.03 with the merge kernel), 64 x 8K (1.01), 64 over 8 KV heads 8 x 8K (1.00), at
    head_dim 256 32 over 8 KV heads 8 x 8K (1.00) and gqa 2 (one pass: 0.98), at 128 gqa 6 (24 over 4 KV heads 1 x 8K:
    1.03, a half-full second pass) and gqa 4 (one pass: 1.00-1.05)."""
    return gqa * head_dim >= 2 * MERGE_PASS_FLOATS and batch * max(1, num_kv_heads) <= WIDE_MERGE_MAX_PAIRS


def merge_wide_choice() -> bool:
    """Whether a plan made now takes the merge kernel where :func:`merge_kernel_preferred` says so:
    ``FOSCAR_MERGE_WIDE``, ``"1"`` (the default since session 71) or ``"0"`` (the in-kernel merge there, as before;
    for A/B).

    Raises:
        ValueError: ``FOSCAR_MERGE_WIDE`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_MERGE_WIDE", "1")


def merge_levels_choice() -> bool:
    """Whether a folded BF16 plan made now merges a sequence that may take more than 32 chunks in the decode
    kernel's two levels (session 64, bench/NOTES.md §108-§109) rather than in the merge kernel after it, as FP8 and
    per-value plans do (§110): ``FOSCAR_MERGE_LEVELS``, ``"0"`` (the default since session 66: the merge kernel, 0.90
    of the two levels' time at INT2 1 x 512K on an H100, §111) or ``"1"`` (the two levels; for A/B). Read only where
    :func:`merge_tree_choice` is on (off, one CTA merges every chunk of a sequence, whatever this says).

    Raises:
        ValueError: ``FOSCAR_MERGE_LEVELS`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_MERGE_LEVELS", "0")


def pv_pack_choice() -> bool:
    """Whether a plan made now lets the CUDA kernel take the integer PV with packed columns (``FOSCAR_PV_PACK``,
    default ``"1"``).

    Read when a plan is made (:func:`foscar.plan_decode`, as the merge knobs), so that one process can time both
    with two plans. Where a KV head
    has at most 4 query heads, the folded BF16 kernel at head_dim <= 128 with token-wise K fills the integer PV's
    8 columns with its heads twice: the high bytes of the fixed point x + 128 of P' in columns 0-3, the low bytes of
    x in 4-7 (both s8: x = 256 hi + lo), one integer mma per 32 tokens where two ran (DESIGN §5.2; bench/NOTES.md
    §62: INT2 D=128 G=128 781 -> 728 SASS instructions per 64-token tile and warp; INT4 869 -> 777 from its BF16
    PV). ``"0"`` keeps the two-mma form, INT2's and (since §102) INT4's (the same output up to fp32 rounding of the
    fold); it is also INT4's form at gqa 5-8, where its PV was BF16 until §102.

    Raises:
        ValueError: ``FOSCAR_PV_PACK`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_PV_PACK", "1")


def pdl_choice(device: torch.device) -> bool:
    """Whether a plan made now launches the CUDA decode kernel with programmatic dependent launch (``FOSCAR_PDL``,
    ``"1"`` by default; on a CUDA device of compute capability 9.0 or later, never elsewhere), as FlashInfer's
    decode kernels are by default (their ``enable_pdl``).

    With it the kernel's CTAs may be scheduled while the kernel before it in the stream (the previous layer's, the
    previous step's merge) finishes, and wait in ``griddepcontrol.wait`` for it before their first read; a kernel
    before it that executes ``griddepcontrol.launch_dependents`` (our own decode kernel does, after its loop) lets that
    overlap start earlier. Measured on the H200 (bench/NOTES.md §73): a 16-token decode 3.54 -> 3.06 us at batch 1,
    -4..-10% at batch 1 x 8K / 32K, where the plan holds the grid to an even spread of CTAs over the SMs
    (:func:`foscar.kernels.splits.max_ctas_per_sm_choice`; without it, 32 x 8K ran 12% slower). ``"0"``: a plain
    launch.

    Raises:
        ValueError: ``FOSCAR_PDL`` is set to anything but ``"1"`` or ``"0"``.
    """
    return pdl_wanted() and pdl_capable(device)


def pdl_wanted() -> bool:
    """``FOSCAR_PDL`` as a bool (``"1"``, the default, or ``"0"``), whatever the device.

    Raises:
        ValueError: ``FOSCAR_PDL`` is set to anything but ``"1"`` or ``"0"``.
    """
    return env_flag("FOSCAR_PDL", "1")


def _kernel_lengths(cache) -> tuple[torch.Tensor, torch.Tensor | None]:
    """What the kernel reads the lengths from: ``(seq_lens, None)`` for a contiguous cache (contiguous int32: validate()
    / the plan's layout check), ``(kv_last_page_len, kv_indptr)`` for a ``PagedQuantizedKVCache`` (the kernel derives
    the lengths from the page table)."""
    if hasattr(cache, "kv_indptr"):
        return cache.kv_last_page_len, cache.kv_indptr
    return cache.seq_lens, None


def chunk_lengths(cache, target_chunks: int, min_chunk: int = MIN_CHUNK_TOKENS, long_chunk: int = 0,
                  short_tokens: int = 0):
    """The :class:`foscar.kernels.merge_triton.ChunkLengths` of ``cache`` under a length-aware plan of
    ``target_chunks`` (:func:`plan_splits`), least chunk ``min_chunk`` (tokens,
    :func:`foscar.kernels.splits.plan_min_chunk`), long chunk ``long_chunk`` (tokens, 0: none;
    :func:`plan_long_chunk_of`) and short-batch bound ``short_tokens`` (tokens, 0: never;
    :func:`foscar.kernels.splits.plan_short_tokens`): the lengths :func:`launch` gives the kernel, for a merge that
    derives each sequence's chunk range as the kernel's ``find_work`` does."""
    from foscar.kernels.merge_triton import ChunkLengths

    lens, kv_indptr = _kernel_lengths(cache)
    paged = kv_indptr is not None
    return ChunkLengths(lens, kv_indptr, cache.max_seq_len, cache.kv_indices.numel() if paged else 0,
                        cache.page_size if paged else 0, target_chunks, min_chunk, long_chunk, short_tokens)
