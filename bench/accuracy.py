"""``foscar accuracy``: how far each kernel variant's output is from exact attention.

Grid: data kind (:data:`foscar.data.DATA_KINDS`) x bits x group size x rotation
(``none``, ``hadamard``: :mod:`foscar.rotation`) x layout (``quantized``: the whole
cache quantized; ``sink<S>+recent<R>``: :mod:`foscar.mixed`) x kernel variant
(:data:`VARIANTS`). Per cache configuration two references, both fp64:

* (a) ``vs_bf16``: exact attention of the original query over the unquantized BF16
  cache (``foscar.attention_reference``) — what quantization + kernel cost in total;
* (b) ``vs_deq``: the same over the cache the kernel actually reads (the dequantized
  cache; rotated query and cache, the result rotated back, with rotation; BF16 sinks
  and recent tokens with the mixed layout) — the kernel's own error.

The variant ``fp64-dequant`` *is* reference (b) (for the mixed layout: the fp64
reference on the middle, merged through the LSE with the fp64 exact pass), so its
``vs_bf16`` columns are the quantization error alone.

Run directory (same format as ``foscar bench``): ``results.csv`` (:data:`COLUMNS`,
one row per (data, bits, group_size, kernel, rotation, layout)), ``meta.json``
(versions, GPU, git, command, config), ``summary.json`` (headline numbers), plus
``accuracy.md`` and PNGs (:mod:`bench.accuracy_report`).
"""

from __future__ import annotations

import datetime as _dt
import inspect
import json
import math
import shlex
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from bench import SCHEMA_VERSION
from bench.accuracy_grid import (  # noqa: F401  (re-exported: bench.accuracy.VARIANT_NAMES, ...)
    COLUMN_DOCS,
    COLUMNS,
    DATA_KIND_NAMES,
    DEFAULT_SHAPE,
    KIND,
    METRIC_COLUMNS,
    PLAIN_LAYOUT,
    REFERENCE_VARIANT,
    ROTATIONS,
    SMOKE_GROUP_SIZES,
    SMOKE_SHAPE,
    TOLERANCE,
    TOLERANCE_FP8,
    VARIANT_NAMES,
    VARIANTS,
    Grid,
    Shape,
    Variant,
)
from bench.engine import Study, StudyOptions, enable_interpreter, new_run_dir
from bench.errors import FoscarError, check_choices
from bench.runfiles import make_dir


@dataclass
class AccuracyOptions(StudyOptions):
    """The ``foscar accuracy`` flags, parsed (the shared ones in :class:`bench.engine.StudyOptions`).
    Empty lists / ``None`` mean the defaults."""

    out: Path | None = None
    smoke: bool = False
    bits: list[int] = field(default_factory=list)
    group_sizes: list[int] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    rotations: list[str] = field(default_factory=list)
    batch: int | None = None
    context: int | None = None
    num_qo_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    num_sink: int | None = None
    num_recent: int | None = None
    no_mixed: bool = False
    seed: int = 0
    kv_file: Path | None = None  # a `foscar dump-kv` file: its layers are the data (real activations)
    plots: bool = True


# ---------------------------------------------------------------------------
# what can run here


def per_value_unavailable() -> str | None:
    """Why ``foscar.decode`` cannot be asked for the per-value variant, or ``None``.

    Checked with :mod:`inspect`: ``foscar.decode`` needs a ``method`` parameter; if
    ``foscar.decode`` (the module) lists its methods in ``METHODS``, ``"per-value"``
    must be one.
    """
    import foscar
    import foscar.decode as decode_mod

    params = inspect.signature(foscar.decode).parameters
    if "method" not in params:
        return "foscar.decode has no `method` parameter: the per-value variant is not exposed"
    methods = getattr(decode_mod, "METHODS", None)
    if methods is not None and "per-value" not in methods:
        return f"foscar.decode's METHODS {list(methods)} has no 'per-value'"
    return None


