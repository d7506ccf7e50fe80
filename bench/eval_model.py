"""``foscar eval-model``: a model's next-token predictions with FOSCAR's INT2/INT4 cache vs its BF16 cache.

On the same tokens (the text's first ``prefill + max_tokens + 1``), for transformers'
BF16 ``DynamicCache`` and for each :class:`foscar.hf.FoscarCache` configuration (bits x
group size, with the given sink/recent windows and rotation):

1. Teacher-forced decode: prefill ``prefill`` tokens (SDPA on BF16 K/V for every cache,
   so the prompt's logits are identical), then feed the text one token at a time; each
   step's logits predict the next token. Scored: the ``max_tokens`` decode steps.
   Columns: perplexity ``exp(mean NLL)`` of the text's tokens; for FOSCAR rows also
   ``top1_agree`` (fraction of steps whose argmax equals the BF16 cache's) and
   ``kl_mean``/``kl_max`` of ``KL(p_bf16 || p_foscar)`` in nats over the steps.
2. Greedy decode of ``greedy_tokens`` tokens from the same prompt: ``greedy_match`` is how
   many leading tokens equal the BF16 cache's; ``decode_tokens_per_s`` = tokens after the
   first / time of those steps (the prefill not counted; interpreter runs on CPU give no
   performance number).
3. ``kv_bytes``: bytes of the stored K/V after step 1 (all layers; BF16 cache: its tensors;
   FOSCAR: codes + FP32 scales/offsets + BF16 windows, :meth:`FoscarCache.nbytes`).

Run directory: ``results.csv`` (:data:`COLUMNS`, one row per cache), ``meta.json``
(``kind: "eval-model"``, model, text, versions, git, command), ``summary.json``;
``foscar report RUN`` draws ``eval_model.png`` and ``report.md`` (:func:`write_report`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import SCHEMA_VERSION
from bench.errors import FoscarError
from bench.kinds import EVAL_MODEL
from bench.engine import RESULTS_DIR, SCRATCH_DIR, OutputFormat

KIND = EVAL_MODEL  # meta.json "kind" (bench.kinds)
COLUMNS = [
    "cache", "bits", "group_size", "num_sink", "num_recent", "rotation", "kernel", "scored_tokens",
    "nll_mean", "perplexity", "top1_agree", "kl_mean", "kl_max", "greedy_tokens", "greedy_match",
    "decode_tokens_per_s", "kv_bytes", "kv_bytes_vs_bf16", "status", "error",
]  # fmt: skip
COLUMN_DOCS = {
    "cache": "bf16 (transformers DynamicCache) or foscar (foscar.hf.FoscarCache)",
    "kernel": "the FOSCAR kernel the decode steps ran (cuda/triton); empty for bf16",
    "scored_tokens": "teacher-forced decode steps scored (the prefill's tokens are not scored)",
    "nll_mean": "mean negative log-likelihood of the text's next token over the scored steps (nats)",
    "perplexity": "exp(nll_mean)",
    "top1_agree": "fraction of scored steps whose argmax equals the BF16 cache's argmax",
    "kl_mean": "mean over scored steps of KL(p_bf16 || p_cache) in nats",
    "kl_max": "max over scored steps of the same",
    "greedy_match": "leading greedy tokens equal to the BF16 cache's greedy tokens (of greedy_tokens)",
    "decode_tokens_per_s": "greedy decode: (greedy_tokens - 1) * batch / time of the decode steps (prefill excluded)",
    "kv_bytes": "bytes of the stored K/V of all layers after the teacher-forced pass",
    "kv_bytes_vs_bf16": "kv_bytes / the BF16 cache's kv_bytes",
    "status": "ok, or error (the message in error)",
}


@dataclass
class EvalOptions:
    """The ``foscar eval-model`` flags, parsed."""

    model: str | None = None
    random_init: Path | None = None
    bits: list[int] = field(default_factory=lambda: [4])
    group_sizes: list[int] = field(default_factory=lambda: [32])
    num_sink: int = 0
    num_recent: int = 0
    rotation: str = "none"
    text: Path | None = None
    prefill: int = 256
    max_tokens: int = 256
    greedy_tokens: int = 32
    backend: str = "auto"
    seed: int = 0
    out: Path | None = None
    plots: bool = True
    output: OutputFormat = OutputFormat.table
    argv: list[str] | None = None


# ---------------------------------------------------------------------------
# measuring


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def teacher_forced(model, ids, cache, prefill: int):
    """Logits ``[n - 1 - prefill, vocab]`` float32 of the decode steps ``t = prefill .. n-2``
    (each predicts ``ids[:, t + 1]``), after a prefill of ``ids[:, :prefill]`` into ``cache``."""
    import torch

    rows = []
    with torch.no_grad():
        model(input_ids=ids[:, :prefill], past_key_values=cache, use_cache=True, logits_to_keep=1)
        for t in range(prefill, ids.shape[1] - 1):
            out = model(input_ids=ids[:, t : t + 1], past_key_values=cache, use_cache=True)
            rows.append(out.logits[0, -1].float())
    return torch.stack(rows)


def greedy(model, prompt, cache, num_tokens: int):
    """Greedy decode of ``num_tokens`` tokens after ``prompt`` ``[batch, p]``.

    Returns:
        ``(tokens [batch, num_tokens] int64, seconds of the num_tokens - 1 decode steps)``.
    """
    import torch

    with torch.no_grad():
        out = model(input_ids=prompt, past_key_values=cache, use_cache=True, logits_to_keep=1)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        toks = [tok]
        _sync(prompt.device)
        t0 = time.perf_counter()
        for _ in range(num_tokens - 1):
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            toks.append(tok)
        _sync(prompt.device)
        seconds = time.perf_counter() - t0
    return torch.cat(toks, dim=1), seconds


def dense_nbytes(cache) -> int:
    """Bytes of a transformers dense cache's K/V tensors (all layers)."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers if layer.keys is not None)


