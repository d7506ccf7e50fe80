"""``foscar bench`` end to end: resolve arch and config, measure the ceiling, sweep, write.

The run directory (``results/<timestamp>-<arch>-<git short>``, smoke runs under
``results/_scratch/``, or ``--out DIR``) receives:

* ``meta.json``     written first (GPU, versions, git, command, config, HBM ceiling)
* ``results.csv``   rewritten after every point (schema in :mod:`bench.results`)
* ``summary.json``  geometric-mean speed-ups, written at the end
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from bench.arch import Arch, DeviceInfo, detect_device, resolve_arch
from bench.config import SMOKE_PRESET, apply_overrides, load_config, preset_path
from bench.errors import FoscarError

RESULTS_DIR = Path("results")
SCRATCH_DIR = RESULTS_DIR / "_scratch"


class OutputFormat(str, Enum):
    """``table``: tables as the sweep runs; ``json``: only summary.json on stdout; ``quiet``: only the run directory."""

    table = "table"
    json = "json"
    quiet = "quiet"


@dataclass
class BenchOptions:
    """The ``foscar bench`` flags, already parsed. ``None``/empty means "from the config"."""

    arch: Arch = Arch.auto
    config: Path | None = None
    out: Path | None = None
    smoke: bool = False
    bits: list[int] = field(default_factory=list)
    batch: list[int] = field(default_factory=list)
    context: list[int] = field(default_factory=list)
    group_size: int | None = None
    operand: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    output: OutputFormat = OutputFormat.table
    argv: list[str] | None = None


def enable_interpreter() -> None:
    """Run Triton kernels on CPU (``TRITON_INTERPRET=1``); must precede importing FOSCAR's kernels.

    Raises:
        FoscarError: FOSCAR's kernels were already imported in compiled mode.
    """
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    if any(name.startswith("foscar.kernels") for name in sys.modules):
        raise FoscarError(
            "foscar's Triton kernels were imported before the interpreter was enabled; "
            "run `foscar bench --smoke` in a fresh process (or set TRITON_INTERPRET=1)"
        )
    os.environ["TRITON_INTERPRET"] = "1"


def run_dir(out: Path | None, arch: str, smoke: bool, git_short: str | None) -> Path:
    """Create the run directory (refusing one that already holds results)."""
    if out is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        base = SCRATCH_DIR if smoke else RESULTS_DIR
        name = f"{stamp}-{arch}{'-smoke' if smoke else ''}-{git_short or 'nogit'}"
        out = base / name
    out = Path(out)
    if (out / "results.csv").exists():
        raise FoscarError(f"{out} already holds results.csv; pass a new --out DIR")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FoscarError(f"cannot create the run directory {out}: {e.strerror}") from None
    return out


def run_bench(opts: BenchOptions, device: DeviceInfo | None | str = "detect") -> Path:
    """Do the whole run; return the run directory.

    Args:
        opts: parsed flags.
        device: the GPU (tests pass fake info); ``"detect"`` reads the real one.

    Raises:
        FoscarError: anything the user can fix (arch, config, flags, output directory).
    """
    info = detect_device() if device == "detect" else device
    arch = resolve_arch(opts.arch, info, opts.smoke, custom_config=opts.config is not None)
    interpreter = info is None
    if interpreter:
        enable_interpreter()

    cfg_path = opts.config or preset_path(SMOKE_PRESET if opts.smoke else arch)
    if opts.config is None and not cfg_path.is_file():
        raise FoscarError(f"no preset for arch {arch!r} ({cfg_path} not found); pass --config FILE")
    cfg = apply_overrides(
        load_config(cfg_path),
        bits=opts.bits,
        batch=opts.batch,
        context=opts.context,
        group_size=opts.group_size,
        operand=opts.operand,
        kernels=opts.kernels,
    )

    # heavy imports only now (torch; triton stays lazy inside the kernels and timing)
    import torch

    from bench.backends import select_backends
    from bench.hbm import measure_hbm
    from bench.manifest import build_manifest, git_state
    from bench.results import summarize, write_json
    from bench.sweep import Sweep, run_sweep
    from bench.tables import make_console, summary_table
    from bench.timing import GRAPH_TIMING, INTERPRETER_TIMING, TIMING_LABELS

    backends = select_backends(cfg.kernels)
    out = run_dir(opts.out, arch, opts.smoke, git_state().get("short"))
    console = make_console(stderr=opts.output is OutputFormat.json) if opts.output is not OutputFormat.quiet else None
    dev = torch.device("cpu") if info is None else torch.device("cuda", torch.cuda.current_device())
    timing_mode = INTERPRETER_TIMING if interpreter else GRAPH_TIMING  # rows fall back to do_bench where capture fails

    if console:
        what = "smoke grid" if opts.smoke else f"{arch} grid"
        console.print(f"foscar bench: {what} from {cfg_path} on {info.describe() if info else 'CPU'} -> {out}")
        if interpreter:
            console.print("[yellow]Triton interpreter on CPU: interpreter timing, not a performance number[/]")
    hbm, hbm_detail = None, None
    if dev.type == "cuda":
        hbm_detail = measure_hbm(dev)
        hbm = hbm_detail["ceiling_tbps"]
        if console:
            console.print(
                f"HBM ceiling: {hbm:.2f} TB/s (copy {hbm_detail['copy_tbps']:.2f} TB/s read + write, "
                f"read-only stream {hbm_detail['read_tbps']:.2f} TB/s)"
            )

    meta = build_manifest(
        arch=arch,
        device=info,
        config=cfg.to_dict(),
        config_source=str(cfg_path),
        hbm_tbps=hbm,
        timing_mode=timing_mode,
        timing_label=TIMING_LABELS[timing_mode],
        smoke=opts.smoke,
        interpreter=interpreter,
        argv=opts.argv,
    )
    meta["backends"] = {b.name: b.description for b in backends}
    if hbm_detail:
        meta["hbm_copy_tbps"], meta["hbm_read_tbps"] = hbm_detail["copy_tbps"], hbm_detail["read_tbps"]
    write_json(meta, out / "meta.json")

    df = run_sweep(Sweep(cfg, backends, dev, hbm, out / "results.csv", console))
    summary = summarize(df)
    summary["timing_mode"] = timing_mode
    summary["smoke"] = opts.smoke
    write_json(summary, out / "summary.json")

    if opts.output is OutputFormat.json:
        print(json.dumps(summary, indent=2))
    elif console:
        console.print(summary_table(summary, interpreter))
        console.print(f"wrote {out / 'results.csv'}, {out / 'meta.json'}, {out / 'summary.json'}")
    else:
        print(out)
    return out
