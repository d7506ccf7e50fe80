"""Instructions in the main loop of each CUDA decode kernel, from the compiled SASS.

The numbers in bench/NOTES.md §5, §6, §8 and §12 ("1209 instructions per 64 tokens per
warp", "per-value 2797", "FP8 1466 with 320 F2FP unpacks", "1059 with planes in place", 1053
before and 853 with the full-tile copy loop of §23) come from here: compile the kernel's
translation units for sm_90a with nvcc (no GPU needed), disassemble with ``cuobjdump -sass``,
and in every ``folded_decode_kernel`` instance find the per-tile loop of a warp (64 tokens): of
the innermost backward branches around mma instructions, the one with the most of them, then
the shortest (ptxas adds longer ones around it for the divergence fallback of shuffles; the
kernel runs its full sub-tiles in one loop and its last steps in a second, general one: the
first is the shorter, bench/NOTES.md §23). Count the instructions inside it by opcode; a
static count, so a branch inside the loop counts both ways.

    python -m bench.sass                      # every instance, one line each
    python -m bench.sass --match "INT2 D=128 G=128"    # INT2, head_dim 128, group 128
    python -m bench.sass --write bench/data/sass_loop_counts.json   # the committed snapshot

The committed snapshot (:data:`SNAPSHOT`) holds every instance's count and the nvcc that
produced it; ``tests/test_decode_cuda.py`` compiles the kernel in CI and fails when a count
differs from it (same nvcc), so a change to a loop shows in review as a change to that file.

Needs ``nvcc`` (``CUDA_HOME`` or PATH) and ``cuobjdump`` (the CUDA toolkit's, or the one
Triton ships in ``triton/backends/nvidia/bin``).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# template arguments: bits, head_dim, group_size, mode, paged, channel-wise K, packed integer PV (gqa <= 4)
KERNEL_RE = re.compile(r"folded_decode_kernelILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELb([01])ELb([01])E(?:Lb([01])E)?")
MODE_NAMES = {0: "folded-bf16", 1: "per-value", 2: "folded-fp8"}  # csrc enum Mode
SNAPSHOT = Path(__file__).parent / "data" / "sass_loop_counts.json"


@dataclass(frozen=True)
class LoopCount:
    """The main loop of one kernel instance."""

    bits: int
    head_dim: int
    group_size: int
    mode: str  # folded-bf16 / per-value / folded-fp8
    paged: bool
    instructions: int  # SASS instructions in the loop body (one 64-token tile of one warp)
    opcodes: dict[str, int]  # by opcode (predicates and modifiers stripped)
    channel: bool = False  # channel-wise K
    packed: bool = False  # the integer PV's packed columns (gqa <= 4; csrc pv_packable)

    def label(self) -> str:
        return (f"INT{self.bits} D={self.head_dim} G={self.group_size} {self.mode}"
                f"{' paged' if self.paged else ''}{' channel-K' if self.channel else ''}"
                f"{' packed-PV' if self.packed else ''}")


def find_cuobjdump() -> str | None:
    """``cuobjdump`` on PATH, next to nvcc, or Triton's bundled copy; ``None`` if none."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    from foscar.kernels import decode_cuda

    nvcc = decode_cuda.find_nvcc()
    candidates = [Path(nvcc).with_name("cuobjdump")] if nvcc else []
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump")
    except ImportError:
        pass
    return next((str(c) for c in candidates if c.exists()), None)


def loop_counts(sass: str) -> list[LoopCount]:
    """Parse ``cuobjdump -sass`` text into one :class:`LoopCount` per decode-kernel instance."""
    out = []
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        m = KERNEL_RE.search(chunk.split("\n", 1)[0])
        if not m:
            continue
        ins = []
        for line in chunk.split("\n"):
            mm = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
            if mm:
                ins.append((int(mm.group(1), 16), mm.group(2).strip()))
        # the per-tile loop: of the innermost backward branches around HMMAs (none inside holds an
        # HMMA too), the one with the most HMMAs, then the shortest: ptxas adds longer backward branches
        # around it (divergence fallbacks of shuffles), and the kernel has two such loops, the steps of
        # full sub-tiles (issue_full, no token mask; all but the last kStages steps) and the general
        # steps, the first the shorter
        loops = []
        for addr, text in ins:
            b = re.search(r"BRA\s.*?0x([0-9a-f]+)", text)
            if b and int(b.group(1), 16) < addr:
                target = int(b.group(1), 16)
                mma = sum(1 for a, t in ins if target <= a <= addr and "MMA" in t.split()[0 if not t.startswith("@") else 1])
                if mma:
                    loops.append((-mma, addr - target, target, addr))
        inner = [lp for lp in loops if not any(o is not lp and lp[2] <= o[2] and o[3] <= lp[3] for o in loops)]
        if not inner:
            continue
        best = min(inner)[2:]
        body = [t for a, t in ins if best[0] <= a <= best[1]]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in body)
        bits, d, g, mode, paged, channel, packed = (int(x or 0) for x in m.groups())
        out.append(LoopCount(bits, d, g, MODE_NAMES.get(mode, str(mode)), bool(paged), len(body), dict(ops),
                             bool(channel), bool(packed)))
    return out


