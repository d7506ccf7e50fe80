"""Issue 12, lever 4: integer tensor cores for QK, a standalone prototype (bench/NOTES.md, "Integer
tensor cores: a prototype"). Not used by the production kernel.

Two device kernels (imma_qk.cuh) compute the QK scores of one decode step for FOSCAR's tile layout
(plane-split INT2 / INT4 token-wise K codes, head_dim 128, group 32 or 128, 4 query heads of one KV
head as the mma N dimension, 64-token sub-tiles per warp in shared memory):

- ``bf16``: today's folded path (operand ``1 + code/128`` from one lop3 per pair, m16n8k16 BF16,
  scale and offset folded into the fp32 result);
- ``imma``: ``mma.sync.m16n8k32.u8.s8.s32`` on the codes as u8 lanes (one lop3, plus a shift unless
  the plane sits in place, per 4 codes) and the query as a 16-bit fixed point per (head, group), split
  into s8 high and low parts (two IMMAs per k-step, exact s32 sums), folded in fp32;
- ``imma-h``: the same with one fixed-point scale per head, whose multiply leaves the per-group fold
  (two FFMAs per score and group, as BF16's) and would join the softmax's FFMA in a full kernel.

Usage (from the repository root)::

    python scripts/prototypes/imma_qk.py run     # GPU (sm_90a): build at first use, check, time, one table
    python scripts/prototypes/imma_qk.py sass    # no GPU: nvcc + cuobjdump, instructions per tile, registers

``run`` builds the extension at first use (imma_qk.cpp + imma_qk_kernels.cu, about a minute), checks
both kernels on fresh random data (a query with outlier channels, as RoPE'd queries have) against an
fp64 reference of the dequantized K and against an fp64 mirror of each kernel's own arithmetic
(BF16-rounded query, or the 16-bit fixed-point query), times a loop over shared-memory tiles (no HBM
traffic) with CUDA events, prints one table and exits 1 when a check fails (BOUNDS, MIRROR_BOUNDS, a
non-finite checksum). Columns:

- ``score_err_*`` / ``softmax_err_*``: relative L2 error per head (max, mean over heads and seeds) of
  the scores and of softmax(scores / sqrt(128)) over 16K tokens, against the fp64 reference;
- ``mirror_err``: the largest relative L2 error against the kernel's mirror;
- ``ns_tile_sm``: nanoseconds per 64-token tile per SM (3 CTAs of 4 warps per SM, as the production
  INT2 / INT4 kernel runs); ``vs_bf16``: that time over the BF16 kernel's;
- ``loop_instr``: SASS instructions in the per-tile loop (when cuobjdump is found), and
  ``ginstr_s_sm``: those issued per ns per SM (warp instructions; 4 schedulers per SM).

Files: imma_qk.cuh (the kernels), imma_qk_args.h (launch arguments), imma_qk_kernels.cu (instances),
imma_qk.cpp (torch binding).
"""

from __future__ import annotations

import collections
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
import typer

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.sass import find_cuobjdump  # noqa: E402
from foscar.quant import pack_codes, quantize_groups  # noqa: E402

HERE = Path(__file__).resolve().parent
HEAD_DIM, COLS, HEADS, TILE, TILES_PER_CHUNK = 128, 8, 4, 64, 4
CONFIGS = [(2, 128), (2, 32), (4, 128), (4, 32)]  # (bits, group)
PATHS = {"bf16": 0, "imma": 1, "imma-h": 2}
QMAX = 127 * 256 + 127  # largest |qi| whose hi part stays in s8 (see split_hi_lo)
# relative L2 error bounds, against the fp64 reference (scores and softmax over 16K tokens): the BF16
# query's rounding costs ~2e-3 on scores and up to ~8e-3 on softmax with 10x outlier channels, the
# 16-bit fixed point ~1e-4..8e-4 and up to ~1.3e-3 (CPU mirrors; an s8-only query: 1e-1 / 3e-1); and
# against the fp64 mirror of each kernel's own arithmetic, which catches layout bugs (errors of order 1):
# BF16 keeps the fp32 cancellation of the accumulator's -sum(Q') start (~1e-4..1e-3 of a score), IMMA's
# dots are exact and only its fp32 fold rounds
BOUNDS = {"bf16": 3e-2, "imma": 5e-3, "imma-h": 5e-3}
MIRROR_BOUNDS = {"bf16": 3e-3, "imma": 1e-4, "imma-h": 1e-4}
NVCC_FLAGS = ["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"]

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