def variant_unavailable(variant: Variant, device, gqa: int) -> str | None:
    """Why ``variant`` cannot run on ``device`` (a ``torch.device``), or ``None``."""
    if variant.backend is None:
        return None
    if variant.method == "per-value":
        why = per_value_unavailable()
        if why:
            return why
    if variant.backend == "cuda":
        from foscar.kernels import decode_cuda

        return decode_cuda.unavailable(device, gqa)
    if device.type != "cuda":
        from foscar.kernels import decode_triton

        if not decode_triton.interpreter_enabled():
            return "no CUDA device and TRITON_INTERPRET is not set"
    return None


# ---------------------------------------------------------------------------
# measuring one cache configuration


def _decode_fn(variant: Variant) -> Callable:
    """``f(q, cache, sm_scale) -> (out, lse)`` for a quantized cache. FOSCAR's kernels through a plan made for the
    call and its ``run``, as a decode loop and ``foscar bench`` run them (the CUDA kernel's split merge is then the
    plans', in the decode kernel; a one-shot ``foscar.decode`` takes the merge kernel, bench/NOTES.md §80)."""
    from foscar import plan_decode, reference_decode

    if variant.backend is None:
        return lambda q, cache, scale: reference_decode(q, cache, sm_scale=scale, return_lse=True)
    extra = {"method": variant.method} if variant.method else {}
    return lambda q, cache, scale: plan_decode(cache, q.shape[1], sm_scale=scale, backend=variant.backend,
                                               operand=variant.operand, **extra).run(q, cache, return_lse=True)


def _metrics(out, ref_bf16, ref_deq) -> dict[str, float]:
    from foscar.accuracy import aggregate, output_errors

    row: dict[str, float] = {}
    for tag, ref in (("bf16", ref_bf16), ("deq", ref_deq)):
        e = output_errors(out, ref)
        row[f"rel_l2_vs_{tag}_max"], row[f"rel_l2_vs_{tag}_mean"] = aggregate(e.rel_l2)
        row[f"max_abs_vs_{tag}"] = aggregate(e.max_abs)[0]
        row[f"cosine_vs_{tag}_min"] = aggregate(e.cosine, worst="min")[0]
    return row


