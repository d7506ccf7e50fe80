"""The sweep engine: one loop and one run-directory format for every study.

A **study** (:class:`Study`) is a grid of points, the rows each point gives (one per
variant: a kernel, an ablation setting, an accuracy variant), a function that measures
a point's rows, and a summary of all rows. ``foscar bench`` (:class:`bench.sweep.BenchStudy`),
``foscar ablate`` (:class:`bench.ablate.AblateStudy`) and ``foscar accuracy``
(:class:`bench.accuracy.AccuracyStudy`) are study definitions; the engine owns what they
share:

* the run directory (:func:`start_run`): ``meta.json`` (the study's manifest, with
  ``kind``, ``config_hash``, ``grid_points`` and ``shard``) written first and again at
  the end (:meth:`RunDir.save_meta`), ``results.csv`` rewritten after every point,
  ``summary.json`` at the end (:func:`finish_run`, with ``problems``);
* resume: an ``--out DIR`` holding ``results.csv`` of the same config hash (and shard, and
  GPU model) is resumed; a point whose rows are all there with a final status is kept and
  not run again (:func:`finished_points`); each resuming session is appended to
  ``meta.json["resumes"]``;
* ``--shard K/N`` (:mod:`bench.shard`): only grid points ``K, K+N, ...``;
* progress: each point's header line with an ETA, a rich bar where stderr is a terminal
  (:mod:`bench.progress`);
* failure rows: a point whose measurement raises gets the study's failure rows
  (``status = "error"`` with the reason) and the sweep goes on;
* where each row ran (:class:`Site`, :func:`stamp_rows`): every row a session measures, its
  failure rows too, gets the session's GPU UUID (``gpu_uuid``) and, in studies whose rows
  have a ``sol_fraction``, that GPU's HBM ceiling (``hbm_ceiling_tbps``); rows kept from an
  earlier session keep theirs;
* output formats (:class:`OutputFormat`): tables, ``summary.json`` on stdout, or only
  the run directory (:func:`emit`).

``foscar merge`` (:mod:`bench.merge`) and ``--devices`` (:mod:`bench.devices`) work on
any study through the same definitions (:func:`bench.studies.study_from_meta`).

Imports nothing heavy at module level (no torch, no pandas): the CLI imports
:class:`OutputFormat` from here before anything else.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import sys
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from bench.choice import Choice
from bench.errors import EXIT_OK, EXIT_RUN_PROBLEM, FoscarError
from bench.runfiles import make_dir
from bench.shard import Shard, check_shard_fits, shard_mismatch

if TYPE_CHECKING:
    import pandas as pd

RESULTS_DIR = Path("results")
SCRATCH_DIR = RESULTS_DIR / "_scratch"


def new_run_dir(name: str, scratch: bool) -> Path:
    """``results/<timestamp>-<name>`` for a new run (``scratch``: under ``results/_scratch/``, for
    smoke runs and runs without a GPU); each study builds its own ``name``."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return (SCRATCH_DIR if scratch else RESULTS_DIR) / f"{stamp}-{name}"
FINAL_STATUSES = ("ok", "failed", "error", "skipped", "suspect")  # a row with one of these is not run again


class OutputFormat(Choice):
    """``table``: tables as the sweep runs; ``json``: only summary.json on stdout; ``quiet``: only the run directory."""

    table = "table"
    json = "json"
    quiet = "quiet"


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


@dataclass
class StudyOptions:
    """The flags every study command (``bench``, ``ablate``, ``accuracy``) takes; a command's
    options dataclass extends it (:class:`bench.run.BenchOptions`, ...)."""

    output: OutputFormat = OutputFormat.table  # --format (--json)
    argv: list[str] | None = None  # the command line, for meta.json
    shard: Shard | None = None  # --shard K/N: only these points of the grid (bench.shard)
    devices: str | None = None  # --devices all|0,1,...: one worker per GPU, then a merge (bench.devices)

    def __post_init__(self) -> None:
        # some typer versions hand an Enum option over as its plain string value (seen on the GPU
        # machine's typer); everything downstream, the --devices worker's JSON too, reads .value
        self.output = OutputFormat(self.output)


@dataclass(frozen=True)
class Outcome:
    """What a finished run left: its directory and the problems of its numbers (exit code 3 when any)."""

    path: Path
    problems: list[str]

    @property
    def exit_code(self) -> int:
        """:data:`bench.errors.EXIT_RUN_PROBLEM` when there is a problem, else :data:`bench.errors.EXIT_OK`."""
        return EXIT_RUN_PROBLEM if self.problems else EXIT_OK


