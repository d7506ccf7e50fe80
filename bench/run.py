"""``foscar bench`` end to end: resolve arch and config, measure the ceiling, then run the
:class:`bench.sweep.BenchStudy` on the engine (:mod:`bench.engine`: run directory, resume,
shards, progress, outputs).

The run directory (``results/<timestamp>-<arch>[-<model>]-<git short>``, smoke runs
under ``results/_scratch/``, or ``--out DIR``) receives:

* ``meta.json``     written first (GPU, versions, git, command, config and its hash,
                    HBM ceiling, GPU clocks/temperature), again at the end (or on
                    Ctrl-C / a crash) with the GPU's state then
* ``results.csv``   rewritten after every point (schema in :mod:`bench.results`)
* ``summary.json``  geometric-mean speed-ups with bootstrap intervals, written at the end,
                    and ``problems``: why the run's numbers need a look (:func:`run_problems`;
                    the CLI then exits with :data:`bench.errors.EXIT_RUN_PROBLEM`)

An ``--out DIR`` that already holds results.csv is resumed (:func:`bench.engine.check_resume`)
when the resolved config hashes the same as its meta.json says (and, for a shard, it
holds the same shard), else refused.
``--dry-run`` (:func:`dry_run`) only prints the plan (:mod:`bench.plan`).
``--shard K/N`` (:mod:`bench.shard`) runs every N-th point of the grid starting at K;
meta.json records ``shard`` (``k``, ``n``, its points) and ``grid_points`` (the whole
grid's count); ``foscar merge`` (:mod:`bench.merge`) combines the shards.
``--devices`` (:mod:`bench.devices`) runs one shard per local GPU in worker processes
and merges them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.arch import NOMINAL_MEMORY, Arch, DeviceInfo, detect_device, resolve_arch
from bench.config import (
    MODEL_SHAPE_KEYS,
    SMOKE_PRESET,
    BenchConfig,
    apply_model,
    apply_overrides,
    config_hash,
    load_config,
    load_model,
    preset_path,
)
from bench.engine import (  # noqa: F401  (re-exported: the shared run infrastructure)
    RESULTS_DIR,
    SCRATCH_DIR,
    OutputFormat,
    Outcome,
    StudyOptions,
    enable_interpreter,
    new_run_dir,
)
from bench.errors import FoscarError
from bench.results import run_problems  # noqa: F401  (re-exported: bench.run.run_problems)
from bench.runfiles import make_dir
from bench.shard import Shard, check_shard_fits

@dataclass
class BenchOptions(StudyOptions):
    """The ``foscar bench`` flags, already parsed (the shared ones in :class:`bench.engine.StudyOptions`).
    ``None``/empty means "from the config"."""

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
    model: str | None = None  # configs/models/<model>.toml (or a path): its [shape] over the preset's
    num_qo_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    page_size: int | None = None  # tokens per page of the paged caches (FOSCAR's and FlashInfer's)
    page_order: str | None = None  # their pages' order in memory (bench.shape.PAGE_ORDERS)
    workload: str | None = None  # the [sweep] grid's [workload] fields (None: the preset's)
    capacity: int | None = None
    workload_seed: int | None = None
    short_len: int | None = None
    grids: list[str] = field(default_factory=list)  # "sweep", "ragged" (empty: both)
    sustain_s: float | None = None  # seconds of untimed calls before each row (BenchConfig.sustain_s)
    read_floor: bool | None = None  # time each row's read floor too (BenchConfig.read_floor)
    dry_run: bool = False
    nearest_preset: bool = False  # an unknown GPU runs the nearest preset (only when asked)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.arch = Arch(self.arch)  # as output (StudyOptions): typer may hand over the plain string


# flags that override the config field of the same name as they are (the shape fields among them);
# model, workload and grids are resolved by resolve_config
_CONFIG_FLAGS = tuple(
    f.name for f in dataclasses.fields(BenchOptions)
    if f.name in {c.name for c in dataclasses.fields(BenchConfig)} and f.name not in ("model", "workload", "grids")
)  # fmt: skip


def run_dir_path(
    out: Path | None, arch: str, smoke: bool, git_short: str | None, model: str | None = None, shard: Shard | None = None
) -> Path:
    """``out``, or ``results/<timestamp>-<arch>[-<model>][-smoke]-<git short>[-shard-K-of-N]``
    (smoke runs under ``results/_scratch/``)."""
    if out is not None:
        return Path(out)
    model_part = f"-{model.split(' ')[0]}" if model else ""
    shard_part = f"-{shard.dir_name()}" if shard is not None else ""
    return new_run_dir(f"{arch}{model_part}{'-smoke' if smoke else ''}-{git_short or 'nogit'}{shard_part}", smoke)


def make_run_dir(out: Path) -> Path:
    """Create the run directory (a resumed one already exists)."""
    return make_dir(out, "run directory")


# the [workload] fields that flags of their own set (BenchOptions' attributes)
_WORKLOAD_FLAGS = {"workload.name": "workload", "workload.capacity": "capacity", "workload.seed": "workload_seed",
                   "workload.short_len": "short_len"}


def _named_by_flag(message: str, opts: BenchOptions) -> str:
    """A config error that names a field (``workload.capacity: expected ...``) named by the flag that set it where the
    user passed one (``--capacity (workload.capacity): expected ...``); else as it was."""
    key = message.split(":", 1)[0]
    attr = _WORKLOAD_FLAGS.get(key, key)
    given = getattr(opts, attr, None) if attr.isidentifier() else None
    if given is not None and given != []:
        return f"--{attr.replace('_', '-')} ({key}){message[len(key):]}"
    # the field it names came from the config, the value it was checked against from a flag
    # (num_qo_heads against --num-kv-heads): say which is which
    for other in ("num_kv_heads", "num_qo_heads", "head_dim", "group_size"):
        if other != key and f"{other}=" in message and getattr(opts, other, None) is not None:
            flag = f"--{other.replace('_', '-')}"
            source = f"--model {opts.model}" if opts.model else "the config"
            return f"{message} ({other} from {flag}, {key} from {source}: pass --{key.replace('_', '-')} too)"
    return message


def check_named_files(opts: BenchOptions) -> None:
    """Read the files that ``--config`` and ``--model`` name, before the GPU is looked for, so that
    a missing or bad one is reported as such on any machine (not as "no CUDA GPU detected").

    Raises:
        FoscarError: the config file is missing or bad; the model is unknown or its file is bad.
    """
    if opts.config is not None:
        load_config(opts.config)
    if opts.model:
        load_model(opts.model)


def resolve_config(opts: BenchOptions, arch: str) -> tuple[BenchConfig, Path]:
    """The resolved config and the file it came from: the arch preset (or ``--config``),
    then ``--model``'s shape, then the flags. Flags that pick the ``[sweep]`` grid's points
    (``--batch``, ``--context``, ``--workload``, ``--capacity``, ``--workload-seed``,
    ``--short-len``) leave the ``[[ragged]]`` grid out unless ``--grid`` names it.

    Raises:
        FoscarError: no preset for the arch, a bad config or model file, a bad flag value.
    """
    cfg_path = opts.config or preset_path(SMOKE_PRESET if opts.smoke else arch)
    if opts.config is None and not cfg_path.is_file():
        raise FoscarError(f"no preset for arch {arch!r} ({cfg_path} not found); pass --config FILE")
    cfg = load_config(cfg_path)
    if opts.model:
        cfg = apply_model(cfg, load_model(opts.model))
    modelled = {k: getattr(cfg, k) for k in MODEL_SHAPE_KEYS}
    spec = {k: v for k, v in dict(name=opts.workload, capacity=opts.capacity, seed=opts.workload_seed,
                                  short_len=opts.short_len).items() if v is not None}  # fmt: skip
    grids = list(opts.grids)
    sweep_flags = [f for f, given in (("--batch", opts.batch), ("--context", opts.context)) if given]
    sweep_flags += ["--" + _WORKLOAD_FLAGS[f"workload.{k}"].replace("_", "-") for k in spec]
    if grids and "sweep" not in grids and sweep_flags:
        verb = "picks" if len(sweep_flags) == 1 else "pick"
        asked = " --grid ".join(grids)
        raise FoscarError(f"{', '.join(sweep_flags)} {verb} the [sweep] grid's points, and --grid {asked} "
                          "leaves that grid out (the [[ragged]] grid's points have their own batches and lengths); "
                          "add --grid sweep, or drop those flags")
    if not grids and cfg.ragged and (opts.batch or opts.context or spec):
        grids = ["sweep"]  # flags that pick the [sweep] grid's points run it alone (unless --grid says more)
    try:
        cfg = apply_overrides(
            cfg,
            **{name: getattr(opts, name) for name in _CONFIG_FLAGS},
            workload=dataclasses.replace(cfg.workload, **spec) if spec else None,
            grids=grids,
        )
    except FoscarError as e:
        raise FoscarError(_named_by_flag(str(e), opts)) from None
    if cfg.model and any(getattr(cfg, k) != v for k, v in modelled.items()):
        cfg = apply_overrides(cfg, model=f"{cfg.model} (shape overridden by flags)")
    return cfg, cfg_path


BenchOutcome = Outcome  # what a finished `foscar bench` run left (bench.engine.Outcome)


def run_bench(opts: BenchOptions, device: DeviceInfo | None | str = "detect") -> BenchOutcome | None:
    """Do the whole run; return the run directory and the problems of its numbers
    (:func:`run_problems`); ``None`` for ``--dry-run``.

    Args:
        opts: parsed flags.
        device: the GPU (tests pass fake info); ``"detect"`` reads the real one.

    Raises:
        FoscarError: anything the user can fix (arch, config, flags, output directory).
    """
    if opts.dry_run:
        return dry_run(opts, device)
    if opts.devices is not None:  # bench.devices runs workers, each a run_bench without devices
        raise FoscarError("run_bench runs on one GPU; `--devices` runs through bench.devices.run_devices")
    check_named_files(opts)
    info = detect_device() if device == "detect" else device
    arch = resolve_arch(
        opts.arch, info, opts.smoke, custom_config=opts.config is not None, nearest_preset=opts.nearest_preset
    )
    interpreter = info is None
    if interpreter:
        enable_interpreter()

    cfg, cfg_path = resolve_config(opts, arch)
    cfg_hash = config_hash(cfg)
    from bench.backends import select_backends  # the registry imports no torch
    from bench.clocks import SAMPLE_INTERVAL_S, ClockReader

    backends = select_backends(cfg.kernels)

    # heavy imports only now (torch; triton stays lazy inside the kernels and timing)
    import torch

    from bench.engine import Site, check_resume, emit, finish_run, make_console_for, run_study, shard_indices, start_run
    from bench.hbm import measure_hbm
    from bench.manifest import build_manifest, git_state, record_gpu_state
    from bench.resume import gpu_mismatch
    from bench.sweep import BenchStudy, Sweep
    from bench.tables import summary_tables
    from bench.timing import GRAPH_TIMING, INTERPRETER_TIMING, TIMING_LABELS

    timing_mode = INTERPRETER_TIMING if interpreter else GRAPH_TIMING  # rows fall back to do_bench where capture fails
    study = BenchStudy(cfg, backends, timing_mode=timing_mode, smoke=opts.smoke)
    num_points = len(study.points())
    indices = shard_indices(opts.shard, num_points)
    out = run_dir_path(opts.out, arch, opts.smoke, git_state().get("short"), cfg.model, opts.shard)
    prior = check_resume(study, out, cfg_hash, cfg.to_dict(), opts.shard, refuse=lambda meta: gpu_mismatch(meta, info))
    make_run_dir(out)
    console = make_console_for(opts.output)
    dev = torch.device("cpu") if info is None else torch.device("cuda", torch.cuda.current_device())

    if console:
        what = "smoke grid" if opts.smoke else f"{arch} grid"
        if opts.shard is not None:
            what += f", shard {opts.shard.label()} ({len(indices)} of {num_points} points)"
        model = f", {cfg.model} shape" if cfg.model else ""
        console.print(f"foscar bench: {what}{model} from {cfg_path} on {info.describe() if info else 'CPU'} -> {out}")
        if interpreter:
            console.print("[yellow]Triton interpreter on CPU: interpreter timing, not a performance number[/]")
    hbm, hbm_detail = None, None
    if dev.type == "cuda":
        hbm_detail = measure_hbm(dev)
        hbm = hbm_detail["ceiling_tbps"]
        if console:
            console.print(
                f"HBM ceiling: {hbm:.2f} TB/s (copy {hbm_detail['copy_tbps']:.2f} TB/s read + write, "
                f"read-only stream {hbm_detail['read_tbps']:.2f} TB/s, over {hbm_detail['bytes'] / 2**30:.3g} GiB)"
            )

    manifest = build_manifest(
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
        config_hash=cfg_hash,
        device_index=dev.index or 0,
    )
    manifest["backends"] = {b.name: b.description for b in backends}
    manifest["workloads"] = workload_manifest(cfg)
    if hbm_detail:
        manifest["hbm_copy_tbps"], manifest["hbm_read_tbps"] = hbm_detail["copy_tbps"], hbm_detail["read_tbps"]
        manifest["hbm_bytes"] = hbm_detail["bytes"]
    # the clocks are only read (bench.clocks), never set
    clocks, clocks_why = (None, "no GPU (CPU run)") if info is None else ClockReader.open(info.uuid, dev.index or 0)
    manifest["clock_readings"] = (
        "NVML: SM clock and clock event reasons just before and after every row's timing, and every "
        f"{int(SAMPLE_INTERVAL_S * 1000)} ms during its timed CUDA-graph replays" if clocks else f"none: {clocks_why}"
    )
    site = Site((manifest.get("gpu") or {}).get("uuid"), hbm)  # this session's GPU (torch, else NVML) and ceiling
    run = start_run(study, out, manifest, opts.shard, prior, site=site)
    study.sweep = Sweep(cfg, backends, dev, hbm, out / "results.csv", console, prior=run.prior,
                        progress=opts.output is OutputFormat.table, clocks=clocks, indices=indices)  # fmt: skip
    try:
        df = run_study(study, run, console, progress=opts.output is OutputFormat.table)
    except KeyboardInterrupt:
        hint = f"interrupted: {out / 'results.csv'} holds every finished point; rerun with --out {out} to resume"
        print(hint, file=sys.stderr)
        raise
    finally:  # the GPU's state at the end, also after Ctrl-C or a crash
        if clocks is not None:
            clocks.close()
        record_gpu_state(run.session, "end", info, dev.index or 0)
        run.save_meta()
    summary = finish_run(study, run, df)

    def show() -> None:
        for table in summary_tables(summary, interpreter):
            console.print(table)
        if not df.empty and (df["status"] == "skipped").all():
            reasons = "; ".join(sorted(set(df["error"].dropna().astype(str)))[:3])
            console.print(f"[yellow]no row ran: every row was skipped ({reasons})[/]")
        console.print(f"wrote {out / 'results.csv'}, {out / 'meta.json'}, {out / 'summary.json'}")

    emit(opts.output, out, summary, console, show)
    return BenchOutcome(out, summary["problems"])


def plan_bench(opts: BenchOptions, device: DeviceInfo | None | str = "detect"):
    """What ``opts`` would run, without running it (:class:`bench.engine.RunPlan`, for ``--devices``):
    the grid's point count, the run directory, a title.

    Raises:
        FoscarError: what :func:`run_bench` refuses before measuring (arch, config, flags).
    """
    from bench.backends import select_backends
    from bench.engine import RunPlan
    from bench.manifest import git_state
    from bench.points import grid

    check_named_files(opts)
    info = detect_device() if device == "detect" else device
    arch = resolve_arch(opts.arch, info, opts.smoke, custom_config=opts.config is not None, nearest_preset=opts.nearest_preset)
    cfg, cfg_path = resolve_config(opts, arch)
    select_backends(cfg.kernels)
    num_points = len(grid(cfg))
    out = run_dir_path(opts.out, arch, opts.smoke, git_state().get("short"), cfg.model)
    return RunPlan(num_points, out, f"{num_points} points of {cfg_path} (config hash {config_hash(cfg)[:12]})")


def show_summary(console, summary: dict, out: Path) -> None:
    """A finished (or merged) bench run's summary tables on ``console``."""
    from bench.tables import summary_tables
    from bench.timing import INTERPRETER_TIMING

    for table in summary_tables(summary, summary.get("timing_mode") == INTERPRETER_TIMING):
        console.print(table)


