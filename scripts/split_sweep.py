"""Time the CUDA kernel at every split count, per point: data for the split-KV heuristic.

GPU only. For each (bits, batch, context) of the h200 grid (Qwen3-8B shape by default, G=128) and each
split count s (1 .. the most that keeps two 256-token CTA iterations per split, and at most
~8 waves of 3 CTAs per SM), plus the heuristic's own choice ("auto"), the output is checked
against the fp64 reference rows of the bench and timed the way `foscar bench` times
(CUDA-graph replay over rotating copies). Writes OUT/split_sweep.csv after every point and
prints, per point, the best s against auto.

    python scripts/split_sweep.py OUT_DIR [--bits 2 --bits 4] [--batch 64 ...] [--context 8192 ...]
        [--splits 16 --splits 32 ...] [--min-tokens 256] [--num-qo-heads 8 --num-kv-heads 1]

`--splits` replaces the candidate list; `--min-tokens` (default 512, the length-aware schedule's smallest
chunk) sets the shortest split the sweep tries: 256 tries one-iteration splits (the fixed-split path of the
kernel takes them; the length-aware one never makes them), bench/NOTES.md §40. `--num-qo-heads` / `--num-kv-heads`
(default 32 / 8) sweep another attention shape, e.g. 8 / 1 for Llama-3.1-70B at tensor parallel 8 (§101).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd
import torch

from bench.ablate import Setting, _prepared  # the ablation's prepared decode call, any split count
from bench.sweep import rotation  # the bench's rotating copies (working set past the L2)
from bench.timing import time_fn
from bench.workload import Point, build_workload, max_rel_err

CANDIDATES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
HD, G = 128, 128


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--bits", type=int, action="append", help="bit widths (default 2 and 4)")
    ap.add_argument("--batch", type=int, action="append", help="batch sizes (default the grid's 1, 8, 32, 64)")
    ap.add_argument("--context", type=int, action="append", help="contexts (default 8192, 32768, 131072)")
    ap.add_argument("--splits", type=int, action="append", help=f"split counts to try (default {CANDIDATES})")
    ap.add_argument("--min-tokens", type=int, default=512, choices=(256, 512),
                    help="shortest split tried, in tokens (256: one CTA iteration; default 512)")
    ap.add_argument("--num-qo-heads", type=int, default=32, help="query heads (default 32, Qwen3-8B's)")
    ap.add_argument("--num-kv-heads", type=int, default=8, help="KV heads (default 8, Qwen3-8B's)")
    args = ap.parse_args()
    QO, KV = args.num_qo_heads, args.num_kv_heads
    if KV < 1 or QO % KV:
        ap.error(f"--num-qo-heads ({QO}) must be a multiple of --num-kv-heads ({KV}), both at least 1")
    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    slots = 3 * torch.cuda.get_device_properties(dev).multi_processor_count
    rows = []
    for bits in args.bits or [2, 4]:
        for batch in args.batch or (1, 8, 32, 64):
            for context in args.context or (8192, 32768, 131072):
                w = build_workload(Point(batch, context, bits, G, QO, KV, HD, 16), dev, 0, 1 << 20)
                most = max(1, math.ceil(context / args.min_tokens))
                cands = [s for s in (args.splits or CANDIDATES) if s <= most and batch * KV * s <= 8 * slots] + [None]
                for s in cands:
                    row = dict(bits=bits, batch=batch, context=context, num_qo_heads=QO, num_kv_heads=KV,
                               num_splits=s if s else "auto")
                    try:
                        prep = _prepared(w, Setting("split_kv", str(s or "auto"), num_splits=s), "cuda")
                        prep.fn()
                        torch.cuda.synchronize()
                        row["max_rel_err"] = err = max_rel_err(prep.output(), w.reference, w.rows)
                        if not err <= 1e-2:
                            row["status"] = "failed"
                        else:
                            t = time_fn(rotation(prep, dev), "cuda", warmup_ms=25, rep_ms=100, cpu_reps=1)
                            row.update(median_us=t.median_us, p20_us=t.p20_us, p80_us=t.p80_us, status="ok")
                    except Exception as e:  # recorded, the sweep goes on
                        row.update(status="error", error=repr(e)[:200])
                    rows.append(row)
                del w
                torch.cuda.empty_cache()
                pd.DataFrame(rows).to_csv(args.out / "split_sweep.csv", index=False)
                d = pd.DataFrame([r for r in rows if r["bits"] == bits and r["batch"] == batch
                                  and r["context"] == context and r.get("status") == "ok"])
                if d.empty or (d.num_splits == "auto").all():
                    print(f"int{bits} b{batch} x {context}: no fixed split count measured", flush=True)
                    continue
                fixed = d[d.num_splits != "auto"]
                best = fixed.loc[fixed.median_us.idxmin()]

                def us(sel):
                    return float(sel.median_us.iloc[0]) if len(sel) else float("nan")

                print(f"int{bits} b{batch} x {context}: best s={best.num_splits} {best.median_us:.1f} us, "
                      f"auto {us(d[d.num_splits == 'auto']):.1f} us, s=1 {us(fixed[fixed.num_splits == 1]):.1f} us",
                      flush=True)


if __name__ == "__main__":
    main()
