"""Where does the per-value kernel's LSE deviation come from? (bench/NOTES.md §6, known issue)

GPU diagnostic, prints a table:
  1. per-token scores: a batch of length-1 sequences, whose LSE is exactly the one score;
     kernel minus fp64 reference, mean / std / max over every (sequence, head);
  2. longer sequences: LSE minus the fp64 reference per method, and minus an fp64
     emulation of per-value's operand rounding (the dequantized K rounded to BF16).

    python scripts/diag_lse.py
"""

from __future__ import annotations

import math

import torch

import foscar


def _cache(batch, seq_len, num_kv_heads=8, head_dim=128, bits=2, group_size=128, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    k = torch.randn(batch, num_kv_heads, seq_len, head_dim, generator=g) * 1.5 + 0.3
    v = torch.randn(batch, num_kv_heads, seq_len, head_dim, generator=g)
    lens = torch.full((batch,), seq_len, dtype=torch.int32)
    return foscar.quantize_kv(k.cuda(), v.cuda(), bits, group_size, seq_lens=lens.cuda())


def _lse_emulated(q, cache):
    """fp64 LSE with K = bf16(dequantized K), the operand per-value's mma reads."""
    k, _ = foscar.dequantize_kv(cache, torch.float64)  # [batch, kv_heads, seq, head_dim]
    k = k.to(torch.bfloat16).double()
    qq = q.double().view(q.shape[0], k.shape[1], -1, q.shape[-1])
    s = torch.einsum("bhgd,bhtd->bhgt", qq, k) / math.sqrt(q.shape[-1])
    return torch.logsumexp(s, dim=-1).reshape(q.shape[0], -1)


def main() -> None:
    torch.manual_seed(0)
    print("| case | method | mean(d) | std(d) | max abs d | vs emulation max abs |")
    print("|---|---|---|---|---|---|")
    for batch, seq_len in ((1024, 1), (2, 4096), (2, 20001), (2, 32768)):
        cache = _cache(batch, seq_len)
        q = torch.randn(batch, 32, 128, device="cuda").to(torch.bfloat16)
        _, ref = foscar.reference_decode(q, cache, return_lse=True)
        emu = _lse_emulated(q, cache)
        for method in ("folded", "per-value"):
            _, lse = foscar.decode(q, cache, backend="cuda", method=method, return_lse=True)
            d = lse.double() - ref
            e = (lse.double() - emu).abs().max().item()
            print(f"| b{batch} x {seq_len} | {method} | {d.mean().item():+.2e} | {d.std().item():.2e} | "
                  f"{d.abs().max().item():.2e} | {e:.2e} |")
        print(f"| b{batch} x {seq_len} | emulation | {(emu - ref).mean().item():+.2e} | "
              f"{(emu - ref).std().item():.2e} | {(emu - ref).abs().max().item():.2e} | - |")


if __name__ == "__main__":
    main()
