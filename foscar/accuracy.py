"""Accuracy metrics: an attention output against a reference, and what quantized K
does to the attention probabilities.

Output metrics (:func:`output_errors`), per batch row ``b`` over the flattened
``[num_qo_heads * head_dim]`` vector of that row, in fp64:

* ``rel_l2[b]  = ||out_b - ref_b||_2 / ||ref_b||_2`` (0 when both are zero, ``inf``
  when only the reference is zero);
* ``max_abs[b] = max |out_b - ref_b|``;
* ``cosine[b]  = <out_b, ref_b> / (||out_b|| ||ref_b||)`` (1 when both are zero, 0
  when exactly one is).

Attention-probability metric (:func:`attention_kl`): for every sequence ``b`` and
query head ``h``, ``p = softmax(q_bh . k_b^T * sm_scale)`` over the ``seq_lens[b]``
valid tokens, computed in fp64 from the query and the *exact* K, and ``p_hat`` the
same from the query the kernel is given and the K it effectively reads (the
dequantized cache, rotated if the cache is, with exact tokens where a mixed layout
keeps them). The row's value is the mean over query heads of
``KL(p || p_hat) = sum_t p_t (log p_t - log p_hat_t)`` in nats. It measures the
cache, not a kernel: every kernel over the same cache gets the same value, and V
does not enter it.

:func:`aggregate` turns the per-row values into scalars (worst row and mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from foscar._validate import check_tensor
from foscar.reference import gqa_ratio

INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)  # attention_kl's seq_lens


@dataclass
class OutputErrors:
    """Per-row errors of an output against a reference, each ``[batch]`` float64 (CPU)."""

    rel_l2: torch.Tensor
    max_abs: torch.Tensor
    cosine: torch.Tensor

def output_errors(out: torch.Tensor, ref: torch.Tensor) -> OutputErrors:
    """Relative L2 error, max abs error and cosine similarity, per batch row.

    Args:
        out: ``[batch, ...]`` any float dtype (e.g. ``[batch, num_qo_heads, head_dim]``
            bfloat16 from a kernel).
        ref: same shape, any float dtype (e.g. float64 from a reference).

    Returns:
        :class:`OutputErrors` with ``[batch]`` float64 CPU tensors; definitions in
        the module docstring (zero rows handled without NaN).

    Raises:
        TypeError: a non-tensor argument.
        ValueError: shapes differ, fewer than one dimension, or a NaN/Inf in ``ref``.
            (NaN/Inf in ``out`` are reported, not raised: they give ``nan``/``inf``
            errors so that a broken kernel shows up in the table.)
    """
    check_tensor("ref", ref)
    check_tensor("out", out, shape=tuple(ref.shape))
    if ref.dim() < 1:
        raise ValueError("ref: expected at least one dimension [batch, ...], got a scalar")
    row = (ref.shape[0], math.prod(ref.shape[1:]))  # not -1: batch 0 has no size to infer
    r = ref.detach().to(torch.float64).reshape(row)
    o = out.detach().to(device=ref.device, dtype=torch.float64).reshape(row)
    if not bool(torch.isfinite(r).all()):
        raise ValueError("ref: expected finite values, got NaN or Inf")
    d = o - r
    dn, rn, on = d.norm(dim=1), r.norm(dim=1), o.norm(dim=1)
    zero_ref = rn == 0
    rel = torch.where(zero_ref, torch.where(dn == 0, 0.0, math.inf), dn / torch.where(zero_ref, 1.0, rn))
    max_abs = d.abs().amax(dim=1) if d.shape[1] else torch.zeros_like(dn)
    both_zero = zero_ref & (on == 0)
    denom = rn * on
    cos = torch.where(denom == 0, 0.0, (o * r).sum(dim=1) / torch.where(denom == 0, 1.0, denom))
    cos = torch.where(both_zero, 1.0, cos)
    return OutputErrors(rel_l2=rel.cpu(), max_abs=max_abs.cpu(), cosine=cos.cpu())


def attention_log_probs(
    q: torch.Tensor,
    k: torch.Tensor,
    length: int,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """Log attention probabilities of one sequence, in fp64.

    Args:
        q: ``[num_qo_heads, head_dim]`` any float dtype.
        k: ``[num_kv_heads, >= length, head_dim]`` any float dtype (HND, one sequence).
        length: valid tokens (the first ``length`` of ``k``); at least 1.
        sm_scale: default ``1 / sqrt(head_dim)``.

    Returns:
        ``[num_qo_heads, length]`` float64: ``log_softmax(q . k^T * sm_scale)``;
        query head ``h`` reads KV head ``h // (num_qo_heads // num_kv_heads)``.

    Raises:
        ValueError: shapes that do not fit, ``length`` out of ``[1, k.shape[1]]``,
            ``num_qo_heads`` not a multiple of ``num_kv_heads``.
    """
    check_tensor("q", q, ndim=2)
    check_tensor("k", k, shape=(None, None, q.shape[1]))
    if not 1 <= length <= k.shape[1]:
        raise ValueError(f"length: expected a value in [1, {k.shape[1]}], got {length}")
    hkv, head_dim = k.shape[0], q.shape[1]
    group = gqa_ratio(q.shape[0], hkv)
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(head_dim)
    qg = q.to(device=k.device, dtype=torch.float64).reshape(hkv, group, head_dim)
    s = torch.einsum("hgd,hld->hgl", qg, k[:, :length].to(torch.float64)) * scale
    return torch.log_softmax(s, dim=-1).reshape(q.shape[0], length)


def attention_kl(
    q_ref: torch.Tensor,
    k_ref: torch.Tensor,
    q_test: torch.Tensor,
    k_test: torch.Tensor,
    seq_lens: torch.Tensor,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """``KL(p || p_hat)`` of the attention probabilities, mean over query heads, per row.

    ``p`` comes from ``(q_ref, k_ref)`` (the exact query and K), ``p_hat`` from
    ``(q_test, k_test)`` (the query the kernel reads and the K it effectively reads,
    e.g. a rotated query and the dequantized rotated K). Both in fp64.

    Args:
        q_ref, q_test: ``[batch, num_qo_heads, head_dim]`` any float dtype.
        k_ref, k_test: ``[batch, num_kv_heads, max_seq_len, head_dim]`` any float dtype
            (padding positions beyond ``seq_lens`` are ignored).
        seq_lens: ``[batch]`` integer valid lengths; a length-0 row gives 0.
        sm_scale: default ``1 / sqrt(head_dim)`` (the same for both sides).

    Returns:
        ``[batch]`` float64 CPU tensor, in nats (>= 0 up to rounding).

    Raises:
        ValueError: shapes that do not fit each other; ``seq_lens`` not of an integer dtype, or a length
            outside ``[0, max_seq_len]``.
    """
    check_tensor("q_ref", q_ref, ndim=3)
    check_tensor("q_test", q_test, shape=tuple(q_ref.shape))
    batch = q_ref.shape[0]
    check_tensor("k_ref", k_ref, shape=(batch, None, None, q_ref.shape[2]))
    check_tensor("k_test", k_test, shape=tuple(k_ref.shape))
    check_tensor("seq_lens", seq_lens, shape=(batch,), dtypes=INT_DTYPES)
    out = torch.zeros(batch, dtype=torch.float64)
    for b, length in enumerate(int(x) for x in seq_lens.tolist()):
        if not 0 <= length <= k_ref.shape[2]:
            raise ValueError(f"seq_lens[{b}]: expected a length in [0, max_seq_len={k_ref.shape[2]}], got {length}")
        if length == 0:
            continue
        lp = attention_log_probs(q_ref[b], k_ref[b], length, sm_scale)
        lq = attention_log_probs(q_test[b], k_test[b], length, sm_scale)
        kl = (lp.exp() * (lp - lq)).sum(dim=-1)  # [num_qo_heads]
        out[b] = float(kl.mean())
    return out


def aggregate(values: torch.Tensor, worst: str = "max") -> tuple[float, float]:
    """``(worst, mean)`` of per-row values; ``worst`` is ``"max"`` (errors) or ``"min"`` (cosine).

    Args:
        values: ``[batch]`` float tensor (NaN propagates: a NaN row makes both NaN).
        worst: ``"max"`` or ``"min"``.

    Returns:
        Two Python floats; ``(nan, nan)`` for an empty tensor.

    Raises:
        ValueError: ``worst`` not ``"max"``/``"min"``.
    """
    if worst not in ("max", "min"):
        raise ValueError(f"worst: expected one of ['max', 'min'], got {worst!r}")
    v = values.to(torch.float64).flatten()
    if v.numel() == 0:
        return math.nan, math.nan
    if bool(torch.isnan(v).any()):
        return math.nan, math.nan
    w = v.max() if worst == "max" else v.min()
    return float(w), float(v.mean())
