"""``foscar report`` and ``foscar compare`` on any run: dispatch on the study kind (:mod:`bench.kinds`).

* bench: :mod:`bench.report` (several runs overlaid) and :mod:`bench.compare`;
* ablate: :mod:`bench.ablate_report` and :mod:`bench.ablate_compare` (times, as bench);
* accuracy: :mod:`bench.accuracy_report` and :mod:`bench.accuracy_compare` (error
  metrics, larger is worse);
* eval-model: :func:`bench.eval_model.write_report`; model-speed:
  :func:`bench.model_speed_study.write_report`; neither is compared.

Only bench runs are drawn several at a time; ``compare`` takes two runs of one kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bench.errors import FoscarError
from bench.kinds import ABLATE, ACCURACY, BENCH, COMMANDS, EVAL_MODEL, MODEL_SPEED, run_kind
from bench.runfiles import make_dir

COMPARED = (BENCH, ABLATE, ACCURACY)


def _a(kind: str) -> str:
    """``an accuracy run``, ``a bench run``: the kind with its article and command."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} run ({COMMANDS[kind]})"


@dataclass
class Drawn:
    """What ``foscar report`` wrote."""

    kind: str
    report: Path  # the markdown
    plots: list[Path]  # the PNGs


def report_runs(paths: list[Path], out: Path | None = None) -> Drawn:
    """Draw the runs' plots and markdown into ``out`` (default: the one run's directory).

    Raises:
        FoscarError: no run given; several runs of which one is not a bench run; several
            runs without ``out``; anything the kind's reader or writer refuses.
    """
    if not paths:
        raise FoscarError("no run directory given")
    kinds = [run_kind(p) for p in paths]
    if len(paths) > 1:
        other = next(((p, k) for p, k in zip(paths, kinds) if k != BENCH), None)
        if other is not None:
            raise FoscarError(f"only bench runs are drawn together; {other[0]} is {_a(other[1])}: pass it on its own")
        if out is None:
            raise FoscarError(f"{len(paths)} run directories given: pass --out DIR for the combined report")
    kind = kinds[0]
    if kind == BENCH:
        from bench.report import write_report
        from bench.rundir import load_runs

        runs = load_runs(paths)
        written = write_report(runs, out if out is not None else runs[0].path)
        return Drawn(kind, written.report, written.plots)
    target = Path(out) if out is not None else Path(paths[0])
    if kind == ABLATE:
        from bench.ablate_report import read_ablation, write_ablation_report

        files = write_ablation_report(target, read_ablation(paths[0]))
    elif kind == ACCURACY:
        files = _accuracy_report(Path(paths[0]), target)
    elif kind == EVAL_MODEL:
        from bench.eval_model import write_report as write_eval_report

        files = write_eval_report(paths[0], target)
    else:
        from bench.model_speed_study import write_report as write_speed_report

        files = write_speed_report(paths[0], target)
    return Drawn(kind, files[-1], [f for f in files if f.suffix == ".png"])


def _accuracy_report(run_dir: Path, out: Path) -> list[Path]:
    import json

    from bench.accuracy import load_accuracy_run, summarize
    from bench.accuracy_report import write_accuracy_report

    df, meta, grid = load_accuracy_run(run_dir)
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        summary = summarize(df, grid)
    make_dir(out, "report directory")
    return write_accuracy_report(out, df, summary, grid, meta, md_name="report.md")


@dataclass
class Comparison:
    """What ``foscar compare`` found: the JSON-ready result and how to print it."""

    kind: str
    result: dict[str, Any]
    render: Callable[..., None]  # render(result, console, show_all)


def compare_paths(base: Path, new: Path, threshold: float = 0.05) -> Comparison:
    """Compare two run directories of one kind (bench, ablate or accuracy).

    Raises:
        FoscarError: ``threshold`` is not a fraction from 0 to 1 (0.05 = 5%); the runs are of different kinds, or of
            a kind that is not compared (eval-model, model-speed); anything the kind's reader refuses.
    """
    if not 0.0 <= threshold <= 1.0:  # (NaN fails too)
        raise FoscarError(f"threshold: expected a fraction from 0 to 1 (0.05 = 5%), got {threshold!r}")
    kb, kn = run_kind(base), run_kind(new)
    if kb != kn:
        raise FoscarError(f"compare takes two runs of one kind: BASE {base} is {_a(kb)}, NEW {new} is {_a(kn)}")
    if kb not in COMPARED:
        raise FoscarError(f"compare takes two bench, ablate or accuracy runs; {base} and {new} are {kb} runs "
                          f"({COMMANDS[kb]}): `foscar report` draws each")  # fmt: skip
    if kb == BENCH:
        from bench.compare import compare_runs, render
        from bench.rundir import load_run

        return Comparison(kb, compare_runs(load_run(base), load_run(new), threshold), render)
    if kb == ABLATE:
        from bench.ablate_compare import compare_ablations
        from bench.ablate_report import read_ablation
        from bench.compare import render

        return Comparison(kb, compare_ablations(read_ablation(base), read_ablation(new), threshold), render)
    from bench.accuracy import load_accuracy_run
    from bench.accuracy_compare import compare_accuracy, render_accuracy

    frames, infos = [], []
    for path in (base, new):
        df, meta, _ = load_accuracy_run(path)
        git = meta.get("git") or {}
        frames.append(df)
        infos.append({"path": str(path), "label": Path(path).resolve().name,
                      "gpu": (meta.get("gpu") or {}).get("name") or "CPU (Triton interpreter)",
                      "commit": (git.get("commit") or "not recorded") + (" (dirty)" if git.get("dirty") else "")})  # fmt: skip
    return Comparison(kb, compare_accuracy(frames[0], frames[1], infos[0], infos[1], threshold), render_accuracy)