def compare_logits(ref, test, targets) -> dict[str, float]:
    """NLL, top-1 agreement and KL of ``test`` ``[T, V]`` against ``ref`` ``[T, V]`` (float32 logits)."""
    import torch

    lp_ref, lp = torch.log_softmax(ref.double(), -1), torch.log_softmax(test.double(), -1)
    nll = -lp.gather(1, targets[:, None]).squeeze(1)
    kl = (lp_ref.exp() * (lp_ref - lp)).sum(-1).clamp_min(0)
    return {
        "nll_mean": float(nll.mean()),
        "perplexity": math.exp(float(nll.mean())),
        "top1_agree": float((ref.argmax(-1) == test.argmax(-1)).double().mean()),
        "kl_mean": float(kl.mean()),
        "kl_max": float(kl.max()),
    }


def measure(loaded, ids, opts: EvalOptions, device, on_row=None) -> list[dict[str, Any]]:
    """Every row of the run (the BF16 cache first). ``ids``: ``[1, n]`` on ``device``."""
    from transformers import DynamicCache

    from foscar.hf import FoscarCache

    model = loaded.model
    targets = ids[0, opts.prefill + 1 :]
    prompt = ids[:, : opts.prefill]
    base = {c: None for c in COLUMNS}
    dense = DynamicCache(config=model.config)
    ref = teacher_forced(model, ids, dense, opts.prefill)
    ref_bytes = dense_nbytes(dense)
    del dense
    ref_greedy, secs = greedy(model, prompt, DynamicCache(config=model.config), opts.greedy_tokens)
    row = {**base, "cache": "bf16", "scored_tokens": len(targets), "greedy_tokens": opts.greedy_tokens,
           "greedy_match": opts.greedy_tokens, "kv_bytes": ref_bytes, "kv_bytes_vs_bf16": 1.0, "status": "ok",
           **compare_logits(ref, ref, targets), "decode_tokens_per_s": _rate(opts.greedy_tokens, secs)}  # fmt: skip
    rows = [row]
    if on_row:
        on_row(rows)
    for bits in opts.bits:
        for g in opts.group_sizes:
            row = {**base, "cache": "foscar", "bits": bits, "group_size": g, "num_sink": opts.num_sink,
                   "num_recent": opts.num_recent, "rotation": opts.rotation, "scored_tokens": len(targets),
                   "greedy_tokens": opts.greedy_tokens}  # fmt: skip
            kw = dict(bits=bits, group_size=g, num_sink=opts.num_sink, num_recent=opts.num_recent,
                      rotation=opts.rotation, backend=opts.backend, seed=opts.seed)  # fmt: skip
            try:
                cache = FoscarCache(model.config, **kw)
                logits = teacher_forced(model, ids, cache, opts.prefill)
                row.update(compare_logits(ref, logits, targets), kv_bytes=cache.nbytes(), kernel=cache.kernel)
                row["kv_bytes_vs_bf16"] = row["kv_bytes"] / ref_bytes if ref_bytes else None
                del cache
                toks, secs = greedy(model, prompt, FoscarCache(model.config, **kw), opts.greedy_tokens)
                row["greedy_match"] = _leading_match(ref_greedy[0], toks[0])
                row["decode_tokens_per_s"] = _rate(opts.greedy_tokens, secs)
                row["status"] = "ok"
            except (ValueError, RuntimeError) as e:
                row.update(status="error", error=f"{type(e).__name__}: {e}".splitlines()[0][:300])
            rows.append(row)
            if on_row:
                on_row(rows)
    return rows


