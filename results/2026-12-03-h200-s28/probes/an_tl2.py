"""Session 28: the timeline of one point by the CTAs on an SM (end offsets, loop times), python an_tl2.py DIR BxC CALLS"""
import numpy as np, sys
d, name = sys.argv[1], sys.argv[2]
r = np.load(f"{d}/tl-tl-{name}.npy").astype(np.int64)
ncalls = int(sys.argv[3]) if len(sys.argv) > 3 else 1
n = len(r) // ncalls
for ci in range(ncalls):
    q = r[ci * n:(ci + 1) * n]
    meta = q[:, 8]; sm = meta & 0xFF; blk = (meta >> 8) & 0xFFFF; it = (meta >> 40) & 0xFFFF
    w = it > 0
    t0 = q[:, 0].min()
    ghz = 1.98
    st = (q[:, 0] - t0) / 1e3; en = (q[:, 1] - t0) / 1e3
    loop = (q[:, 6] - q[:, 4]) / ghz / 1e3
    pro = (q[:, 4] - q[:, 2]) / ghz / 1e3
    print(f"call {ci}: {n} CTAs, working {w.sum()}; globaltimer end offsets: median {np.median(en[w]):.2f} p90 {np.percentile(en[w],90):.2f} max {en[w].max():.2f}")
    cnt = np.bincount(sm[w], minlength=132)
    for k in sorted(set(cnt)):
        sel = w & (cnt[sm] == k)
        if sel.any():
            print(f"  SMs with {k} CTAs: {int((cnt==k).sum())} SMs; loop us (at 1.98 GHz) median {np.median(loop[sel]):.2f} [{loop[sel].min():.2f}..{loop[sel].max():.2f}], end {np.median(en[sel]):.2f} [{en[sel].min():.2f}..{en[sel].max():.2f}]; prologue {np.median(pro[sel]):.2f}")
    # per SM finish time of 2-CTA SMs
    fin = np.zeros(132); 
    for s in range(132):
        m = w & (sm == s)
        if m.any(): fin[s] = en[m].max()
    order = np.argsort(fin)
    print("  SM finish times (sorted, every 11th):", np.round(fin[order][::11], 1))
    # by GPC-ish groups of sm id
    print("  mean finish by smid//18:", [round(float(fin[(np.arange(132)//18)==g][fin[(np.arange(132)//18)==g]>0].mean()),1) for g in range(8)])
    print("  blocks finishing last:", [(int(blk[i]), int(sm[i]), round(float(en[i]),1)) for i in np.argsort(-en)[:6]])
