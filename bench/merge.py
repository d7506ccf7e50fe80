"""``foscar merge RUN... --out DIR``: shard runs (``foscar bench|ablate|accuracy --shard K/N``) -> one run.

Works on any study of the engine (:mod:`bench.engine`): the shards' ``meta.json`` names
the kind and config, from which :func:`bench.studies.study_from_meta` rebuilds the study
(its grid, how a point's rows are found, its summary).

Checks first, writes nothing until they pass:

* every run directory holds ``results.csv`` and a ``meta.json`` with a ``shard`` entry;
* the shards agree on what they measured (:data:`MUST_AGREE`): the study kind, the config
  fingerprint (``config_hash``: sha256 of the resolved config, :func:`bench.config.config_hash`;
  the output directory and the shard are not part of the config), the git commit, the
  shard count N, the GPU model and the timing mode. A difference is refused with the
  field and both values (and the two run directories);
* no shard is given twice;
* every shard ``0..N-1`` is there and has rows for each of its points; otherwise the
  missing shards (or points) are named and the merge is refused, unless
  ``allow_partial`` (``--allow-partial``), which merges what is there and lists what
  is missing in ``meta.json`` and in ``summary.json["problems"]``.

Then it writes ``DIR/results.csv`` (the shards' rows in grid order: the study's points
for the recorded config, each point's rows as its shard wrote them, derived columns such
as speed-ups recomputed per point (:meth:`bench.engine.Study.merge_frame`); a bench row
keeps its ``gpu_uuid``, ``hbm_ceiling_tbps`` and ``sol_fraction``), ``DIR/meta.json`` (the
first shard's manifest, with ``shard: null``, ``shards``: per shard its directory, points,
GPU with UUID, HBM ceiling, dates, commands and resumes, and ``hbm_ceiling_tbps`` = the
lowest shard ceiling) and ``DIR/summary.json``, recomputed from the merged rows by the
study (:meth:`bench.engine.Study.summarize`: for bench the same geometric means and
intervals as ``foscar bench``, uniform and ragged grids).
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from bench.engine import point_mask, row_records
from bench.errors import FoscarError
from bench.kinds import BENCH
from bench.runfiles import check_run_dir, gpu_of, make_dir, read_json_object
from bench.shard import Shard, shard_of

# (what the message calls it, how to read it from meta.json)
MUST_AGREE: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("study kind", lambda m: m.get("kind")),
    ("config fingerprint (config_hash)", lambda m: m.get("config_hash")),
    ("git commit", lambda m: (m.get("git") or {}).get("commit")),
    ("shard count", lambda m: (m.get("shard") or {}).get("n")),
    ("GPU model", lambda m: gpu_of(m).get("name")),
    ("timing mode", lambda m: m.get("timing_mode")),
)
SHARD_WRITERS = "`foscar bench|ablate|accuracy|eval-model|model-speed --shard K/N`"  # the commands that write shard runs
_LONG_COLUMNS = ("lengths",)  # point columns left out of a message
# what meta.json["shards"] keeps of each shard's own manifest
SHARD_KEEP = ("date", "command", "gpu", "gpu_state", "hbm_ceiling_tbps", "hbm_copy_tbps", "hbm_read_tbps",
              "hbm_bytes", "clock_readings", "resumes", "git", "versions")  # fmt: skip


@dataclass
class ShardRun:
    """One shard's run directory, read back."""

    path: Path
    meta: dict[str, Any]
    rows: pd.DataFrame
    shard: Shard


@dataclass(frozen=True)
class MergeOutcome:
    """What :func:`merge_runs` wrote: the run directory, its problems (as ``foscar bench``'s) and what is missing."""

    path: Path
    problems: list[str]
    missing_shards: list[int]
    missing_points: int


def load_shard_run(path: Path | str) -> ShardRun:
    """Read one shard run directory.

    Raises:
        FoscarError: no such directory, no results.csv or meta.json, an unreadable file,
            or a run that is not a shard (its meta.json has no ``shard``).
    """
    from bench.studies import study_class

    path = check_run_dir(path)
    meta_path, csv = path / "meta.json", path / "results.csv"
    if not meta_path.is_file():
        raise FoscarError(f"{path} has no meta.json; pass run directories written by {SHARD_WRITERS}")
    meta = read_json_object(meta_path)
    shard = shard_of(meta)
    if shard is None:
        raise FoscarError(
            f"{path} is not a shard run (its meta.json has no shard); pass run directories written by "
            f"{SHARD_WRITERS}"
        )
    study = study_class(meta.get("kind", BENCH))
    if csv.is_file():
        try:
            rows = study.read(csv)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, TypeError, KeyError) as e:
            raise FoscarError(f"cannot read {csv}: {str(e).splitlines()[0]}") from None
    else:  # a shard that stopped before its first point: nothing measured yet
        rows = study.empty_frame()
    return ShardRun(path, meta, rows, shard)


