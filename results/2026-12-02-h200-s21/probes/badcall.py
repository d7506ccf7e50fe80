import torch, foscar
from foscar.kernels import decode_cuda
from tests.test_decode_triton import _case
q, cache = _case(torch.device("cuda"), batch=1, num_qo_heads=8, num_kv_heads=2, head_dim=128, seq_lens=[1000],
                 bits=2, group_size=128)
plan = foscar.plan_decode(cache, 8, backend="cuda", num_splits=4)
try:  # fixed_window without fixed chunks (fixed_splits 0): the binding's own check refuses it (integers in the message)
    decode_cuda.launch(q, cache, 0.1, plan._o_part, plan._lse_part, plan.out, plan.lse, plan._counters, 0,
                       plan._o_part.shape[0], "bf16", plan._seq_chunks, True)
except RuntimeError as e:
    print("raised:", e)
try:  # a query on the CPU: the binding's first check (a message of text only)
    decode_cuda.launch(q.cpu(), cache, 0.1, plan._o_part, plan._lse_part, plan.out, plan.lse, plan._counters, 4,
                       plan._o_part.shape[0], "bf16", plan._seq_chunks, False)
except RuntimeError as e:
    print("raised:", e)
try:  # a query of 2 dims: refused before torch's own stride(2) check could format its message in the module
    decode_cuda.launch(q[0], cache, 0.1, plan._o_part, plan._lse_part, plan.out, plan.lse, plan._counters, 4,
                       plan._o_part.shape[0], "bf16", plan._seq_chunks, False)
except RuntimeError as e:
    print("raised:", e)
