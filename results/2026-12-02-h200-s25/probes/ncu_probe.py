"""ncu probe: one INT2/INT4 G=128 decode kernel at a small point, length-aware (auto) or fixed splits.
    python .ab/ncu_probe.py MODE BITS BATCH CONTEXT   (MODE auto | fixedN)"""
import sys
import torch
import foscar
from bench.workload import Point, build_workload

mode, bits, batch, context = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
dev = torch.device("cuda")
w = build_workload(Point(batch, context, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=0)
ns = None if mode == "auto" else int(mode[5:])
plan = foscar.plan_decode(w.cache, 32, backend="cuda", num_splits=ns)
for _ in range(4):
    plan.run(w.q, w.cache)
torch.cuda.synchronize()
print(mode, bits, batch, context, "slots", plan._o_part.shape[0], "cta_warps", getattr(plan, "cta_warps", 4))
