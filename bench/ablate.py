"""``foscar ablate``: isolate each idea on the same points and report its own speed-up.

Axes (each compared with its reference setting, everything else held fixed):

* ``reconstruction``: folded vs per-value reconstruction in the *same* CUDA kernel
  (``foscar.decode(method=...)``); reference ``per-value``, so the folded row's
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

Per point and setting: build the point's quantized cache (fresh random data), check
the output against the fp64 reference, time with CUDA-graph replay over rotating
copies (:mod:`bench.timing`). ``results.csv`` has one row per (point, axis, setting);
``summary.json`` the geometric-mean speed-up of every setting over its axis'
reference, with the min and max per-point speed-up. Same run-directory format as
``foscar bench`` (plus ``ablation.png``, ``ablation_points.png`` and ``ablate.md``,
:mod:`bench.ablate_report`); ``meta.json`` has ``kind: "ablate"``.
"""

from __future__ import annotations

import json
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
from bench.backends import Prepared, clone_cache
from bench.lazy import torch  # imported at first use: `--axis` is checked before it
from bench.timing import DEVICE_TIMINGS, time_fn

TOLERANCE = 2e-2
TOLERANCE_FP8 = 1e-1  # = bench's tolerance_fp8_operand
FULL_CHECK_MAX_TOKENS = 262144


def _prepared(w, s: Setting, backend: str) -> Prepared:
    import foscar

    last: dict[str, torch.Tensor] = {}
    sm_scale = w.sm_scale
    cache = w.cache
    if s.page_size is not None:
        gen = torch.Generator().manual_seed(0)
        cache = w.shared(("ablate-paged", s.page_size),
                         lambda: foscar.paginate(w.cache, page_size=s.page_size, shuffle=True, generator=gen))

    def make(q, c, keep: bool):
        def fn():
            out = foscar.decode(q, c, sm_scale=sm_scale, num_splits=s.num_splits, backend=backend, method=s.method,
                                operand=s.operand)
            if keep:
                last["out"] = out

        return fn

    return Prepared(
        fn=make(w.q, cache, True),
        output=lambda: last["out"],
        bytes=w.cache.bytes_read() + w.io_bytes(),  # the same tokens either way
        replica=lambda: make(w.q.clone(), clone_cache(cache), False),
    )


def _unavailable(s: Setting, device: torch.device, backend: str, gqa: int) -> str | None:
    """Why a setting cannot run here (a skipped row), or ``None``."""
    from foscar.kernels import decode_cuda

    if s.method == "per-value" or s.operand == "fp8":
        what = "method='per-value'" if s.method == "per-value" else "operand='fp8'"
        if backend != "cuda":
            return f"{what} exists in the CUDA kernel only (this ablation runs backend={backend!r})"
        return decode_cuda.unavailable(device, gqa)
    return None


