import numpy as np, torch, math
import foscar
D, T = 128, 5001
def run(seed, half, intsum):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(1, 1, T, D, generator=g) * 1.5 + 0.3
    v = torch.randn(1, 1, T, D, generator=g)
    cache = foscar.quantize_kv(k, v, 2, 128)
    kd, _ = foscar.dequantize_kv(cache, torch.float64, batch_index=0)
    kd = kd[0].numpy()
    from foscar.quant import unpack_codes
    codes = unpack_codes(cache.k_codes[0, 0], 2).double().numpy()
    s = cache.k_scale[0, 0, :, 0].double().numpy(); z = cache.k_offset[0, 0, :, 0].double().numpy()
    errs = []
    for h in range(8):
        q = torch.randn(D, generator=g).to(torch.bfloat16).double().numpy()
        sm = 1 / math.sqrt(D)
        d = 1.5 * np.abs(q).max() / 32639
        odd = np.zeros(D, bool); odd[32:64] = True; odd[96:] = True
        qi = np.rint(q / d)
        if half:
            qi = np.where(odd, 4 * np.rint(q / (4 * d)), qi)
        qs = qi.sum() if intsum else q.sum() / d
        s_ref = kd @ q * sm
        s_got = (s * (codes @ qi) + z * qs) * d * sm
        lse_ref = np.log(np.exp(s_ref - s_ref.max()).sum()) + s_ref.max()
        lse_got = np.log(np.exp(s_got - s_got.max()).sum()) + s_got.max()
        errs.append(abs(lse_got - lse_ref))
    return max(errs), np.mean(errs)
for half in (0, 1):
    for intsum in (0, 1):
        r = [run(sd, half, intsum) for sd in range(6)]
        print("half", half, "intsum", intsum, "max %.2e mean %.2e" % (max(x[0] for x in r), np.mean([x[1] for x in r])))