def compile_and_count(sources: list[Path] | None = None, workdir: Path | None = None) -> list[LoopCount]:
    """Compile the kernel's ``.cu`` files for sm_90a (in parallel) and count their loops.

    Raises:
        RuntimeError: nvcc or cuobjdump missing, or a compile error (with nvcc's message).
    """
    from foscar.kernels import decode_cuda

    nvcc = decode_cuda.find_nvcc()
    cuobjdump = find_cuobjdump()
    if nvcc is None or cuobjdump is None:
        raise RuntimeError(f"needs nvcc and cuobjdump (found nvcc={nvcc}, cuobjdump={cuobjdump})")
    units = sources or [s for s in decode_cuda.SOURCES if s.suffix == ".cu"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(workdir or tmp)
        procs = [(src, work / f"{src.stem}.o") for src in units]
        running = [subprocess.Popen([nvcc, *decode_cuda.NVCC_FLAGS, "-c", str(src), "-o", str(obj)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for src, obj in procs]
        for (src, _), p in zip(procs, running):
            _, err = p.communicate()
            if p.returncode != 0:
                raise RuntimeError(f"nvcc failed on {src.name}:\n{err[-4000:]}")
        counts = []
        for _, obj in procs:
            sass = subprocess.run([cuobjdump, "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
            counts.extend(loop_counts(sass))
    return counts


def nvcc_version(nvcc: str) -> str:
    """The release line of ``nvcc --version`` (e.g. ``Cuda compilation tools, release 13.0, V13.0.88``)."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return next((line.strip() for line in out.splitlines() if "release" in line), out.strip().splitlines()[-1])


def snapshot(counts: list[LoopCount], nvcc: str) -> dict:
    """``{"nvcc": version, "nvcc_flags": [...], "loops": {label: instructions}}`` for :data:`SNAPSHOT`."""
    from foscar.kernels import decode_cuda

    return {"nvcc": nvcc_version(nvcc), "nvcc_flags": list(decode_cuda.NVCC_FLAGS),
            "loops": {c.label(): c.instructions for c in sorted(counts, key=_order)}}


def snapshot_diff(counts: list[LoopCount], saved: dict) -> list[str]:
    """Lines ``label: saved -> now`` for every instance whose count differs from ``saved`` (a
    :func:`snapshot`), or that only one of the two has."""
    now = {c.label(): c.instructions for c in counts}
    was = saved.get("loops", {})
    return [f"{k}: {was.get(k, 'absent')} -> {now.get(k, 'absent')}" for k in sorted(set(now) | set(was))
            if now.get(k) != was.get(k)]


def _order(c: LoopCount):
    return (c.head_dim, c.bits, -c.group_size, c.mode, c.paged, c.channel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--match", default="", help="only kernel instances whose label contains this text")
    parser.add_argument("--top", type=int, default=8, help="opcodes shown per instance")
    parser.add_argument("--write", type=Path, default=None, metavar="FILE",
                        help=f"also write the snapshot JSON (committed: {SNAPSHOT.relative_to(SNAPSHOT.parents[2])})")
    args = parser.parse_args(argv)
    try:
        counts = compile_and_count()
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.write:
        from foscar.kernels import decode_cuda

        args.write.write_text(json.dumps(snapshot(counts, decode_cuda.find_nvcc()), indent=1) + "\n")
        print(f"wrote {args.write}")
    for c in sorted(counts, key=_order):
        if args.match and args.match not in c.label():
            continue
        top = ", ".join(f"{k} {v}" for k, v in sorted(c.opcodes.items(), key=lambda kv: -kv[1])[: args.top])
        print(f"{c.label():40s} {c.instructions:5d} instructions per 64-token tile per warp | {top}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
