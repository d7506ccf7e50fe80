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

A study of the engine (:mod:`bench.engine`, :class:`EvalModelStudy`): a point is a cache
configuration (:class:`CacheConfig`: the BF16 cache, then each bits x group size), its one row
that cache's scores. The engine owns the run directory: ``results.csv`` (:data:`COLUMNS`, one
row per cache, each with the ``gpu_uuid`` it ran on), ``meta.json`` (``kind: "eval-model"``,
``config`` and ``config_hash``, model, text and its sha256, versions, git, command),
``summary.json``, and ``eval_model.png`` + ``report.md`` (:func:`write_report`; ``foscar
report RUN`` redraws them); an ``--out DIR`` holding a run of the same config is resumed (the
caches not scored yet are run; the BF16 reference is recomputed in each session that needs
it); ``--format``; ``foscar merge`` reads its shards (:mod:`bench.studies`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import SCHEMA_VERSION
from bench.engine import SITE_COLUMN_DOCS, Study, StudyOptions, new_run_dir, recorded_config
from bench.errors import FoscarError
from bench.kinds import EVAL_MODEL

KIND = EVAL_MODEL  # meta.json "kind" (bench.kinds)
COLUMNS = [
    "cache", "bits", "group_size", "num_sink", "num_recent", "rotation", "kernel", "scored_tokens",
    "nll_mean", "perplexity", "top1_agree", "kl_mean", "kl_max", "greedy_tokens", "greedy_match",
    "decode_tokens_per_s", "kv_bytes", "kv_bytes_vs_bf16", "status", "error", "gpu_uuid",
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
    "gpu_uuid": SITE_COLUMN_DOCS["gpu_uuid"],
}
INT_COLUMNS = ("bits", "group_size", "num_sink", "num_recent", "scored_tokens", "greedy_tokens", "greedy_match", "kv_bytes")
TEXT_COLUMNS = ("cache", "rotation", "kernel", "status", "error", "gpu_uuid")


@dataclass
class EvalOptions(StudyOptions):
    """The ``foscar eval-model`` flags, parsed (the shared ones in :class:`bench.engine.StudyOptions`)."""

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

    def config(self, text_sha256: str) -> dict[str, Any]:
        """What the run measures (``meta.json["config"]``; its hash is the resume/merge fingerprint):
        every option but where and how the run is written, plus the text's sha256."""
        skip = {"argv", "output", "out", "plots", "shard", "devices"}
        d = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items() if k not in skip}
        return {**d, "text_sha256": text_sha256}


# ---------------------------------------------------------------------------
# measuring


def sync(device) -> None:
    """Wait for ``device``'s queued work (a ``torch.device``; nothing to wait for on the CPU)."""
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
        sync(prompt.device)
        t0 = time.perf_counter()
        for _ in range(num_tokens - 1):
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            toks.append(tok)
        sync(prompt.device)
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


@dataclass(frozen=True)
class CacheConfig:
    """A point of the eval-model grid: transformers' BF16 ``DynamicCache`` (``cache="bf16"``), or a
    :class:`foscar.hf.FoscarCache` of ``bits`` x ``group_size`` (``cache="foscar"``; the run's
    sink/recent windows and rotation)."""

    cache: str
    bits: int | None = None
    group_size: int | None = None

    def columns(self) -> dict[str, Any]:
        """The ``results.csv`` columns that pick this cache's row (no empty value: it would match nothing)."""
        if self.cache == "bf16":
            return {"cache": "bf16"}
        return {"cache": self.cache, "bits": self.bits, "group_size": self.group_size}


def grid_points(bits: list[int], group_sizes: list[int]) -> list[CacheConfig]:
    """The BF16 cache first (the reference of every other row), then bits x group size."""
    configs = [CacheConfig("foscar", int(b), int(g)) for b in bits for g in group_sizes]
    return [CacheConfig("bf16")] + list(dict.fromkeys(configs))  # a value given twice: each cache once


@dataclass
class EvalSession:
    """What measuring needs, set up once per session: the loaded model
    (:class:`bench.hf_model.LoadedModel`), the token ids ``[1, n]`` int64 on ``device``."""

    loaded: Any
    ids: Any
    device: Any
    reference: dict[str, Any] | None = None  # the BF16 cache's logits, bytes and greedy tokens (computed once)