SITE_COLUMN_DOCS = {
    "gpu_uuid": "the GPU the row ran on (GPU-..., as NVML and nvidia-smi write it); empty on the CPU (no GPU) "
                "or when neither torch nor NVML gave the UUID",
    "hbm_ceiling_tbps": "the HBM ceiling measured on that GPU at the start of its session (TB/s); empty on the CPU",
}  # fmt: skip


@dataclass(frozen=True)
class Site:
    """Where a session measures its rows; the engine writes it on each of them (:func:`stamp_rows`).

    Attributes:
        gpu_uuid: ``"GPU-..."`` (NVML's form), or ``None``: a CPU run, or a GPU whose UUID
            neither torch nor NVML gave (an empty ``results.csv`` cell either way).
        hbm_ceiling_tbps: the HBM ceiling measured on that GPU (TB/s, :mod:`bench.hbm`), or
            ``None`` (not measured: the CPU, or a study that does not measure it).
    """

    gpu_uuid: str | None = None
    hbm_ceiling_tbps: float | None = None


CPU_SITE = Site()


def gpu_site(info: Any, index: int = 0, hbm_tbps: float | None = None) -> Site:
    """The :class:`Site` of a session on ``info``'s GPU (a :class:`bench.arch.DeviceInfo`; ``None``:
    the CPU): its UUID as torch gives it, else as NVML gives it for CUDA device ``index``
    (:func:`bench.manifest.gpu_reading`), else ``None``."""
    if info is None:
        return Site(None, hbm_tbps)
    uuid = getattr(info, "uuid", None)
    if not uuid:
        from bench.manifest import gpu_reading

        reading, _ = gpu_reading(None, index)
        uuid = reading["uuid"] if reading else None
    return Site(uuid, hbm_tbps)


class Study:
    """A study definition: the grid, each point's rows, how they are measured and summarized.

    Subclasses set :attr:`kind` (``meta.json["kind"]``, :mod:`bench.kinds`) and implement
    the methods that raise ``NotImplementedError``. Rows are dicts keyed by the study's
    ``results.csv`` columns; a point is whatever the study's grid holds (hashable).
    """

    kind: str = ""
    # the Site fields the engine writes on every row (results.csv columns of the same names)
    site_columns: tuple[str, ...] = ("gpu_uuid",)

    def points(self) -> list[Any]:
        """Every point of the grid, in its order (shards and merges number them so)."""
        raise NotImplementedError

    def label(self, point: Any) -> str:
        """The point in words, for the progress lines (``b8 x 32K int2``)."""
        return str(point)

    def point_columns(self, point: Any) -> dict[str, Any]:
        """The ``results.csv`` columns and values that pick this point's rows out of a run's rows."""
        raise NotImplementedError

    def row_keys(self, point: Any) -> list[tuple]:
        """The key (:meth:`row_key`) of every row the point gives, in row order."""
        raise NotImplementedError

    def row_key(self, row: dict[str, Any]) -> tuple:
        """What tells a point's rows apart (the variant: kernel x operand, setting, ...)."""
        raise NotImplementedError

    def measure(self, point: Any) -> list[dict[str, Any]]:
        """The point's rows, measured. May raise: the engine then records :meth:`failure_rows`."""
        raise NotImplementedError

    def failure_rows(self, point: Any, reason: str) -> list[dict[str, Any]]:
        """The point's rows when :meth:`measure` raised: each ``status = "error"`` with ``reason``."""
        raise NotImplementedError

    def frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        """Rows (grid order) -> the ``results.csv`` frame: the schema's columns and dtypes, derived
        columns (speed-ups over a point's reference row) recomputed over all rows."""
        raise NotImplementedError

    def merge_frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        """:meth:`frame` for the rows of several shards (``foscar merge``); the same by default."""
        return self.frame(rows)

    @staticmethod
    def read(path: Path) -> pd.DataFrame:
        """A ``results.csv`` of this study read back with its dtypes (for resume and merge)."""
        raise NotImplementedError

    @staticmethod
    def empty_frame() -> pd.DataFrame:
        """A ``results.csv`` frame without rows (a shard that stopped before its first point)."""
        raise NotImplementedError

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Study:
        """The study a run's ``meta.json`` records (its ``config``), able to read, frame and
        summarize rows but not to measure (``foscar merge``).

        Raises:
            FoscarError: the recorded config cannot be rebuilt.
        """
        raise NotImplementedError

    def summarize(self, df: pd.DataFrame) -> dict[str, Any]:
        """``summary.json`` of the rows (without ``problems``: :meth:`problems` gives those)."""
        raise NotImplementedError

    def problems(self, df: pd.DataFrame) -> list[str]:
        """Why the rows' numbers need a look (``summary.json["problems"]``, exit code 3); none by default."""
        return []

    def estimates(self) -> list[float]:
        """Estimated seconds per point (grid order), for the ETA; equal weights by default."""
        return [1.0] * len(self.points())

    def write_extras(self, out: Path, df: pd.DataFrame, meta: dict[str, Any], summary: dict[str, Any]) -> list[Path]:
        """More files of a finished run (the study's report: markdown, PNGs) into ``out``; none by default.
        Called at the end of a run and of a merge."""
        return []

    def show_point(self, console, rows: pd.DataFrame, point: Any) -> None:
        """Print a finished point's rows (``table`` output); nothing by default."""

    def after_point(self) -> None:
        """Called after each point (free device memory); nothing by default."""


