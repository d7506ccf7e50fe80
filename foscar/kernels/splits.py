"""Split-KV planning shared by the decode kernels (host side, no device sync)."""

from __future__ import annotations

import functools
import math

import torch


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
MAX_SPLIT_TOKENS = 32768  # ... but no split longer than this


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
    want = 1 << (per_sm.bit_length() - 1) if per_sm >= 1 else 1  # power of two <= per_sm
    want = max(want, math.ceil(max_seq_len / MAX_SPLIT_TOKENS))
    most = max(1, math.ceil(max_seq_len / (2 * block_n)))
    return split_tokens(max_seq_len, min(want, most), block_n)
