import torch, foscar
from tests.test_decode_cuda import fp8_score_emulation
from foscar.quant import quantize_kv
torch.manual_seed(0)
dev = "cuda"
def run(tag, cache, q):
    out, lse = foscar.decode(q, cache, operand="fp8", num_splits=1, return_lse=True, backend="cuda")
    emu, emu_lse = fp8_score_emulation(q, cache)
    ob, lb = foscar.decode(q, cache, operand="bf16", num_splits=1, return_lse=True, backend="cuda")
    ref, ref_lse = foscar.reference_decode(q, cache, return_lse=True)
    e = float((out[0].double() - emu[0]).norm() / emu[0].norm())
    eb = float((ob[0].double() - ref[0]).norm() / ref[0].norm())
    print(f"{tag:40s} fp8 vs emu {e:.3g}  lse gap {float((lse[0].double()-emu_lse[0]).abs().max()):.3g} | bf16 vs ref {eb:.3g} lse {float((lb[0].double()-ref_lse[0]).abs().max()):.3g}")
for bits in (2, 4):
    for L in (32, 33, 64, 100, 256):
        k = torch.randn(1, 1, L, 128) * 1.5 + 0.3; k[..., 3] += 20
        v = torch.randn(1, 1, L, 128)
        q = torch.randn(1, 4, 128).to(torch.bfloat16).to(dev)
        for kb in (32, 64):
            c = quantize_kv(k.to(dev), v.to(dev), bits, 128, k_layout="channel", k_block=kb)
            run(f"INT{bits} L={L} kb={kb}", c, q)
        c = quantize_kv(k.to(dev), v.to(dev), bits, 128, k_layout="channel", k_block=32)
        c.k_scale[:, :, 1::2] = c.k_scale[:, :, 0::2][:, :, :c.k_scale[:, :, 1::2].shape[2]]
        c.k_offset[:, :, 1::2] = c.k_offset[:, :, 0::2][:, :, :c.k_offset[:, :, 1::2].shape[2]]
        run(f"INT{bits} L={L} kb=32 pairs equal", c, q)
        c.k_scale.fill_(0.1); c.k_offset.fill_(0.0)
        run(f"INT{bits} L={L} kb=32 all scales 0.1", c, q)