def recorded_config(meta: dict[str, Any], required: tuple[str, ...], kind: str) -> dict[str, Any]:
    """The ``config`` a run's ``meta.json`` recorded, for :meth:`Study.from_meta` of studies that
    keep it as a plain dict.

    Raises:
        FoscarError: no ``config`` dict, or one without every key of ``required``.
    """
    config = meta.get("config")
    if not isinstance(config, dict) or not set(required) <= set(config):
        keys = " and ".join(filter(None, (", ".join(required[:-1]), required[-1])))
        raise FoscarError(f"meta.json config: cannot rebuild the {kind} grid (no {keys})")
    return config


def stamp_rows(study: Study, rows: list[dict[str, Any]], site: Site | None) -> list[dict[str, Any]]:
    """Write ``site``'s :attr:`Study.site_columns` on every row (in place; returned). The one place
    that records where a row ran; ``None``: :data:`CPU_SITE` (empty cells)."""
    site = site or CPU_SITE
    values = {c: getattr(site, c) for c in study.site_columns}
    for row in rows:
        row.update(values)
    return rows


# ---------------------------------------------------------------------------
# resume


def row_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts, missing values as ``None``."""
    return df.astype(object).where(df.notna(), None).to_dict("records")


def point_mask(df: pd.DataFrame, columns: dict[str, Any]) -> pd.Series:
    """Boolean mask of the rows of ``df`` whose ``columns`` hold the given values (a missing value
    never matches)."""
    import pandas as pd

    mask = pd.Series(True, index=df.index)
    for col, value in columns.items():
        mask &= df[col] == value
    return mask.fillna(False).astype(bool)


def finished_rows(study: Study, prior: pd.DataFrame, point: Any) -> list[dict[str, Any]] | None:
    """The rows of ``point`` in ``prior`` (one per :meth:`Study.row_keys`, in that order) when each is
    there with a final status (:data:`FINAL_STATUSES`); ``None`` when the point must run (again)."""
    mine = prior[point_mask(prior, study.point_columns(point)) & prior["status"].isin(FINAL_STATUSES)]
    found = {study.row_key(rec): rec for rec in row_records(mine)}  # the last one wins
    expected = study.row_keys(point)
    if not expected or any(k not in found for k in expected):
        return None
    return [found[k] for k in expected]


def finished_points(study: Study, prior: pd.DataFrame | None) -> dict[int, list[dict[str, Any]]]:
    """Grid index -> the point's rows from ``prior``, for every point that need not run again."""
    done: dict[int, list[dict[str, Any]]] = {}
    if prior is None or not len(prior):
        return done
    for i, point in enumerate(study.points()):
        rows = finished_rows(study, prior, point)
        if rows is not None:
            done[i] = rows
    return done


# ---------------------------------------------------------------------------
# the run directory


@dataclass
class RunDir:
    """An open run directory: where, its ``meta.json`` object, this session's record in it, and
    the rows of the session(s) before (``None`` for a new run)."""

    out: Path
    meta: dict[str, Any]
    session: dict[str, Any]  # ``meta`` itself for a new run; the record appended to meta["resumes"] on resume
    prior: pd.DataFrame | None
    indices: list[int]  # the grid points this run measures (a shard's, or all)
    num_points: int
    site: Site | None = None  # where this session measures (stamped on its rows); None: the CPU

    def save_meta(self) -> None:
        """(Re)write ``meta.json``."""
        from bench.results import write_json

        write_json(self.meta, self.out / "meta.json")


def shard_indices(shard: Shard | None, num_points: int) -> list[int]:
    """The grid indices a run of ``shard`` (``None``: the whole grid) measures.

    Raises:
        FoscarError: the shard would get no point (:func:`bench.shard.check_shard_fits`).
    """
    if shard is None:
        return list(range(num_points))
    check_shard_fits(shard, num_points)
    return shard.indices(num_points)