def check_shards(runs: list[ShardRun]) -> None:
    """Refuse shards that cannot be merged: fields of :data:`MUST_AGREE` that differ, or a shard given twice.

    Raises:
        FoscarError: names the field, the two values and the two run directories; or the
            shard and both directories that hold it.
    """
    if not runs:
        raise FoscarError("foscar merge: no run directories given")
    first = runs[0]
    for name, get in MUST_AGREE:
        for other in runs[1:]:
            a, b = get(first.meta), get(other.meta)
            if a != b:
                raise FoscarError(
                    f"cannot merge: {name} differs: {a!r} in {first.path}, {b!r} in {other.path}; "
                    "shards must come from the same config, commit and shard count"
                )
    seen: dict[int, Path] = {}
    for run in runs:
        if run.shard.k in seen:
            raise FoscarError(f"shard {run.shard.label()} given twice: {seen[run.shard.k]} and {run.path}")
        seen[run.shard.k] = run.path


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def check_out_dir(out: Path, inputs: list[Path]) -> None:
    """Refuse an ``out`` that is one of the ``inputs`` or holds a run that is not a merge
    (a merge there is overwritten).

    Raises:
        FoscarError: says which, and to pass another directory.
    """
    resolved = out.resolve()
    if any(resolved == p.resolve() for p in inputs):
        raise FoscarError(f"--out {out} is one of the shard runs; pass another directory")
    if (out / "results.csv").exists():
        try:
            meta = json.loads((out / "meta.json").read_text())
        except (OSError, ValueError):
            meta = None
        if not (isinstance(meta, dict) and "shards" in meta):
            raise FoscarError(f"--out {out} already holds results.csv of a run that is not a merge; pass a new --out DIR")


def merge_runs(
    paths: list[Path | str],
    out: Path | str,
    allow_partial: bool = False,
    argv: list[str] | None = None,
    extra_meta: dict[str, Any] | None = None,
    extra_problems: list[str] | None = None,
) -> MergeOutcome:
    """Merge shard run directories into ``out`` (results.csv, meta.json, summary.json).

    Args:
        paths: the shards' run directories (any order).
        out: the merged run's directory (created; a previous merge there is overwritten).
        allow_partial: merge even when shards or points are missing, or points lack some of their rows (a row
            deleted to be rerun, the rerun forgotten); listed in ``meta.json["missing_shards"]``/
            ``["missing_points"]``/``["incomplete_points"]`` and in the problems.
        argv: the command line, for ``meta.json["command"]``.
        extra_meta: more entries for meta.json (``--devices`` adds its workers).
        extra_problems: more problems for summary.json (``--devices``: the failed workers).

    Returns:
        :class:`MergeOutcome`; ``problems`` are :func:`bench.run.run_problems`' plus what is missing.

    Raises:
        FoscarError: unreadable or non-shard runs, mismatched or duplicate shards
            (:func:`check_shards`), missing shards, points or rows without ``allow_partial``,
            rows of a shard that belong to none of its points, an ``out`` that is an input
            or holds a run that is not a merge.
    """
    from bench.results import write_csv, write_json

    out = Path(out)
    runs = sorted((load_shard_run(p) for p in paths), key=lambda r: r.shard.k)
    check_shards(runs)
    check_out_dir(out, [r.path for r in runs])
    n = runs[0].shard.n
    by_k = {r.shard.k: r for r in runs}
    missing_shards = [k for k in range(n) if k not in by_k]
    from bench.studies import study_from_meta

    study = study_from_meta(runs[0].meta)
    points = study.points()

    rows: list[dict[str, Any]] = []
    missing_points: dict[int, int] = {}
    incomplete: dict[int, list[str]] = {}  # shard -> its points that lack some of their rows (what is missing)
    for run in runs:
        df = run.rows
        used = pd.Series(False, index=df.index)
        for i in run.shard.indices(len(points)):
            mask = point_mask(df, study.point_columns(points[i]))
            used |= mask
            if not mask.any():
                missing_points[run.shard.k] = missing_points.get(run.shard.k, 0) + 1
            else:
                lacking = _missing_rows(study, points[i], df[mask])
                if lacking:
                    incomplete.setdefault(run.shard.k, []).append(f"{study.label(points[i])}: {lacking}")
            rows.append((i, df[mask]))
        if not used.all():
            stray = df[~used].iloc[0]
            where = ", ".join(f"{c} {stray[c]}" for c in study.point_columns(points[0]) if c not in _LONG_COLUMNS)
            raise FoscarError(
                f"{run.path}/results.csv holds rows of a point that is not in shard {run.shard.label()} "
                f"({where}); it is not that shard's run"
            )
    gaps = [f"shard{'s' if len(missing_shards) > 1 else ''} " + ", ".join(f"{k}/{n}" for k in missing_shards)] if missing_shards else []
    gaps += [f"{m} point(s) of shard {k}/{n} ({by_k[k].path}) not measured" for k, m in sorted(missing_points.items())]
    gaps += [f"rows of {len(v)} point(s) of shard {k}/{n} ({by_k[k].path}; {v[0]}"
             f"{f', and {len(v) - 1} more' if len(v) > 1 else ''})" for k, v in sorted(incomplete.items())]
    if gaps and not allow_partial:
        raise FoscarError(
            f"cannot merge: missing {'; '.join(gaps)} (of {n} shards, {len(points)} points); pass every shard run "
            "(resume an unfinished one with its own command and --out), or --allow-partial to merge without them"
        )

    ordered = [df for _, df in sorted(rows, key=lambda t: t[0]) if len(df)]
    records = [r for df in ordered for r in row_records(df)]
    merged = study.merge_frame(records)
    make_dir(out, "run directory")
    write_csv(merged, out / "results.csv")

    meta = merged_meta(runs, n, len(points), missing_shards, sum(missing_points.values()), argv)
    meta["incomplete_points"] = sum(len(v) for v in incomplete.values())
    meta.update(extra_meta or {})
    write_json(meta, out / "meta.json")

    summary = study.summarize(merged)
    problems = study.problems(merged) + [f"merged without {g}" for g in gaps] + list(extra_problems or [])
    summary["problems"] = problems
    write_json(summary, out / "summary.json")
    study.write_extras(out, merged, meta, summary)
    return MergeOutcome(out, problems, missing_shards, sum(missing_points.values()))


