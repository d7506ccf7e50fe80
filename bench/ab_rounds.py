"""A whole A/B probe in one command: build kernel variants side by side, then time them in alternated rounds.

Every session's kernel experiment (bench/NOTES.md) runs the same loop on the GPU machine: build each variant's
extension at once, then ``python -m bench.ab run`` one process per (variant, round) in an order such as ``t l l t t l``
(a drift of the GPU's clock over the call falls on both), within the call's time, then ``python -m bench.ab table``.
Sessions 49-51 wrote that loop into each probe script; this module is the loop:

    python -m bench.ab_rounds OUT_DIR --variant t:FOSCAR_ONLY_HEAD_DIM=128 \\
        --variant l:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_L2_ONLY=1 --order "t l l t t l" \\
        --point 2x8x32768 --point 2x32x8192 [--limit-s 300] [--query-copy] [--run-flag NAME:FLAG] \\
        [--run-env NAME:VAR=VALUE]

A variant is ``NAME:DEFINES[@CSRC]``, as ``scripts/gpu_ab.sh`` reads ``FOSCAR_AB``: DEFINES comma-separated ``-D``
knobs of the kernel header (``FOSCAR_NVCC_DEFINES``), CSRC another source directory (``FOSCAR_CSRC``). The first
variant is the table's base. ``--run-flag NAME:FLAG`` passes one of ``bench.ab run``'s per-round flags
(``--no-sampler``, ``--query-copy``) to variant NAME's rounds only: an A/A of a run option is two variants of the same
build, ``s:`` and ``o:`` with ``--run-flag o:--no-sampler`` (variants whose defines and source are the same are built
once). ``--run-env NAME:VAR=VALUE`` sets a ``FOSCAR_*`` setting that plans read when they are made for variant NAME's
rounds (an A/B of a plan rule on one build: ``old:`` and ``new:`` with ``--run-env old:FOSCAR_SHORT_CHUNKS=0``). Written
under OUT_DIR: ``build-NAME.log``, ``ab-NAME-R.csv`` and ``.log`` per round
(:func:`bench.ab.run`'s rows), and ``ab-table.txt`` (:func:`bench.ab.table`, also printed). A variant whose build
fails is left out of the rounds; a round that fails keeps its rows and log, and the rounds go on; rounds stop when
fewer than ``--round-s`` seconds are left of ``--limit-s`` (counted from the start of this command, builds included).
OUT_DIR must not hold an earlier run's ``ab-*.csv`` (they would enter the table). Exit status 0 when every build and
round ran, 1 otherwise, 2 for bad arguments (checked before any build).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from bench.ab import parse_point

BUILD = "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)"


@dataclass(frozen=True)
class Variant:
    """One build: its label, ``-D`` knobs (``FOSCAR_NVCC_DEFINES``, space-separated there) and source directory
    (``FOSCAR_CSRC``; empty: this tree's)."""

    name: str
    defines: tuple[str, ...] = ()
    csrc: str = ""
    run_flags: tuple[str, ...] = ()  # bench.ab run's flags for this variant's rounds (RUN_FLAGS)
    run_env: tuple[tuple[str, str], ...] = ()  # FOSCAR_* settings read when a plan is made, for its rounds (--run-env)

    @property
    def build(self) -> tuple[tuple[str, ...], str]:
        """What names its extension: variants equal here share one build."""
        return self.defines, self.csrc

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with this variant's two build variables and its
        :attr:`run_env` set."""
        env = dict(os.environ if base is None else base)
        env["FOSCAR_NVCC_DEFINES"] = " ".join(self.defines)
        env["FOSCAR_CSRC"] = self.csrc
        env.update(self.run_env)
        return env


def parse_variant(text: str) -> Variant:
    """``NAME:DEFINES[@CSRC]``, e.g. ``t:``, ``l:FOSCAR_ONLY_HEAD_DIM=128,FOSCAR_L2_ONLY=1``, ``old:@old/csrc``.

    Raises:
        ValueError: no ``:``, an empty name or one other than letters, digits, ``-`` and ``_`` (it names files), or
            an empty define between commas.
    """
    name, sep, rest = text.partition(":")
    if not sep:
        raise ValueError(f"variant {text!r}: expected NAME:DEFINES[@CSRC], e.g. l:FOSCAR_L2_ONLY=1 or base:")
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"variant {text!r}: the name must be letters, digits, '-' or '_' (it names the CSV files)")
    defines, _, csrc = rest.partition("@")
    parts = tuple(defines.split(",")) if defines else ()
    if any(not d.strip() for d in parts):
        raise ValueError(f"variant {text!r}: an empty define between commas")
    return Variant(name, tuple(d.strip() for d in parts), csrc)


# bench.ab run's per-round flags that --run-flag may give one variant (each is a column of its rows)
RUN_FLAGS = ("--no-sampler", "--query-copy")


def add_run_flags(variants: list[Variant], specs: list[str]) -> list[Variant]:
    """``variants`` with each ``NAME:FLAG`` of ``specs`` added to variant NAME's ``run_flags``.

    Raises:
        ValueError: no ``:``, a name that is not a variant's (the names are listed), or a flag not in
            :data:`RUN_FLAGS` (they are listed).
    """
    by_name = {v.name: v for v in variants}
    for spec in specs:
        name, sep, flag = spec.partition(":")
        if not sep:
            raise ValueError(f"--run-flag {spec!r}: expected NAME:FLAG, e.g. o:--no-sampler")
        if name not in by_name:
            raise ValueError(f"--run-flag {spec!r}: {name} not among the variants {', '.join(by_name)}")
        if flag not in RUN_FLAGS:
            raise ValueError(f"--run-flag {spec!r}: {flag!r} is not one of bench.ab run's per-round flags "
                             f"{', '.join(RUN_FLAGS)}")
        v = by_name[name]
        if flag not in v.run_flags:
            by_name[name] = replace(v, run_flags=(*v.run_flags, flag))
    return [by_name[v.name] for v in variants]


# what a variant's build is made from (its defines and @source): never a per-round setting
BUILD_VARIABLES = ("FOSCAR_NVCC_DEFINES", "FOSCAR_NVCC_FLAGS", "FOSCAR_CSRC")


def check_defines(variants: list[Variant]) -> None:
    """Refuse a define that is no knob of the variant's kernel source (``#ifndef`` / ``#ifdef`` / ``defined()`` in
    its csrc, :func:`foscar.kernels.decode_cuda.kernel_knobs`): a misspelt knob builds an extension of its own that
    compiles the default kernel, and the A/B would time the default against itself.

    Raises:
        ValueError: the first such define, with the knobs of that source.
    """
    from foscar.kernels import decode_cuda

    for v in variants:
        csrc = Path(v.csrc) if v.csrc else decode_cuda.CSRC
        knobs = decode_cuda.kernel_knobs(csrc)
        for d in v.defines:
            name = d.split("=", 1)[0].strip()
            if name not in knobs:
                raise ValueError(f"--variant {v.name}: {name} is no knob of the kernel in {csrc} (a typo builds the "
                                 f"default kernel under another name); its knobs: {', '.join(sorted(knobs))}")


def add_run_env(variants: list[Variant], specs: list[str]) -> list[Variant]:
    """``variants`` with each ``NAME:VAR=VALUE`` of ``specs`` added to variant NAME's :attr:`Variant.run_env`: a
    setting the library reads when a plan is made (``FOSCAR_SHORT_CHUNKS=0``, ``FOSCAR_MAX_CTAS_PER_SM=2``), so that
    two variants of one build time two plans (the build is shared, :attr:`Variant.build`).

    Raises:
        ValueError: no ``:`` or ``=``, a name that is not a variant's (the names are listed), or a variable that is
            not ``FOSCAR_`` and upper-case letters, digits and ``_``, or is one of the build's (``FOSCAR_NVCC_DEFINES``,
            ``FOSCAR_NVCC_FLAGS``, ``FOSCAR_CSRC``: a variant's build comes from its defines and source alone).
    """
    by_name = {v.name: v for v in variants}
    for spec in specs:
        name, sep, setting = spec.partition(":")
        var, eq, value = setting.partition("=")
        if not sep or not eq:
            raise ValueError(f"--run-env {spec!r}: expected NAME:VAR=VALUE, e.g. old:FOSCAR_SHORT_CHUNKS=0")
        if name not in by_name:
            raise ValueError(f"--run-env {spec!r}: {name} not among the variants {', '.join(by_name)}")
        if (not var.startswith("FOSCAR_") or not all(c.isupper() or c.isdigit() or c == "_" for c in var)
                or var in BUILD_VARIABLES):
            raise ValueError(f"--run-env {spec!r}: expected a FOSCAR_* setting read when a plan is made (not "
                             f"{' or '.join(BUILD_VARIABLES)}: a variant's build comes from its defines and @source)")
        v = by_name[name]
        by_name[name] = replace(v, run_env=(*[e for e in v.run_env if e[0] != var], (var, value)))
    return [by_name[v.name] for v in variants]


def parse_order(text: str, names: list[str]) -> list[str]:
    """The rounds' order, labels separated by spaces or commas (``"t l l t t l"``).

    Raises:
        ValueError: empty, or a label that is not a variant's name (the names are listed).
    """
    order = text.replace(",", " ").split()
    if not order:
        raise ValueError("--order: no labels")
    unknown = sorted(set(order) - set(names))
    if unknown:
        raise ValueError(f"--order: {', '.join(unknown)} not among the variants {', '.join(names)}")
    return order


def rounds(order: list[str]) -> list[tuple[str, int]]:
    """``(label, round)`` for each entry of ``order``, a label's rounds numbered from 0 in order of appearance."""
    seen: dict[str, int] = {}
    out = []
    for label in order:
        out.append((label, seen.get(label, 0)))
        seen[label] = seen.get(label, 0) + 1
    return out