def check_resume(
    study: Study,
    out: Path,
    cfg_hash: str,
    config: dict[str, Any],
    shard: Shard | None = None,
    refuse: Callable[[dict[str, Any]], str | None] | None = None,
):
    """``(rows, meta)`` of the run in ``out`` that this session resumes, or ``None`` when ``out``
    holds no results (a new run). Checked before anything is measured or written.

    Args:
        cfg_hash, config: this session's resolved config (a JSON object) and its
            :func:`bench.config.config_hash`.
        refuse: why a previous run's ``meta.json`` may not be resumed by this session
            (another GPU model), or ``None``.

    Raises:
        FoscarError: ``out`` holds a run of another kind (another command's), config, shard or GPU (the message
            says which, and to pass a new ``--out``), or files that cannot be read.
    """
    from bench.resume import load_prior

    prior = load_prior(out, cfg_hash, config, study.read, kind=study.kind)
    if prior is not None:
        why = (refuse(prior[1]) if refuse else None) or shard_mismatch(prior[1], shard)
        if why:
            raise FoscarError(f"cannot resume {out}: {why}; pass a new --out DIR")
    return prior


_CHECK = object()


def start_run(
    study: Study,
    out: Path,
    manifest: dict[str, Any],
    shard: Shard | None = None,
    prior: Any = _CHECK,
    refuse: Callable[[dict[str, Any]], str | None] | None = None,
    site: Site | None = None,
) -> RunDir:
    """Open (create, or resume) the run directory ``out`` and write its ``meta.json``.

    Args:
        study: the study to run.
        out: the run directory.
        manifest: this session's manifest; must hold ``config`` (a JSON object) and
            ``config_hash`` (:func:`bench.config.config_hash` of it). The engine adds
            ``kind``, ``grid_points`` and ``shard``.
        shard: ``--shard K/N`` or ``None``.
        prior: what :func:`check_resume` returned (default: it is called here, with ``refuse``).
        refuse: passed to :func:`check_resume` when it is called here.
        site: where this session measures (:func:`gpu_site`); ``None``: the CPU.

    Returns:
        The open :class:`RunDir`; ``meta.json`` is written (a resumed run keeps its first
        session's manifest and appends this session to ``resumes``).

    Raises:
        FoscarError: the shard gets no point; what :func:`check_resume` refuses; ``out``
            cannot be created.
    """
    from bench.resume import session_record

    num_points = len(study.points())
    indices = shard_indices(shard, num_points)
    manifest = {**manifest, "kind": study.kind, "grid_points": num_points,
                "shard": shard.to_json(num_points) if shard is not None else None}  # fmt: skip
    if prior is _CHECK:
        prior = check_resume(study, out, manifest["config_hash"], manifest["config"], shard, refuse)
    make_dir(out, "run directory")
    if prior is None:
        run = RunDir(out, manifest, manifest, None, indices, num_points, site)
    else:  # keep the first session's manifest; record this one under "resumes"
        rows, meta = prior
        session = session_record(manifest, len(finished_points(study, rows)))
        meta.setdefault("resumes", []).append(session)
        run = RunDir(out, meta, session, rows, indices, num_points, site)
    run.save_meta()
    return run


# ---------------------------------------------------------------------------
# the loop