def _missing_rows(study, point: Any, rows: pd.DataFrame) -> str:
    """The rows a point of ``study`` gives (:meth:`bench.engine.Study.row_keys`) that ``rows`` lacks, as one
    phrase ("" when none is missing, or when the study cannot say: a bench run whose kernels are no longer
    registered)."""
    try:
        expected = study.row_keys(point)
    except (AttributeError, TypeError, NotImplementedError):
        return ""
    found = {study.row_key(rec) for rec in row_records(rows)}
    lacking = [k for k in expected if k not in found]
    return "missing " + ", ".join(" ".join(str(x) for x in k if x is not None) for k in lacking) if lacking else ""


def merged_meta(
    runs: list[ShardRun], n: int, num_points: int, missing_shards: list[int], missing_points: int,
    argv: list[str] | None,
) -> dict[str, Any]:  # fmt: skip
    """The merged run's manifest: the first shard's, with per-shard records under ``shards``.

    ``hbm_ceiling_tbps`` is the lowest of the shards' ceilings (each row's own is in
    results.csv); ``gpu.uuid`` is kept only when every shard ran on the same GPU.
    """
    meta = copy.deepcopy(runs[0].meta)
    for key in ("resumes", "gpu_state", "clock_readings", "hbm_copy_tbps", "hbm_read_tbps", "hbm_bytes"):
        meta.pop(key, None)  # per shard, below
    ceilings = [r.meta.get("hbm_ceiling_tbps") for r in runs if isinstance(r.meta.get("hbm_ceiling_tbps"), (int, float))]
    uuids = {gpu_of(r.meta).get("uuid") for r in runs}
    if isinstance(meta.get("gpu"), dict) and len(uuids) > 1:
        meta["gpu"]["uuid"] = None
    meta.update(
        date=_now(),
        command=shlex.join(argv) if argv else meta.get("command"),
        shard=None,
        grid_points=num_points,
        hbm_ceiling_tbps=min(ceilings) if ceilings else None,
        shards=[{"k": r.shard.k, "n": r.shard.n, "run_dir": str(r.path),
                 "points": r.shard.indices(num_points), **{k: r.meta.get(k) for k in SHARD_KEEP}}
                for r in runs],  # fmt: skip
        missing_shards=missing_shards,
        missing_points=missing_points,
    )
    if ceilings:
        meta["hbm_ceiling_note"] = (
            "the lowest of the shards' ceilings; each row's sol_fraction uses the ceiling measured on its own GPU "
            "(results.csv hbm_ceiling_tbps, shards[].hbm_ceiling_tbps)"
        )
    return meta
