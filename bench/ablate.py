"""``foscar ablate``: isolate each idea on the same points and report its own speed-up.

Axes (each compared with its reference setting, everything else held fixed):

* ``reconstruction``: folded vs per-value reconstruction in the *same* CUDA kernel
  (``foscar.plan_decode(method=...)``, its ``run`` timed); reference ``per-value``, so the folded row's
  speed-up is what folding buys.
* ``group_size``: 32 / 64 / 128 channels per scale and offset (folded); reference 128.
  Smaller groups move more scale bytes and do more fold work per token.
* ``split_kv``: off (1 split) / fixed (16 splits) / auto (``choose_num_splits``);
  reference off.
* ``operand``: BF16 vs FP8 (e4m3) tensor-core operands (folded, CUDA kernel only;
  skipped with the reason elsewhere); reference ``bf16``. FP8 rows are held to
  :data:`TOLERANCE_FP8` (bench/NOTES.md §8: ~4e-2 is their rounding).
* ``cache``: contiguous vs paged (``foscar.paginate`` of the same cache, pages shuffled
  in memory, 16 and 64 tokens per page); reference ``contiguous``.
* ``k_layout``: token-wise K (G=128) vs channel-wise K (KIVI style, 128- and 32-token
  blocks; the same random data quantized that way, checked against its own fp64
  reference); reference ``token``. What the per-block query rebuild costs.

``--axis`` runs only the named axes.

A study of the engine (:mod:`bench.engine`, :class:`AblateStudy`): a point is
``(batch, context, bits)``, its rows are the settings; so ``--out DIR`` resumes,
``--shard K/N`` runs every N-th point, ``--devices`` runs one shard per GPU and
``foscar merge`` combines shards, as for ``foscar bench``.

Per point and setting: build the point's quantized cache (fresh random data), check
the output against the fp64 reference, time with CUDA-graph replay over rotating
copies (:mod:`bench.timing`). ``results.csv`` has one row per (point, axis, setting);
``summary.json`` the geometric-mean speed-up of every setting over its axis'
reference, with the min and max per-point speed-up. Same run-directory format as
``foscar bench`` (plus ``ablation.png``, ``ablation_points.png`` and ``ablate.md``,
:mod:`bench.ablate_report`); ``meta.json`` has ``kind: "ablate"``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.ablate_grid import (  # noqa: F401  (re-exported: bench.ablate.AXES, ...)
    AXES,
    COLUMNS,
    KIND,
    SETTINGS,
    Setting,
    add_reference_speedups,
    setting_dicts,
    summarize_ablation,
)
from bench.backends import Prepared, planned_decode
from bench.engine import OutputFormat, Study, StudyOptions
from bench.lazy import torch  # imported at first use: `--axis` is checked before it
from bench.timing import DEVICE_TIMINGS, time_fn

TOLERANCE = 2e-2
TOLERANCE_FP8 = 1e-1  # = bench's tolerance_fp8_operand
FULL_CHECK_MAX_TOKENS = 262144


def _prepared(w, s: Setting, backend: str) -> Prepared:
    """The setting's decode, planned once per input copy and its ``run`` timed, as ``foscar bench`` times
    (:func:`bench.backends.planned_decode`; bench/NOTES.md §80: the split merge a plan takes)."""
    import foscar

    cache = w.cache
    if s.page_size is not None:
        gen = torch.Generator().manual_seed(0)
        cache = w.shared(("ablate-paged", s.page_size),
                         lambda: foscar.paginate(w.cache, page_size=s.page_size, shuffle=True, generator=gen))
    # the same tokens either way: the bytes of the contiguous cache
    return planned_decode(w, cache, num_splits=s.num_splits, backend=backend, method=s.method, operand=s.operand)


def _unavailable(s: Setting, device: torch.device, backend: str, gqa: int) -> str | None:
    """Why a setting cannot run here (a skipped row), or ``None``."""
    from foscar.kernels import decode_cuda

    if s.method == "per-value" or s.operand == "fp8":
        what = "method='per-value'" if s.method == "per-value" else "operand='fp8'"
        if backend != "cuda":
            return f"{what} exists in the CUDA kernel only (this ablation runs backend={backend!r})"
        return decode_cuda.unavailable(device, gqa)
    return None


DEFAULT_POINTS = [(1, 32768), (8, 32768), (64, 32768), (8, 131072)]
SMOKE_POINTS = [(1, 64), (2, 200)]
DEFAULT_SHAPE = (32, 8, 128)  # Qwen3-8B attention
SMOKE_SHAPE = (4, 1, 128)
SHAPE_KEYS = ("num_qo_heads", "num_kv_heads", "head_dim")


@dataclass
class AblateOptions(StudyOptions):
    """The ``foscar ablate`` flags, parsed (the shared ones in :class:`bench.engine.StudyOptions`).
    Empty lists / ``None`` mean the defaults."""

    out: Path | None = None
    bits: list[int] = field(default_factory=list)
    batch: list[int] = field(default_factory=list)
    context: list[int] = field(default_factory=list)
    smoke: bool = False
    axes: list[str] = field(default_factory=list)  # --axis (empty: every axis, AXES)


@dataclass(frozen=True)
class AblateConfig:
    """What an ablation measures (``meta.json["config"]``; its hash is the resume/merge fingerprint)."""

    points: list[tuple[int, int, int]]  # (batch, context, bits), grid order
    shape: tuple[int, int, int]  # (num_qo_heads, num_kv_heads, head_dim)
    backend: str  # "cuda" or "triton"
    axes: list[str]  # the axes measured (AXES order)
    seed: int = 0
    warmup_ms: float = 25
    rep_ms: float = 100
    cpu_reps: int = 3

    def to_dict(self) -> dict[str, Any]:
        return {"points": [list(p) for p in self.points], "shape": dict(zip(SHAPE_KEYS, self.shape)),
                "backend": self.backend, "axes": list(self.axes), "seed": self.seed, "warmup_ms": self.warmup_ms,
                "rep_ms": self.rep_ms, "cpu_reps": self.cpu_reps}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AblateConfig:
        """The inverse of :meth:`to_dict`.

        Raises:
            FoscarError: not such a dict.
        """
        from bench.errors import FoscarError

        try:
            return cls(points=[tuple(int(x) for x in p) for p in d["points"]],
                       shape=tuple(int(d["shape"][k]) for k in SHAPE_KEYS), backend=str(d["backend"]),
                       axes=list(d["axes"]), seed=int(d["seed"]), warmup_ms=float(d["warmup_ms"]),
                       rep_ms=float(d["rep_ms"]), cpu_reps=int(d["cpu_reps"]))  # fmt: skip
        except (TypeError, KeyError, ValueError) as e:
            raise FoscarError(f"meta.json config: cannot rebuild the ablation's config ({e})") from None

    @property
    def settings(self) -> list[Setting]:
        return [s for s in SETTINGS if s.axis in self.axes]


class AblateStudy(Study):
    """``foscar ablate`` as an engine study: points ``(batch, context, bits)`` x the settings of
    the chosen axes; a point's rows check and time every setting on one quantized cache per
    (group size, K layout).

    Args:
        cfg: what to measure.
        device: where (``None``: the study only reads and summarizes rows, as a merge does).
    """

    kind = KIND

    def __init__(self, cfg: AblateConfig, device: torch.device | None = None):
        self.cfg, self.device = cfg, device

    def points(self) -> list[tuple[int, int, int]]:
        return list(self.cfg.points)

    def label(self, point: tuple[int, int, int]) -> str:
        batch, context, bits = point
        return f"batch {batch} x context {context}, int{bits}"

    def point_columns(self, point: tuple[int, int, int]) -> dict[str, Any]:
        return dict(zip(("batch", "context", "bits"), point))

    def row_keys(self, point: tuple[int, int, int]) -> list[tuple]:
        return [(s.axis, s.name) for s in self.cfg.settings]

    def row_key(self, row: dict[str, Any]) -> tuple:
        return (row["axis"], row["setting"])

    def _row(self, point: tuple[int, int, int], s: Setting) -> dict[str, Any]:
        batch, context, bits = point
        qo, kv, hd = self.cfg.shape
        return dict(axis=s.axis, setting=s.name, is_reference=s.reference, backend=self.cfg.backend, method=s.method,
                    operand=s.operand, page_size=s.page_size, bits=bits, group_size=s.group_size, k_block=s.k_block,
                    num_splits=s.num_splits, batch=batch, context=context,
                    num_qo_heads=qo, num_kv_heads=kv, head_dim=hd)  # fmt: skip

    def measure(self, point: tuple[int, int, int]) -> list[dict[str, Any]]:
        return measure_point(self.cfg, point, self.device, [self._row(point, s) for s in self.cfg.settings])

    def failure_rows(self, point: tuple[int, int, int], reason: str) -> list[dict[str, Any]]:
        return [{**self._row(point, s), "status": "error", "error": reason} for s in self.cfg.settings]

    def frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return add_reference_speedups(pd.DataFrame(rows, columns=COLUMNS))

    @staticmethod
    def read(path: Path) -> pd.DataFrame:
        return pd.read_csv(path, dtype={"error": str, "gpu_uuid": str})

    @staticmethod
    def empty_frame() -> pd.DataFrame:
        return pd.DataFrame([], columns=COLUMNS)

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> AblateStudy:
        return cls(AblateConfig.from_dict(meta.get("config") or {}))

    def summarize(self, df: pd.DataFrame) -> dict[str, Any]:
        return summarize_ablation(df)

    def write_extras(self, out: Path, df: pd.DataFrame, meta: dict[str, Any], summary: dict[str, Any]) -> list[Path]:
        from bench.ablate_report import AblationRun, write_ablation_report

        return write_ablation_report(out, AblationRun(out, df, meta, summary), md_name="ablate.md")

    def show_point(self, console, rows: pd.DataFrame, point: tuple[int, int, int]) -> None:
        console.print(f"ablate: {self.label(point)} done")

    def after_point(self) -> None:
        if self.device is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()


def measure_point(cfg: AblateConfig, point: tuple[int, int, int], device: torch.device,
                  rows: list[dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """Measure every setting of ``cfg`` at ``point`` (``(batch, context, bits)``) into ``rows`` (one per
    setting, filled in place; returned). A setting that cannot run here is ``skipped``; one whose
    output is further than the tolerance from the fp64 reference is ``failed`` and not timed; one
    that raises is ``error``; the others are timed (CUDA-graph replay over rotating copies)."""
    from bench.engine import error_reason
    from bench.sweep import rotation
    from bench.workload import Point, build_workload, max_rel_err

    batch, context, bits = point
    qo, kv, hd = cfg.shape
    by_group: dict[tuple[int, int | None], Any] = {}  # workloads by (group_size, k_block)
    for s, row in zip(cfg.settings, rows):
        why = _unavailable(s, device, cfg.backend, qo // kv)
        if why:
            row.update(status="skipped", error=why)
            continue
        try:
            key = (s.group_size, s.k_block)
            if key not in by_group:
                pt = Point(batch, context, bits, s.group_size, qo, kv, hd, 16, k_block=s.k_block)
                by_group[key] = build_workload(pt, device, cfg.seed, FULL_CHECK_MAX_TOKENS)
            w = by_group[key]
            prep = _prepared(w, s, cfg.backend)
            prep.fn()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            err = max_rel_err(prep.output(), w.reference, w.rows)
            row["max_rel_err"] = err
            tolerance = TOLERANCE_FP8 if s.operand == "fp8" else TOLERANCE
            if not err <= tolerance:
                row.update(status="failed", error=f"max_rel_err {err:.3g} > {tolerance:g} (or NaN); not timed")
                continue
            fns = rotation(prep, device)
            t = time_fn(fns, device.type, warmup_ms=cfg.warmup_ms, rep_ms=cfg.rep_ms, cpu_reps=cfg.cpu_reps)
            row.update(median_us=t.median_us, p20_us=t.p20_us, p80_us=t.p80_us, bytes=prep.bytes,
                       timing_mode=t.mode, status="ok")
            if t.mode in DEVICE_TIMINGS:
                row["tbps"] = prep.bytes / (t.median_us * 1e-6) / 1e12
            del fns, prep
        except Exception as e:  # a failing setting is recorded, the ablation goes on
            row.update(status="error", error=error_reason(e))
    del by_group
    return rows


def resolve_ablation(opts: AblateOptions, device_info) -> AblateConfig:
    """The ablation's config from the flags: without ``--batch``/``--context`` the points are batch x
    context of :data:`DEFAULT_POINTS` (smoke: :data:`SMOKE_POINTS`, tiny, through the Triton
    interpreter when there is no GPU), each at every ``--bits`` (default 2 and 4); the backend is
    ``cuda`` where FOSCAR's CUDA kernel runs on ``device_info``'s GPU, else ``triton``.

    Raises:
        FoscarError: an unknown axis.
    """
    from bench.errors import check_choices

    check_choices("--axis", opts.axes, AXES)
    pairs = SMOKE_POINTS if opts.smoke else DEFAULT_POINTS
    if opts.batch or opts.context:
        pairs = [(b, c) for b in (opts.batch or sorted({b for b, _ in pairs}))
                 for c in (opts.context or sorted({c for _, c in pairs}))]  # fmt: skip
    # a value given twice (--bits 2 --bits 2) gave the point twice, and the reference setting's speed-up over itself
    # was not 1: each point once, in order
    points = list(dict.fromkeys((b, c, n) for n in (opts.bits or [2, 4]) for b, c in pairs))
    shape = SMOKE_SHAPE if opts.smoke else DEFAULT_SHAPE
    backend = "triton"
    if device_info is not None:
        from foscar.kernels import decode_cuda

        device = torch.device("cuda", torch.cuda.current_device())
        backend = "cuda" if decode_cuda.unavailable(device, shape[0] // shape[1]) is None else "triton"
    axes = [a for a in AXES if not opts.axes or a in opts.axes]
    return AblateConfig(points=points, shape=shape, backend=backend, axes=axes)


def default_out(smoke: bool) -> Path:
    """``results/<timestamp>-ablate`` (smoke: under ``results/_scratch/``)."""
    from bench.engine import new_run_dir

    return new_run_dir(f"ablate{'-smoke' if smoke else ''}", smoke)


def _detect(opts: AblateOptions, device):
    from bench.arch import detect_device
    from bench.errors import FoscarError

    info = detect_device() if device == "detect" else device
    if info is None and not opts.smoke:
        raise FoscarError("foscar ablate needs a CUDA GPU (none detected); use --smoke for the tiny CPU grid")
    return info


def plan_ablation(opts: AblateOptions, device="detect"):
    """What ``opts`` would run, without running it (:class:`bench.engine.RunPlan`, for ``--devices``).
    ``device``: as :func:`run_ablation`'s (``None``: no GPU, e.g. fake devices).

    Raises:
        FoscarError: what :func:`run_ablation` refuses before measuring.
    """
    from bench.engine import RunPlan

    _detect(opts, device)  # no GPU without --smoke: refused here, not in every worker
    cfg = resolve_ablation(opts, None)  # the point count does not depend on the backend
    out = Path(opts.out) if opts.out is not None else default_out(opts.smoke)
    return RunPlan(len(cfg.points), out, f"{len(cfg.points)} ablation points x {len(cfg.settings)} settings")


def run_ablation(opts: AblateOptions, device: Any = "detect"):
    """The ``foscar ablate`` command on the engine: config, device, run directory, outputs.

    Args:
        opts: parsed flags (``devices`` unset: :mod:`bench.devices` runs those).
        device: a :class:`bench.arch.DeviceInfo`, ``None`` (no GPU), or ``"detect"``.

    Returns:
        :class:`bench.engine.Outcome` (the run directory; no problems).

    Raises:
        FoscarError: no GPU without ``--smoke``; an unknown axis; an ``--out`` holding a run
            of another config or shard.
    """
    from bench.config import config_hash
    from bench.engine import complete_run, enable_interpreter, gpu_site, make_console_for, start_run
    from bench.errors import FoscarError

    if opts.devices is not None:
        raise FoscarError("run_ablation runs on one GPU; `--devices` runs through bench.devices.run_devices")
    info = _detect(opts, device)
    if info is None:
        enable_interpreter()
    cfg = resolve_ablation(opts, info)
    out = Path(opts.out) if opts.out is not None else default_out(opts.smoke)

    from bench.manifest import git_state, software_versions

    dev = torch.device("cuda", torch.cuda.current_device()) if info else torch.device("cpu")
    study = AblateStudy(cfg, dev)
    config = cfg.to_dict()
    meta = {
        "kind": KIND,
        "command": "foscar " + " ".join(opts.argv or []),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": info.describe() if info else None,
        "smoke": opts.smoke,
        "triton_interpreter": info is None,
        "backend": cfg.backend,
        "shape": config["shape"],
        "points": config["points"],
        "settings": [d for d in setting_dicts() if d["axis"] in cfg.axes],
        "git": git_state(),
        "timing": "CUDA-graph replay over rotating input copies" if info else "interpreter timing, not a performance number",
        "versions": software_versions(flashinfer=False),
        "config": config,
        "config_hash": config_hash(config),
    }
    run = start_run(study, out, meta, opts.shard, refuse=lambda m: _gpu_mismatch(m, info),
                    site=gpu_site(info, dev.index or 0))  # fmt: skip

    def show(console, summary: dict[str, Any], df) -> None:
        show_summary(console, summary, out, on_gpu=info is not None, df=df)
        console.print(f"wrote {out / 'results.csv'}, summary.json, meta.json, ablate.md")

    return complete_run(study, run, opts.output, make_console_for(opts.output), show)


def _gpu_mismatch(meta: dict[str, Any], info) -> str | None:
    """Why a session on ``info``'s GPU may not resume the ablation of ``meta`` (another GPU), or ``None``."""
    old, new = meta.get("gpu"), info.describe() if info else None
    return None if old == new else f"the run was started on {old or 'the CPU'}, this is {new or 'the CPU'}"