def _rate(num_tokens: int, seconds: float) -> float | None:
    return (num_tokens - 1) / seconds if num_tokens > 1 and seconds > 0 else None


def _leading_match(a, b) -> int:
    neq = (a != b).nonzero()
    return int(neq[0, 0]) if len(neq) else int(a.numel())


# ---------------------------------------------------------------------------
# end to end


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Headline numbers per cache configuration (keyed ``bf16`` / ``int4-g32[-sink..]``)."""
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": KIND, "caches": {}}
    for r in rows:
        key = "bf16" if r["cache"] == "bf16" else config_label(r)
        out["caches"][key] = {k: r[k] for k in ("perplexity", "top1_agree", "kl_mean", "greedy_match",
                                                "decode_tokens_per_s", "kv_bytes_vs_bf16", "status")}  # fmt: skip
    return out


def config_label(r: dict[str, Any]) -> str:
    """``"int4 g32"``, plus ``sink4+recent16`` / ``hadamard`` where set; ``"bf16"`` for the BF16 cache."""
    if r["cache"] == "bf16":
        return "bf16"
    parts = [f"int{int(r['bits'])}", f"g{int(r['group_size'])}"]
    if (r.get("num_sink") or 0) or (r.get("num_recent") or 0):
        parts.append(f"sink{int(r['num_sink'])}+recent{int(r['num_recent'])}")
    if r.get("rotation") not in (None, "none") and not (isinstance(r.get("rotation"), float)):
        parts.append(str(r["rotation"]))
    return " ".join(parts)


def run_eval_model(opts: EvalOptions) -> Path:
    """Do the whole ``foscar eval-model`` run; return the run directory.

    Raises:
        FoscarError: bad flags, a model that cannot be loaded from disk or whose attention
            the kernels cannot take, a text too short, an unusable output directory.
    """
    from bench.hf_model import load_model, read_text, tokenize, torch_device

    for name, x in (("--prefill", opts.prefill), ("--max-tokens", opts.max_tokens), ("--greedy-tokens", opts.greedy_tokens)):
        if x < 1:
            raise FoscarError(f"{name}: expected a positive number, got {x}")
    device = torch_device()
    loaded = load_model(opts.model, opts.random_init, device, seed=opts.seed)
    from foscar.hf import check_model_config

    try:
        for g in opts.group_sizes:
            check_model_config(loaded.model.config, g)
    except ValueError as e:
        raise FoscarError(f"{loaded.source}: {e}") from None
    text, text_source = read_text(opts.text)
    ids = tokenize(loaded, text)
    need = opts.prefill + 2
    if ids.shape[1] < need:
        raise FoscarError(f"the text has {ids.shape[1]} tokens; --prefill {opts.prefill} needs at least {need}")
    ids = ids[:, : opts.prefill + opts.max_tokens + 1].to(device)

    from bench.accuracy import make_out_dir
    from bench.manifest import git_state, software_versions
    from bench.results import write_json
    from foscar.hf import attention_shape

    out = opts.out
    if out is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = SCRATCH_DIR if device.type != "cuda" else RESULTS_DIR
        out = base / f"{stamp}-eval-model-{git_state().get('short') or 'nogit'}"
    out = make_out_dir(Path(out))
    layers, hq, hkv, hd = attention_shape(loaded.model.config)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(opts.argv if opts.argv is not None else sys.argv),
        "model": loaded.source,
        "model_type": loaded.model.config.model_type,
        "random_weights": loaded.random_weights,
        "shape": {"num_layers": layers, "num_qo_heads": hq, "num_kv_heads": hkv, "head_dim": hd},
        "text": text_source,
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "tokenizer": "model's" if loaded.tokenizer is not None else "utf-8 bytes modulo vocab_size (no tokenizer)",
        "tokens": int(ids.shape[1]),
        "device": str(device) if device.type != "cuda" else __import__("torch").cuda.get_device_name(device),
        "triton_interpreter": device.type != "cuda",
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()
                    if k not in ("argv", "output", "out", "plots")},  # fmt: skip
        "versions": {**software_versions(flashinfer=False), "transformers": __import__("transformers").__version__},
        "git": git_state(),
        "columns": COLUMN_DOCS,
    }
    write_json(meta, out / "meta.json")

    def on_row(rows):
        write_csv(rows, out / "results.csv")

    rows = measure(loaded, ids, opts, device, on_row)
    write_csv(rows, out / "results.csv")
    summary = summarize(rows)
    write_json(summary, out / "summary.json")
    written = write_report(out) if opts.plots else []
    if opts.output is OutputFormat.json:
        print(json.dumps(summary, indent=2))
    elif opts.output is OutputFormat.table:
        from bench.tables import make_console

        make_console().print(results_table(rows, meta))
        names = ", ".join(p.name for p in written)
        print(f"wrote {out / 'results.csv'}, meta.json, summary.json{', ' + names if names else ''}")
    else:
        print(out)
    return out


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    import pandas as pd

    pd.DataFrame(rows, columns=COLUMNS).to_csv(path, index=False)


def results_table(rows: list[dict[str, Any]], meta: dict[str, Any]):
    """A rich table of the rows."""
    from rich.table import Table

    t = Table(title=f"foscar eval-model: {meta['model']} ({meta['tokens']} tokens"
                    f"{', random weights' if meta['random_weights'] else ''}"
                    f"{'; tok/s: interpreter timing, not a speed' if meta['triton_interpreter'] else ''})")  # fmt: skip
    for c in ("cache", "perplexity", "top-1 agree", "KL mean", "greedy match", "tok/s", "KV bytes vs BF16", "status"):
        t.add_column(c)
    f = lambda x, s: "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, s)  # noqa: E731
    for r in rows:
        t.add_row(config_label(r), f(r["perplexity"], ".3f"), f(r["top1_agree"], ".3f"), f(r["kl_mean"], ".2e"),
                  f"{r['greedy_match']}/{r['greedy_tokens']}", f(r["decode_tokens_per_s"], ".1f"),
                  f(r["kv_bytes_vs_bf16"], ".3f"), r["status"] if r["status"] == "ok" else f"{r['status']}: {r['error']}")  # fmt: skip
    return t


# ---------------------------------------------------------------------------
# report


def write_report(run_dir: Path, out: Path | None = None) -> list[Path]:
    """Draw ``eval_model.png`` (perplexity, top-1 agreement, KL, decode tokens/s, KV bytes per
    cache) and ``report.md`` for an eval-model run directory.

    Raises:
        FoscarError: ``results.csv`` or ``meta.json`` missing or unreadable.
    """
    from matplotlib.figure import Figure

    from bench.runfiles import open_report_run

    meta, df, out = open_report_run(run_dir, out)
    df = df[df["status"] == "ok"]
    labels = [config_label(r) for r in df.to_dict("records")]
    fig = Figure(figsize=(13, 7.5), layout="constrained")
    axes = fig.subplots(2, 3).ravel()
    panels = (("perplexity", "perplexity of the text (lower is better)"),
              ("top1_agree", "top-1 agreement with the BF16 cache"),
              ("kl_mean", "mean KL(p_bf16 || p) (nats)"),
              ("greedy_match", f"leading greedy tokens equal to BF16's (of {meta['options']['greedy_tokens']})"),
              ("decode_tokens_per_s", "decode tokens/s" + (" (interpreter: not a speed)" if meta.get("triton_interpreter") else "")),
              ("kv_bytes_vs_bf16", "KV bytes / BF16 cache's"))  # fmt: skip
    colors = ["#7f7f7f" if lab == "bf16" else "#1f77b4" for lab in labels]
    for ax, (col, title) in zip(axes, panels):
        ax.bar(range(len(df)), df[col].astype(float).fillna(0).to_numpy(), color=colors)
        ax.set_xticks(range(len(df)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    weights = "random weights: no accuracy claim" if meta.get("random_weights") else meta["model"]
    fig.suptitle(f"foscar eval-model: {meta.get('model_type')} ({weights}), {meta['tokens']} tokens", fontsize=10)
    png = out / "eval_model.png"
    fig.savefig(png, dpi=110)
    lines = [f"# foscar eval-model: {meta['model']}", "",
             f"{meta.get('model_type')}, {meta['shape']}, {meta['tokens']} tokens of {meta['text']} "
             f"(tokenizer: {meta['tokenizer']}); {meta['device']}; `{meta['command']}`.", "",
             "![eval-model](eval_model.png)", "",
             "| cache | perplexity | top-1 agree | KL mean | greedy match | decode tok/s | KV bytes vs BF16 |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for lab, r in zip(labels, df.to_dict("records")):
        lines.append(f"| {lab} | {r['perplexity']:.4g} | {r['top1_agree']:.3f} | {r['kl_mean']:.3g} | "
                     f"{int(r['greedy_match'])}/{int(r['greedy_tokens'])} | {r['decode_tokens_per_s']:.4g} | "
                     f"{r['kv_bytes_vs_bf16']:.3f} |")  # fmt: skip
    md = out / "report.md"
    md.write_text("\n".join(lines) + "\n")
    return [png, md]
