"""Split-KV planning shared by the decode kernels (host side, no device sync)."""

from __future__ import annotations

import functools
import math
import os

import torch

from foscar.kernels.knobs import env_flag


@functools.lru_cache(maxsize=None)
def _num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def device_sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA device; 4 for the CPU interpreter (so splits still get exercised)."""
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    return _num_sms(idx)


def split_tokens(max_seq_len: int, num_splits: int, block_n: int) -> tuple[int, int]:
    """Round a requested split count to whole tiles: ``(num_splits, tokens_per_split)``."""
    length = max(max_seq_len, 1)
    per = math.ceil(max(1, math.ceil(length / num_splits)) / block_n) * block_n
    return max(1, math.ceil(length / per)), per


TARGET_PROGRAMS_PER_SM = 2  # split-KV heuristic: (sequence, KV head, split) programs per SM, rounded down to a power of two
MAX_SPLIT_TOKENS = 32768  # ... but no split longer than this (the CUDA kernel's kMaxChunk)
# the CUDA kernel's length-aware chunks (find_work, csrc/folded_decode_sm90.cuh; tests/test_splits.py
# checks these against the C++ constants): multiples of one CTA iteration, at least two of them
CHUNK_ALIGN_TOKENS = 256  # kChunkAlign
MIN_CHUNK_TOKENS = 512  # kMinChunk
# ... or one (kShortChunk), where a plan's chunk target fits one CTA an SM (plan_min_chunk): there the fit's two
# programs an SM are fewer CTAs than SMs, and chunks of one iteration spread a sequence over more of them (bench/NOTES.md
# §103: at 8 query heads over 1 KV head on an H100, INT2 / INT4 batch 2-4 x 8K 10-17% less time; past one CTA an SM,
# the Qwen3-8B shape's 2 x 4K and 8 x 1K, 4-9% more)
SHORT_CHUNK_TOKENS = 256  # kShortChunk
# ... and no sequence in more than this many (kMaxSeqChunks): the in-kernel merge takes up to 32 chunks in one round of
# L2 loads at head_dim 128, more in rounds of 16 on the sequence's last CTA. At one KV head the batch-1 rule and the fit
# gave 64-171 chunks a sequence at the points measured: INT2 1 x 32K 20.5 us with 128 chunks of 256 tokens, 9.6 with
# 32 of 1K (H100, 8 query heads over 1 KV head, bench/NOTES.md §101)
MAX_CHUNKS_PER_SEQUENCE = 32
# ... except long sequences at one or two KV heads (plan_work, plan_long_chunk), which take more, up to one program an
# SM, while each keeps at least this many tokens (Params::long_chunk, at least this): the kernel cuts a length in more
# than MAX_CHUNKS_PER_SEQUENCE chunks only in chunks of at least that; at one KV head a 512K-token sequence alone took
# 32 CTAs of 16K tokens on a 132-SM GPU (bench/NOTES.md §105; past batch 1 since session 61, §106). 4096 in sessions
# 60-69; 512 since session 70 (§115: 8 query heads over 1 KV head on an H100, INT2 1 x 128K in 128 chunks of 1024
# 0.54 of its time in 32 of 4096, 1 x 32K in 64 of 512 0.79; 256 measured 4-9% slower than 512 at 1 x 32K, 9-30%
# faster at a 16K capacity, hence 256 in caches of at most 16K: long_chunk_floor)
LONG_CHUNK_TOKENS = 512
# CUDA kernel CTAs resident per SM (the folded head_dim-128 instances: 158-168 registers x 128 threads);
# plan_work gives a ragged batch spare slots only where the chunk target's CTAs fill that (and a sequence
# can take two chunks)
RESIDENT_CTAS_PER_SM = 3
# batch 1 (plan_work): INT2 takes one program per SM while that keeps its chunks at most this long (tokens;
# 2048 until session 19, when 32 chunks of 1K measured 4% faster than 16 of 2K at 1 x 32K, bench/NOTES.md §54)
BATCH1_INT2_CHUNK_TOKENS = 1024


# At most this many CTAs of the CUDA kernel share an SM where, at as many as fit (RESIDENT_CTAS_PER_SM), the grid's
# last wave would leave SMs with one CTA each, and its chunks are short (holds_two_ctas); head_dim 128 only, where it was
# measured (bench/NOTES.md §67)
LARGE_GRID_CTAS_PER_SM = 2
LARGE_GRID_MAX_CHUNK_TOKENS = 8192  # ... chunks of at most this many tokens (and more than MIN_CHUNK_TOKENS)
# ... on a contiguous cache, chunks of up to this many: INT2 64 x 32K (512 CTAs of 32K tokens) 0.90-0.94 of its time at
# 2 an SM on the token-pairs loop, 64 x 16K 0.92, 64 lognormal in 32K 0.94; a paged cache's 64 x 32K 1.02 (NOTES §89)
LARGE_GRID_MAX_CHUNK_TOKENS_CONTIGUOUS = 32768


def holds_two_ctas(working_ctas: int, num_sms: int, head_dim: int, chunk_tokens: int, paged: bool = False,
                   bits: int | None = None) -> bool:
    """Whether the default rule of :func:`max_ctas_per_sm_choice` holds a grid to
    :data:`LARGE_GRID_CTAS_PER_SM` CTAs an SM: head_dim 128, between one and one and a third waves of working CTAs at
    :data:`RESIDENT_CTAS_PER_SM` an SM (``3 * num_sms < working_ctas <= 4 * num_sms``: the second wave is at most
    one CTA an SM, where at 2 an SM both waves are pairs), and chunks of more than :data:`MIN_CHUNK_TOKENS` and at
    most :data:`LARGE_GRID_MAX_CHUNK_TOKENS` tokens (bench/NOTES.md §67), or for INT2 (``bits`` 2) on a
    contiguous cache (not ``paged``) at most :data:`LARGE_GRID_MAX_CHUNK_TOKENS_CONTIGUOUS` (§89: INT4 and paged
    caches measured level or slower there)."""
    r = RESIDENT_CTAS_PER_SM
    longest = LARGE_GRID_MAX_CHUNK_TOKENS
    if not paged and bits == 2:
        longest = max(longest, LARGE_GRID_MAX_CHUNK_TOKENS_CONTIGUOUS)
    return (head_dim == 128 and r * num_sms < working_ctas <= (r + 1) * num_sms
            and MIN_CHUNK_TOKENS < chunk_tokens <= longest)


def max_ctas_per_sm_choice(working_ctas: int, num_sms: int, head_dim: int, chunk_tokens: int,
                           paged: bool = False, bits: int | None = None) -> int:
    """How many CTAs of the CUDA kernel's grid may share an SM: :data:`LARGE_GRID_CTAS_PER_SM` (:func:`holds_two_ctas`);
    ``ceil(working_ctas / num_sms)`` where that is below :data:`RESIDENT_CTAS_PER_SM` (a grid of at most two CTAs an
    SM, spread evenly); else 0 (as many as fit: 3 for the head_dim-128 folded instances).

    The even spread: a grid launched onto an idle GPU is spread one CTA an SM before any SM takes a second, so the
    limit changes nothing there; but a grid launched with programmatic dependent launch (:func:`foscar.kernels.
    decode_cuda.pdl_choice`) is scheduled while the kernel before it still holds some SMs, and its CTAs then piled
    three on the SMs that were free: INT2 32 x 8K (256 CTAs of 8K tokens) 12% slower with PDL than without, against
    4-14% faster at the points whose grid fills at most one CTA an SM (bench/NOTES.md §73).

    Measured on three H200s (bench/NOTES.md §67; INT2 / INT4 G=128, 8 KV heads, each setting's time over as many as
    fit): 512 working CTAs of 2K-8K tokens (batch 64 x 2K / 4K / 8K) 0.87-0.96 at 2 an SM, INT4 (one chunk a
    sequence, :func:`plan_work`) 0.89-0.91; but 384, 768 and 1024 working CTAs of 4K-8K tokens (48 / 96 / 128 x 8K,
    128 x 4K) 1.02-1.04, and 512 or more of 32K tokens (64 x 32K, 32 x 128K, 64 x 128K) 1.01-1.03. Held to 2 by the
    launch's dynamic shared memory (``launch()`` in ``csrc/folded_decode_sm90.cuh``); the kernel and its outputs are
    the same. ``FOSCAR_MAX_CTAS_PER_SM`` (read when a plan is made) overrides: ``"auto"`` (the default, this rule),
    ``"0"`` (as many as fit), or a count ``k`` >= 1.

    Args:
        working_ctas: the plan's CTAs with a chunk at the capacity (``batch * num_kv_heads * chunks a sequence``;
            not the ragged batch's spare slots, :func:`plan_work`).
        num_sms: multiprocessors of the device.
        head_dim: the cache's; the rule holds only at 128 (elsewhere 0).
        chunk_tokens: the plan's chunk at the capacity (:func:`plan_chunk_tokens`), tokens.
        paged, bits: the cache is paged; its bit width (:func:`holds_two_ctas`).

    Raises:
        ValueError: ``FOSCAR_MAX_CTAS_PER_SM`` is not ``"auto"`` or an integer from 0 to 32.
    """
    value = max_ctas_per_sm_setting()
    if value != "auto":
        return int(value)
    if holds_two_ctas(working_ctas, num_sms, head_dim, chunk_tokens, paged, bits):
        return LARGE_GRID_CTAS_PER_SM
    spread = -(-working_ctas // max(1, num_sms))
    return spread if 0 < spread < RESIDENT_CTAS_PER_SM else 0


def max_ctas_per_sm_setting() -> str:
    """``FOSCAR_MAX_CTAS_PER_SM`` as set now: ``"auto"`` (also where unset) or an integer from 0 to 32, as text.

    Raises:
        ValueError: any other value (the message names the variable and the allowed values).
    """
    value = os.environ.get("FOSCAR_MAX_CTAS_PER_SM", "auto")
    if value != "auto" and (not value.isdigit() or int(value) > 32):
        raise ValueError(f"FOSCAR_MAX_CTAS_PER_SM: expected 'auto' or an integer from 0 to 32, got {value!r}")
    return value


def plan_chunks_per_sequence(batch: int, fixed_splits: int, target_chunks: int) -> int:
    """A plan's chunks a sequence at the capacity: ``fixed_splits``, else ``target_chunks // batch`` (:func:`plan_work`)."""
    return fixed_splits or max(1, target_chunks // max(1, batch))


def plan_chunk_tokens(max_seq_len: int, batch: int, fixed_splits: int, target_chunks: int) -> int:
    """A plan's chunk at the capacity, in tokens: ``ceil(max_seq_len / n)``, ``n`` from :func:`plan_chunks_per_sequence`."""
    return -(-max(max_seq_len, 0) // plan_chunks_per_sequence(batch, fixed_splits, target_chunks))


def _pow2_floor(n: int) -> int:
    """The largest power of two <= ``n`` (1 for ``n`` < 2)."""
    return 1 << (max(n, 1).bit_length() - 1)


def _chunks_at(programs: int, num_sms: int, sequence_heads: int) -> int:
    """Chunks a sequence where ``sequence_heads`` (sequences x KV heads) share ``programs`` programs an SM, a power of
    two: ``pow2_floor(programs * num_sms / sequence_heads)`` (:func:`plan_work`, :func:`plan_long_chunk`)."""
    return _pow2_floor(programs * num_sms // max(1, sequence_heads))


def short_chunks_choice() -> bool:
    """Whether a plan made now may take chunks of one 256-token iteration where its CTAs fit one an SM
    (:func:`plan_work`, :func:`plan_min_chunk`; bench/NOTES.md §103): ``FOSCAR_SHORT_CHUNKS``, ``"1"`` (the default)
    or ``"0"`` (the plans before session 59, for A/B).

    Raises:
        ValueError: ``FOSCAR_SHORT_CHUNKS`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_SHORT_CHUNKS", "1")


def long_chunks_choice() -> bool:
    """Whether a plan made now may give a long sequence more than :data:`MAX_CHUNKS_PER_SEQUENCE` chunks of at least
    :data:`LONG_CHUNK_TOKENS` (:func:`plan_work`, :func:`plan_long_chunk`; bench/NOTES.md §105, §106):
    ``FOSCAR_LONG_CHUNKS``, ``"1"`` (the default) or ``"0"`` (the plans before session 60, for A/B; past batch 1
    also session 60's plans).

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNKS`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_LONG_CHUNKS", "1")


def long_chunk_tokens_choice() -> int:
    """The floor, in tokens, of the chunks of a sequence that takes more than :data:`MAX_CHUNKS_PER_SEQUENCE` chunks
    (:func:`plan_work`'s and :func:`plan_long_chunk`'s ``long_tokens``; a length-aware plan's long chunk may be longer,
    e.g. with the room): ``FOSCAR_LONG_CHUNK_TOKENS``, a decimal multiple of
    :data:`CHUNK_ALIGN_TOKENS` (256) from 256 to :data:`MAX_SPLIT_TOKENS` (32768); :data:`LONG_CHUNK_TOKENS` (512,
    since session 70) by default. Another value is for A/B only. 4096 (sessions 60-69) was fit while a sequence's
    chunks past 32 were merged by one of its CTAs in rounds of 16 (bench/NOTES.md §101, §105); since session 66 the
    merge kernel takes them (§111), and at 8 query heads over 1 KV head on 132 SMs a 128K sequence alone still ran on
    32 CTAs of 4096 tokens (20.1 us against 22.5 at 512K on 128 CTAs, an H100, §114). At 512 it runs on 128 CTAs of
    1024 in 11.2 us (§115). In a cache of at most 16K tokens plans take 256 whatever this says, unless
    ``FOSCAR_LONG_CHUNK_SHORT=0`` (:func:`long_chunk_floor`).

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNK_TOKENS`` not an integer, not a multiple of 256, or outside 256..32768.
    """
    value = os.environ.get("FOSCAR_LONG_CHUNK_TOKENS", str(LONG_CHUNK_TOKENS))
    tokens = int(value) if value.isascii() and value.isdigit() else -1
    _check_long_tokens(tokens, "FOSCAR_LONG_CHUNK_TOKENS", value)
    return tokens


# The long chunks' floor is LONG_CHUNK_TOKENS except in a cache of at most this many tokens, where it is
# CHUNK_ALIGN_TOKENS (256, one CTA iteration; long_chunk_floor): there 512 leaves a sequence of the capacity 32 chunks,
# and 256 gives it 64 (bench/NOTES.md §115, 8 query heads over 1 KV head on an H100: INT2 1 x 16K 0.70 of the time at a
# floor of 256 against 512, paged 0.78, INT4 0.79, 2 x 16K 0.91, 16 query heads over 2 KV heads 0.87; 4 and 8 x 16K 0.99
# / 1.01, their slots bound the chunks). At 32K 256 was 4% (INT2) and 9% (INT4) slower than 512 (128 chunks of one
# iteration against 64 of two); at 24K the two were level.
LONG_CHUNK_SHORT_CAPACITY = 16384


def long_chunk_short_choice() -> bool:
    """Whether plans made now take the floor of 256 for long chunks in a cache of at most
    :data:`LONG_CHUNK_SHORT_CAPACITY` (16K) tokens (:func:`long_chunk_floor`): ``FOSCAR_LONG_CHUNK_SHORT``, ``"1"`` (the
    default since session 70) or ``"0"`` (:data:`LONG_CHUNK_TOKENS` at every capacity, for A/B; with
    ``FOSCAR_LONG_CHUNK_TOKENS=4096`` the plans of sessions 60-69).

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNK_SHORT`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_LONG_CHUNK_SHORT", "1")


def long_chunk_floor(max_seq_len: int, long_tokens: int = LONG_CHUNK_TOKENS, short_capacity: bool = True) -> int:
    """The long chunks' floor, tokens, that :func:`plan_work` and :func:`plan_long_chunk` take from their
    ``long_tokens`` for a cache of ``max_seq_len`` tokens: :data:`CHUNK_ALIGN_TOKENS` (256) where
    ``short_capacity`` (:func:`long_chunk_short_choice`) and ``max_seq_len`` is at most
    :data:`LONG_CHUNK_SHORT_CAPACITY` (16384), else ``long_tokens`` (:func:`long_chunk_tokens_choice`, 512 by default).
    At one KV head on 132 SMs a sequence of 16K then takes 64 chunks of 256 instead of 32 of 512; below 8K nothing
    changes (``ceil(length / 32)`` is at most 256 there). Measured: the comment above :data:`LONG_CHUNK_SHORT_CAPACITY`.

    Raises:
        ValueError: a negative ``max_seq_len``, or ``long_tokens`` not a multiple of 256 from 256 to 32768.
    """
    if max_seq_len < 0:
        raise ValueError(f"long_chunk_floor: expected max_seq_len >= 0, got {max_seq_len}")
    _check_long_tokens(long_tokens)
    return CHUNK_ALIGN_TOKENS if short_capacity and max_seq_len <= LONG_CHUNK_SHORT_CAPACITY else long_tokens


def long_chunk_ceil_choice() -> bool:
    """Whether plans made now ask for ``ceil(capacity / floor)`` long chunks (:func:`plan_work`'s ``long_ceil``):
    ``FOSCAR_LONG_CHUNK_CEIL``, ``"1"`` (the default since session 70) or ``"0"`` (``capacity // floor``, the plans of
    sessions 60-69, for A/B). At a capacity off a multiple of the floor the floor division asked for splits that the
    kernel's 256-token alignment cut in chunks of twice the floor (16000 tokens at 256: 62 splits, 32 chunks; 20000 at
    512: 39 splits, 27 chunks of 768; bench/NOTES.md §115); a paged cache's capacity is its longest sequence, so any
    length. INT2 at 8 query heads over 1 KV head on an H100, one round: 1 x 16000 0.79 of the time of the floor
    division, 1 x 20000 0.89, 1 x 16K (the same plan) 1.00.

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNK_CEIL`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_LONG_CHUNK_CEIL", "1")


LONG_CHUNK_PROGRAMS = (1, 2)  # programs an SM that long chunks may spread a sequence over


def long_chunk_programs_choice() -> int:
    """Programs an SM that long chunks spread a long sequence over (:func:`plan_work`, :func:`plan_long_chunk`):
    ``FOSCAR_LONG_CHUNK_PROGRAMS``, ``"1"`` (the default: up to one program an SM, bench/NOTES.md §105-§106) or
    ``"2"`` (up to two, for A/B: a one-CTA SM streams one chunk with four warps, 56% of the ceiling at INT2 2 x 512K
    on a paged cache at one KV head, §107). Two an SM took 1.07-1.17 of the time at INT2 / INT4 2 x 512K at one and two
    KV heads on an H100 with one CTA merging every chunk (§108), and 0.96-1.02 with the two-level merge (§109). With 2
    the long-chunk rules reach plans at up to 4 KV heads on 132 SMs (``pow2_floor(264 / 4)`` is 64, above 32), where "3
    or more KV heads: no change" below holds at the default.

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNK_PROGRAMS`` other than ``"1"`` or ``"2"``.
    """
    value = os.environ.get("FOSCAR_LONG_CHUNK_PROGRAMS", "1")
    if value not in [str(n) for n in LONG_CHUNK_PROGRAMS]:
        raise ValueError(f"FOSCAR_LONG_CHUNK_PROGRAMS: expected '1' or '2', got {value!r}")
    return int(value)


def long_chunk_room_choice() -> bool:
    """Whether a length-aware plan made now leaves, in its long chunk, one program an SM for each other sequence of
    a small batch (:func:`plan_long_chunk`'s ``room``): ``FOSCAR_LONG_CHUNK_ROOM``, ``"1"`` (the default since
    session 68) or ``"0"`` (the plans of sessions 61-67, for A/B). Why (bench/NOTES.md §112, §113): one 512K sequence
    among seven of 4K at one KV head on 132 SMs took 128 chunks of 4096 and the short ones one each, 135 working CTAs,
    so three SMs ran two chunks, and the call took 29.4 us against 24.5 with the room (121 chunks of 4352, 128 CTAs;
    INT2, an H100).

    Raises:
        ValueError: ``FOSCAR_LONG_CHUNK_ROOM`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_LONG_CHUNK_ROOM", "1")


LONG_CHUNK_ROOM_SHARE = 8  # the room is left for at most (programs an SM x SMs / KV heads) / 8 other sequences


def _check_long_tokens(long_tokens: int, name: str = "long_tokens", given: object = None) -> None:
    """Raises ValueError, naming ``name`` and what was ``given`` (``long_tokens`` unless given), unless ``long_tokens``
    is a multiple of 256 from 256 to :data:`MAX_SPLIT_TOKENS`."""
    if not (isinstance(long_tokens, int) and CHUNK_ALIGN_TOKENS <= long_tokens <= MAX_SPLIT_TOKENS
            and long_tokens % CHUNK_ALIGN_TOKENS == 0):
        raise ValueError(f"{name}: expected a multiple of {CHUNK_ALIGN_TOKENS} from {CHUNK_ALIGN_TOKENS} to "
                         f"{MAX_SPLIT_TOKENS} tokens (default {LONG_CHUNK_TOKENS}), "
                         f"got {long_tokens if given is None else given!r}")


def _check_long_programs(long_programs: int) -> None:
    """Raises ValueError unless ``long_programs`` is one of :data:`LONG_CHUNK_PROGRAMS` (1 or 2)."""
    if long_programs not in LONG_CHUNK_PROGRAMS:
        raise ValueError(f"long_programs: expected 1 or 2 programs an SM, got {long_programs!r}")


def plan_long_chunk(num_splits: int | None, num_kv_heads: int, num_sms: int, max_seq_len: int,
                    long_chunks: bool = True, fixed_splits: int = 0, long_programs: int = 1, batch: int = 1,
                    room: bool = True, long_tokens: int = LONG_CHUNK_TOKENS, long_short: bool = True) -> int:
    """The CUDA kernel's ``long_chunk`` (tokens, a multiple of 256 up to :data:`MAX_SPLIT_TOKENS`) for a plan over
    ``num_kv_heads`` KV heads and a capacity of ``max_seq_len`` tokens on ``num_sms`` SMs whose fixed split count is
    ``fixed_splits`` (:func:`plan_work`; 0: length-aware); 0 where the plan's ``num_splits`` is the caller's or where
    ``long_chunks`` is False.

    Else, for a fixed plan (a batch of one), ``long_tokens`` (:data:`LONG_CHUNK_TOKENS`, 512 by default since session
    70, 4096 in sessions 60-69; 4096 in the figures below): its fixed path cuts a length in more than 32 chunks only in
    chunks of at least ``min(long_chunk, ceil(length / 32))`` (bench/NOTES.md §105; the plan's count already bounds the
    chunks). For a length-aware plan, 0 where one sequence's chunks at one program an SM (``pow2_floor(num_sms /
    num_kv_heads)``) are at most :data:`MAX_CHUNKS_PER_SEQUENCE` (3 or more KV heads on 132 SMs); else the chunk that
    spreads a sequence at the capacity over one program an SM, at least 4096: ``max(4096, ceil(max_seq_len /
    pow2_floor(num_sms / num_kv_heads)))`` rounded up to 256 (4096 at one KV head up to a capacity of 512K, at two KV
    heads up to 256K). There the kernel's least chunk is ``min(ceil(longest / 32), long_chunk)`` instead of
    ``ceil(longest / 32)`` (:func:`first_chunk`), so a sequence takes more than 32 chunks only of at least
    ``long_chunk`` tokens, at most one program an SM (§106). Below a capacity of ``32 * long_chunk`` nothing changes.
    ``long_programs`` (:func:`long_chunk_programs_choice`, 1 or 2): programs an SM in place of one in the rule above
    (``pow2_floor(long_programs * num_sms / num_kv_heads)``).

    ``room`` (:func:`long_chunk_room_choice`, on by default; a length-aware plan only): where the batch's other
    sequences are at most one in :data:`LONG_CHUNK_ROOM_SHARE` (8) of the programs (``batch - 1 <= long_programs *
    num_sms / num_kv_heads / 8``: up to 17 sequences at one KV head on 132 SMs, 9 at two), the long sequence's programs
    are at most ``long_programs * num_sms / num_kv_heads - (batch - 1)``, so that one long sequence at the capacity and
    one chunk for each other sequence fit in one program an SM (``batch``: the plan's sequences; 0 counts as 1); where
    that leaves at most :data:`MAX_CHUNKS_PER_SEQUENCE`, 0 (unreachable with the bound: the room changes a plan only at
    64 or more programs, and leaves at least 56). The long chunk then grows wherever ``ceil(capacity / (SMs / KV heads -
    (batch - 1)))`` passes the default's: at one KV head on 132 SMs from 6 sequences, at a capacity past ``(133 - batch)
    x 4096`` tokens (one 512K among seven 4K: 121 chunks of 4352 instead of 128 of 4096), at two KV heads from 4
    sequences past ``(67 - batch) x 4096``. Measured on an H100 (INT2 one-long, room / none, bench/NOTES.md §113):
    0.83-0.87 at 6-16 sequences at one KV head, 0.86-0.97 at 4-8 at two; 1.07-1.28 at 24, 32 and 100 at one KV head and
    1.21 at 16 at two, hence the bound.

    ``long_tokens`` (:func:`long_chunk_tokens_choice`; a multiple of 256 up to :data:`MAX_SPLIT_TOKENS`): the 4096 of
    the rules above (512 by default since session 70, and 256 in a cache of at most 16K, :func:`long_chunk_floor`;
    bench/NOTES.md §115: at one KV head on 132 SMs a sequence then takes more than 32 chunks past a capacity of 8K,
    e.g. 1 x 16K 64 chunks of 256, 1 x 32K 64 of 512, 1 x 128K 128 of 1024). ``long_short``
    (:func:`long_chunk_short_choice`): :func:`long_chunk_floor`'s ``short_capacity``, which takes ``long_tokens`` to 256
    in a cache of at most 16K (as :func:`plan_work` does).

    Raises:
        ValueError: ``num_kv_heads`` or ``num_sms`` below 1, a negative ``max_seq_len`` or ``batch``,
            ``long_programs`` other than 1 or 2, or ``long_tokens`` not a multiple of 256 from 256 to 32768.
    """
    if num_kv_heads < 1 or num_sms < 1 or max_seq_len < 0 or batch < 0:
        raise ValueError(f"plan_long_chunk: expected num_kv_heads >= 1, num_sms >= 1, max_seq_len >= 0 and batch >= 0, "
                         f"got {num_kv_heads}, {num_sms}, {max_seq_len}, {batch}")
    _check_long_programs(long_programs)
    long_tokens = long_chunk_floor(max_seq_len, long_tokens, long_short)
    if num_splits is not None or not long_chunks:
        return 0
    if fixed_splits > 0:  # at any KV head count: past 1M tokens a fixed plan has more than 32 chunks at 3-8 too
        return long_tokens
    one_sequence = _chunks_at(long_programs, num_sms, num_kv_heads)  # one sequence's chunks at long_programs an SM
    programs, others = long_programs * num_sms // num_kv_heads, max(batch, 1) - 1
    if room and others <= programs // LONG_CHUNK_ROOM_SHARE:  # one program left for each other sequence
        one_sequence = min(one_sequence, programs - others)
    if one_sequence <= MAX_CHUNKS_PER_SEQUENCE:
        return 0
    per = -(-max_seq_len // one_sequence)
    return min(max(long_tokens, -(-per // CHUNK_ALIGN_TOKENS) * CHUNK_ALIGN_TOKENS), MAX_SPLIT_TOKENS)


MERGE_GROUP_CHUNKS = 16  # chunks a group of the in-kernel merge's first level (csrc kMergeGroup)


def plan_merge_groups(num_slots: int, fixed_splits: int, long_chunk: int, max_seq_len: int,
                      seq_chunk_cap: bool = True) -> int:
    """Group counters a (sequence, KV head) for the in-kernel merge's two levels (``merge_tree`` in
    ``csrc/folded_decode_sm90.cuh``; bench/NOTES.md §108): ``ceil(n / 16)`` where a sequence of a plan of
    ``num_slots`` slots (:func:`plan_work`) may take ``n`` > :data:`MAX_CHUNKS_PER_SEQUENCE` chunks
    (:func:`may_take_more_than_32_chunks`, whose arguments these are), else 0.

    ``n`` is ``fixed_splits`` for a fixed plan; for a length-aware one ``num_slots`` (a bound). A sequence that takes
    more chunks than its groups cover merges on its last CTA alone, as every sequence did before (correct, only
    slower).
    """
    if not may_take_more_than_32_chunks(fixed_splits, long_chunk, max_seq_len, seq_chunk_cap):
        return 0
    n = fixed_splits if fixed_splits > 0 else num_slots
    return -(-n // MERGE_GROUP_CHUNKS) if n > MAX_CHUNKS_PER_SEQUENCE else 0


def may_take_more_than_32_chunks(fixed_splits: int, long_chunk: int, max_seq_len: int,
                                 seq_chunk_cap: bool = True) -> bool:
    """Whether a sequence of a plan (:func:`plan_work`'s ``fixed_splits``, 0: length-aware; :func:`plan_long_chunk`'s
    ``long_chunk``, 0: none) over a capacity of ``max_seq_len`` tokens may take more than
    :data:`MAX_CHUNKS_PER_SEQUENCE` chunks in the CUDA kernel (:func:`schedule` mirrors its cut), for lengths up to
    the capacity (a contiguous cache's are clamped to it; a paged cache's page table must not run past it,
    :meth:`foscar.PagedQuantizedKVCache.check_page_table`). ``seq_chunk_cap``: the kernel's length-aware floor of 32
    chunks is built in (``decode_cuda.SEQ_CHUNK_CAP_BUILT``; False in a ``FOSCAR_SEQ_CHUNK_CAP=0`` A/B build,
    bench/NOTES.md §101, whose length-aware chunks are bounded by the slots alone: then True for every length-aware
    plan).

    The fixed path cuts a length ``L`` in chunks of at least 256 tokens (``CHUNK_ALIGN_TOKENS``), and of at least
    ``min(ceil(L / 32), long_chunk)`` where ``fixed_splits`` > 32 and ``long_chunk`` > 0 (§105); the length-aware
    path in chunks of at least ``min(ceil(longest / 32), long_chunk)`` (aligned to 256, at most
    :data:`MAX_SPLIT_TOKENS`; :func:`first_chunk`, §106). ``long_chunk`` being a multiple of 256, only a length past
    ``32 * long_chunk`` (past ``32 * 256`` for a fixed plan without a long chunk, a caller's ``num_splits``; past
    ``32 * MAX_SPLIT_TOKENS`` for a length-aware plan without one) takes more than 32. So True where ``fixed_splits``
    > 32 and ``max_seq_len`` > ``32 * (long_chunk or 256)``, or, length-aware, where ``max_seq_len`` > ``32 *
    (long_chunk or MAX_SPLIT_TOKENS)``. At one KV head on 132 SMs, length-aware plans with long chunks of 4096 up to
    a capacity of 128K took no more than 32 chunks a sequence; with the floors since session 70 (512, and 256 in a
    cache of at most 16K, :func:`long_chunk_floor`), up to 8K.
    """
    if fixed_splits > 0:
        return (fixed_splits > MAX_CHUNKS_PER_SEQUENCE
                and max_seq_len > MAX_CHUNKS_PER_SEQUENCE * (long_chunk or CHUNK_ALIGN_TOKENS))
    if not seq_chunk_cap:
        return True
    return max_seq_len > MAX_CHUNKS_PER_SEQUENCE * (long_chunk or MAX_SPLIT_TOKENS)


def plan_min_chunk(target_chunks: int, num_kv_heads: int, num_sms: int, short_chunks: bool = True) -> int:
    """The least length-aware chunk, in tokens, of a plan whose chunk target is ``target_chunks`` (:func:`plan_work`)
    over ``num_kv_heads``: :data:`SHORT_CHUNK_TOKENS` (256, one CTA iteration) where ``short_chunks`` and the target's
    CTAs fit one an SM (``target_chunks * num_kv_heads <= num_sms``), else :data:`MIN_CHUNK_TOKENS` (512). The CUDA
    kernel's length-aware chunks (``Params::min_chunk``, ``find_work``), the host mirror (:func:`schedule`) and the
    merge kernel's ranges from the lengths take it.

    Below one CTA an SM, a ragged batch's short sequences then fill the target with chunks of one iteration (8 query
    heads over 1 KV head, 8 lognormal lengths in 8K on an H100: 12-13% less time); past it, chunks of 512 keep the CTAs
    that the plan's fit counted on (uniform batches there measured 3-9% slower with chunks of 256 at 3 of 4 points, INT2
    8 x 8K over 1 KV head 1% faster; bench/NOTES.md §103).
    """
    fits = target_chunks * max(1, num_kv_heads) <= num_sms
    return SHORT_CHUNK_TOKENS if short_chunks and fits else MIN_CHUNK_TOKENS


def short_tokens_choice() -> bool:
    """Whether a plan made now lets the kernel take chunks of one 256-token iteration where the batch's tokens, read
    on the device, fit one CTA an SM (:func:`plan_short_tokens`): ``FOSCAR_SHORT_TOKENS``, ``"1"`` (the default since
    session 73, bench/NOTES.md §118) or ``"0"`` (the plans before it).

    Raises:
        ValueError: ``FOSCAR_SHORT_TOKENS`` other than ``"0"`` or ``"1"``.
    """
    return env_flag("FOSCAR_SHORT_TOKENS", "1")


def plan_short_tokens(min_chunk: int, num_kv_heads: int, num_sms: int, on: bool = True) -> int:
    """The length-aware chunks' short-batch bound, in tokens: where the batch's tokens ``T`` are at most this and its
    longest sequence is past ``min_chunk``, the kernel's least chunk is :data:`SHORT_CHUNK_TOKENS` (256) instead of the
    plan's ``min_chunk`` (``find_work``'s ``Params::short_tokens``; the host mirror :func:`first_chunk`, the merge
    kernel's ranges from the lengths). ``SHORT_CHUNK_TOKENS * (num_sms // num_kv_heads)`` where ``on``
    (:func:`short_tokens_choice`) and ``min_chunk`` is :data:`MIN_CHUNK_TOKENS`, else 0 (never; a plan of ``min_chunk``
    256 already takes chunks of 256).

    :func:`plan_min_chunk` chooses from the capacity the plan was made for: a batch whose lengths are far below it (8
    sequences of 4K in a 128K cache at 8 query heads over 1 KV head) is cut in chunks of 512 (64 CTAs of two iterations)
    where the same lengths in a 4K cache take 128 CTAs of one (INT2 on an H100, session 71's Llama bench: 8.51 us
    against 7.68). With the bound, ``T <= 256 * SMs / KV heads`` tokens take chunks of 256, about one CTA an SM; the
    bound counts tokens because the kernel sums them already, and each sequence's count rounds up, so a batch can take
    up to ``batch`` CTAs more (600 + 100 x 300 tokens at one KV head: 102 -> 203 CTAs, 101 sequences merged where 1 was;
    untimed). On an H100 (bench/NOTES.md §118, INT2 over 1 KV head unless said) that took 0.90-0.95 of the time at 8 x
    4K, 16 x 2K, 32 x 1K in a 128K cache, INT4 8 x 4K, paged 8 x 4K and 16 query heads over 2 KV heads 4 x 4K in 64K. A
    batch of sequences of at most ``min_chunk`` tokens keeps its plan: cutting them made every sequence two chunks and a
    merge, 1.30x slower at 64 x 512 and 1.25x at 128 x 257 (256 CTAs where 512 gives 128). ``on`` is False under
    ``FOSCAR_SHORT_CHUNKS=0`` too (:func:`foscar.kernels.decode_cuda.plan_short_tokens_of`).

    Raises:
        ValueError: ``min_chunk`` other than 256 or 512, or ``num_kv_heads`` / ``num_sms`` below 1.
    """
    if min_chunk not in (SHORT_CHUNK_TOKENS, MIN_CHUNK_TOKENS) or num_kv_heads < 1 or num_sms < 1:
        raise ValueError(f"plan_short_tokens: expected min_chunk 256 or 512, num_kv_heads >= 1 and num_sms >= 1, got "
                         f"{min_chunk}, {num_kv_heads}, {num_sms}")
    if not on or min_chunk == SHORT_CHUNK_TOKENS:
        return 0
    return SHORT_CHUNK_TOKENS * (num_sms // num_kv_heads)


def choose_num_splits(batch: int, num_kv_heads: int, max_seq_len: int, block_n: int, num_sms: int) -> tuple[int, int]:
    """Split-KV heuristic: about two programs per SM, splits at most 32K tokens, each at least 2 tiles.

    ``splits = max(pow2_floor(2 * num_sms / (batch * num_kv_heads)), ceil(max_seq_len / 32768))``
    (at least 1), capped so that every split holds two ``block_n`` tiles. Fit on the H200
    sweep of every split count at the 24 bench points (``scripts/split_sweep.py``,
    ``bench/NOTES.md`` §14): within 0.7% of the best split count there (geometric mean,
    3.4% at worst), where the earlier rule (~4 programs per SM) was 4.1% off and up to 18%.

    Uses ``max_seq_len`` (a shape, known on the host), so it needs no device sync
    and is CUDA-graph safe; shorter sequences leave their tail splits empty (LSE
    ``-inf``, weight zero in the merge).

    Returns:
        ``(num_splits, tokens_per_split)``, ``tokens_per_split`` a multiple of ``block_n``.
    """
    if max_seq_len <= 0:
        return 1, block_n
    programs = max(1, batch * num_kv_heads)
    per_sm = TARGET_PROGRAMS_PER_SM * num_sms // programs
    want = _pow2_floor(per_sm)  # power of two <= per_sm
    want = max(want, math.ceil(max_seq_len / MAX_SPLIT_TOKENS))
    most = max(1, math.ceil(max_seq_len / (2 * block_n)))
    return split_tokens(max_seq_len, min(want, most), block_n)


def plan_work(batch: int, num_kv_heads: int, max_seq_len: int, num_sms: int,
              num_splits: int | None = None, bits: int | None = None,
              head_dim: int | None = None, paged: bool = False,
              short_chunks: bool = True, long_chunks: bool = True, long_programs: int = 1,
              long_tokens: int = LONG_CHUNK_TOKENS, long_ceil: bool = True,
              long_short: bool = True) -> tuple[int, int, int]:
    """Length-aware split-KV for the CUDA kernel: ``(num_slots, fixed_splits, target_chunks)``.

    The chunk target is sized on the host from the shapes, as before: ``target_chunks = batch * choose_num_splits(...)``
    (the fitted "about two programs per SM, splits of at most 32K tokens" rule over ``max_seq_len``). The kernel fills
    the grid's slots from the actual lengths on the device (``find_work`` in ``csrc/folded_decode_sm90.cuh``, DESIGN
    §10): it cuts the batch's ``T`` tokens into chunks of ``C = T / target_chunks`` tokens (at least
    :func:`plan_min_chunk`'s 512 or 256, at most 32768, multiples of 256), grown until every sequence's ``ceil(len /
    C)`` chunks fit in ``num_slots``. A uniform batch gets exactly the fitted split count; a long sequence among short
    ones gets several chunks as long as the slots leave room. (A batch of one and a plan of one chunk per sequence take
    the kernel's fixed path instead: below.)

    INT4 past one wave: where ``bits >= 4`` and one split per sequence already gives more CTAs than
    fit at once (``batch * num_kv_heads >= RESIDENT_CTAS_PER_SM * num_sms``), the target has at least
    two chunks per sequence. Measured on the H200 with the integer-QK kernel (``scripts/split_sweep.py``,
    bench/NOTES.md §27): INT4 64 x 8K 178.9 -> 163.0 us and 64 x 32K 646 -> 575 us with 2 splits
    instead of 1, where INT2 at the same points is 12% / 1% slower with 2 (so INT2 keeps the fit). Not where
    (``head_dim`` given) the one-chunk grid is held to two CTAs an SM (:func:`holds_two_ctas`): there the wave's tail
    that two chunks shortened is gone, and one chunk measured faster (INT4 64 x 8K 143.5-144.9 us against 149.2-149.7
    with two chunks at 2 an SM and 150.9-151.0 with two at 3 an SM, bench/NOTES.md §67), and only for chunks of at most
    :data:`LARGE_GRID_MAX_CHUNK_TOKENS` (INT2 takes longer ones on a contiguous cache, :func:`holds_two_ctas`; INT4's
    one 32K chunk at 2 an SM was slower on a ragged batch, §89). ``paged``: the cache is paged.

    The room: where the chunk target's CTAs (``target_chunks * num_kv_heads``) already fill the GPU (at least
    :data:`RESIDENT_CTAS_PER_SM` per SM), the grid has ``batch`` slots more than the target, so that a ragged batch's
    long sequences can take several chunks (64 lognormal lengths up to 32K in a 32K cache: 294 -> 142 us on the H200;
    with one slot per sequence the longest ran on one CTA per KV head). Below that, no extra slot: slots past the last
    chunk are CTAs that exit at once, yet where they are resident beside the working ones they cost up to 42% (32 x 8K:
    75 -> 103 us), bench/NOTES.md §17-§18. Nor where no sequence can take two chunks: at ``max_seq_len <=``
    :data:`MIN_CHUNK_TOKENS` (512, the smallest chunk of a grid that fills the GPU, :func:`plan_min_chunk`) every
    sequence is one chunk, and the room would only be empty CTAs (batch 64 at a capacity of 16: 1024 CTAs instead of
    512, bench/NOTES.md §36, §39).

    Args:
        batch, num_kv_heads, max_seq_len: the cache's (``max_seq_len`` the capacity per sequence;
            paged caches: their host-side bound).
        num_sms: multiprocessors of the device.
        num_splits: a fixed split count per sequence instead (each sequence's length cut into
            that many chunks of whole 256-token iterations).
        bits: the cache's bit width (2 or 4), for the INT4 rule above; ``None`` leaves it out.
        head_dim: the cache's, for the INT4 rule's exception above; ``None`` leaves the exception out.
        short_chunks: the rule below for grids of at most one CTA an SM (:func:`short_chunks_choice`); False gives
            the plans before session 59.
        long_chunks: the long sequences' exception to the 32-chunk bound below (:func:`long_chunks_choice`); False
            gives the plans before session 60.
        long_programs: programs an SM that the exception spreads a long sequence over (1, the default, or 2;
            :func:`long_chunk_programs_choice`): ``pow2_floor(long_programs * num_sms / (batch * num_kv_heads))`` in
            the cap below (at 2, plans at up to 4 KV heads change too). Raises ``ValueError`` for
            another value.
        long_tokens: the least chunk of the exception, tokens (:func:`long_chunk_tokens_choice`; 512 by default since
            session 70, 4096 before and in the text below; :func:`long_chunk_floor`): ``ceil(max_seq_len /
            long_tokens)`` in the cap below. Raises ``ValueError`` unless a multiple of 256 from 256 to 32768.
        long_ceil: ``ceil`` in that term (:func:`long_chunk_ceil_choice`, the default since session 70); False gives
            ``max_seq_len // long_tokens``, the plans of sessions 60-69: the kernel aligns a chunk to 256 tokens, so
            ``capacity // floor`` splits of a capacity off a multiple of the floor were cut in chunks of two floors,
            about half of them empty (20000 tokens at 512: 39 splits, 27 chunks of 768; with ``ceil`` 40 of 512).
        long_short: :func:`long_chunk_floor`'s ``short_capacity`` (:func:`long_chunk_short_choice`, the default since
            session 70): ``long_tokens`` is 256 in a cache of at most 16K; False keeps ``long_tokens`` there.

    Short chunks: where the fit's count leaves the grid at most one CTA an SM, a sequence takes up to one program per
    SM (``pow2_floor(num_sms / (batch * num_kv_heads))``, at most one chunk per 256-token iteration), as a batch of
    one does (below), and the kernel then cuts chunks of one iteration (:func:`plan_min_chunk`). At 8 query heads over
    1 KV head on an H100 (bench/NOTES.md §101, §103): INT2 2 x 8K 7.2 us with 32 chunks of 256 against 8.7 with 16 of
    512, INT2 / INT4 2-4 x 8K 0.83-0.90 of the time. Past one CTA an SM it measured slower (the Qwen3-8B shape's 2 x
    4K: 256 CTAs of 256 tokens took 1.09 of 128 of 512; 8 query heads over 1 KV head at 8 x 8K INT4 1.03), so
    there the fit's count stays.

    Batch 1: a single sequence has no length mix to leave room for. Past a capacity of 512 tokens, INT4 (``bits
    >= 4``) takes one program per SM (a power of two, at least the 32K-token cap's count; fewer where the
    capacity holds fewer 256-token iterations, e.g. 3 at 600 tokens), and INT2 does so too while that keeps its
    chunks at most :data:`BATCH1_INT2_CHUNK_TOKENS` tokens (else the fit's count): chunks of at least 256 tokens
    (one CTA iteration; the fit keeps two, so at capacities up to 4K this is more chunks than the fit's). Measured on the H200 (8 KV heads, 132
    SMs: one program per SM is 16 chunks; fixed-path plans, bench/NOTES.md §54, us): 1 x 4K INT2 7.96 with 16
    chunks of 256 against 8.81 with the fit's 8, INT4 8.51 against 9.27; 1 x 8K and 1 x 16K 16 chunks (INT2 9.41 /
    11.15, 32 chunks 9.57 / 11.22); INT2 1 x 32K 14.11 with 32 chunks of 1K against 14.72 with 16 (at §48's
    kernel 16 had measured faster), INT4 16.79 with 16 against 17.27; 1 x 128K INT2 31.2 with the fit's 32 (16:
    35.8), INT4 16 (§48: 43.0 against 44.8 with 32). At a capacity of at most 512 a sequence stays one chunk
    (no merge launch, below).

    A batch of one is cut by the kernel's fixed path (``fixed_splits = n``, the count above): its length, read on
    the device, in at most ``n`` chunks of whole 256-token iterations, and no scan of the batch's lengths
    (0.15-0.30 us a decode at the bench's batch-1 points on the H200, bench/NOTES.md §54). For a length above
    ``256 n`` (every bench point) or of at most 256 these are the chunks the length-aware schedule would make over
    the same slots; in between, chunks of 256 where it would take 512 (faster at 1 x 4K, §40, §54).

    At most :data:`MAX_CHUNKS_PER_SEQUENCE` (32) chunks a sequence, or ``ceil(max_seq_len / MAX_SPLIT_TOKENS)`` where
    that is more, whatever the rules above ask: they were fit at 8 KV heads, where no sequence got more than 32, and at
    batch x num_kv_heads <= 4 they ask for 64 or more, which the in-kernel merge takes in rounds of 16 (8 query heads
    over 1 KV head on an H100: INT2 1 x 32K 20.5 us with 128 chunks, 9.6 with 32; 32 the fastest count at 19 of 24
    points of batch 1-8 x 8K-128K, 64 at 1 x 128K by 4.7-6.3%, bench/NOTES.md §101). The kernel's length-aware chunks
    keep the same bound (:func:`first_chunk`). Long sequences (``long_chunks``) may take more, up to one program an SM,
    while each chunk keeps at least :data:`LONG_CHUNK_TOKENS` at the capacity: at one KV head a sequence of 256K or 512K
    tokens alone then runs on 64 or 128 CTAs instead of 32 (bench/NOTES.md §105), and the kernel's fixed path cuts a
    shorter length in no more chunks than the bound of 32 allows, unless they stay that long (:func:`plan_long_chunk`).
    Since session 61 the same holds past batch 1 (§106): the cap is ``min(pow2_floor(num_sms / (batch * num_kv_heads)),
    max_seq_len // 4096)`` (``ceil(max_seq_len / long_tokens)`` since session 70) where that is more than 32 (at one KV
    head on 132 SMs, batch 2 past 128K: 40 chunks a sequence at 160K, 48 at 192K, 64 from 256K), and the kernel's
    length-aware chunks take the plan's long chunk as their floor where it is below ``ceil(longest / 32)``, so in a
    ragged batch a long sequence among short ones takes as many chunks of at least ``long_chunk`` tokens as the slots
    leave. At 3 or more KV heads on 132 SMs one program an SM is at most 32 chunks a sequence: no change.

    One chunk per sequence: where the target is one chunk per sequence and the grid has no room (``num_slots
    == batch``), every sequence is one chunk whatever its length, so the plan says so as ``fixed_splits = 1``
    (the same chunks; the kernel's fixed path reads its one length instead of scanning the batch's), and a
    plan with ``num_slots == batch`` launches no merge kernel (:func:`merges`; bench/NOTES.md §48).

    Returns:
        ``num_slots`` (the grid is ``num_slots * num_kv_heads`` CTAs, the partial buffers hold
        ``num_slots`` rows), ``fixed_splits`` (0 in the length-aware mode) and ``target_chunks``.
    """
    _check_long_programs(long_programs)
    long_tokens = long_chunk_floor(max(max_seq_len, 0), long_tokens, long_short)
    if num_splits is not None:
        return batch * num_splits, num_splits, 1
    n, _ = choose_num_splits(batch, num_kv_heads, max_seq_len, 256, num_sms)
    one_per_sm = _chunks_at(1, num_sms, batch * max(1, num_kv_heads))  # chunks a sequence at one an SM
    iterations = math.ceil(max_seq_len / SHORT_CHUNK_TOKENS)  # ... and at most one per 256-token iteration
    if short_chunks and max_seq_len > MIN_CHUNK_TOKENS:  # up to one program an SM, chunks of one iteration or more
        n = max(n, min(one_per_sm, iterations))
    if batch == 1 and bits is not None and max_seq_len > MIN_CHUNK_TOKENS:
        # one sequence: one program per SM where that measured faster, in chunks of at least one 256-token
        # iteration (the fixed path's; the fit's two)
        most = max(one_per_sm, math.ceil(max_seq_len / MAX_SPLIT_TOKENS))
        if bits >= 4 or math.ceil(max_seq_len / most) <= BATCH1_INT2_CHUNK_TOKENS:
            n = min(most, iterations)
    # at most MAX_CHUNKS_PER_SEQUENCE chunks a sequence (the kernel's cap on its length-aware chunks; chunks stay at
    # most MAX_SPLIT_TOKENS long): binds at one or two KV heads, where the rules above were never measured (NOTES §101)
    cap = max(MAX_CHUNKS_PER_SEQUENCE, math.ceil(max_seq_len / MAX_SPLIT_TOKENS))
    if long_chunks:  # long sequences: more, up to one program an SM, of at least long_tokens (plan_long_chunk)
        spread = _chunks_at(long_programs, num_sms, batch * max(1, num_kv_heads))
        most = -(-max_seq_len // long_tokens) if long_ceil else max_seq_len // long_tokens  # chunks of long_tokens
        cap = max(cap, min(spread, most))
    n = min(n, cap)
    past_wave = batch * max(1, num_kv_heads) >= RESIDENT_CTAS_PER_SM * num_sms
    # (INT4 keeps two chunks where its one chunk would pass LARGE_GRID_MAX_CHUNK_TOKENS: holds_two_ctas takes longer
    # chunks for INT2 only; one 32K chunk at 2 an SM was 2.3% slower on a lognormal batch of 64 in 32K, NOTES §89)
    held = head_dim is not None and n == 1 and holds_two_ctas(batch * max(1, num_kv_heads), num_sms, head_dim,
                                                              max_seq_len, paged, bits)
    if bits is not None and bits >= 4 and past_wave and not held:
        n = max(n, min(2, max(1, math.ceil(max_seq_len / 512))))  # two chunks of >= 256 tokens each
    target = max(1, batch * n)
    fills_gpu = target * max(1, num_kv_heads) >= RESIDENT_CTAS_PER_SM * num_sms
    room = fills_gpu and max_seq_len > MIN_CHUNK_TOKENS  # else no sequence could use a second chunk
    if target == batch and not room:  # one chunk per sequence, whatever the lengths
        return batch, 1, 1
    if batch == 1 and not room:  # one sequence in n chunks of its own length: the fixed path, no scan
        return n, n, 1
    return target + (batch if room else 0), 0, target


def merges(batch: int, num_slots: int) -> bool:
    """Whether a plan of ``num_slots`` work slots (:func:`plan_work`) over ``batch`` sequences can give a
    sequence two chunks, so that its partials need the split merge. ``num_slots == batch``: every sequence
    (an empty one too) takes exactly one slot, its CTA writes the output row and LSE, and the merge kernel
    would find nothing to do (its launch alone costs ~1 us, bench/NOTES.md §30, §48)."""
    return num_slots > batch


def first_chunk(total_tokens: int, target_chunks: int, longest: int, min_chunk: int = MIN_CHUNK_TOKENS,
                long_chunk: int = 0, short_tokens: int = 0) -> int:
    """The CUDA kernel's first chunk size for a batch of ``total_tokens`` tokens in length-aware mode
    (``find_work``): ``ceil(total_tokens / target_chunks)``, at most :data:`MAX_SPLIT_TOKENS`, at least
    ``min_chunk`` (:func:`plan_min_chunk`), rounded up to a multiple of :data:`CHUNK_ALIGN_TOKENS`, and at least
    ``min(ceil(longest / MAX_CHUNKS_PER_SEQUENCE)`` rounded up to that multiple, :data:`MAX_SPLIT_TOKENS`)
    (``longest``: the batch's longest sequence, tokens; ``longest_chunk_floor``), so that no sequence takes more
    than :data:`MAX_CHUNKS_PER_SEQUENCE` chunks below ``MAX_CHUNKS_PER_SEQUENCE * MAX_SPLIT_TOKENS`` tokens, or
    where the plan has a ``long_chunk`` (:func:`plan_long_chunk`, 0: none) at least the smaller of that and
    ``long_chunk`` (a sequence then takes more than 32 chunks only of at least ``long_chunk`` tokens); in
    tokens. ``target_chunks`` >= 1 (from :func:`plan_work`). Where ``total_tokens <= short_tokens`` (the plan's
    :func:`plan_short_tokens`; 0: never) and ``longest > min_chunk``, the least is :data:`SHORT_CHUNK_TOKENS` instead
    of ``min_chunk``: a batch of sequences of at most ``min_chunk`` tokens keeps one chunk a sequence (bench/NOTES.md
    §118)."""
    align = CHUNK_ALIGN_TOKENS
    chunk = min(-(-total_tokens // target_chunks), MAX_SPLIT_TOKENS)
    least = SHORT_CHUNK_TOKENS if total_tokens <= short_tokens and longest > min_chunk else min_chunk
    chunk = -(-max(chunk, least) // align) * align
    per = -(-max(longest, 0) // MAX_CHUNKS_PER_SEQUENCE)  # ceil(longest / 32)
    floor = min(-(-per // align) * align, MAX_SPLIT_TOKENS)
    return max(chunk, min(floor, long_chunk) if long_chunk else floor)


WAVE_FIT_MAX_GROWTH = (17, 10)  # a FOSCAR_WAVE_FIT=1 build takes chunks at most 17/10 times as long (wave_fit_chunk)


def wave_fit_may_take(num_chunks: int, chunk: int, total_tokens: int, batch: int, wave_slots: int) -> bool:
    """``find_work``'s ``wave_fit_may_take`` (a ``FOSCAR_WAVE_FIT=1`` build): whether ``num_chunks`` length-aware
    chunks of ``chunk`` tokens over ``batch`` sequences of ``total_tokens`` tokens are more than ``wave_slots`` (slots a
    KV head at one CTA an SM; 0: no wave fit) and at most twice as many, over at most ``wave_slots`` sequences, and the
    least chunk that could fit ``wave_slots`` (``ceil(total_tokens / wave_slots)`` rounded up to 256) is at most 1.7
    times ``chunk`` (:data:`WAVE_FIT_MAX_GROWTH`). Where true the kernel's one-pass path leaves the batch to the
    general path, which grows the chunk (:func:`wave_fit_chunk`)."""
    if wave_slots <= 0 or batch > wave_slots or not wave_slots < num_chunks <= 2 * wave_slots:
        return False
    align = CHUNK_ALIGN_TOKENS
    num, den = WAVE_FIT_MAX_GROWTH
    return -(-(-(-total_tokens // wave_slots)) // align) * align * den <= chunk * num


def grow_to_fit(chunk: int, slots: int, chunks_total) -> int:
    """``find_work``'s growth step, repeated: ``chunk`` (tokens) grown to ``chunk * n // slots + 256`` rounded down to
    a multiple of 256, at most 2^30, while its ``n = chunks_total(chunk)`` chunks are more than ``slots``. The
    length-aware schedule's fit to the grid's slots (:func:`schedule`) and the wave fit's to one CTA an SM
    (:func:`wave_fit_chunk`)."""
    align = CHUNK_ALIGN_TOKENS
    while (n := chunks_total(chunk)) > slots and chunk < (1 << 30):
        chunk = min((chunk * n // slots + align) // align * align, 1 << 30)
    return chunk


def wave_fit_chunk(lengths: list[int], chunk: int, wave_slots: int, chunks_total) -> int:
    """The length-aware chunk of a ``FOSCAR_WAVE_FIT=1`` build (``find_work``'s wave fit), in tokens: ``chunk``
    (the default build's, whose ``chunks_total(chunk)`` chunks fit the grid's slots), or, where those chunks are more
    than ``wave_slots`` (slots a KV head at one CTA an SM) and at most ``2 * wave_slots`` over at most ``wave_slots``
    sequences, the chunk grown by the kernel's growth step until at most ``wave_slots`` chunks hold the batch, if that
    is at most 1.7 times ``chunk`` (:data:`WAVE_FIT_MAX_GROWTH`), where the least such chunk passes that bound first
    (:func:`wave_fit_may_take`; where it does not, no grown chunk does). ``chunks_total(c)``: the chunks of the batch
    at ``c`` tokens (:func:`schedule`'s count). On an H200 this was 4.5% faster at one point and 1.38x slower at
    another, so the default build does not do it (bench/NOTES.md §121)."""
    if not wave_fit_may_take(chunks_total(chunk), chunk, sum(lengths), len(lengths), wave_slots):
        return chunk
    num, den = WAVE_FIT_MAX_GROWTH
    wide = grow_to_fit(chunk, wave_slots, chunks_total)
    return wide if wide * den <= chunk * num else chunk


def schedule(lengths: list[int], num_slots: int, fixed_splits: int, target_chunks: int,
             min_chunk: int = MIN_CHUNK_TOKENS, long_chunk: int = 0,
             short_tokens: int = 0, keep_short: bool = False, wave_slots: int = 0) -> list[tuple[int, int, int]]:
    """The CUDA kernel's split-KV schedule, computed on the host (a mirror of ``find_work`` in
    ``csrc/folded_decode_sm90.cuh``, for tests and reports; the kernel never calls it).

    Args:
        lengths: every sequence's length, already clamped to the cache.
        num_slots, fixed_splits, target_chunks: from :func:`plan_work`.
        min_chunk: the plan's least chunk, tokens (:func:`plan_min_chunk`).
        long_chunk: the plan's long chunk, tokens (:func:`plan_long_chunk`; 0: none): a fixed plan's floor past
            :data:`MAX_CHUNKS_PER_SEQUENCE` chunks, and the length-aware path's (:func:`first_chunk`).
        short_tokens: the plan's short-batch bound, tokens (:func:`plan_short_tokens`; 0: never): the length-aware
            path's least chunk is 256 where the batch's tokens are at most this and its longest sequence is past
            ``min_chunk`` (:func:`first_chunk`).
        keep_short: the schedule of a ``FOSCAR_KEEP_SHORT=1`` A/B build (``decode_cuda.KEEP_SHORT_BUILT``): a
            length-aware plan gives a sequence of at most ``min_chunk`` tokens one chunk, where the default gives
            every sequence ``ceil(len / C)`` (``find_work``'s ``aware_chunks``; the two differ only where the
            short-batch bound cuts in chunks of 256: bench/NOTES.md §119).
        wave_slots: the schedule of a ``FOSCAR_WAVE_FIT=1`` A/B build (``decode_cuda.WAVE_FIT_BUILT``), whose
            kernel sets it to ``num_sms // num_kv_heads`` (0: none, the default build): a length-aware plan whose
            chunks make more than ``wave_slots`` but at most ``2 * wave_slots`` chunks over a batch of at most
            ``wave_slots`` sequences takes chunks grown until at most ``wave_slots`` hold the batch, where those are at
            most 1.7 times as long (:func:`wave_fit_chunk`; bench/NOTES.md §121).

    Returns:
        ``(sequence, start, end)`` token ranges in slot order, one per CTA that has work (a
        length-0 sequence has one empty chunk).
    """
    align = CHUNK_ALIGN_TOKENS
    out = []
    if fixed_splits > 0:
        for b, n in enumerate(lengths):
            per = -(-n // fixed_splits)
            if long_chunk and fixed_splits > MAX_CHUNKS_PER_SEQUENCE:
                per = max(per, min(long_chunk, -(-n // MAX_CHUNKS_PER_SEQUENCE)))
            chunk = max(align, -(-per // align) * align)
            count = -(-n // chunk) if n > 0 else 1
            out += [(b, i * chunk, min((i + 1) * chunk, n)) for i in range(count)]
        return out
    chunk = first_chunk(sum(lengths), target_chunks, max(lengths, default=0), min_chunk, long_chunk, short_tokens)

    one_chunk = min_chunk if keep_short else 0  # find_work's aware_chunks: a sequence of at most this is one chunk

    def count_of(n, c):
        return -(-n // c) if n > one_chunk else 1

    def chunks_total(c):
        return sum(count_of(n, c) for n in lengths)

    chunk = grow_to_fit(chunk, num_slots, chunks_total)
    if wave_slots:
        chunk = wave_fit_chunk(lengths, chunk, wave_slots, chunks_total)
    for b, n in enumerate(lengths):
        count = count_of(n, chunk)
        out += [(b, i * chunk, (i + 1) * chunk if i + 1 < count else n) for i in range(count)]
    return out