def show_summary(console, summary: dict[str, Any], out: Path, on_gpu: bool = True, df: pd.DataFrame | None = None) -> None:
    """A finished (or merged) ablation's geometric-mean speed-ups as a table on ``console``; with ``df`` (the run's
    rows; default: ``out/results.csv`` where it exists), one line per setting that was not measured at some point,
    with the status and reason (a setting skipped everywhere, as the per-value reconstruction on the CPU, has no row
    in the table)."""
    from rich.table import Table

    t = Table(
        title="foscar ablate: geomean speed-up vs each axis' reference",
        caption=None if on_gpu else "interpreter timing, not a performance number",
    )
    for col in ("axis", "bits", "setting", "speed-up (x)", "min", "max", "points"):
        t.add_column(col)
    for axis, by_bits in summary["ablation"].items():
        for b, settings in by_bits.items():
            for s, v in settings.items():
                t.add_row(axis, b, s, f"{v['geomean_speedup']:.3f}", f"{v['min']:.3f}", f"{v['max']:.3f}", str(v["points"]))
    console.print(t)
    if df is None and (out / "results.csv").is_file():  # a merged run (--devices): its rows from the file
        df = pd.read_csv(out / "results.csv")
    if df is not None and len(df):
        missed = df[df["status"] != "ok"]
        for (axis, setting, status, error), g in missed.groupby(["axis", "setting", "status", "error"], dropna=False,
                                                              sort=False):
            why = f": {error}" if isinstance(error, str) and error else ""
            of = int(((df["axis"] == axis) & (df["setting"] == setting)).sum())
            console.print(f"not measured: {axis} / {setting} at {len(g)} of {of} "
                          f"rows ({status}{why})", markup=False, highlight=False)


def run_ablate(
    out: Path | None,
    bits: list[int] | None,
    batch: list[int] | None,
    context: list[int] | None,
    smoke: bool,
    argv: list[str] | None = None,
    console=None,
    axes: list[str] | None = None,
) -> Path:
    """:func:`run_ablation` with the flags as arguments (the Python API of ``foscar ablate``); returns
    the run directory. ``console``: ``None`` prints only the run directory.

    Raises:
        FoscarError: as :func:`run_ablation`.
    """
    opts = AblateOptions(out=out, bits=list(bits or []), batch=list(batch or []), context=list(context or []),
                         smoke=smoke, axes=list(axes or []), argv=argv,
                         output=OutputFormat.table if console is not None else OutputFormat.quiet)  # fmt: skip
    return run_ablation(opts).path