class EvalModelStudy(Study):
    """``foscar eval-model`` as an engine study: points :func:`grid_points`, one row each.

    Args:
        config: :meth:`EvalOptions.config` (``meta.json["config"]``).
        session: the model and tokens (``None``: the study only reads and summarizes rows, as a merge does).
        plots: write ``eval_model.png`` and ``report.md`` at the end (:meth:`write_extras`).
    """

    kind = KIND

    def __init__(self, config: dict[str, Any], session: EvalSession | None = None, plots: bool = True):
        self.config, self.session, self.plots = config, session, plots
        self._points = grid_points(config["bits"], config["group_sizes"])

    def points(self) -> list[CacheConfig]:
        return self._points

    def label(self, point: CacheConfig) -> str:
        return config_label({**point.columns(), "num_sink": self.config["num_sink"],
                             "num_recent": self.config["num_recent"], "rotation": self.config["rotation"]})  # fmt: skip

    def point_columns(self, point: CacheConfig) -> dict[str, Any]:
        return point.columns()

    def row_keys(self, point: CacheConfig) -> list[tuple]:
        return [(point.cache,)]

    def row_key(self, row: dict[str, Any]) -> tuple:
        return (row["cache"],)

    def _base(self, point: CacheConfig) -> dict[str, Any]:
        c = self.config
        row = {k: None for k in COLUMNS}
        row.update(point.columns(), greedy_tokens=c["greedy_tokens"])
        if point.cache != "bf16":
            row.update(num_sink=c["num_sink"], num_recent=c["num_recent"], rotation=c["rotation"])
        return row

    def _reference(self) -> dict[str, Any]:
        """The BF16 cache's teacher-forced logits, K/V bytes and greedy tokens (once per session)."""
        s = self.session
        if s.reference is None:
            from transformers import DynamicCache

            model, prefill = s.loaded.model, self.config["prefill"]
            dense = DynamicCache(config=model.config)
            logits = teacher_forced(model, s.ids, dense, prefill)
            nbytes = dense_nbytes(dense)
            del dense
            toks, secs = greedy(model, s.ids[:, :prefill], DynamicCache(config=model.config), self.config["greedy_tokens"])
            s.reference = {"logits": logits, "bytes": nbytes, "greedy": toks, "seconds": secs}
        return s.reference

    def measure(self, point: CacheConfig) -> list[dict[str, Any]]:
        from foscar.hf import FoscarCache

        c, s = self.config, self.session
        ref = self._reference()
        targets = s.ids[0, c["prefill"] + 1 :]
        row = self._base(point)
        row["scored_tokens"] = len(targets)
        if point.cache == "bf16":
            row.update(compare_logits(ref["logits"], ref["logits"], targets), greedy_match=c["greedy_tokens"],
                       kv_bytes=ref["bytes"], kv_bytes_vs_bf16=1.0,
                       decode_tokens_per_s=_rate(c["greedy_tokens"], ref["seconds"]), status="ok")  # fmt: skip
            return [row]
        model = s.loaded.model
        kw = dict(bits=point.bits, group_size=point.group_size, num_sink=c["num_sink"], num_recent=c["num_recent"],
                  rotation=c["rotation"], backend=c["backend"], seed=c["seed"])  # fmt: skip
        cache = FoscarCache(model.config, **kw)
        logits = teacher_forced(model, s.ids, cache, c["prefill"])
        row.update(compare_logits(ref["logits"], logits, targets), kv_bytes=cache.nbytes(), kernel=cache.kernel)
        row["kv_bytes_vs_bf16"] = row["kv_bytes"] / ref["bytes"] if ref["bytes"] else None
        del cache
        toks, secs = greedy(model, s.ids[:, : c["prefill"]], FoscarCache(model.config, **kw), c["greedy_tokens"])
        row.update(greedy_match=_leading_match(ref["greedy"][0], toks[0]), decode_tokens_per_s=_rate(c["greedy_tokens"], secs),
                   status="ok")  # fmt: skip
        return [row]

    def failure_rows(self, point: CacheConfig, reason: str) -> list[dict[str, Any]]:
        return [{**self._base(point), "status": "error", "error": reason}]

    def frame(self, rows: list[dict[str, Any]]):
        return to_frame(rows)

    @staticmethod
    def read(path: Path):
        import pandas as pd

        return to_frame(pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS}).to_dict("records"))

    @staticmethod
    def empty_frame():
        return to_frame([])

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> EvalModelStudy:
        return cls(recorded_config(meta, ("bits", "group_sizes"), KIND))

    def summarize(self, df) -> dict[str, Any]:
        from bench.engine import row_records

        return summarize(row_records(df))

    def write_extras(self, out: Path, df, meta: dict[str, Any], summary: dict[str, Any]) -> list[Path]:
        return write_report(out) if self.plots else []

    def after_point(self) -> None:
        if self.session is not None and self.session.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()


