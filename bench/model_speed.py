"""Decode speed of a whole transformers model: transformers' BF16 cache vs FOSCAR's INT2/INT4 cache.

``scripts/eval_model_gpu.sh`` runs it on the GPU for a Qwen3-8B-shaped model with random
weights (``configs/hf/qwen3-8b.json``); ``--smoke`` runs a 2-layer model through the
Triton interpreter on CPU (times are then no performance number).

Per point (batch x context): random prompt tokens (seeded) are prefilled once into a
transformers ``DynamicCache`` (SDPA on BF16 K/V); each FOSCAR cache is built from that
cache's K/V (:meth:`foscar.hf.FoscarCache.from_dense`: the state its own prefill would
leave) and the BF16 ``DynamicCache`` itself is decoded last. For each cache:
``--warmup`` greedy decode steps (the CUDA extension compiles on the first), then
``--decode`` timed steps (``decode_tokens_per_s = batch * steps / time``), then
``--profile-steps`` more with CUDA events around every attention call and every cache
update: ``attn_share`` = (attention + cache update time) / step time in that run (the
events cost a little; the timed run has none). The weights are random: no accuracy
claim comes from this run.

Run directory: ``results.csv`` (:data:`COLUMNS`), ``meta.json`` (``kind: "model-speed"``),
``summary.json``, ``model_speed.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from bench.kinds import MODEL_SPEED

KIND = MODEL_SPEED  # meta.json "kind" (bench.kinds)
COLUMNS = [
    "batch", "context", "cache", "bits", "group_size", "kernel", "decode_steps", "step_ms", "decode_tokens_per_s",
    "speedup_vs_bf16", "attn_ms_per_step", "cache_update_ms_per_step", "attn_share", "kv_bytes", "peak_mem_gib",
    "status", "error",
]  # fmt: skip
CACHES = ("int2", "int4", "bf16")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--random-init", default="configs/hf/qwen3-8b.json", help="transformers config.json (random weights)")
    p.add_argument("--model", default=None, help="a local checkpoint directory instead of --random-init")
    p.add_argument("--num-layers", type=int, default=None, help="override num_hidden_layers (random init)")
    p.add_argument("--batch", type=int, action="append", help="batch size (repeat; default 1 and 8)")
    p.add_argument("--context", type=int, action="append", help="prompt tokens (repeat; default 8192 and 32768)")
    p.add_argument("--cache", action="append", choices=CACHES, help="caches (repeat; default all)")
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--decode", type=int, default=64, help="timed greedy decode steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--profile-steps", type=int, default=8)
    p.add_argument("--backend", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="configs/hf/tiny-qwen3.json, batch 1 x 32 tokens, 3 steps, CPU ok")
    p.add_argument("--out", type=Path, required=True)
    return p


class _Timer:
    """CUDA events (or host clocks on CPU) around calls; ``total_ms()`` after a sync."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"
        self.pairs: list[Any] = []
        self.on = False

    def wrap(self, fn):
        import torch

        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            if self.cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                out = fn(*args, **kwargs)
                b.record()
            else:
                a = time.perf_counter()
                out = fn(*args, **kwargs)
                b = time.perf_counter()
            self.pairs.append((a, b))
            return out

        return timed

    def total_ms(self) -> float:
        if self.cuda:
            return sum(a.elapsed_time(b) for a, b in self.pairs)
        return sum(b - a for a, b in self.pairs) * 1e3


