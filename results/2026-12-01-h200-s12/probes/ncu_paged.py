"""ncu probe: one INT2/INT4 G=128 paged (page 16, shuffled) decode at BATCH x CONTEXT, length-aware.
    python .ab/ncu_paged.py BITS BATCH CONTEXT"""
import sys
import torch
import foscar
from bench.workload import Point, build_workload

bits, batch, context = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
dev = torch.device("cuda")
w = build_workload(Point(batch, context, bits, 128, 32, 8, 128, 16), dev, seed=0, full_check_max_tokens=0)
gen = torch.Generator(device="cpu").manual_seed(0)
paged = foscar.paginate(w.cache, page_size=16, shuffle=True, generator=gen)
plan = foscar.plan_decode(paged, 32, backend="cuda")
for _ in range(4):
    plan.run(w.q, paged)
torch.cuda.synchronize()
print("paged", bits, batch, context, "slots", plan._o_part.shape[0])