Runner = Callable[..., subprocess.CompletedProcess]


def build_all(variants: list[Variant], out: Path, run: Runner | None = None, jobs: int | None = None) -> list[str]:
    """Build (or load) every variant's extension at once, ``MAX_JOBS`` shared (``jobs`` in all, default the CPU
    count); each build's output in ``out/build-NAME.log``. Variants of the same :attr:`Variant.build` are built once,
    by the first of them (the others' logs name it). Returns the names whose build failed."""
    run = run or subprocess.run
    firsts: dict[tuple, Variant] = {}
    for v in variants:
        firsts.setdefault(v.build, v)
    builds = list(firsts.values())
    jobs_each = max(1, (jobs or os.cpu_count() or 1) // len(builds))

    def one(v: Variant) -> bool:
        with open(out / f"build-{v.name}.log", "w") as log:
            env = v.env() | {"MAX_JOBS": str(jobs_each)}
            return run([sys.executable, "-c", BUILD], env=env, stdout=log, stderr=subprocess.STDOUT).returncode == 0

    with ThreadPoolExecutor(len(builds)) as pool:
        ok = dict(zip((v.build for v in builds), pool.map(one, builds)))
    for v in variants:
        if firsts[v.build] is not v:
            (out / f"build-{v.name}.log").write_text(f"the build of variant {firsts[v.build].name}\n")
    return [v.name for v in variants if not ok[v.build]]


@dataclass(frozen=True)
class RoundResult:
    """One ``(label, round)``: ``status`` is the exit status of ``bench.ab run``, ``"timeout"``, or ``"not run"``
    (too little time left); ``seconds`` its wall time."""

    label: str
    rnd: int
    status: int | str
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == 0

    def line(self) -> str:
        if self.status == "not run":
            return f"{self.label} round {self.rnd}: not run (too little of --limit-s left)"
        return f"{self.label} round {self.rnd}: rc={self.status} in {self.seconds:.0f} s"


def run_rounds(variants: list[Variant], order: list[str], points: list[str], out: Path, *, limit_s: float,
               round_s: float, run: Runner | None = None,
               clock: Callable[[], float] = time.monotonic, start: float | None = None) -> list[RoundResult]:
    """``python -m bench.ab run`` for each ``(label, round)`` of ``order`` in turn, with the label's environment and
    run flags (:attr:`Variant.run_flags`), each
    under a timeout of what is left of ``limit_s`` (from ``start``, default now) less 10 s; a round is not started
    with fewer than ``round_s`` seconds left. A label's odd-numbered rounds time the points in reverse order, so that
    what running a point after another costs (a capacity variant right after its base) falls on each side in turn; the
    rounds the table pairs (the same number) time them in the same order. Returns one :class:`RoundResult` per entry
    of ``order``."""
    run = run or subprocess.run
    by_name = {v.name: v for v in variants}
    start = clock() if start is None else start
    results = []
    for label, rnd in rounds(order):
        left = limit_s - (clock() - start)
        if left < round_s:
            results.append(RoundResult(label, rnd, "not run"))
            continue
        cmd = [sys.executable, "-m", "bench.ab", "run", label, str(rnd), str(out / f"ab-{label}-{rnd}.csv")]
        cmd += [a for p in (points if rnd % 2 == 0 else points[::-1]) for a in ("--point", p)]
        cmd += list(by_name[label].run_flags)
        t0 = clock()
        with open(out / f"ab-{label}-{rnd}.log", "w") as log:
            try:
                status: int | str = run(cmd, env=by_name[label].env(), stdout=log, stderr=subprocess.STDOUT,
                                        timeout=max(1.0, left - 10)).returncode
            except subprocess.TimeoutExpired:
                status = "timeout"
        results.append(RoundResult(label, rnd, status, clock() - t0))
    return results


def write_table(out: Path, base: str) -> tuple[str, bool]:
    """:func:`bench.ab.table` of every ``ab-*-*.csv`` under ``out`` (base ``base``), written to ``out/ab-table.txt``;
    ``(text, ok)``, ``ok`` False where there are no rows or the table cannot be made (the reason is the text)."""
    from bench.ab import read_rows, table

    csvs = sorted(out.glob("ab-*-*.csv"))
    try:
        text, ok = table([read_rows(f) for f in csvs], base), True
    except ValueError as e:  # no rows, or the base has none that ran
        text, ok = f"no table: {e}", False
    (out / "ab-table.txt").write_text(text + "\n")
    return text, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab_rounds", description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path, help="a folder for the logs, each round's CSV and the table (new, or "
                    "without ab-*.csv: earlier rounds would enter the table)")
    ap.add_argument("--variant", action="append", required=True, help="NAME:DEFINES[@CSRC], DEFINES comma-separated "
                    "(repeat; the first is the base)")
    ap.add_argument("--order", required=True, help='the rounds, e.g. "t l l t t l"')
    ap.add_argument("--point", action="append", required=True,
                    help="BITSxBATCHxCONTEXT[:WORKLOAD][:paged][:gN][:hQ-K][:cN][:dN][:capN][:sN][:fp8|:per-value]")
    ap.add_argument("--limit-s", type=float, default=480.0, help="seconds for the whole command, builds included "
                    "(default 480)")
    ap.add_argument("--round-s", type=float, default=30.0, help="start no round with fewer seconds left (default 30)")
    ap.add_argument("--query-copy", action="store_true", help="bench.ab run's --query-copy (every variant)")
    ap.add_argument("--run-flag", action="append", default=[], metavar="NAME:FLAG",
                    help=f"one of bench.ab run's flags ({', '.join(RUN_FLAGS)}) for variant NAME's rounds only "
                    "(repeat)")
    ap.add_argument("--run-env", action="append", default=[], metavar="NAME:VAR=VALUE",
                    help="a FOSCAR_* setting read when a plan is made, for variant NAME's rounds only, e.g. "
                    "old:FOSCAR_SHORT_CHUNKS=0 (repeat)")
    a = ap.parse_args(argv)
    start = time.monotonic()
    try:
        variants = [parse_variant(v) for v in a.variant]
        names = [v.name for v in variants]
        if len(set(names)) != len(names):
            raise ValueError(f"--variant: names must differ, got {', '.join(names)}")
        # --query-copy: the same run flag for every variant
        variants = add_run_flags(variants, a.run_flag + [f"{n}:--query-copy" for n in names if a.query_copy])
        variants = add_run_env(variants, a.run_env)
        check_defines(variants)
        order = parse_order(a.order, names)
        for p in a.point:
            parse_point(p)  # a bad point fails here, not in every round
        if not 0 < a.round_s <= a.limit_s:
            raise ValueError(f"--round-s {a.round_s:g} and --limit-s {a.limit_s:g}: expected 0 < round-s <= limit-s "
                             "(no round could run)")
        stale = sorted(f.name for f in a.out_dir.glob("ab-*.csv")) if a.out_dir.is_dir() else []
        if stale:
            raise ValueError(f"{a.out_dir} already holds {', '.join(stale[:3])}{' ...' if len(stale) > 3 else ''} "
                             "from earlier rounds, which would enter the table: use a new folder")
    except ValueError as e:
        print(f"bench.ab_rounds: {e}", file=sys.stderr)
        return 2
    a.out_dir.mkdir(parents=True, exist_ok=True)
    failed = build_all(variants, a.out_dir)
    print(f"built {len(variants) - len(failed)} of {len(variants)} variants in {time.monotonic() - start:.0f} s"
          + (f"; failed: {', '.join(failed)} (see build-NAME.log)" if failed else ""), flush=True)
    built = [n for n in names if n not in failed]
    if not built:
        return 1
    results = run_rounds([v for v in variants if v.name in built], [x for x in order if x in built], a.point,
                         a.out_dir, limit_s=a.limit_s, round_s=a.round_s, start=start)
    print("\n".join(r.line() for r in results), flush=True)
    text, ok = write_table(a.out_dir, built[0])
    print(text)
    return 0 if not failed and all(r.ok for r in results) and ok else 1


if __name__ == "__main__":
    sys.exit(main())
