"""What a ``foscar accuracy`` run measures: its grid, kernel variants, columns and tolerances.

Plain definitions (no torch), shared by the run (:mod:`bench.accuracy`) and its report
(:mod:`bench.accuracy_report`) so that neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bench.engine import SITE_COLUMN_DOCS
from bench.kinds import ACCURACY

KIND = ACCURACY  # meta.json "kind" (bench.kinds)
ROTATIONS = ("none", "hadamard")
PLAIN_LAYOUT = "quantized"
TOLERANCE = 2e-2  # a kernel further than this from reference (b) is marked failed (as foscar bench)
TOLERANCE_FP8 = 1e-1  # the same for FP8 operands (as foscar bench's tolerance_fp8_operand)
REFERENCE_VARIANT = "fp64-dequant"


@dataclass(frozen=True)
class Shape:
    """The decode problem every configuration is measured on."""

    batch: int
    context: int
    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    num_sink: int
    num_recent: int


DEFAULT_SHAPE = Shape(batch=4, context=8192, num_qo_heads=32, num_kv_heads=8, head_dim=128, num_sink=64, num_recent=256)
SMOKE_SHAPE = Shape(batch=1, context=64, num_qo_heads=4, num_kv_heads=1, head_dim=128, num_sink=8, num_recent=16)
SMOKE_GROUP_SIZES = (128,)  # the interpreter takes ~0.2 s per kernel call: keep the smoke grid small


@dataclass(frozen=True)
class Variant:
    """A way to compute the output: a FOSCAR kernel (``backend``, ``method``) or the reference."""

    name: str
    backend: str | None  # foscar.decode backend; None: the fp64 reference
    method: str | None  # foscar.decode method ("per-value"); None: the default (folded)
    description: str
    operand: str = "bf16"  # foscar.decode operand mode

    @property
    def tolerance(self) -> float:
        return TOLERANCE_FP8 if self.operand == "fp8" else TOLERANCE


VARIANTS = (
    Variant(REFERENCE_VARIANT, None, None, "fp64 reference on the dequantized cache (quantization error alone)"),
    Variant("foscar-cuda", "cuda", None, "foscar.decode backend='cuda' (sm_90 CUDA C++ kernel, folded)"),
    Variant("foscar-triton", "triton", None, "foscar.decode backend='triton' (folded)"),
    Variant("foscar-cuda-per-value", "cuda", "per-value",
            "foscar.decode backend='cuda', method='per-value' (same kernel, every value reconstructed)"),  # fmt: skip
    Variant("foscar-cuda-fp8", "cuda", None,
            "foscar.decode backend='cuda', operand='fp8' (folded, e4m3 tensor-core operands)", operand="fp8"),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)
DATA_KIND_NAMES = ("gaussian", "outlier-rope", "student-t")  # foscar.data.DATA_KINDS, without importing torch

COLUMNS = [
    "data", "data_label", "bits", "group_size", "kernel", "rotation", "layout", "num_sink", "num_recent",
    "batch", "context", "num_qo_heads", "num_kv_heads", "head_dim", "seed",
    "rel_l2_vs_bf16_max", "rel_l2_vs_bf16_mean", "max_abs_vs_bf16", "cosine_vs_bf16_min",
    "rel_l2_vs_deq_max", "rel_l2_vs_deq_mean", "max_abs_vs_deq", "cosine_vs_deq_min",
    "attn_kl_mean", "attn_kl_max", "status", "error", "gpu_uuid",
]  # fmt: skip
COLUMN_DOCS = {
    "data": "synthetic data kind (foscar.data.DATA_KINDS), or real-L<i>: layer i of a `foscar dump-kv` file",
    "data_label": "what the data is, in words",
    "kernel": f"variant: {', '.join(VARIANT_NAMES)}",
    "rotation": "none, or hadamard (randomized Hadamard on q, K, V per head; output rotated back)",
    "layout": "quantized (whole cache) or sink<S>+recent<R> (first S and last R tokens BF16, the middle quantized)",
    "rel_l2_vs_bf16_max": "max over batch rows of ||out_b - ref_b|| / ||ref_b||, ref = fp64 attention on the BF16 cache",
    "rel_l2_vs_bf16_mean": "mean over batch rows of the same",
    "max_abs_vs_bf16": "max |out - ref| over all rows, heads, channels",
    "cosine_vs_bf16_min": "min over batch rows of the cosine similarity of out_b and ref_b",
    "rel_l2_vs_deq_max": "as rel_l2_vs_bf16_max, ref = fp64 attention on the cache the kernel reads (dequantized)",
    "attn_kl_mean": "mean over rows of KL(p || p_hat) in nats (mean over query heads), p from exact q and BF16 K, "
    "p_hat from the kernel's query and the K it reads; a property of the cache, equal for all kernels",
    "attn_kl_max": "max over rows of the same",
    "status": "ok; failed (rel_l2_vs_deq_max > tolerance or non-finite); error (raised); skipped (cannot run here)",
    "gpu_uuid": SITE_COLUMN_DOCS["gpu_uuid"],
}
METRIC_COLUMNS = COLUMNS[COLUMNS.index("rel_l2_vs_bf16_max") : COLUMNS.index("status")]


@dataclass
class Grid:
    shape: Shape
    bits: list[int]
    group_sizes: list[int]
    data: list[str]
    kernels: list[str]
    rotations: list[str]
    layouts: list[str]
    seed: int
    kv_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shape": asdict(self.shape), "tolerance": TOLERANCE, "tolerance_fp8": TOLERANCE_FP8}

    def num_configs(self) -> int:
        return len(self.data) * len(self.bits) * len(self.group_sizes) * len(self.rotations) * len(self.layouts)
