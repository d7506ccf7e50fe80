"""Eager INT2 decodes of 16-token sequences (batch from argv), for ncu's source-level stall sampling (session 33)."""
import sys

import torch

import foscar
from tests.test_decode_triton import _case

batch = int(sys.argv[1])
q, cache = _case(torch.device("cuda"), batch=batch, num_qo_heads=32, num_kv_heads=8, head_dim=128, seq_lens=[16] * batch,
                 bits=2, group_size=128)
plan = foscar.plan_decode(cache, 32, backend="cuda")
for _ in range(8):
    plan.run(q, cache)
torch.cuda.synchronize()
print("plan", plan.num_slots if hasattr(plan, "num_slots") else "", plan.max_ctas_per_sm, plan.pdl)