# ---------------------------------------------------------------------------------------------------
# query operands and references (CPU or GPU tensors)


def split_hi_lo(qi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split 16-bit fixed-point query values into s8 parts with ``qi == 256 * hi + lo`` exactly.

    ``lo = ((qi + 128) mod 256) - 128`` lies in [-128, 127] and ``hi = (qi - lo) / 256``; hi stays in
    s8 for ``qi`` in ``[-32896, 32639]``, so the prototype quantizes to ``|qi| <= QMAX = 32639``.

    Args:
        qi: integer tensor (any shape) with values in ``[-QMAX, QMAX]``.

    Returns:
        ``(hi, lo)``, int8 tensors of ``qi``'s shape.

    Raises:
        ValueError: ``qi`` is not an integer tensor, or a value lies outside ``[-QMAX, QMAX]``.
    """
    if qi.is_floating_point() or qi.dtype == torch.bool:
        raise ValueError(f"qi: expected an integer tensor, got {qi.dtype}")
    q = qi.to(torch.int32)
    if q.numel() and int(q.abs().max()) > QMAX:
        raise ValueError(f"qi: values must lie in [-{QMAX}, {QMAX}], got max |qi| = {int(q.abs().max())}")
    lo = torch.remainder(q + 128, 256) - 128
    hi = torch.div(q - lo, 256, rounding_mode="floor")
    return hi.to(torch.int8), lo.to(torch.int8)


def fixed16_query(q: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize a query per (head, group) to a signed 16-bit fixed point, ``q ~ qscale * qi``.

    Args:
        q: ``[heads, head_dim]`` float (fp32 or fp64).
        group: channels per group; divides ``head_dim``.

    Returns:
        ``(qi, qscale)``: qi int32 ``[heads, head_dim]`` in ``[-QMAX, QMAX]`` (round half to even),
        qscale float64 ``[heads, head_dim // group]`` (``max |q_g| / QMAX``; 1 for an all-zero group).

    Raises:
        ValueError: ``group`` does not divide ``head_dim``.
    """
    heads, d = q.shape
    if d % group:
        raise ValueError(f"group: must divide head_dim {d}, got {group}")
    qg = q.to(torch.float64).reshape(heads, d // group, group)
    amax = qg.abs().amax(dim=-1)
    qscale = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    qi = torch.round(qg / qscale[..., None]).clamp(-QMAX, QMAX).to(torch.int32)
    return qi.reshape(heads, d), qscale


def pexp(bits: int, plane: int) -> int:
    """BF16 path: plane ``plane`` used in place with exponent E (its bits already in the mantissa), else 0."""
    return bits * plane if bits * plane + bits <= 7 else 0


def bf16_operands(q: torch.Tensor, bits: int, group: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Query operands of the folded BF16 kernel: ``(q', -sum(Q'_g), sum(Q_g))``.

    Args:
        q: ``[COLS, head_dim]`` float query (columns past the live heads zero).
        bits, group: the K format.

    Returns:
        q' int16 ``[COLS, head_dim]`` (BF16 bit patterns; plane p's channels times 2^-E, exact),
        ``-sum(Q'_g)`` and ``sum(Q_g)`` of the BF16 query, float32 ``[COLS, head_dim // group]``.
    """
    qb = q.to(torch.bfloat16).to(torch.float32)
    rb = HEAD_DIM * bits // 8
    planescale = torch.tensor([2.0 ** -pexp(bits, c // rb) for c in range(HEAD_DIM)], device=q.device)
    qp = qb * planescale
    ng = HEAD_DIM // group
    nqs = -qp.reshape(COLS, ng, group).sum(-1)
    qsum = qb.reshape(COLS, ng, group).sum(-1)
    return qp.to(torch.bfloat16).view(torch.int16).contiguous(), nqs.contiguous(), qsum.contiguous()


def imma_operands(q: torch.Tensor, group: int, per_head: bool = False
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Query operands of the IMMA kernel: ``(hi, lo, qscale, sum(Q_g))``, or with ``per_head`` (path
    ``imma-h``) ``(hi, lo, qscale of the head, sum(Q_g) / that qscale)``.

    Args:
        q: ``[COLS, head_dim]`` float query.
        group: channels per group of the K format.
        per_head: one fixed-point scale per head instead of per (head, group).

    Returns:
        hi, lo int8 ``[COLS, head_dim]``; qscale (repeated over the groups with ``per_head``) and the
        fp32 query's group sums, float32 ``[COLS, head_dim // group]``.
    """
    qi, qscale = fixed16_query(q, HEAD_DIM if per_head else group)
    qscale = qscale.expand(-1, HEAD_DIM // group)
    hi, lo = split_hi_lo(qi)
    qsum = q.to(torch.float64).reshape(COLS, HEAD_DIM // group, group).sum(-1)
    if per_head:
        qsum = qsum / qscale
    return hi.contiguous(), lo.contiguous(), qscale.float().contiguous(), qsum.float().contiguous()


def reference_scores(codes: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """fp64 scores of the dequantized K: ``[tokens, heads]`` from codes ``[tokens, head_dim]`` uint8,
    scale / offset ``[tokens, groups]`` and the query ``[heads, head_dim]``."""
    t, d = codes.shape
    ng = scale.shape[1]
    k = codes.to(torch.float64).reshape(t, ng, d // ng) * scale.double()[..., None] + offset.double()[..., None]
    return k.reshape(t, d) @ q.double().T


def bf16_mirror_scores(codes: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """What the BF16 kernel computes, in fp64: the reference with the query rounded to BF16 (the kernel's
    offset term uses the BF16 query's sum too). Same arguments as :func:`reference_scores`."""
    return reference_scores(codes, scale, offset, q.to(torch.bfloat16))


def imma_mirror_scores(codes: torch.Tensor, scale: torch.Tensor, offset: torch.Tensor, q: torch.Tensor,
                       group: int, per_head: bool = False) -> torch.Tensor:
    """What the IMMA kernel computes, in fp64 on any device: ``S = s qscale (codes . qi) + z sum(Q_g)``
    per group of ``group`` channels (integer dots exact), ``[tokens, heads]``; the query's fixed point
    per (head, group), or per head with ``per_head`` (path ``imma-h``). Other arguments as
    :func:`reference_scores`."""
    qi, qscale = fixed16_query(q, HEAD_DIM if per_head else group)
    qscale = qscale.expand(-1, HEAD_DIM // group)
    hi, lo = split_hi_lo(qi)
    qi2 = 256 * hi.double() + lo.double()
    t, d = codes.shape
    ng, h = d // group, q.shape[0]
    dots = torch.einsum("tgc,hgc->thg", codes.double().reshape(t, ng, group), qi2.reshape(h, ng, group))
    qsum = q.double().reshape(h, ng, group).sum(-1)
    return (dots * scale.double()[:, None, :] * qscale[None]).sum(-1) + offset.double() @ qsum.T


def rel_l2(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Relative L2 error per column (head): ``||x - ref|| / ||ref||`` over dim 0, fp64 ``[heads]``."""
    x, ref = x.double(), ref.double()
    return (x - ref).norm(dim=0) / ref.norm(dim=0)


def make_case(bits: int, group: int, tokens: int, seed: int, device: str = "cpu") -> dict:
    """Random K (a few outlier channels, 5x) quantized to ``bits`` / ``group``, and a query ``[COLS,
    head_dim]`` whose first HEADS columns are N(0, 1) with 6 outlier channels 10x larger (RoPE'd
    queries concentrate energy in a few channel pairs); the padded columns are zero."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(tokens, HEAD_DIM, generator=g)
    k[:, torch.randperm(HEAD_DIM, generator=g)[:4]] *= 5.0
    codes, scale, offset = quantize_groups(k, bits, group)
    q = torch.zeros(COLS, HEAD_DIM)
    q[:HEADS] = torch.randn(HEADS, HEAD_DIM, generator=g)
    q[:HEADS, torch.randperm(HEAD_DIM, generator=g)[:6]] *= 10.0
    return {k: v.to(device) for k, v in dict(codes=codes, scale=scale, offset=offset, q=q).items()}


# ---------------------------------------------------------------------------------------------------
# SASS


def instance(name: str) -> tuple[str, int, int] | None:
    """``(path, bits, group)`` of a WRITE=false kernel's mangled name, else ``None``."""
    m = re.search(r"qk_(bf16|imma)_kernelILi(\d+)ELi(\d+)ELb0E(?:Lb([01])E)?", name)
    if not m:
        return None
    return ("imma-h" if m.group(4) == "1" else m.group(1)), int(m.group(2)), int(m.group(3))


def loop_counts(sass: str) -> dict[tuple[str, int, int], tuple[int, dict[str, int]]]:
    """Per-tile loop of each WRITE=false prototype kernel in ``cuobjdump -sass`` text:
    ``{(path, bits, group): (instructions, opcodes)}``; the loop is the shortest backward branch
    around the most MMA instructions (as bench/sass.py finds the production loop)."""
    out = {}
    for chunk in re.split(r"\n\s*Function : ", sass)[1:]:
        key = instance(chunk.split("\n", 1)[0])
        if key is None:
            continue
        ins = [(int(a, 16), t.strip()) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", chunk)]
        loops = []
        for addr, text in ins:
            b = re.search(r"BRA\s.*?0x([0-9a-f]+)", text)
            if b and int(b.group(1), 16) < addr:
                lo = int(b.group(1), 16)
                mma = sum("MMA" in t for a, t in ins if lo <= a <= addr)
                loops.append((-mma, addr - lo, lo, addr))
        if not loops:
            continue
        lo, hi = min(loops)[2:]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0]
                                  for a, t in ins if lo <= a <= hi)
        out[key] = (sum(ops.values()), dict(ops))
    return out


def sass_table(sass: str, regs: dict[tuple[str, int, int], int] | None = None) -> pd.DataFrame:
    """One row per kernel instance: loop instructions and the opcodes that matter, registers if given."""
    rows = []
    for (path, bits, group), (n, ops) in sorted(loop_counts(sass).items(), key=lambda kv: (kv[0][1], -kv[0][2], kv[0][0])):
        row = dict(bits=bits, group=group, path=path, loop_instr=n)
        row |= {op: ops.get(op, 0) for op in ("HMMA", "IMMA", "LOP3", "SHF", "LDSM", "LDS", "FFMA", "FMUL", "FADD",
                                              "I2FP", "IMAD")}
        row["other"] = n - sum(row[op] for op in ("HMMA", "IMMA", "LOP3", "SHF", "LDSM", "LDS", "FFMA", "FMUL", "FADD",
                                                  "I2FP", "IMAD"))
        if regs is not None:
            row["regs"] = regs.get((path, bits, group))
        rows.append(row)
    return pd.DataFrame(rows)


@app.command()
def sass(dump: Path = typer.Option(None, help="also write the full SASS to this file")) -> None:
    """Compile imma_qk_kernels.cu for sm_90a with nvcc (no GPU); print instructions per tile of the
    WRITE=false instances (the timing loop) and their registers."""
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        raise typer.BadParameter("cuobjdump not found (CUDA toolkit, or Triton's triton/backends/nvidia/bin)")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "imma_qk.cubin"
        r = subprocess.run(["nvcc", *NVCC_FLAGS, "-Xptxas", "-v", "-cubin", str(HERE / "imma_qk_kernels.cu"), "-o", str(cubin)],
                           capture_output=True, text=True)
        if r.returncode:
            typer.echo(r.stdout + r.stderr, err=True)
            raise typer.Exit(1)
        text = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    regs = {}
    for name, n in re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", r.stdout + r.stderr, re.S):
        if instance(name):
            regs[instance(name)] = int(n)
    if dump:
        dump.write_text(text)
    typer.echo(sass_table(text, regs).to_string(index=False))


# ---------------------------------------------------------------------------------------------------
# GPU run


def build():
    """Compile and load the torch extension (imma_qk.cpp + imma_qk_kernels.cu, sm_90a, the production
    kernel's nvcc flags) at first use; torch caches it and rebuilds when a source changes."""
    from torch.utils.cpp_extension import load

    return load(name="foscar_imma_qk_proto", sources=[str(HERE / "imma_qk.cpp"), str(HERE / "imma_qk_kernels.cu")],
                extra_include_paths=[str(HERE)], extra_cflags=["-O3", "-std=c++17"], extra_cuda_cflags=NVCC_FLAGS,
                verbose=False)


def device_operands(path: str, q: torch.Tensor, bits: int, group: int) -> tuple[torch.Tensor, ...]:
    """``(q0, q1, f0, f1)`` of the kernel's Args for ``path`` (see imma_qk.cuh)."""
    if path == "bf16":
        qp, nqs, qsum = bf16_operands(q, bits, group)
        return qp, qp, nqs, qsum
    return imma_operands(q, group, per_head=path == "imma-h")


@app.command()
def run(seeds: int = typer.Option(3, min=1, help="fresh random cases per format"),
        chunks: int = typer.Option(64, min=1, help="256-token chunks per case (one CTA each in the check)"),
        iters: int = typer.Option(4096, min=1, help="sub-tiles per warp in the timing loop"),
        reps: int = typer.Option(5, min=1, help="timed launches per kernel (median)")) -> None:
    """Check both kernels against the fp64 reference, time them, print one table; exit 1 on a failed check."""
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        raise typer.BadParameter("needs an sm_90 GPU (H100 / H200): the kernels are built for sm_90a")
    ext = build()
    n_sm = torch.cuda.get_device_properties(0).multi_processor_count
    tokens = chunks * TILES_PER_CHUNK * TILE
    counts = {}
    cuobjdump = find_cuobjdump()
    if cuobjdump:
        so = Path(ext.__file__)
        counts = loop_counts(subprocess.run([cuobjdump, "-sass", str(so)], capture_output=True, text=True).stdout)
    rows, failed = [], False
    for bits, group in CONFIGS:
        errs = {p: ([], [], []) for p in PATHS}
        for seed in range(seeds):
            case = make_case(bits, group, tokens, seed=1000 * bits + group + seed, device="cuda")
            packed = pack_codes(case["codes"], bits).contiguous()
            ref = reference_scores(case["codes"], case["scale"], case["offset"], case["q"][:HEADS])
            pref = torch.softmax(ref / math.sqrt(HEAD_DIM), dim=0)
            mirrors = {"bf16": bf16_mirror_scores(case["codes"], case["scale"], case["offset"], case["q"][:HEADS]),
                       "imma": imma_mirror_scores(case["codes"], case["scale"], case["offset"], case["q"][:HEADS],
                                                  group),
                       "imma-h": imma_mirror_scores(case["codes"], case["scale"], case["offset"], case["q"][:HEADS],
                                                    group, per_head=True)}
            for path, pid in PATHS.items():
                out = torch.full((tokens, COLS), float("nan"), device="cuda")
                ops = device_operands(path, case["q"], bits, group)
                ext.launch(pid, bits, group, True, packed, case["scale"].contiguous(), case["offset"].contiguous(),
                           *ops, out, chunks, 1, chunks, 64 * 1024,
                           torch.cuda.current_stream().cuda_stream)
                s = out[:, :HEADS]
                errs[path][0].append(rel_l2(s, ref))
                errs[path][1].append(rel_l2(torch.softmax(s.double() / math.sqrt(HEAD_DIM), dim=0), pref))
                errs[path][2].append(rel_l2(s, mirrors[path]))
        torch.cuda.synchronize()
        for path, pid in PATHS.items():
            se, pe, me = (torch.cat(e) for e in errs[path])
            ok = bool(torch.isfinite(se).all() and torch.isfinite(pe).all() and se.max() <= BOUNDS[path]
                      and pe.max() <= BOUNDS[path] and me.max() <= MIRROR_BOUNDS[path])
            # timing: one wave of 3 CTAs per SM (72 KiB of shared memory each), loop over shared memory only
            grid, smem = 3 * n_sm, 72 * 1024
            sink = torch.empty(grid * 128, device="cuda")
            ops = device_operands(path, case["q"], bits, group)
            args = (pid, bits, group, False, packed, case["scale"].contiguous(), case["offset"].contiguous(), *ops, sink,
                    chunks, iters, grid, smem, torch.cuda.current_stream().cuda_stream)
            ext.launch(*args)
            times = []
            for _ in range(reps):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                ext.launch(*args)
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            ms = sorted(times)[len(times) // 2]
            ok &= bool(torch.isfinite(sink).all())  # the timing loop's checksums
            failed |= not ok
            tiles_per_sm = grid * 4 * iters / n_sm
            instr = counts.get((path, bits, group), (None, {}))[0]
            rows.append(dict(bits=bits, group=group, path=path,
                             score_err_max=f"{se.max():.2e}", score_err_mean=f"{se.mean():.2e}",
                             softmax_err_max=f"{pe.max():.2e}", softmax_err_mean=f"{pe.mean():.2e}", mirror_err=f"{me.max():.1e}",
                             ns_tile_sm=round(ms * 1e6 / tiles_per_sm, 2), loop_instr=instr,
                             ginstr_s_sm=round(instr * tiles_per_sm / (ms * 1e6), 2) if instr else None,
                             ok=ok))
    table = pd.DataFrame(rows)
    for bits, group in CONFIGS:  # speed of imma relative to bf16, per format
        sel = (table.bits == bits) & (table.group == group)
        base = float(table.loc[sel & (table.path == "bf16"), "ns_tile_sm"].iloc[0])
        table.loc[sel, "vs_bf16"] = (table.loc[sel, "ns_tile_sm"] / base).round(3)
    typer.echo(table.to_string(index=False))
    typer.echo(f"bounds: relative L2 error vs fp64 <= {BOUNDS}, vs mirror <= {MIRROR_BOUNDS}; "
               f"{'FAILED' if failed else 'all checks passed'}")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
