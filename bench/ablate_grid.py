"""What a ``foscar ablate`` run measures: its settings per axis, columns, and the speed-ups
over each axis' reference (no torch; shared by :mod:`bench.ablate` and :mod:`bench.ablate_report`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported by the callers; the CLI reads AXES without it
    import pandas as pd

from bench.kinds import ABLATE

KIND = ABLATE  # meta.json "kind" (bench.kinds)

@dataclass(frozen=True)
class Setting:
    """One ablation setting: the decode call's knobs."""

    axis: str
    name: str
    method: str = "folded"
    group_size: int = 128
    num_splits: int | None = None  # None: the heuristic
    operand: str = "bf16"
    page_size: int | None = None  # None: the contiguous cache; else a shuffled paged copy
    k_block: int | None = None  # None: token-wise K; else channel-wise K over k_block tokens
    reference: bool = False


SETTINGS = (
    Setting("reconstruction", "folded"),
    Setting("reconstruction", "per-value", method="per-value", reference=True),
    Setting("group_size", "G=32", group_size=32),
    Setting("group_size", "G=64", group_size=64),
    Setting("group_size", "G=128", group_size=128, reference=True),
    Setting("split_kv", "off", num_splits=1, reference=True),
    Setting("split_kv", "fixed-16", num_splits=16),
    Setting("split_kv", "auto"),
    Setting("operand", "bf16", reference=True),
    Setting("operand", "fp8", operand="fp8"),
    Setting("cache", "contiguous", reference=True),
    Setting("cache", "paged-16", page_size=16),
    Setting("cache", "paged-64", page_size=64),
    Setting("k_layout", "token", reference=True),
    Setting("k_layout", "channel-128", k_block=128),
    Setting("k_layout", "channel-32", k_block=32),
)
AXES = tuple(dict.fromkeys(s.axis for s in SETTINGS))

COLUMNS = [
    "axis", "setting", "is_reference", "backend", "method", "operand", "page_size", "bits", "group_size", "k_block",
    "num_splits",
    "batch", "context", "num_qo_heads", "num_kv_heads", "head_dim",
    "median_us", "p20_us", "p80_us", "bytes", "tbps", "speedup_vs_reference", "max_rel_err",
    "status", "error", "timing_mode", "gpu_uuid",
]  # fmt: skip


def add_reference_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """``speedup_vs_reference`` = reference setting's time / this setting's time, per point and axis."""
    df = df.copy()
    key = ["axis", "bits", "batch", "context"]
    for _, idx in df.groupby(key, dropna=False).groups.items():
        grp = df.loc[idx]
        ref = grp[grp["is_reference"] & (grp["status"] == "ok")]
        if ref.empty:
            continue
        t_ref = float(ref["median_us"].iloc[0])
        ok = grp.index[grp["status"] == "ok"]
        df.loc[ok, "speedup_vs_reference"] = t_ref / df.loc[ok, "median_us"].astype(float)
    return df


def summarize_ablation(df: pd.DataFrame) -> dict[str, Any]:
    """``{"ablation": {axis: {int<bits>: {setting: {geomean_speedup, min, max, points}}}}}``."""
    out: dict[str, Any] = {}
    ok = df[(df["status"] == "ok") & df["speedup_vs_reference"].notna()]
    for (axis, bits, setting), grp in ok.groupby(["axis", "bits", "setting"], sort=False):
        x = grp["speedup_vs_reference"].astype(float)
        out.setdefault(axis, {}).setdefault(f"int{int(bits)}", {})[setting] = {
            "geomean_speedup": math.exp(float(x.map(math.log).mean())),
            "min": float(x.min()),
            "max": float(x.max()),
            "points": int(len(x)),
        }
    return {"ablation": out, "reference": {s.axis: s.name for s in SETTINGS if s.reference}}


def setting_dicts() -> list[dict[str, Any]]:
    """The settings as plain dicts (for meta.json)."""
    return [dataclasses.asdict(s) for s in SETTINGS]
