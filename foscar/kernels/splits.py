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


def choose_num_splits(batch: int, num_kv_heads: int, max_seq_len: int, block_n: int, num_sms: int) -> tuple[int, int]:
    """Split-KV heuristic: enough programs for ~4 per SM, each at least 2 tiles long.

    Uses ``max_seq_len`` (a shape, known on the host), so it needs no device sync
    and is CUDA-graph safe; shorter sequences leave their tail splits empty (LSE
    ``-inf``, weight zero in the merge).

    Returns:
        ``(num_splits, tokens_per_split)``, ``tokens_per_split`` a multiple of ``block_n``.
    """
    if max_seq_len <= 0:
        return 1, block_n
    programs = max(1, batch * num_kv_heads)
    want = max(1, math.ceil(4 * num_sms / programs))
    most = max(1, math.ceil(max_seq_len / (2 * block_n)))
    return split_tokens(max_seq_len, min(want, most), block_n)
