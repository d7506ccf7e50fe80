"""``foscar bench|ablate|accuracy|eval-model|model-speed --devices all|0,1,...``: one worker process per local
GPU, then one merged run.

With N listed GPUs (``all``: every GPU this process sees, i.e. those of
``CUDA_VISIBLE_DEVICES`` when it is set), :func:`run_devices`:

1. resolves the command's grid as the command would (:attr:`Command.plan`) and refuses
   what it would refuse;
2. for ``bench``: compiles every kernel once (:mod:`bench.warm`) in a short-lived process
   on the first listed GPU (``<out>/shards/warm.log``), so the workers share the compile
   caches and never build the same module at the same time (why this rather than a cache
   per worker: :mod:`bench.warm`). The other studies call only FOSCAR's own
   kernels (no FlashInfer JIT): their workers compile on their own, where torch's extension
   loader holds a file lock and Triton renames its cache entries atomically;
3. starts worker ``i`` (``python -m bench.devices worker KIND``) with
   ``CUDA_VISIBLE_DEVICES=<its GPU>``, running the same command with ``--shard i/N`` into
   ``<out>/shards/shard-i-of-N`` (log: ``<out>/shards/shard-i-of-N.log``; N is at most
   the grid's point count). A bench worker measures its own GPU's HBM ceiling, so each
   row's ``sol_fraction`` is against its own GPU;
4. merges the shards into ``<out>`` (:func:`bench.merge.merge_runs`); ``meta.json``
   gets ``devices``: each worker's shard, GPU, log, exit code and wall time.

A worker that fails (exit code other than 0 or 3) is reported with its shard and log;
the other shards are merged (``--allow-partial``), the failure is listed in
``summary.json["problems"]`` and the command exits with
:data:`bench.errors.EXIT_RUN_PROBLEM`. Rerunning the same command with the same
``--out`` resumes every shard (:mod:`bench.engine`) and merges again.

Tests without a GPU: ``FOSCAR_FAKE_DEVICES=N`` (:data:`FAKE_DEVICES_ENV`) makes N fake
devices; their workers run with ``CUDA_VISIBLE_DEVICES=""``, i.e. on the CPU through
the Triton interpreter (``--smoke`` grids), and no warm-up runs.

Parsing (:func:`parse_devices`) imports no torch, so the CLI checks the flag first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bench.errors import EXIT_OK, EXIT_RUN_PROBLEM, EXIT_USAGE, FoscarError
from bench.shard import Shard

FAKE_DEVICES_ENV = "FOSCAR_FAKE_DEVICES"  # tests: this many fake devices (workers on the CPU)
FINISHED = (EXIT_OK, EXIT_RUN_PROBLEM)  # a worker's exit codes that mean its shard finished


def parse_devices(text: str) -> str | list[int]:
    """``"all"`` or ``"0,1,..."`` -> ``"all"`` or the indices (distinct, >= 0), in the given order.

    Raises:
        FoscarError: anything else, or an index given twice.
    """
    t = (text or "").strip()
    if t == "all":
        return "all"
    parts = [p.strip() for p in t.split(",")]
    if not t or not all(p.isdigit() for p in parts):
        raise FoscarError(f"--devices {text!r}: expected all or comma-separated GPU indices, e.g. 0,1")
    ids = [int(p) for p in parts]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise FoscarError(f"--devices {text!r}: GPU {dup} listed twice")
    return ids


def refuse_shard(shard) -> None:
    """``--devices`` makes its own shards: refuse a ``--shard`` given with it.

    Raises:
        FoscarError: ``shard`` is not ``None``.
    """
    if shard is not None:
        raise FoscarError("--devices and --shard together: --devices makes its own shards; pass one of them")


def fake_device_count() -> int | None:
    """``FOSCAR_FAKE_DEVICES`` as a count, or ``None`` when unset.

    Raises:
        FoscarError: set to something other than a positive integer.
    """
    raw = os.environ.get(FAKE_DEVICES_ENV)
    if raw is None or raw == "":
        return None
    if not raw.strip().isdigit() or int(raw) < 1:
        raise FoscarError(f"{FAKE_DEVICES_ENV}={raw!r}: expected a positive integer (the number of fake devices)")
    return int(raw)


def local_devices(spec: str | list[int]) -> list[str]:
    """The ``CUDA_VISIBLE_DEVICES`` value of each worker, for a :func:`parse_devices` result.

    Indices count the GPUs this process sees (``CUDA_VISIBLE_DEVICES`` when set, mapped
    back to its entries, so ``CUDA_VISIBLE_DEVICES=2,3 ... --devices 1`` runs on GPU 3).
    Fake devices (:data:`FAKE_DEVICES_ENV`) give ``""`` per worker: no GPU.

    Raises:
        FoscarError: no GPU is visible, or an index past the last visible GPU.
    """
    fake = fake_device_count()
    if fake is not None:
        count, names = fake, [""] * fake
    else:
        import torch

        count = torch.cuda.device_count()
        if count == 0:
            raise FoscarError(
                "--devices: no CUDA GPU is visible to this process (torch.cuda.device_count() == 0); "
                "run without --devices (--smoke runs on the CPU), or on a machine with GPUs"
            )
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        entries = [e.strip() for e in visible.split(",")] if visible else [str(i) for i in range(count)]
        names = entries[:count]
    if spec == "all":
        return names
    bad = [i for i in spec if i >= count]
    if bad:
        raise FoscarError(f"--devices {','.join(map(str, spec))}: GPU {bad[0]} does not exist; this process sees {count} (0..{count - 1})")
    return [names[i] for i in spec]


@dataclass(frozen=True)
class Command:
    """What ``--devices`` needs of a command (a study of :mod:`bench.engine`)."""

    kind: str  # bench.kinds
    options: type  # its options dataclass (BenchOptions, AblateOptions, AccuracyOptions, EvalOptions, ...)
    plan: Callable[..., Any]  # (opts, device) -> bench.engine.RunPlan, without measuring
    run: Callable[..., Any]  # opts -> bench.engine.Outcome: one worker's shard
    warm: bool  # compile every kernel once before the workers (bench.warm; bench only: FlashInfer's JIT)
    show: Callable[..., None] | None = None  # (console, summary, out): the merged run's tables


def command(kind: str) -> Command:
    """The :class:`Command` of ``foscar <kind>``.

    Raises:
        FoscarError: a kind without ``--devices``.
    """
    if kind == "bench":
        from bench.run import BenchOptions, plan_bench, run_bench, show_summary

        return Command(kind, BenchOptions, plan_bench, run_bench, warm=True, show=show_summary)
    if kind == "ablate":
        from bench.ablate import AblateOptions, plan_ablation, run_ablation, show_summary

        return Command(kind, AblateOptions, plan_ablation, run_ablation, warm=False, show=show_summary)
    if kind == "accuracy":
        from bench.accuracy import AccuracyOptions, plan_accuracy, run_accuracy, show_summary

        return Command(kind, AccuracyOptions, plan_accuracy, run_accuracy, warm=False, show=show_summary)
    if kind == "eval-model":
        from bench.eval_model import EvalOptions, plan_eval_model, run_eval_model, show_summary

        return Command(kind, EvalOptions, plan_eval_model, run_eval_model, warm=False, show=show_summary)
    if kind == "model-speed":
        from bench.model_speed_study import ModelSpeedOptions, plan_model_speed, run_model_speed, show_summary

        return Command(kind, ModelSpeedOptions, plan_model_speed, run_model_speed, warm=False, show=show_summary)
    raise FoscarError(f"--devices: no such command {kind!r}; expected bench, ablate, accuracy, eval-model or model-speed")


def options_to_json(opts) -> str:
    """A command's options dataclass as JSON (for a worker's command line): paths as text,
    choices as their values, a shard as ``{"k", "n"}``."""
    from enum import Enum

    def plain(v):
        if isinstance(v, Enum):
            return v.value
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, Shard):
            return {"k": v.k, "n": v.n}
        return v

    return json.dumps({f.name: plain(getattr(opts, f.name)) for f in dataclasses.fields(opts)})


def options_from_json(cls: type, text: str):
    """The inverse of :func:`options_to_json` for the options dataclass ``cls``: each field's
    declared type (a ``Path``, a ``str`` Enum, a :class:`bench.shard.Shard`) rebuilt from JSON."""
    from enum import Enum

    hints = typing.get_type_hints(cls)
    d = json.loads(text)
    for name, value in list(d.items()):
        if value is None:
            continue
        kinds = typing.get_args(hints[name]) or (hints[name],)
        for k in kinds:
            if k is Path:
                d[name] = Path(value)
            elif k is Shard:
                d[name] = Shard(**value)
            elif isinstance(k, type) and issubclass(k, Enum):
                d[name] = k(value)
    return cls(**d)


def _worker_env(cuda_visible: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = cuda_visible
    env.pop(FAKE_DEVICES_ENV, None)
    src = str(Path(__file__).resolve().parent.parent)  # the tree this bench runs from, first on the path
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _spawn(mode: str, kind: str, opts, cuda_visible: str, log: Path) -> subprocess.Popen:
    with open(log, "w") as fh:  # the child keeps its own handle
        return subprocess.Popen(
            [sys.executable, "-m", "bench.devices", mode, kind, options_to_json(opts)],
            env=_worker_env(cuda_visible), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip


def run_devices(kind: str, opts, device="detect"):
    """``foscar <kind> --devices``: workers per GPU, then the merge (module docstring).

    Args:
        kind: ``bench``, ``ablate``, ``accuracy``, ``eval-model`` or ``model-speed`` (:func:`command`).
        opts: the command's parsed options (``devices`` set, ``shard`` unset).
        device: the GPU for arch resolution (tests pass fake info); ``"detect"`` reads it.

    Returns:
        :class:`bench.engine.Outcome` of the merged run (problems: the merged rows' and
        the failed workers').

    Raises:
        FoscarError: a bad ``--devices``, no GPU, ``--shard`` given too, what the command
            refuses (arch, config, flags), an ``--out`` holding a run that is not a merge.
    """
    from bench.engine import OutputFormat, Outcome, emit, make_console_for
    from bench.merge import check_out_dir, merge_runs
    from bench.runfiles import make_dir

    cmd = command(kind)
    refuse_shard(opts.shard)
    devices = local_devices(parse_devices(opts.devices))
    fake = fake_device_count() is not None
    plan = cmd.plan(opts, None if fake else device)
    num_points, out = plan.num_points, plan.out
    n = min(len(devices), num_points)
    check_out_dir(out, [])
    shards_dir = make_dir(out, "run directory") / "shards"
    shards_dir.mkdir(exist_ok=True)
    console = make_console_for(opts.output)

    def say(text: str) -> None:
        if console:
            console.print(text)

    gpus = ", ".join(d or "fake (CPU)" for d in devices[:n])
    say(f"foscar {kind} --devices: {plan.title} on {n} worker(s) (GPU: {gpus}) -> {out}")
    if n < len(devices):
        say(f"[yellow]{len(devices) - n} device(s) left idle: the grid has {num_points} point(s)[/]")
    start = time.monotonic()
    record: dict[str, Any] = {"workers": [], "warm": None}
    if cmd.warm and not fake:  # compile once, on the first GPU, in a process of its own
        log = shards_dir / "warm.log"
        say(f"compiling the kernels once on GPU {devices[0]} (log: {log})")
        t0 = time.monotonic()
        rc = _spawn("warm", kind, dataclasses.replace(opts, devices=None), devices[0], log).wait()
        record["warm"] = {"device": devices[0], "log": str(log), "exit_code": rc, "wall_s": round(time.monotonic() - t0, 1)}
        if rc != 0:
            say(f"[yellow]warm-up failed (exit code {rc}, log {log}); the workers compile on their own[/]")

    workers = []
    for k in range(n):
        shard = Shard(k, n)
        wopts = dataclasses.replace(opts, devices=None, shard=shard, out=shards_dir / shard.dir_name(),
                                    output=OutputFormat.table)  # fmt: skip
        log = shards_dir / f"{shard.dir_name()}.log"
        workers.append((shard, devices[k], log, wopts.out, time.monotonic(), _spawn("worker", kind, wopts, devices[k], log)))
        say(f"  shard {shard.label()} on GPU {devices[k] or 'fake (CPU)'}: {wopts.out} (log: {log})")
    problems: list[str] = []
    try:
        pending = list(workers)
        while pending:
            time.sleep(0.2)
            for w in list(pending):
                shard, dev, log, wout, t0, proc = w
                rc = proc.poll()
                if rc is None:
                    continue
                pending.remove(w)
                wall = round(time.monotonic() - t0, 1)
                record["workers"].append({"shard": shard.label(), "device": dev, "run_dir": str(wout), "log": str(log),
                                          "exit_code": rc, "wall_s": wall})  # fmt: skip
                if rc in FINISHED:
                    say(f"  shard {shard.label()} finished in {wall:.0f} s")
                else:
                    why = f"shard {shard.label()} on GPU {dev or 'fake (CPU)'} failed (exit code {rc}); its log: {log}"
                    problems.append(why)
                    say(f"[red]  {why}[/]")
    except KeyboardInterrupt:
        for *_, proc in workers:
            proc.wait()
        print(f"interrupted: rerun the same command with --out {out} to resume every shard", file=sys.stderr)
        raise
    record["workers"].sort(key=lambda r: int(r["shard"].split("/")[0]))
    record["wall_s"] = round(time.monotonic() - start, 1)

    present = [w[3] for w in workers if (w[3] / "meta.json").is_file()]
    if not present:
        problems.append("no shard wrote a run directory; nothing to merge")
        for p in problems:
            print(f"problem: {p} (exit code {EXIT_RUN_PROBLEM})", file=sys.stderr)
        return Outcome(out, problems)
    merged = merge_runs(present, out, allow_partial=bool(problems), argv=opts.argv, extra_meta={"devices": record},
                        extra_problems=problems)  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())

    def show() -> None:
        if cmd.show is not None:
            cmd.show(console, summary, out)
        console.print(f"merged {len(present)} shard(s) in {record['wall_s']:.0f} s: wrote {out / 'results.csv'}, "
                      f"{out / 'meta.json'}, {out / 'summary.json'}")  # fmt: skip

    emit(opts.output, out, summary, console, show)
    return Outcome(out, merged.problems)


def _main(argv: list[str]) -> int:
    """``python -m bench.devices worker|warm KIND OPTIONS_JSON``: a ``--devices`` worker, or the warm-up."""
    mode, kind, text = argv
    try:
        cmd = command(kind)
        opts = options_from_json(cmd.options, text)
        if mode == "warm":
            return _warm(opts)
        outcome = cmd.run(opts)
        return outcome.exit_code if outcome is not None else EXIT_OK
    except FoscarError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE


def _warm(opts) -> int:
    """Compile every kernel of the resolved bench config on this process's GPU (:func:`bench.warm.warm`)."""
    import torch

    from bench.arch import detect_device, resolve_arch
    from bench.backends import select_backends
    from bench.run import resolve_config
    from bench.warm import warm

    info = detect_device()
    arch = resolve_arch(opts.arch, info, opts.smoke, custom_config=opts.config is not None, nearest_preset=opts.nearest_preset)
    cfg, _ = resolve_config(opts, arch)
    for rec in warm(cfg, select_backends(cfg.kernels), torch.device("cuda", torch.cuda.current_device())):
        print(json.dumps(rec), flush=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