def error_reason(e: BaseException, limit: int = 300) -> str:
    """``"Type: message"`` on one line, whitespace squashed, at most ``limit`` characters."""
    msg = " ".join(str(e).split())
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_points(
    study: Study,
    results_path: Path,
    indices: list[int] | None = None,
    prior: pd.DataFrame | None = None,
    console=None,
    progress: bool = False,
    site: Site | None = None,
) -> pd.DataFrame:
    """Measure every point of ``indices`` (default: the whole grid) not already finished in
    ``prior``; return all rows of those points (grid order, :meth:`Study.frame`), also written to
    ``results_path`` after each point (so a crash or Ctrl-C loses no finished point).

    A point whose :meth:`Study.measure` raises (anything but ``KeyboardInterrupt``) gets
    :meth:`Study.failure_rows` and the loop goes on. Either way the point's rows get ``site``
    (:func:`stamp_rows`).

    Args:
        prior: the rows of the run being resumed (:attr:`RunDir.prior`), or ``None``.
        site: where this session measures (:attr:`RunDir.site`); ``None``: the CPU.
        console: a rich console for the point lines and tables (``None``: print nothing).
        progress: a rich bar on stderr where stderr is a terminal.
    """
    from bench.progress import Eta, SweepProgress, bar_wanted
    from bench.results import write_csv

    points = study.points()
    selected = list(range(len(points))) if indices is None else list(indices)
    by_point = {i: rows for i, rows in finished_points(study, prior).items() if i in set(selected)}
    todo = [i for i in selected if i not in by_point]
    position = {i: n for n, i in enumerate(selected)}
    if console and by_point:
        console.print(
            f"resuming: {len(selected) - len(todo)} of {len(selected)} points already in {results_path}; "
            + (f"{len(todo)} left to run" if todo else "none left to run")
        )

    def all_rows() -> pd.DataFrame:
        return study.frame([r for i in sorted(by_point) for r in by_point[i]])

    estimates = study.estimates()
    eta = Eta([estimates[i] for i in todo])
    df = all_rows()
    with SweepProgress(eta, len(selected)) if progress and bar_wanted() else nullcontext() as bar:
        for i in todo:
            point = points[i]
            if bar:
                bar.point_started(position[i] + 1, study.label(point))
            if console:
                console.print(f"[bold][{position[i] + 1}/{len(selected)}][/] {study.label(point)}  [dim]({eta.text()})[/]")
            try:
                rows = study.measure(point)
            except Exception as e:  # the point's own failure: recorded, the sweep goes on
                rows = study.failure_rows(point, error_reason(e))
            by_point[i] = stamp_rows(study, rows, site)
            df = all_rows()
            write_csv(df, results_path)
            eta.point_done()
            if bar:
                bar.point_done()
            if console:
                start = sum(len(by_point[j]) for j in by_point if j < i)
                study.show_point(console, df.iloc[start : start + len(rows)], point)
            study.after_point()
    if not todo:
        write_csv(df, results_path)
    return df


def run_study(study: Study, run: RunDir, console=None, progress: bool = False) -> pd.DataFrame:
    """:func:`run_points` over an open run directory (its shard's points, its prior rows)."""
    return run_points(study, run.out / "results.csv", run.indices, run.prior, console, progress, run.site)


def finish_run(study: Study, run: RunDir, df: pd.DataFrame, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``summary.json``: :meth:`Study.summarize` of the rows, ``extra`` entries, and
    ``problems`` (:meth:`Study.problems`), then the study's other files (:meth:`Study.write_extras`);
    return the summary."""
    from bench.results import write_json

    summary = study.summarize(df)
    summary.update(extra or {})
    summary["problems"] = study.problems(df)
    write_json(summary, run.out / "summary.json")
    study.write_extras(run.out, df, run.meta, summary)
    return summary


def complete_run(study: Study, run: RunDir, output: OutputFormat, console=None,
                 show: Callable[[Any, dict[str, Any], pd.DataFrame], None] | None = None) -> Outcome:  # fmt: skip
    """The rest of a run once its directory is open: :func:`run_study` (progress bar under ``table``
    output), :func:`finish_run`, then :func:`emit` in ``output``, where ``show(console, summary, rows)``
    prints the study's tables (``table`` output only).

    Returns:
        The run's :class:`Outcome` (its problems: :meth:`Study.problems`).
    """
    df = run_study(study, run, console, progress=output is OutputFormat.table)
    summary = finish_run(study, run, df)
    emit(output, run.out, summary, console, (lambda: show(console, summary, df)) if show and console else None)
    return Outcome(run.out, summary["problems"])


def emit(output: OutputFormat, out: Path, summary: dict[str, Any], console=None,
         show: Callable[[], None] | None = None) -> None:  # fmt: skip
    """Print a finished run in the chosen format: ``json``: ``summary.json`` on stdout; ``quiet``:
    the run directory; ``table``: ``show()`` (the study's tables) on ``console``. Then every
    problem on stderr as ``problem: ...`` (whatever the format, so a script sees why the exit
    code is 3)."""
    if output is OutputFormat.json:
        print(json.dumps(summary, indent=2, default=_plain))
    elif output is OutputFormat.quiet or console is None:
        print(out)
    elif show is not None:
        show()
    for p in summary.get("problems") or []:
        print(f"problem: {p} (exit code {EXIT_RUN_PROBLEM})", file=sys.stderr)


def _plain(x: Any) -> Any:
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


def make_console_for(output: OutputFormat):
    """The rich console a run prints on: stderr under ``--format json`` (stdout holds the JSON),
    none under ``quiet``."""
    if output is OutputFormat.quiet:
        return None
    from bench.tables import make_console

    return make_console(stderr=output is OutputFormat.json)


@dataclass
class RunPlan:
    """What a run of a study resolves to before it measures anything (for ``--devices``): its
    points' count, its run directory and a title."""

    num_points: int
    out: Path
    title: str