def _sync(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _steps(model, cache, tok, n):
    import torch

    with torch.no_grad():
        for _ in range(n):
            tok = model(input_ids=tok, past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1, keepdim=True)
    return tok


def measure_cache(model, cache, tok, args, device, attn_timer: _Timer) -> dict[str, Any]:
    """Warm up, time ``args.decode`` steps, then profile ``args.profile_steps`` steps of ``cache``."""
    tok = _steps(model, cache, tok, args.warmup)
    _sync(device)
    t0 = time.perf_counter()
    tok = _steps(model, cache, tok, args.decode)
    _sync(device)
    secs = time.perf_counter() - t0
    upd = _Timer(device)
    cache.update = upd.wrap(cache.update)
    attn_timer.pairs, attn_timer.on, upd.on = [], True, True
    _sync(device)
    t1 = time.perf_counter()
    _steps(model, cache, tok, args.profile_steps)
    _sync(device)
    prof_ms = (time.perf_counter() - t1) * 1e3
    attn_timer.on = False
    n = max(args.profile_steps, 1)
    attn, update = attn_timer.total_ms() / n, upd.total_ms() / n
    batch = tok.shape[0]
    return {
        "decode_steps": args.decode, "step_ms": secs * 1e3 / args.decode,
        "decode_tokens_per_s": batch * args.decode / secs, "attn_ms_per_step": attn,
        "cache_update_ms_per_step": update, "attn_share": (attn + update) / (prof_ms / n),
    }  # fmt: skip


def run(args) -> Path:
    import torch

    from bench.hf_model import load_model, torch_device

    device = torch_device()
    if args.smoke:
        args.random_init, args.batch, args.context = "configs/hf/tiny-qwen3.json", args.batch or [1], args.context or [32]
        args.decode, args.warmup, args.profile_steps, args.group_size = min(args.decode, 3), 1, 1, 64
    batches, contexts = args.batch or [1, 8], args.context or [8192, 32768]
    caches = args.cache or list(CACHES)
    loaded = load_model(args.model, None if args.model else args.random_init, device, seed=args.seed,
                        num_layers=args.num_layers)  # fmt: skip
    model = loaded.model
    from transformers import AttentionInterface, DynamicCache

    import foscar.hf as fh
    from bench.eval_model import dense_nbytes
    from bench.manifest import git_state, software_versions
    from bench.results import write_json

    attn_timer = _Timer(device)
    AttentionInterface.register(fh.ATTN_IMPLEMENTATION, attn_timer.wrap(fh.foscar_attention_forward))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    layers, hq, hkv, hd = fh.attention_shape(model.config)
    meta = {
        "kind": KIND,
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(sys.argv),
        "model": loaded.source,
        "random_weights": loaded.random_weights,
        "note": "random weights: speed only, no accuracy claim" if loaded.random_weights else "",
        "shape": {"num_layers": layers, "num_qo_heads": hq, "num_kv_heads": hkv, "head_dim": hd,
                  "hidden_size": model.config.hidden_size, "vocab_size": model.config.vocab_size},  # fmt: skip
        "params": sum(p.numel() for p in model.parameters()),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (Triton interpreter)",
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "versions": {**software_versions(flashinfer=False), "transformers": __import__("transformers").__version__},
        "git": git_state(),
    }
    write_json(meta, out / "meta.json")
    rows: list[dict[str, Any]] = []
    g = torch.Generator().manual_seed(args.seed)
    vocab = model.config.vocab_size
    for batch in batches:
        for context in contexts:
            prompt = torch.randint(0, vocab, (batch, context), generator=g).to(device)
            dense = DynamicCache(config=model.config)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            try:
                with torch.no_grad():
                    tok = model(input_ids=prompt, past_key_values=dense, use_cache=True, logits_to_keep=1).logits[:, -1]
            except RuntimeError as e:  # e.g. CUDA out of memory in the prefill: record it, go on with the next point
                err = f"prefill: {type(e).__name__}: {e}".splitlines()[0][:300]
                rows.extend({**{c: None for c in COLUMNS}, "batch": batch, "context": context, "cache": name,
                             "status": "error", "error": err} for name in caches)  # fmt: skip
                print(json.dumps({"batch": batch, "context": context, "error": err}), flush=True)
                del prompt, dense
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                _write(rows, out)
                continue
            tok = tok.argmax(-1, keepdim=True)
            del prompt
            bf16_rate = None
            for name in sorted(caches, key=lambda c: c == "bf16"):  # the BF16 cache last: decoding grows it
                row = {c: None for c in COLUMNS}
                row.update(batch=batch, context=context, cache=name)
                cache = None
                try:
                    if name == "bf16":
                        cache, row["kv_bytes"] = dense, dense_nbytes(dense)
                    else:
                        bits = int(name[3:])
                        cache = fh.FoscarCache.from_dense(
                            dense, model.config, bits=bits, group_size=args.group_size, backend=args.backend,
                            max_cache_len=context + args.warmup + args.decode + args.profile_steps + 1,
                        )  # fmt: skip
                        row.update(bits=bits, group_size=args.group_size, kv_bytes=cache.nbytes())
                    row.update(measure_cache(model, cache, tok, args, device, attn_timer))
                    row["kernel"] = getattr(cache, "kernel", None) or "sdpa"
                    row["status"] = "ok"
                except (ValueError, RuntimeError) as e:  # e.g. CUDA out of memory: the other points still run
                    row.update(status="error", error=f"{type(e).__name__}: {e}".splitlines()[0][:300])
                if device.type == "cuda":
                    row["peak_mem_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
                rows.append(row)
                del cache
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                print(json.dumps({k: row[k] for k in ("batch", "context", "cache", "decode_tokens_per_s", "attn_share",
                                                      "status", "error")}), flush=True)  # fmt: skip
            bf16_rate = next((r["decode_tokens_per_s"] for r in rows[-len(caches):] if r["cache"] == "bf16"), None)
            for r in rows[-len(caches):]:
                if bf16_rate and r["decode_tokens_per_s"]:
                    r["speedup_vs_bf16"] = r["decode_tokens_per_s"] / bf16_rate
            del dense
            _write(rows, out)
    _write(rows, out)
    (out / "model_speed.md").write_text(_markdown(rows, meta))
    return out


def _write(rows, out: Path) -> None:
    import pandas as pd

    from bench.results import write_json

    pd.DataFrame(rows, columns=COLUMNS).to_csv(out / "results.csv", index=False)
    summary = {f"{r['cache']}/b{r['batch']}/ctx{r['context']}": {k: r[k] for k in (
        "decode_tokens_per_s", "speedup_vs_bf16", "attn_share", "status")} for r in rows}  # fmt: skip
    write_json({"kind": KIND, "points": summary}, out / "summary.json")


def _markdown(rows, meta) -> str:
    f = lambda x, s: "-" if x is None else format(x, s)  # noqa: E731
    lines = [f"# Decode speed, {meta['model']} ({meta['note'] or 'checkpoint'})", "",
             f"{meta['shape']}, {meta['device']}; `{meta['command']}`", "",
             "| batch | context | cache | kernel | step ms | tokens/s | vs BF16 | attention ms | cache update ms | share |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['batch']} | {r['context']} | {r['cache']} | {r['kernel'] or '-'} | {f(r['step_ms'], '.2f')} | "
                     f"{f(r['decode_tokens_per_s'], '.1f')} | {f(r['speedup_vs_bf16'], '.2f')} | "
                     f"{f(r['attn_ms_per_step'], '.2f')} | {f(r['cache_update_ms_per_step'], '.2f')} | "
                     f"{f(r['attn_share'], '.2f')} |" + (f" {r['status']}: {r['error']}" if r["status"] != "ok" else ""))  # fmt: skip
    return "\n".join(lines) + "\n"


def write_report(run_dir: Path, out: Path | None = None) -> list[Path]:
    """``foscar report`` of a model-speed run: ``model_speed.png`` (decode tokens/s and
    speed-up over the BF16 cache per point, one colour per cache; fixed width) and
    ``report.md`` (the run, the table, the plot) in ``out`` (default: the run directory).

    Raises:
        FoscarError: ``results.csv`` or ``meta.json`` missing or unreadable.
    """
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from bench.plotting import DPI, FIGURE_WIDTH, palette
    from bench.runfiles import open_report_run

    meta, df, out = open_report_run(run_dir, out)
    ok = df[df["status"] == "ok"]
    points = list(dict.fromkeys(f"b{int(b)} x {int(c)}" for b, c in zip(ok["batch"], ok["context"])))
    caches = [c for c in CACHES if c in set(ok["cache"])]
    colors = dict(zip(caches, palette(len(caches))))
    written = []
    if len(ok):
        fig = Figure(figsize=(FIGURE_WIDTH, 4.6), layout="constrained")
        axes = fig.subplots(1, 2)
        width = 0.84 / len(caches)
        for j, cache in enumerate(caches):
            g = ok[ok["cache"] == cache]
            xs = np.array([points.index(f"b{int(b)} x {int(c)}") for b, c in zip(g["batch"], g["context"])], dtype=float)
            xs += (j - (len(caches) - 1) / 2) * width
            axes[0].bar(xs, g["decode_tokens_per_s"].astype(float), width, color=colors[cache], label=cache)
            axes[1].bar(xs, g["speedup_vs_bf16"].astype(float), width, color=colors[cache], label=cache)
        axes[1].axhline(1.0, color="0.35", ls="--", lw=1)
        for ax, ylabel in zip(axes, ("decode tokens/s (higher is better)", "tokens/s vs the BF16 cache (x)")):
            ax.set_xticks(range(len(points)), points)
            ax.set_xlabel("point: batch x context (tokens)")
            ax.set_ylabel(ylabel)
            ax.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=9, frameon=False)
        note = " (interpreter: not a speed)" if str(meta.get("device", "")).startswith("cpu") else ""
        fig.suptitle(f"Whole-model decode speed: {meta.get('model')}{note}", fontsize=11)
        fig.savefig(out / "model_speed.png", dpi=DPI)
        written.append(out / "model_speed.png")
    rows = [{c: (None if pd.isna(v) else v) for c, v in r.items()} for r in df.to_dict("records")]
    md = _markdown(rows, meta)
    md += ("\n![model speed](model_speed.png)\n\n*Left: decode tokens/s per point and cache; right: the same over "
           "the BF16 cache's (x, higher is better).*\n") if written else "\nNo row with status ok: nothing drawn.\n"
    (out / "report.md").write_text(md)
    return [*written, out / "report.md"]


def main(argv: list[str] | None = None) -> None:
    from bench.errors import FoscarError

    try:
        print(run(_parser().parse_args(argv)))
    except FoscarError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
