"""ncu driver: one INT2/INT4 G=128 decode at BATCH x CONTEXT with a fixed split count (or auto), run 6 times."""
import sys
import torch
from bench.ablate import Setting, _prepared
from bench.workload import Point, build_workload, max_rel_err
bits, batch, context, s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = None if s == "auto" else int(s)
dev = torch.device("cuda")
w = build_workload(Point(batch, context, bits, 128, 32, 8, 128, 16), dev, 0, 1 << 20)
prep = _prepared(w, Setting("split_kv", str(s or "auto"), num_splits=s), "cuda")
for _ in range(6):
    prep.fn()
torch.cuda.synchronize()
print("err", max_rel_err(prep.output(), w.reference, w.rows))
