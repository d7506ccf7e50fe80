"""Progress of a long sweep: the current point and an ETA.

The ETA weighs the points still to run by their estimated time (:mod:`bench.plan`),
so a batch-64 x 128K point counts for more than a batch-1 x 8K one. Before the
first point finishes it is the model's estimate; after that, the model's estimate
of what is left scaled by (time measured so far / time estimated for the points done).

The bar is drawn on stderr with rich, only where stderr is a terminal (a log file
gets the ETA in each point's header line instead) and only in the ``table`` output
mode (the sweep turns it off for ``--format json`` and ``quiet``).
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from bench.plan import format_duration


class Eta:
    """Remaining time of a sweep, from per-point estimates corrected by the time measured so far."""

    def __init__(self, estimates: list[float], clock=time.monotonic):
        self.estimates = list(estimates)
        self.clock = clock
        self.started = clock()
        self.done = 0  # points finished (in order)

    def point_done(self) -> None:
        self.done += 1

    def remaining_s(self) -> float:
        left = sum(self.estimates[self.done :])
        done_est = sum(self.estimates[: self.done])
        if self.done == 0 or done_est <= 0:
            return left
        return left * (self.clock() - self.started) / done_est

    def text(self) -> str:
        if self.done >= len(self.estimates):
            return "done"
        return f"~{format_duration(self.remaining_s())} left"


class _CountdownColumn(ProgressColumn):
    """``ETA 12 min``, counting down between points from the deadline stored in the task."""

    def render(self, task) -> Text:
        deadline = task.fields.get("deadline")
        if task.finished:
            return Text("done", style="progress.remaining")
        if deadline is None:
            return Text("ETA ?", style="progress.remaining")
        return Text(f"ETA {format_duration(deadline - time.monotonic())}", style="progress.remaining")


class SweepProgress:
    """A rich progress bar over the points to run (stderr), fed by :class:`Eta`."""

    def __init__(self, eta: Eta, total_points: int):
        """``eta``: over the points to run (the caller calls ``eta.point_done()``);
        ``total_points``: the whole grid, resumed points included."""
        self.eta = eta
        self.total_points = total_points
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _CountdownColumn(),
            console=Console(stderr=True),
            redirect_stdout=sys.stdout.isatty(),  # tables printed on the same terminal go above the bar
            redirect_stderr=False,
        )
        self._task = self._progress.add_task("starting", total=len(eta.estimates), deadline=self._deadline())

    def _deadline(self) -> float:
        return time.monotonic() + self.eta.remaining_s()

    def __enter__(self) -> "SweepProgress":
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.stop()

    def point_started(self, index: int, label: str) -> None:
        """``index``: 1-based position in the whole grid."""
        self._progress.update(self._task, description=f"[{index}/{self.total_points}] {label}")

    def point_done(self) -> None:
        """After ``eta.point_done()``: advance the bar and reset the countdown."""
        self._progress.update(self._task, advance=1, deadline=self._deadline())


def bar_wanted() -> bool:
    """A live bar only where stderr is a terminal."""
    return sys.stderr.isatty()
