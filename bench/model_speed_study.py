"""``foscar model-speed`` (also ``python -m bench.model_speed``, :mod:`bench.model_speed`): decode
speed of a whole transformers model, transformers' BF16 cache vs FOSCAR's INT2/INT4 cache.

``scripts/eval_model_gpu.sh`` runs it on the GPU for a Qwen3-8B-shaped model with random
weights (``configs/hf/qwen3-8b.json``); ``--smoke`` runs a 2-layer model through the
Triton interpreter on CPU (times are then no performance number).

Per point (batch x context): random prompt tokens (seeded with ``--seed`` at every point,
so a point's prompt does not depend on which points ran before it: shards and resumed
runs measure the same prompts) are prefilled once into a transformers ``DynamicCache``
(SDPA on BF16 K/V); each FOSCAR cache is built from that cache's K/V
(:meth:`foscar.hf.FoscarCache.from_dense`: the state its own prefill would leave) and the
BF16 ``DynamicCache`` itself is decoded last. For each cache: ``--warmup`` greedy decode
steps (the CUDA extension compiles on the first), then ``--decode`` timed steps
(``decode_tokens_per_s = batch * steps / time``), then ``--profile-steps`` more with CUDA
events around every attention call and every cache update: ``attn_share`` = (attention +
cache update time) / step time in that run (the events cost a little; the timed run has
none). The weights are random: no accuracy claim comes from this run.

A study of the engine (:mod:`bench.engine`, :class:`ModelSpeedStudy`): a point is ``(batch,
context)``, its rows the caches. The engine owns the run directory: ``results.csv``
(:data:`COLUMNS`, each row with the ``gpu_uuid`` it ran on; ``speedup_vs_bf16`` recomputed
per point over all rows), ``meta.json`` (``kind: "model-speed"``, ``config``,
``config_hash``), ``summary.json``, ``model_speed.md``; an ``--out DIR`` holding a run of
the same config is resumed; ``--format``, ``--shard K/N``, ``--devices``, ``foscar merge``.
A point whose prefill raises (e.g. CUDA out of memory) gets ``error`` rows and the other
points still run; so does a cache that raises.
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import SCHEMA_VERSION
from bench.config import SUPPORTED_GROUP_SIZES
from bench.engine import Study, StudyOptions, new_run_dir, recorded_config
from bench.errors import FoscarError
from bench.kinds import MODEL_SPEED

KIND = MODEL_SPEED  # meta.json "kind" (bench.kinds)
COLUMNS = [
    "batch", "context", "cache", "bits", "group_size", "kernel", "decode_steps", "step_ms", "decode_tokens_per_s",
    "speedup_vs_bf16", "attn_ms_per_step", "cache_update_ms_per_step", "attn_share", "kv_bytes", "peak_mem_gib",
    "status", "error", "gpu_uuid",
]  # fmt: skip
CACHES = ("int2", "int4", "bf16")
DEFAULT_RANDOM_INIT = "configs/hf/qwen3-8b.json"
SMOKE_RANDOM_INIT = "configs/hf/tiny-qwen3.json"


@dataclass
class ModelSpeedOptions(StudyOptions):
    """The ``foscar model-speed`` flags, parsed (the shared ones in :class:`bench.engine.StudyOptions`).
    Empty lists mean the defaults."""

    random_init: str | None = None  # a transformers config.json, random weights (default DEFAULT_RANDOM_INIT)
    model: str | None = None  # a local checkpoint directory instead of random_init
    num_layers: int | None = None  # override num_hidden_layers (random init)
    batch: list[int] = field(default_factory=list)  # default 1 and 8 (smoke: 1)
    context: list[int] = field(default_factory=list)  # prompt tokens; default 8192 and 32768 (smoke: 32)
    cache: list[str] = field(default_factory=list)  # of CACHES; default all
    # None: the default, another under --smoke (config()); a value given is used as given, --smoke or not
    group_size: int | None = None  # 128 (smoke: 64)
    decode: int | None = None  # timed greedy decode steps: 64 (smoke: 3)
    warmup: int | None = None  # 3 (smoke: 1)
    profile_steps: int | None = None  # 8 (smoke: 1)
    backend: str = "auto"  # foscar.decode backend
    seed: int = 0
    smoke: bool = False  # SMOKE_RANDOM_INIT, batch 1 x 32 tokens, 3 steps: runs on the CPU
    out: Path | None = None

    def config(self) -> dict[str, Any]:
        """What the run measures (``meta.json["config"]``; its hash is the resume/merge fingerprint),
        the smoke settings and the defaults applied.

        Raises:
            FoscarError: a cache not in :data:`CACHES`, a group size FOSCAR does not take, or a step count below 1
                (0 for ``--warmup``).
        """
        from bench.errors import check_choices

        check_choices("--cache", self.cache, CACHES)
        smoke = self.smoke

        def chosen(value, default, smoke_default):
            return value if value is not None else (smoke_default if smoke else default)

        decode, warmup = chosen(self.decode, 64, 3), chosen(self.warmup, 3, 1)
        profile_steps = chosen(self.profile_steps, 8, 1)
        for name, x in (("--decode", decode), ("--warmup", warmup), ("--profile-steps", profile_steps)):
            if x < (0 if name == "--warmup" else 1):
                raise FoscarError(f"{name}: expected a {'non-negative' if name == '--warmup' else 'positive'} "
                                  f"number, got {x}")
        group_size = chosen(self.group_size, 128, 64)
        check_choices("--group-size", [group_size], SUPPORTED_GROUP_SIZES)
        random_init = None if self.model else chosen(self.random_init, DEFAULT_RANDOM_INIT, SMOKE_RANDOM_INIT)
        return {
            "model": self.model, "random_init": random_init, "num_layers": self.num_layers,
            # each value once (--context 16 --context 16 gave two BF16 rows a point, one of them each row's reference)
            "batch": list(dict.fromkeys(self.batch or ([1] if smoke else [1, 8]))),
            "context": list(dict.fromkeys(self.context or ([32] if smoke else [8192, 32768]))),
            "cache": [c for c in CACHES if c in (self.cache or CACHES)],
            "group_size": group_size, "decode": decode,
            "warmup": warmup, "profile_steps": profile_steps,
            "backend": self.backend, "seed": self.seed, "smoke": smoke,
        }  # fmt: skip


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


def _steps(model, cache, tok, n):
    import torch

    with torch.no_grad():
        for _ in range(n):
            tok = model(input_ids=tok, past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1, keepdim=True)
    return tok


def measure_cache(model, cache, tok, steps: dict[str, Any], device, attn_timer: _Timer) -> dict[str, Any]:
    """Warm up, time ``steps["decode"]`` steps, then profile ``steps["profile_steps"]`` steps of ``cache``
    (``steps``: the run's config, :meth:`ModelSpeedOptions.config`)."""
    from bench.eval_model import sync

    tok = _steps(model, cache, tok, steps["warmup"])
    sync(device)
    t0 = time.perf_counter()
    tok = _steps(model, cache, tok, steps["decode"])
    sync(device)
    secs = time.perf_counter() - t0
    upd = _Timer(device)
    cache.update = upd.wrap(cache.update)
    attn_timer.pairs, attn_timer.on, upd.on = [], True, True
    sync(device)
    t1 = time.perf_counter()
    _steps(model, cache, tok, steps["profile_steps"])
    sync(device)
    prof_ms = (time.perf_counter() - t1) * 1e3
    attn_timer.on = False
    n = max(steps["profile_steps"], 1)
    attn, update = attn_timer.total_ms() / n, upd.total_ms() / n
    batch = tok.shape[0]
    return {
        "decode_steps": steps["decode"], "step_ms": secs * 1e3 / steps["decode"],
        "decode_tokens_per_s": batch * steps["decode"] / secs, "attn_ms_per_step": attn,
        "cache_update_ms_per_step": update, "attn_share": (attn + update) / (prof_ms / n),
    }  # fmt: skip


@dataclass
class SpeedSession:
    """What measuring needs, set up once per session: the loaded model
    (:class:`bench.hf_model.LoadedModel`), its device and the timer around its attention calls."""

    loaded: Any
    device: Any
    attn_timer: _Timer


class ModelSpeedStudy(Study):
    """``foscar model-speed`` as an engine study: points ``(batch, context)``, a row per cache (the BF16
    cache last: decoding grows it).

    Args:
        config: :meth:`ModelSpeedOptions.config` (``meta.json["config"]``).
        session: the model (``None``: the study only reads and summarizes rows, as a merge does).
    """

    kind = KIND

    def __init__(self, config: dict[str, Any], session: SpeedSession | None = None):
        self.config, self.session = config, session
        self._points = [(int(b), int(c)) for b in config["batch"] for c in config["context"]]
        self._caches = sorted(config["cache"], key=lambda c: c == "bf16")

    def points(self) -> list[tuple[int, int]]:
        return self._points

    def label(self, point: tuple[int, int]) -> str:
        return f"batch {point[0]} x context {point[1]}"

    def point_columns(self, point: tuple[int, int]) -> dict[str, Any]:
        return dict(zip(("batch", "context"), point))

    def row_keys(self, point: tuple[int, int]) -> list[tuple]:
        return [(c,) for c in self._caches]

    def row_key(self, row: dict[str, Any]) -> tuple:
        return (row["cache"],)

    def _row(self, point: tuple[int, int], cache: str) -> dict[str, Any]:
        row = {c: None for c in COLUMNS}
        row.update(batch=point[0], context=point[1], cache=cache)
        if cache != "bf16":
            row.update(bits=int(cache[3:]), group_size=self.config["group_size"])
        return row

    def measure(self, point: tuple[int, int]) -> list[dict[str, Any]]:
        import torch
        from transformers import DynamicCache

        import foscar.hf as fh
        from bench.engine import error_reason
        from bench.eval_model import dense_nbytes

        c, s = self.config, self.session
        model, device = s.loaded.model, s.device
        batch, context = point
        prompt = torch.randint(0, model.config.vocab_size, (batch, context),
                               generator=torch.Generator().manual_seed(c["seed"])).to(device)  # fmt: skip
        dense = DynamicCache(config=model.config)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        with torch.no_grad():  # raises (e.g. out of memory): the engine records the point's error rows
            tok = model(input_ids=prompt, past_key_values=dense, use_cache=True, logits_to_keep=1).logits[:, -1]
        tok = tok.argmax(-1, keepdim=True)
        del prompt
        rows = []
        for name in self._caches:
            row = self._row(point, name)
            cache = None
            try:
                if name == "bf16":
                    cache, row["kv_bytes"] = dense, dense_nbytes(dense)
                else:
                    cache = fh.FoscarCache.from_dense(
                        dense, model.config, bits=row["bits"], group_size=c["group_size"], backend=c["backend"],
                        max_cache_len=context + c["warmup"] + c["decode"] + c["profile_steps"] + 1,
                    )  # fmt: skip
                    row["kv_bytes"] = cache.nbytes()
                row.update(measure_cache(model, cache, tok, c, device, s.attn_timer))
                row["kernel"] = getattr(cache, "kernel", None) or "sdpa"
                row["status"] = "ok"
            except (ValueError, RuntimeError) as e:  # e.g. CUDA out of memory: the other caches still run
                row.update(status="error", error=error_reason(e))
            if device.type == "cuda":
                row["peak_mem_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
            rows.append(row)
            del cache
            if device.type == "cuda":
                torch.cuda.empty_cache()
        return rows

    def failure_rows(self, point: tuple[int, int], reason: str) -> list[dict[str, Any]]:
        return [{**self._row(point, name), "status": "error", "error": reason} for name in self._caches]

    def frame(self, rows: list[dict[str, Any]]):
        return add_speedups(to_frame(rows))

    @staticmethod
    def read(path: Path):
        import pandas as pd

        return to_frame(pd.read_csv(path, dtype={c: str for c in ("cache", "kernel", "status", "error", "gpu_uuid")})
                        .to_dict("records"))  # fmt: skip

    @staticmethod
    def empty_frame():
        return to_frame([])

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> ModelSpeedStudy:
        return cls(recorded_config(meta, ("batch", "context", "cache"), KIND))

    def summarize(self, df) -> dict[str, Any]:
        from bench.engine import row_records

        points = {f"{r['cache']}/b{r['batch']}/ctx{r['context']}": {k: r[k] for k in (
            "decode_tokens_per_s", "speedup_vs_bf16", "attn_share", "status")} for r in row_records(df)}  # fmt: skip
        return {"schema_version": SCHEMA_VERSION, "kind": KIND, "points": points}

    def write_extras(self, out: Path, df, meta: dict[str, Any], summary: dict[str, Any]) -> list[Path]:
        from bench.engine import row_records

        (out / "model_speed.md").write_text(_markdown(row_records(df), meta))
        return [out / "model_speed.md"]

    def show_point(self, console, rows, point: tuple[int, int]) -> None:
        from bench.engine import row_records

        for r in row_records(rows):
            rate = "-" if r["decode_tokens_per_s"] is None else f"{r['decode_tokens_per_s']:.1f} tokens/s"
            share = "" if r["attn_share"] is None else f", attention share {r['attn_share']:.2f}"
            console.print(f"  {r['cache']}: {rate}{share}" + ("" if r["status"] == "ok" else f"  {r['status']}: {r['error']}"))

    def after_point(self) -> None:
        if self.session is not None and self.session.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()


def to_frame(rows: list[dict[str, Any]]):
    """Rows as a DataFrame with exactly :data:`COLUMNS`, nullable integer columns."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ("batch", "context", "bits", "group_size", "decode_steps", "kv_bytes"):
        df[c] = pd.to_numeric(df[c]).astype("Int64")
    for c in ("step_ms", "decode_tokens_per_s", "speedup_vs_bf16", "attn_ms_per_step", "cache_update_ms_per_step",
              "attn_share", "peak_mem_gib"):  # fmt: skip
        df[c] = pd.to_numeric(df[c]).astype("float64")
    return df


def add_speedups(df):
    """``speedup_vs_bf16`` = the row's decode tokens/s over the BF16 cache's at the same point (empty
    where either is missing)."""
    df = df.copy()
    bf16 = df[df["cache"] == "bf16"].set_index(["batch", "context"])["decode_tokens_per_s"]
    bf16 = bf16[~bf16.index.duplicated(keep="last")]
    keys = list(zip(df["batch"], df["context"]))
    base = [bf16.get(k) for k in keys]
    df["speedup_vs_bf16"] = [r / b if b and r == r and b == b else None for r, b in zip(df["decode_tokens_per_s"], base)]
    df["speedup_vs_bf16"] = df["speedup_vs_bf16"].astype("float64")
    return df


def default_out(device_type: str) -> Path:
    """``results/<timestamp>-model-speed-<git short>`` (without a GPU: under ``results/_scratch/``)."""
    from bench.manifest import git_state

    return new_run_dir(f"model-speed-{git_state().get('short') or 'nogit'}", device_type != "cuda")


def plan_model_speed(opts: ModelSpeedOptions, device: Any = "detect"):
    """What ``opts`` would run, without loading the model (:class:`bench.engine.RunPlan`, for
    ``--devices``). ``device``: a :class:`bench.arch.DeviceInfo`, ``None`` (no GPU) or ``"detect"``.

    Raises:
        FoscarError: what :meth:`ModelSpeedOptions.config` refuses.
    """
    from bench.arch import detect_device
    from bench.engine import RunPlan

    info = detect_device() if device == "detect" else device
    study = ModelSpeedStudy(opts.config())
    n = len(study.points())
    out = Path(opts.out) if opts.out is not None else default_out("cuda" if info is not None else "cpu")
    return RunPlan(n, out, f"{n} points (batch x context) x {len(study.row_keys(study.points()[0]))} caches")


def show_summary(console, summary: dict[str, Any], out: Path) -> None:
    """A finished (or merged) model-speed run's table (its ``model_speed.md``) on ``console``."""
    from rich.markdown import Markdown

    console.print(Markdown((Path(out) / "model_speed.md").read_text()))


def run_model_speed(opts: ModelSpeedOptions):
    """Do the whole ``foscar model-speed`` run on the engine; return its :class:`bench.engine.Outcome`
    (``.path``: the run directory).

    Raises:
        FoscarError: bad flags, a model that cannot be loaded from disk, an ``--out`` holding a
            run of another config or device, or that cannot be created.
    """
    from bench.hf_model import load_model, torch_device

    if opts.devices is not None:
        raise FoscarError("run_model_speed runs on one GPU; `--devices` runs through bench.devices.run_devices")
    config = opts.config()
    device = torch_device()
    loaded = load_model(config["model"], config["random_init"], device, seed=config["seed"],
                        num_layers=config["num_layers"])  # fmt: skip
    model = loaded.model

    import torch
    from transformers import AttentionInterface

    import foscar.hf as fh
    from bench.arch import detect_device
    from bench.config import config_hash
    from bench.engine import complete_run, gpu_site, make_console_for, start_run
    from bench.resume import device_mismatch
    from bench.manifest import git_state, software_versions

    if any(c != "bf16" for c in config["cache"]):  # every FOSCAR cache would fail at every point otherwise
        try:
            fh.check_model_config(model.config, config["group_size"])
        except ValueError as e:
            raise FoscarError(f"--group-size {config['group_size']} on {loaded.source}: {e}") from None

    attn_timer = _Timer(device)
    AttentionInterface.register(fh.ATTN_IMPLEMENTATION, attn_timer.wrap(fh.foscar_attention_forward))
    info = detect_device() if device.type == "cuda" else None
    device_name = torch.cuda.get_device_name(device) if info else "cpu (Triton interpreter)"
    out = Path(opts.out) if opts.out is not None else default_out(device.type)
    layers, hq, hkv, hd = fh.attention_shape(model.config)
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(opts.argv if opts.argv is not None else sys.argv),
        "model": loaded.source,
        "random_weights": loaded.random_weights,
        "note": "random weights: speed only, no accuracy claim" if loaded.random_weights else "",
        "shape": {"num_layers": layers, "num_qo_heads": hq, "num_kv_heads": hkv, "head_dim": hd,
                  "hidden_size": model.config.hidden_size, "vocab_size": model.config.vocab_size},  # fmt: skip
        "params": sum(p.numel() for p in model.parameters()),
        "device": device_name,
        "versions": {**software_versions(flashinfer=False), "transformers": __import__("transformers").__version__},
        "git": git_state(),
        "config": config,
        "config_hash": config_hash(config),
    }
    study = ModelSpeedStudy(config, SpeedSession(loaded, device, attn_timer))
    run = start_run(study, out, meta, opts.shard, refuse=lambda m: device_mismatch(m, device_name),
                    site=gpu_site(info, device.index or 0))  # fmt: skip

    def show(console, summary: dict[str, Any], df) -> None:
        show_summary(console, summary, out)
        console.print(f"wrote {out / 'results.csv'}, meta.json, summary.json, model_speed.md")

    return complete_run(study, run, opts.output, make_console_for(opts.output), show)


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

    from bench.plotting import FIGURE_WIDTH, palette, save_png
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
        save_png(fig, out / "model_speed.png")
        written.append(out / "model_speed.png")
    rows = [{c: (None if pd.isna(v) else v) for c, v in r.items()} for r in df.to_dict("records")]
    md = _markdown(rows, meta)
    md += ("\n![model speed](model_speed.png)\n\n*Left: decode tokens/s per point and cache; right: the same over "
           "the BF16 cache's (x, higher is better).*\n") if written else "\nNo row with status ok: nothing drawn.\n"
    (out / "report.md").write_text(md)
    return [*written, out / "report.md"]