def measure_config(data, bits: int, group_size: int, rotation: str, layout: str, shape: Shape, variants, device,
                   ref_bf16, signs) -> list[dict[str, Any]]:  # fmt: skip
    """Rows for one (data, bits, group_size, rotation, layout), one per variant.

    Args:
        data: :class:`foscar.data.KVData` on ``device``.
        variants: ``[(Variant, reason or None)]``: a reason makes a ``skipped`` row.
        ref_bf16: ``[batch, num_qo_heads, head_dim]`` float64, reference (a).
        signs: ``[head_dim]`` +-1, the rotation's sign vector.
    """
    import torch

    from foscar import attention_reference, dequantize_kv, quantize_kv
    from foscar.accuracy import aggregate, attention_kl
    from foscar.mixed import build_mixed_cache, dequantize_mixed, mixed_decode
    from foscar.rotation import rotate, unrotate

    scale = data.sm_scale if data.sm_scale is not None else 1.0 / math.sqrt(shape.head_dim)  # (a dump-kv model's own)
    bf = torch.bfloat16
    if rotation == "hadamard":
        q, k, v = (rotate(x, signs).to(bf) for x in (data.q, data.k, data.v))
        back = lambda o: unrotate(o, signs)  # noqa: E731
    else:
        q, k, v = data.q, data.k, data.v
        back = lambda o: o.to(torch.float64)  # noqa: E731
    mixed = layout != PLAIN_LAYOUT
    if mixed:
        cache = build_mixed_cache(k, v, bits, group_size, data.seq_lens, shape.num_sink, shape.num_recent)
        k_eff, v_eff = dequantize_mixed(cache, torch.float64)
    else:
        cache = quantize_kv(k, v, bits=bits, group_size=group_size, seq_lens=data.seq_lens)
        k_eff, v_eff = dequantize_kv(cache, torch.float64)
    ref_deq = back(attention_reference(q, k_eff, v_eff, data.seq_lens, sm_scale=scale))
    kl_mean, kl_max = aggregate(attention_kl(data.q, data.k, q, k_eff, data.seq_lens, sm_scale=scale))
    del k_eff, v_eff

    base = {
        "data": data.name, "data_label": data.label, "bits": bits, "group_size": group_size, "rotation": rotation,
        "layout": layout, **asdict(shape),
    }  # fmt: skip
    if not mixed:  # the sink and recent tokens are kept in BF16 only in the mixed layout
        base.update(num_sink=None, num_recent=None)
    rows = []
    for variant, why_not in variants:
        row: dict[str, Any] = {c: None for c in COLUMNS}
        row.update(base, kernel=variant.name)
        if why_not:
            row.update(status="skipped", error=why_not)
            rows.append(row)
            continue
        fn = _decode_fn(variant)
        try:
            if mixed:
                is_ref = variant.backend is None
                out = mixed_decode(q, cache, sm_scale=scale, middle_decode=fn,
                                   dtype=torch.float64 if is_ref else torch.float32)  # fmt: skip
                if not is_ref:  # a serving engine hands BF16 on, like the kernel
                    out = out.to(bf)
            else:
                out = fn(q, cache, scale)[0]
        except (ValueError, RuntimeError) as e:
            row.update(status="error", error=f"{type(e).__name__}: {e}".splitlines()[0][:300])
            rows.append(row)
            continue
        row.update(_metrics(back(out), ref_bf16, ref_deq), attn_kl_mean=kl_mean, attn_kl_max=kl_max)
        err = row["rel_l2_vs_deq_max"]
        if not math.isfinite(err) or err > variant.tolerance:
            row.update(status="failed", error=f"rel_l2_vs_deq_max {err:.3g} > tolerance {variant.tolerance:g}")
        else:
            row["status"] = "ok"
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# the grid


