"""Session 38 probe (issue 12): does where the six cache tensors lie in memory change INT2's decode time?

The stream probe (stream_probe.py) streamed six regions (INT2's codes and four scale arrays) much slower than three
at 512 CTAs. FOSCAR's cache is six separate allocations of equal-sized streams. Here the same cache (bench.ab's point,
INT2 G=128, contiguous) is timed as the bench times it (CUDA-graph replays over 3 rotating copies) with its tensors
  sep:  each copy's six tensors separate allocations (bench.backends.clone_cache, as the bench's rotation makes them)
  pk0:  one buffer a copy, each tensor starting at a 2 MiB boundary after the previous one
  pkS:  one buffer a copy, tensor r at a 2 MiB boundary plus r x (256 KiB + 4 KiB): other address bits a tensor apart
Rounds sep pkS pkS sep sep pkS pkS sep per point (call 4; call 3 ran sep pk0 pkS pkS pk0 sep), each timed twice. Outputs compared bit for bit (the same data)."""
import dataclasses, hashlib, sys
import torch
import foscar
from bench.ab import NUM_QO_HEADS, build_point, parse_point
from bench.backends import clone_cache
from bench.timing import time_graph

NAMES = ("k_codes", "v_codes", "k_scale", "k_offset", "v_scale", "v_offset")
MB2 = 2 << 20


def packed(cache, shift):
    ts = [getattr(cache, n) for n in NAMES]
    offs, off = [], 0
    for r, t in enumerate(ts):
        off = (off + MB2 - 1) // MB2 * MB2 + r * shift
        offs.append(off)
        off += t.numel() * t.element_size()
    buf = torch.empty(off, dtype=torch.uint8, device=ts[0].device)
    new = {}
    for n, t, o in zip(NAMES, ts, offs):
        v = buf[o:o + t.numel() * t.element_size()].view(t.dtype).view(t.shape)
        v.copy_(t)
        new[n] = v
    return dataclasses.replace(cache, **new)


import subprocess
ORDER = ("sep", "pkS", "pkS", "sep", "sep", "pkS", "pkS", "sep")


def smi():
    r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True)
    return r.stdout.strip().replace(" ", "")


points = sys.argv[1:] or ["2x8x32768", "2x32x8192", "2x8x131072", "2x64x32768"]
dev = torch.device("cuda")
for text in points:
    pp = parse_point(text)
    w, cache, nbytes = build_point(pp, dev)
    q = w.q
    arr = {"sep": lambda c: clone_cache(c), "pk0": lambda c: packed(c, 0), "pkS": lambda c: packed(c, (256 + 4) << 10)}
    res = {}
    shas = set()
    for name in ORDER:
        copies = [arr[name](cache) for _ in range(3)]
        plans = [foscar.plan_decode(c, NUM_QO_HEADS, backend="cuda") for c in copies]
        fns = [(lambda p=p, c=c: p.run(q, c)) for p, c in zip(plans, copies)]
        for f in fns:
            f()
        torch.cuda.synchronize()
        shas.add(hashlib.sha1(plans[0].out.float().cpu().numpy().tobytes()).hexdigest()[:12])
        t = time_graph(fns).median_us
        t2 = time_graph(fns).median_us  # the same copies again: drift within a round, not placement
        res.setdefault(name, []).append(t)
        print(f"  {text} {name} {t:.2f} again {t2:.2f} smi {smi()} addr {[hex(c.k_scale.data_ptr()) for c in copies]}", flush=True)
        del copies, plans, fns
        torch.cuda.empty_cache()
    base = sum(res["sep"]) / len(res["sep"])
    line = "  ".join(f"{k} {' '.join(f'{v:.2f}' for v in vs)} ({sum(vs) / len(vs) / base:.3f})" for k, vs in res.items())
    print(f"{text:14s} {nbytes / 1e6:8.1f} MB  {line}  outputs {'same' if len(shas) == 1 else 'DIFFER'}", flush=True)
    del w, cache
    torch.cuda.empty_cache()