def run_ablation(
    points: list[tuple[int, int, int]],
    shape: tuple[int, int, int],
    device: torch.device,
    backend: str,
    seed: int = 0,
    warmup_ms: float = 25,
    rep_ms: float = 100,
    cpu_reps: int = 3,
    csv_path: Path | None = None,
    console=None,
    axes: list[str] | None = None,
) -> pd.DataFrame:
    """Measure every setting at every ``(batch, context, bits)`` point.

    Args:
        points: ``(batch, context, bits)`` tuples.
        shape: ``(num_qo_heads, num_kv_heads, head_dim)``.
        device: where to run (CPU only under the Triton interpreter).
        backend: ``"cuda"`` or ``"triton"`` (per-value and FP8 rows are skipped with
            the reason where the CUDA kernel cannot run).
        csv_path: rewritten after every point, so nothing measured is lost.
        axes: only the settings of these axes (default: all, :data:`AXES`).

    Returns:
        One row per (point, setting) with :data:`COLUMNS`.
    """
    from bench.sweep import error_reason, rotation
    from bench.workload import Point, build_workload, max_rel_err

    qo, kv, hd = shape
    rows: list[dict[str, Any]] = []
    settings = [s for s in SETTINGS if axes is None or s.axis in axes]
    for batch, context, bits in points:
        by_group: dict[tuple[int, int | None], Any] = {}  # workloads by (group_size, k_block)
        for s in settings:
            row = dict(axis=s.axis, setting=s.name, is_reference=s.reference, backend=backend, method=s.method,
                       operand=s.operand, page_size=s.page_size, bits=bits, group_size=s.group_size, k_block=s.k_block,
                       num_splits=s.num_splits, batch=batch, context=context,
                       num_qo_heads=qo, num_kv_heads=kv, head_dim=hd)
            rows.append(row)
            why = _unavailable(s, device, backend, qo // kv)
            if why:
                row.update(status="skipped", error=why)
                continue
            try:
                key = (s.group_size, s.k_block)
                if key not in by_group:
                    pt = Point(batch, context, bits, s.group_size, qo, kv, hd, 16, k_block=s.k_block)
                    by_group[key] = build_workload(pt, device, seed, FULL_CHECK_MAX_TOKENS)
                w = by_group[key]
                prep = _prepared(w, s, backend)
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
                t = time_fn(fns, device.type, warmup_ms=warmup_ms, rep_ms=rep_ms, cpu_reps=cpu_reps)
                row.update(median_us=t.median_us, p20_us=t.p20_us, p80_us=t.p80_us, bytes=prep.bytes,
                           timing_mode=t.mode, status="ok")
                if t.mode in DEVICE_TIMINGS:
                    row["tbps"] = prep.bytes / (t.median_us * 1e-6) / 1e12
                del fns, prep
            except Exception as e:  # a failing setting is recorded, the ablation goes on
                row.update(status="error", error=error_reason(e))
        del by_group
        if device.type == "cuda":
            torch.cuda.empty_cache()
        df = add_reference_speedups(pd.DataFrame(rows, columns=COLUMNS))
        if csv_path is not None:
            df.to_csv(csv_path, index=False)
        if console is not None:
            console.print(f"ablate: batch {batch} x context {context}, int{bits} done")
    return add_reference_speedups(pd.DataFrame(rows, columns=COLUMNS))


def write_outputs(df: pd.DataFrame, out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Write results.csv, summary.json, meta.json, the PNGs and ablate.md (:mod:`bench.ablate_report`) into ``out``."""
    from bench.ablate_report import AblationRun, write_ablation_report

    df.to_csv(out / "results.csv", index=False)
    summary = summarize_ablation(df)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    write_ablation_report(out, AblationRun(out, df, meta, summary), md_name="ablate.md")
    return summary


DEFAULT_POINTS = [(1, 32768), (8, 32768), (64, 32768), (8, 131072)]
SMOKE_POINTS = [(1, 64), (2, 200)]
DEFAULT_SHAPE = (32, 8, 128)  # Qwen3-8B attention
SMOKE_SHAPE = (4, 1, 128)


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
    """The ``foscar ablate`` command: points, device, run directory, outputs.

    Without ``--batch``/``--context`` the points are batch x context of
    :data:`DEFAULT_POINTS` (smoke: :data:`SMOKE_POINTS`, tiny, through the Triton
    interpreter when there is no GPU, times not performance numbers).

    Raises:
        FoscarError: no GPU without ``--smoke``; an output directory that already
            holds results; an unknown axis.
    """
    import datetime as _dt

    from bench.arch import detect_device
    from bench.errors import FoscarError, check_choices
    from bench.run import RESULTS_DIR, SCRATCH_DIR, enable_interpreter

    check_choices("--axis", axes, AXES)
    info = detect_device()
    if info is None and not smoke:
        raise FoscarError("foscar ablate needs a CUDA GPU (none detected); use --smoke for the tiny CPU grid")
    if info is None:
        enable_interpreter()
    pairs = SMOKE_POINTS if smoke else DEFAULT_POINTS
    if batch or context:
        pairs = [(b, c) for b in (batch or sorted({b for b, _ in pairs})) for c in (context or sorted({c for _, c in pairs}))]
    points = [(b, c, n) for n in (bits or [2, 4]) for b, c in pairs]
    shape = SMOKE_SHAPE if smoke else DEFAULT_SHAPE

    if out is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = (SCRATCH_DIR if smoke else RESULTS_DIR) / f"{stamp}-ablate{'-smoke' if smoke else ''}"
    out = Path(out)
    if (out / "results.csv").exists():
        raise FoscarError(f"{out} already holds results.csv; pass a new --out DIR")
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from bench.manifest import git_state, software_versions
    from foscar.kernels import decode_cuda

    device = torch.device("cuda", torch.cuda.current_device()) if info else torch.device("cpu")
    backend = "cuda" if decode_cuda.unavailable(device, shape[0] // shape[1]) is None else "triton"
    df = run_ablation(points, shape, device, backend, csv_path=out / "results.csv", console=console, axes=axes)
    meta = {
        "kind": KIND,
        "command": "foscar " + " ".join(argv or []),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": info.describe() if info else None,
        "smoke": smoke,
        "triton_interpreter": info is None,
        "backend": backend,
        "shape": dict(zip(("num_qo_heads", "num_kv_heads", "head_dim"), shape)),
        "points": points,
        "settings": [d for d in setting_dicts() if axes is None or d["axis"] in axes],
        "git": git_state(),
        "timing": "CUDA-graph replay over rotating input copies" if info else "interpreter timing, not a performance number",
        "versions": software_versions(flashinfer=False),
    }
    summary = write_outputs(df, out, meta)
    if console is not None:
        from rich.table import Table

        t = Table(
            title="foscar ablate: geomean speed-up vs each axis' reference",
            caption=None if info else "interpreter timing, not a performance number",
        )
        for col in ("axis", "bits", "setting", "speed-up (x)", "min", "max", "points"):
            t.add_column(col)
        for axis, by_bits in summary["ablation"].items():
            for b, settings in by_bits.items():
                for s, v in settings.items():
                    t.add_row(axis, b, s, f"{v['geomean_speedup']:.3f}", f"{v['min']:.3f}", f"{v['max']:.3f}", str(v["points"]))
        console.print(t)
        console.print(f"wrote {out / 'results.csv'}, summary.json, meta.json, ablate.md")
    return out