def resolve_grid(opts: AccuracyOptions) -> Grid:
    """Defaults (``--smoke``: :data:`SMOKE_SHAPE`, else :data:`DEFAULT_SHAPE`) with the flags applied.

    Raises:
        FoscarError: an unknown data kind, kernel or rotation; a shape that does not fit.
    """
    from bench.config import SUPPORTED_HEAD_DIMS
    from foscar.data import DATA_KINDS
    from foscar.quant import SUPPORTED_BITS, SUPPORTED_GROUP_SIZES

    s = SMOKE_SHAPE if opts.smoke else DEFAULT_SHAPE
    real: list[str] = []
    from_file: tuple[str, ...] = ()  # the Shape fields a --kv-file sets (its flags are not used)
    if opts.kv_file is not None:  # real activations: the file's layers set the shape (flags may not override it)
        from bench.dump_kv import load_kv_file

        layers, _ = load_kv_file(opts.kv_file, "cpu")
        real = [d.name for d in layers]
        (b, hq, hd), (_, hkv, ctx, _) = layers[0].q.shape, layers[0].k.shape
        s = Shape(batch=b, context=ctx, num_qo_heads=hq, num_kv_heads=hkv, head_dim=hd,
                  num_sink=min(s.num_sink, ctx // 4), num_recent=min(s.num_recent, ctx // 4))  # fmt: skip
        from_file = ("batch", "context", "num_qo_heads", "num_kv_heads", "head_dim")
    # every Shape field has a flag (an AccuracyOptions field) of its name; None: not given
    flags = {f.name: getattr(opts, f.name) for f in fields(Shape) if f.name not in from_file}
    shape = replace(s, **{k: v for k, v in flags.items() if v is not None})
    for name, given, allowed in (
        ("--data", opts.data, list(DATA_KINDS)),
        ("--kernel", opts.kernels, list(VARIANT_NAMES)),
        ("--rotation", opts.rotations, list(ROTATIONS)),
        ("--bits", opts.bits, list(SUPPORTED_BITS)),
        ("--group-size", opts.group_sizes, list(SUPPORTED_GROUP_SIZES)),
    ):
        check_choices(name, given, allowed)
    if shape.num_qo_heads % shape.num_kv_heads:
        raise FoscarError(f"--num-qo-heads {shape.num_qo_heads} must be a multiple of --num-kv-heads {shape.num_kv_heads}")
    check_choices("--head-dim", [shape.head_dim], SUPPORTED_HEAD_DIMS)  # (bench's check and wording)
    groups = sorted(set(opts.group_sizes or (SMOKE_GROUP_SIZES if opts.smoke else SUPPORTED_GROUP_SIZES)))
    too_big = [g for g in groups if shape.head_dim % g]
    if too_big:
        if opts.group_sizes:
            raise FoscarError(f"--group-size {too_big[0]} does not divide --head-dim {shape.head_dim}")
        groups = [g for g in groups if g not in too_big] or [max(g for g in SUPPORTED_GROUP_SIZES if shape.head_dim % g == 0)]
    layouts = [PLAIN_LAYOUT]
    if not opts.no_mixed:
        layouts.append(f"sink{shape.num_sink}+recent{shape.num_recent}")
    return Grid(
        shape=shape,
        bits=sorted(set(opts.bits or SUPPORTED_BITS)),
        group_sizes=groups,
        data=real + list(dict.fromkeys(opts.data or ([] if real else DATA_KINDS))),
        kernels=list(dict.fromkeys(opts.kernels or VARIANT_NAMES)),
        rotations=list(dict.fromkeys(opts.rotations or ROTATIONS)),
        layouts=layouts,
        seed=opts.seed,
        kv_file=str(opts.kv_file) if opts.kv_file is not None else None,
    )


def grid_points(grid: Grid) -> list[tuple[str, int, int, str, str]]:
    """The cache configurations ``(data, bits, group_size, rotation, layout)`` in grid order (data
    kind outermost, then bits, group size, rotation, layout): the points of :class:`AccuracyStudy`."""
    return [(d, b, g, r, lay) for d in grid.data for b in grid.bits for g in grid.group_sizes
            for r in grid.rotations for lay in grid.layouts]  # fmt: skip


POINT_COLUMNS = ("data", "bits", "group_size", "rotation", "layout")


class AccuracyStudy(Study):
    """``foscar accuracy`` as an engine study: a point is a cache configuration
    (:func:`grid_points`), its rows the kernel variants; a point is measured by
    :func:`measure_config` (the data of its kind and reference (a) are built once per kind).

    Args:
        grid: the resolved grid.
        device: where to measure (``None``: the study only reads and summarizes rows, as a merge does).
        smoke: recorded in ``summary.json``.
        plots: write the PNGs and ``accuracy.md`` at the end (:meth:`write_extras`).
    """

    kind = KIND

    def __init__(self, grid: Grid, device=None, smoke: bool = False, plots: bool = True):
        self.grid, self.device, self.smoke, self.plots = grid, device, smoke, plots
        self._points = grid_points(grid)
        self._variants = [v for v in VARIANTS if v.name in grid.kernels]
        self._data: tuple[str, Any, Any] | None = None  # (kind, KVData, reference (a)) of the last point
        self._prepared: dict[str, Any] | None = None

    def points(self) -> list[tuple]:
        return self._points

    def label(self, point: tuple) -> str:
        data, bits, g, rotation, layout = point
        return f"{data} int{bits} g{g} rotation {rotation}, {layout}"

    def point_columns(self, point: tuple) -> dict[str, Any]:
        return dict(zip(POINT_COLUMNS, point))

    def row_keys(self, point: tuple) -> list[tuple]:
        return [(v.name,) for v in self._variants]

    def row_key(self, row: dict[str, Any]) -> tuple:
        return (row["kernel"],)

    def _setup(self) -> dict[str, Any]:
        """Once per run: which variants can run here, the rotation's signs, a --kv-file's layers."""
        if self._prepared is None:
            from foscar.rotation import random_signs

            s, dev = self.grid.shape, self.device
            real = {}
            if self.grid.kv_file is not None:
                from bench.dump_kv import load_kv_file

                real = {d.name: d for d in load_kv_file(self.grid.kv_file, dev)[0]}
            self._prepared = {
                "variants": [(v, variant_unavailable(v, dev, s.num_qo_heads // s.num_kv_heads)) for v in self._variants],
                "signs": random_signs(s.head_dim, seed=self.grid.seed + 1).to(dev),
                "real": real,
            }
        return self._prepared

    def _data_of(self, kind: str):
        """The data of ``kind`` and reference (a) over it, kept while the points are of that kind."""
        if self._data is None or self._data[0] != kind:
            import torch

            from foscar import attention_reference
            from foscar.data import make_kv

            self._data = None
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            s = self.grid.shape
            data = self._setup()["real"].get(kind) or make_kv(kind, s.batch, s.num_qo_heads, s.num_kv_heads, s.context,
                                                              s.head_dim, seed=self.grid.seed, device=self.device)  # fmt: skip
            ref = attention_reference(data.q, data.k, data.v, data.seq_lens, sm_scale=data.sm_scale)
            self._data = (kind, data, ref)
        return self._data[1], self._data[2]

    def measure(self, point: tuple) -> list[dict[str, Any]]:
        kind, bits, g, rotation, layout = point
        setup = self._setup()
        data, ref_bf16 = self._data_of(kind)
        rows = measure_config(data, bits, g, rotation, layout, self.grid.shape, setup["variants"], self.device,
                              ref_bf16, setup["signs"])  # fmt: skip
        for r in rows:
            r["seed"] = self.grid.seed
        return rows

    def failure_rows(self, point: tuple, reason: str) -> list[dict[str, Any]]:
        rows = []
        for v in self._variants:
            row: dict[str, Any] = {c: None for c in COLUMNS}
            row.update(self.point_columns(point), **asdict(self.grid.shape), kernel=v.name, seed=self.grid.seed,
                       status="error", error=reason)  # fmt: skip
            rows.append(row)
        return rows

    def frame(self, rows: list[dict[str, Any]]):
        return to_frame(rows)

    @staticmethod
    def read(path: Path):
        return read_accuracy(path)

    @staticmethod
    def empty_frame():
        return to_frame([])

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> AccuracyStudy:
        return cls(grid_from_meta(meta), smoke=bool(meta.get("smoke")))

    def summarize(self, df) -> dict[str, Any]:
        summary = summarize(df, self.grid)
        summary["smoke"] = self.smoke
        return summary

    def write_extras(self, out: Path, df, meta: dict[str, Any], summary: dict[str, Any]) -> list[Path]:
        if not self.plots:
            return []
        from bench.accuracy_report import write_accuracy_report

        return write_accuracy_report(out, df, summary, self.grid, meta)


def to_frame(rows: list[dict[str, Any]]):
    """Rows as a DataFrame with exactly :data:`COLUMNS` and numeric metric columns."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ("bits", "group_size", "num_sink", "num_recent", "batch", "context", "num_qo_heads", "num_kv_heads",
              "head_dim", "seed"):  # fmt: skip
        df[c] = pd.to_numeric(df[c]).astype("Int64")
    for c in METRIC_COLUMNS:
        df[c] = pd.to_numeric(df[c]).astype("float64")
    return df


def read_accuracy(path: Path):
    """Read an accuracy ``results.csv`` back with the schema's dtypes."""
    import pandas as pd

    df = pd.read_csv(path, dtype={c: str for c in ("data", "data_label", "kernel", "rotation", "layout", "status", "error",
                                                   "gpu_uuid")})  # fmt: skip
    return to_frame(df.to_dict("records"))


# ---------------------------------------------------------------------------
# summary and manifest


def _finite(x: Any) -> float | None:
    return float(x) if x is not None and isinstance(x, (int, float)) and math.isfinite(x) else None


def summarize(df, grid: Grid) -> dict[str, Any]:
    """``summary.json``: the headline numbers.

    * ``kernel_max_rel_l2_vs_deq[kernel]``: the worst ``rel_l2_vs_deq_max`` of each
      kernel over its ``ok``/``failed`` rows (the kernel's own error; ``None`` where any row's is
      NaN or Inf), ``rows``, ``non_finite`` (rows whose error is NaN or Inf);
    * ``quantization_error``: per (data, bits, group_size, layout, rotation), the
      ``fp64-dequant`` row's ``rel_l2_vs_bf16_max``, ``cosine_vs_bf16_min`` and
      ``attn_kl_mean`` (the cache's error, whatever the kernel);
    * ``rotation_gain["<data>/int<bits>/g<G>/<layout>"]`` = error without rotation /
      error with it (> 1: the rotation removes error);
    * ``status_counts``.
    """
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "shape": asdict(grid.shape),
        "references": {
            "vs_bf16": "fp64 attention of the original query over the unquantized BF16 cache",
            "vs_deq": "fp64 attention over the cache the kernel reads (dequantized; rotated and rotated back; "
            "BF16 sinks/recent in the mixed layout)",
        },
        "status_counts": {str(k): int(v) for k, v in df["status"].value_counts().items()},
        "kernel_max_rel_l2_vs_deq": {},
        "quantization_error": [],
        "rotation_gain": {},
    }
    measured = df[df["status"].isin(["ok", "failed"])]
    for kernel, grp in measured.groupby("kernel", sort=False):
        errors = [float(x) for x in grp["rel_l2_vs_deq_max"]]
        non_finite = sum(not math.isfinite(x) for x in errors)
        out["kernel_max_rel_l2_vs_deq"][str(kernel)] = {
            # a NaN or Inf error (a failed row) makes the max null: pandas' max skipped it and showed a pass
            "max": None if non_finite or not errors else _finite(max(errors)),
            "rows": int(len(grp)),
            "non_finite": non_finite,
        }
    ref = measured[measured["kernel"] == REFERENCE_VARIANT]
    for r in ref.to_dict("records"):
        out["quantization_error"].append(
            {
                "data": r["data"], "bits": int(r["bits"]), "group_size": int(r["group_size"]), "layout": r["layout"],
                "rotation": r["rotation"], "rel_l2_vs_bf16_max": _finite(r["rel_l2_vs_bf16_max"]),
                "cosine_vs_bf16_min": _finite(r["cosine_vs_bf16_min"]), "attn_kl_mean": _finite(r["attn_kl_mean"]),
            }
        )  # fmt: skip
    if {"none", "hadamard"} <= set(ref["rotation"]):
        keys = ["data", "bits", "group_size", "layout"]
        piv = ref.pivot_table(index=keys, columns="rotation", values="rel_l2_vs_bf16_max", aggfunc="first")
        for (data, bits, g, layout), r in piv.iterrows():
            gain = r["none"] / r["hadamard"] if r["hadamard"] > 0 else math.nan
            out["rotation_gain"][f"{data}/int{int(bits)}/g{int(g)}/{layout}"] = _finite(gain)
    return out


def build_accuracy_manifest(grid: Grid, device_info, interpreter: bool, smoke: bool, arch: str,
                            variants: dict[str, str], argv: list[str] | None,
                            gpu_uuid: str | None = None) -> dict[str, Any]:  # fmt: skip
    """``meta.json`` for an accuracy run: bench's manifest fields that apply (no timing, no HBM ceiling);
    ``gpu_uuid``: the GPU's UUID (:func:`bench.engine.gpu_site`), recorded as ``gpu.uuid``."""
    from bench.manifest import driver_version, git_state, software_versions

    gpu = None
    if device_info is not None:
        gpu = {
            "name": device_info.name,
            "uuid": gpu_uuid,
            "compute_capability": f"{device_info.capability[0]}.{device_info.capability[1]}",
            "sm_count": device_info.sm_count,
            "total_memory_bytes": device_info.total_memory,
            "driver": driver_version(),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "date": _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(argv if argv is not None else sys.argv),
        "arch": arch,
        "smoke": smoke,
        "triton_interpreter": interpreter,
        "gpu": gpu,
        "versions": software_versions(flashinfer=False),
        "git": git_state(),
        "config": grid.to_dict(),
        "variants": variants,
        "columns": COLUMN_DOCS,
    }


# ---------------------------------------------------------------------------
# end to end


def make_out_dir(out: Path) -> Path:
    """Create the run directory, refusing one that already holds results.

    Raises:
        FoscarError: ``out`` holds a results.csv, or cannot be created.
    """
    if (out / "results.csv").exists():
        raise FoscarError(f"{out} already holds results.csv; pass a new --out DIR")
    make_dir(out, "run directory")
    return out


def default_out(opts: AccuracyOptions, arch: str) -> Path:
    """``results/<timestamp>-<arch>-accuracy-<git short>`` (smoke: under ``results/_scratch/``)."""
    from bench.manifest import git_state

    return new_run_dir(f"{arch}-accuracy{'-smoke' if opts.smoke else ''}-{git_state().get('short') or 'nogit'}", opts.smoke)


def _detect(opts: AccuracyOptions, device: Any):
    """``(DeviceInfo or None, arch label)``.

    Raises:
        FoscarError: no GPU without ``--smoke``.
    """
    from bench.arch import Arch, detect_device, resolve_arch

    info = detect_device() if device == "detect" else device
    if info is None and not opts.smoke:
        raise FoscarError(
            "no CUDA GPU detected; the default accuracy grid (batch 4 x 8192 tokens x 32/8 heads) needs one. "
            "Use --smoke for the tiny grid through the Triton interpreter on CPU."
        )
    return info, resolve_arch(Arch.auto, info, smoke=True)  # a label only: accuracy runs on any GPU


def plan_accuracy(opts: AccuracyOptions, device: Any = "detect"):
    """What ``opts`` would run, without running it (:class:`bench.engine.RunPlan`, for ``--devices``).
    ``device``: as :func:`run_accuracy`'s (``None``: no GPU, e.g. fake devices).

    Raises:
        FoscarError: what :func:`run_accuracy` refuses before measuring.
    """
    from bench.engine import RunPlan

    _, arch = _detect(opts, device)
    grid = resolve_grid(opts)
    n = grid.num_configs()
    out = Path(opts.out) if opts.out is not None else default_out(opts, arch)
    return RunPlan(n, out, f"{n} cache configurations x {len(grid.kernels)} variants")


def show_summary(console, summary: dict[str, Any], out: Path) -> None:
    """A finished (or merged) accuracy run's table on ``console`` (from its results.csv)."""
    from bench.accuracy_report import accuracy_table

    console.print(accuracy_table(read_accuracy(Path(out) / "results.csv")))


def run_accuracy(opts: AccuracyOptions, device: Any = "detect"):
    """Do the whole ``foscar accuracy`` run on the engine; return its :class:`bench.engine.Outcome`
    (``.path``: the run directory).

    An ``--out DIR`` holding an accuracy run of the same grid is resumed (finished cache
    configurations are kept); ``--shard K/N`` runs every N-th configuration.

    Args:
        opts: parsed flags (``devices`` unset: :mod:`bench.devices` runs those).
        device: a :class:`bench.arch.DeviceInfo`, ``None`` (no GPU), or ``"detect"``.

    Raises:
        FoscarError: no GPU without ``--smoke``; bad flags; an ``--out`` holding a run of another
            grid or shard, or that cannot be created.
    """
    from bench.config import config_hash
    from bench.engine import complete_run, gpu_site, make_console_for, start_run
    from bench.resume import gpu_mismatch

    if opts.devices is not None:
        raise FoscarError("run_accuracy runs on one GPU; `--devices` runs through bench.devices.run_devices")
    info, arch = _detect(opts, device)
    interpreter = info is None
    if interpreter:
        enable_interpreter()
    grid = resolve_grid(opts)

    import torch

    dev = torch.device("cpu") if info is None else torch.device("cuda", torch.cuda.current_device())
    out = Path(opts.out) if opts.out is not None else default_out(opts, arch)
    study = AccuracyStudy(grid, dev, smoke=opts.smoke, plots=opts.plots)
    variants = {v.name: v.description for v in VARIANTS if v.name in grid.kernels}
    site = gpu_site(info, dev.index or 0)
    meta = build_accuracy_manifest(grid, info, interpreter, opts.smoke, arch, variants, opts.argv, site.gpu_uuid)
    meta["config_hash"] = config_hash(meta["config"])
    run = start_run(study, out, meta, opts.shard, refuse=lambda m: gpu_mismatch(m, info), site=site)
    console = make_console_for(opts.output)
    if console:
        s = grid.shape
        what = f", shard {opts.shard.label()} ({len(run.indices)} of them)" if opts.shard is not None else ""
        console.print(
            f"foscar accuracy: {grid.num_configs()} cache configurations{what} x {len(grid.kernels)} variants, batch "
            f"{s.batch} x {s.context} tokens, {s.num_qo_heads}/{s.num_kv_heads} heads, head_dim {s.head_dim} on "
            f"{info.describe() if info else 'CPU (Triton interpreter)'} -> {out}"
        )

    def show(console, summary: dict[str, Any], df) -> None:
        from bench.accuracy_report import accuracy_table

        console.print(accuracy_table(df))
        names = ", ".join(p.name for p in sorted(out.glob("accuracy*")) if opts.plots)
        console.print(f"wrote {out / 'results.csv'}, meta.json, summary.json{', ' + names if names else ''}")

    return complete_run(study, run, opts.output, console, show)


def grid_from_meta(meta: dict[str, Any]) -> Grid:
    """The :class:`Grid` an accuracy run recorded in ``meta["config"]``.

    Raises:
        FoscarError: the recorded config cannot be rebuilt.
    """
    try:
        cfg = {k: v for k, v in meta["config"].items() if k not in ("tolerance", "tolerance_fp8")}
        return Grid(**{**cfg, "shape": Shape(**cfg["shape"])})
    except (TypeError, KeyError, AttributeError) as e:
        raise FoscarError(f"meta.json config: cannot rebuild the accuracy grid ({e})") from None


def load_accuracy_run(run_dir: Path):
    """Read an accuracy run back: ``(results frame, meta.json dict, Grid)``.

    Raises:
        FoscarError: ``results.csv`` or ``meta.json`` missing or unreadable, or not an accuracy run.
    """
    run_dir = Path(run_dir)
    try:
        meta = json.loads((run_dir / "meta.json").read_text())
        df = read_accuracy(run_dir / "results.csv")
    except (OSError, ValueError) as e:
        raise FoscarError(f"{run_dir}: cannot read results.csv and meta.json ({e})") from None
    if meta.get("kind") != KIND:
        raise FoscarError(f"{run_dir}: meta.json is not from `foscar accuracy` (kind {meta.get('kind')!r})")
    return df, meta, grid_from_meta(meta)


def rebuild(run_dir: Path) -> list[Path]:
    """Recompute ``summary.json``, the PNGs and ``accuracy.md`` of a run from its
    ``results.csv`` and ``meta.json`` (e.g. when only some files came back from a GPU
    machine). The rows are not touched.

    Raises:
        FoscarError: ``results.csv`` or ``meta.json`` missing or not an accuracy run.
    """
    from bench.results import write_json

    run_dir = Path(run_dir)
    df, meta, grid = load_accuracy_run(run_dir)
    study = AccuracyStudy(grid, smoke=bool(meta.get("smoke")))
    summary = {**study.summarize(df), "problems": study.problems(df)}
    write_json(summary, run_dir / "summary.json")
    return [run_dir / "summary.json", *study.write_extras(run_dir, df, meta, summary)]