def to_frame(rows: list[dict[str, Any]]):
    """Rows as a DataFrame with exactly :data:`COLUMNS`, nullable integer columns."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in INT_COLUMNS:
        df[c] = pd.to_numeric(df[c]).astype("Int64")
    for c in ("nll_mean", "perplexity", "top1_agree", "kl_mean", "kl_max", "decode_tokens_per_s", "kv_bytes_vs_bf16"):
        df[c] = pd.to_numeric(df[c]).astype("float64")
    return df


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


def default_out(device_type: str) -> Path:
    """``results/<timestamp>-eval-model-<git short>`` (without a GPU: under ``results/_scratch/``)."""
    from bench.manifest import git_state

    return new_run_dir(f"eval-model-{git_state().get('short') or 'nogit'}", device_type != "cuda")


def run_eval_model(opts: EvalOptions):
    """Do the whole ``foscar eval-model`` run on the engine; return its :class:`bench.engine.Outcome`
    (``.path``: the run directory).

    Raises:
        FoscarError: bad flags, a model that cannot be loaded from disk or whose attention
            the kernels cannot take, a text too short, an ``--out`` holding a run of another
            config or device, or that cannot be created.
    """
    from bench.hf_model import load_model, read_text, tokenize, torch_device

    if opts.devices is not None:
        raise FoscarError("run_eval_model runs on one GPU; `--devices` runs through bench.devices.run_devices")
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
    need = opts.prefill + opts.max_tokens + 1  # (a shorter text scored fewer steps than asked, and said nothing)
    if ids.shape[1] < need:
        raise FoscarError(f"the text has {ids.shape[1]} tokens; --prefill {opts.prefill} and --max-tokens "
                          f"{opts.max_tokens} need at least {need} (pass a longer --text or a smaller --max-tokens)")
    ids = ids[:, : opts.prefill + opts.max_tokens + 1].to(device)

    import torch

    from bench.arch import detect_device
    from bench.config import config_hash
    from bench.engine import complete_run, gpu_site, make_console_for, start_run
    from bench.resume import device_mismatch
    from bench.manifest import git_state, software_versions
    from foscar.hf import attention_shape

    out = Path(opts.out) if opts.out is not None else default_out(device.type)
    config = opts.config(hashlib.sha256(text.encode("utf-8")).hexdigest())
    study = EvalModelStudy(config, EvalSession(loaded, ids, device), plots=opts.plots)
    info = detect_device() if device.type == "cuda" else None
    device_name = torch.cuda.get_device_name(device) if info else str(device)
    layers, hq, hkv, hd = attention_shape(loaded.model.config)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(opts.argv if opts.argv is not None else sys.argv),
        "model": loaded.source,
        "model_type": loaded.model.config.model_type,
        "random_weights": loaded.random_weights,
        "shape": {"num_layers": layers, "num_qo_heads": hq, "num_kv_heads": hkv, "head_dim": hd},
        "text": text_source,
        "text_sha256": config["text_sha256"],
        "tokenizer": "model's" if loaded.tokenizer is not None else "utf-8 bytes modulo vocab_size (no tokenizer)",
        "tokens": int(ids.shape[1]),
        "device": device_name,
        "triton_interpreter": device.type != "cuda",
        "versions": {**software_versions(flashinfer=False), "transformers": __import__("transformers").__version__},
        "git": git_state(),
        "columns": COLUMN_DOCS,
        "config": config,
        "config_hash": config_hash(config),
    }
    run = start_run(study, out, meta, opts.shard, refuse=lambda m: device_mismatch(m, device_name),
                    site=gpu_site(info, device.index or 0))  # fmt: skip

    def show(console, summary: dict[str, Any], df) -> None:
        show_summary(console, summary, out)
        names = ", ".join(p.name for p in (out / "eval_model.png", out / "report.md") if opts.plots and p.is_file())
        console.print(f"wrote {out / 'results.csv'}, meta.json, summary.json{', ' + names if names else ''}")

    return complete_run(study, run, opts.output, make_console_for(opts.output), show)


def plan_eval_model(opts: EvalOptions, device: Any = "detect"):
    """What ``opts`` would run, without loading the model (:class:`bench.engine.RunPlan`, for
    ``--devices``): one point per cache configuration. ``device``: a :class:`bench.arch.DeviceInfo`,
    ``None`` (no GPU, e.g. fake devices) or ``"detect"``."""
    from bench.arch import detect_device
    from bench.engine import RunPlan

    info = detect_device() if device == "detect" else device
    n = len(grid_points(opts.bits, opts.group_sizes))
    out = Path(opts.out) if opts.out is not None else default_out("cuda" if info is not None else "cpu")
    return RunPlan(n, out, f"{n} caches (BF16 and {n - 1} FOSCAR configurations) of {opts.model or opts.random_init}")


def show_summary(console, summary: dict[str, Any], out: Path) -> None:
    """A finished (or merged) eval-model run's table on ``console`` (from its results.csv and meta.json)."""
    from bench.engine import row_records
    from bench.runfiles import read_json_object

    rows = row_records(EvalModelStudy.read(Path(out) / "results.csv"))
    console.print(results_table(rows, read_json_object(Path(out) / "meta.json")))


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

    from bench.plotting import save_png
    from bench.runfiles import open_report_run

    meta, df, out = open_report_run(run_dir, out)
    df = df[df["status"] == "ok"]
    labels = [config_label(r) for r in df.to_dict("records")]
    fig = Figure(figsize=(13, 7.5), layout="constrained")
    axes = fig.subplots(2, 3).ravel()
    panels = (("perplexity", "perplexity of the text (lower is better)"),
              ("top1_agree", "top-1 agreement with the BF16 cache"),
              ("kl_mean", "mean KL(p_bf16 || p) (nats)"),
              ("greedy_match", f"leading greedy tokens equal to BF16's (of {(meta.get('config') or meta['options'])['greedy_tokens']})"),
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
    save_png(fig, png, dpi=110)
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