def workload_manifest(cfg: BenchConfig) -> list[dict]:
    """``meta.json["workloads"]``: per point of the grid (bits aside: they share the lengths), its
    grid, batch, context, workload (the resolved :class:`bench.lengths.WorkloadSpec`), cache
    capacity and every sequence length, in the sweep's order."""
    from bench.sweep import grid

    out, seen = [], set()
    for p in grid(cfg):
        key = (p.grid, p.batch, p.context, p.workload)
        if key in seen:
            continue
        seen.add(key)
        out.append({"grid": p.grid, "batch": p.batch, "context": p.context, "workload": dataclasses.asdict(p.workload),
                    "capacity": p.capacity, "lengths": list(p.lengths), "kv_tokens": p.kv_tokens})  # fmt: skip
    return out


def dry_run(opts: BenchOptions, device: DeviceInfo | None | str = "detect") -> None:
    """``--dry-run``: print the resolved grid, each point's device memory and an estimated
    run time; touch no GPU, build no data, write nothing.

    The GPU is detected only for ``--arch auto`` without ``--config``/``--smoke`` (to
    pick the preset); no arch/GPU compatibility is checked. An ``--out DIR`` holding
    results.csv is checked as a real run would (resume or refuse) and its finished
    points are shown as done.

    Raises:
        FoscarError: what a real run would refuse (config, flags, an --out of another config),
            or ``--arch auto`` with no GPU to pick the preset from.
    """
    from bench.backends import select_backends
    from bench.plan import plan_json, plan_points, plan_table, point_key
    from bench.engine import check_resume, finished_points
    from bench.sweep import BenchStudy
    from bench.tables import make_console

    info = None if device == "detect" else device
    if opts.smoke:
        resolve_arch(opts.arch, None, smoke=True)  # refuses an explicit --arch beside --smoke, as a run does
        arch = "smoke"
    elif opts.arch is not Arch.auto:
        arch = opts.arch.value
    elif opts.config is not None:
        arch = "custom"
    else:
        if device == "detect":
            info = detect_device()
        if info is None:
            raise FoscarError(
                "--dry-run with --arch auto needs a GPU to pick the preset, and none was detected; "
                "pass --arch h100/h200/b200, --config FILE or --smoke"
            )
        arch = resolve_arch(Arch.auto, info, smoke=False)
    cfg, cfg_path = resolve_config(opts, arch)
    cfg_hash = config_hash(cfg)
    backends = select_backends(cfg.kernels)

    interpreter = False
    if opts.smoke:
        if device == "detect":
            import torch

            interpreter = not torch.cuda.is_available()  # no CUDA context is created
        else:
            interpreter = info is None
    runnable = None
    if interpreter:
        import torch

        runnable = {be.name: be.unavailable(torch.device("cpu")) is None for be in backends}
    total_memory = info.total_memory if info is not None else None
    memory_source = info.name if info is not None else None
    if total_memory is None and arch in NOMINAL_MEMORY:
        total_memory = NOMINAL_MEMORY[arch]  # no GPU asked: judged against the preset's GPU
        memory_source = f"nominal for the {arch.upper()}"
    plans = plan_points(cfg, backends, interpreter, runnable, total_memory)
    if opts.shard is not None:  # only the shard's points
        check_shard_fits(opts.shard, len(plans))
        plans = [plans[i] for i in opts.shard.indices(len(plans))]

    resume = None
    if opts.out is not None:
        study = BenchStudy(cfg, backends)
        prior = check_resume(study, Path(opts.out), cfg_hash, cfg.to_dict(), opts.shard)
        if prior is not None:
            points = study.points()
            done = sorted(finished_points(study, prior[0]))
            resume = {
                "run_dir": str(opts.out),
                "points_done": len(done),
                "done_points": [point_key(points[i]) for i in done],
            }
    kernels = [be.name for be in backends]
    if opts.output is OutputFormat.json:
        print(json.dumps(plan_json(cfg, cfg_hash, plans, kernels, interpreter, total_memory, resume, memory_source),
                         indent=2))
    elif opts.output is OutputFormat.quiet:
        from bench.plan import format_duration, still_to_run, total_seconds

        left = format_duration(total_seconds(still_to_run(plans, resume), interpreter))
        print(f"{len(plans)} points x {len(kernels)} kernels, ~{left} (estimate)")
    else:
        console = make_console()
        console.print(f"foscar bench --dry-run: {cfg_path}" + (f" + model {cfg.model}" if cfg.model else "")
                      + f", config hash {cfg_hash[:12]}")  # fmt: skip
        console.print(plan_table(cfg, plans, kernels, interpreter, total_memory, resume, memory_source))
    return None
