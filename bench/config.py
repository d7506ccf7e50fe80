"""Sweep configuration: TOML presets in ``configs/``, model shapes in
``configs/models/``, plus command-line overrides.

Resolution order (later wins): the arch preset (or ``--config FILE``), then a model
preset's ``[shape]`` (``--model NAME``), then the command-line flags.

A preset file has these tables; every key is optional except where the preset
needs it (unknown keys are an error, so a typo never silently falls back to a
default)::

    name = "h200"                       # label for tables and the run directory

    [shape]                             # the attention shape (Qwen3-8B here)
    num_qo_heads = 32
    num_kv_heads = 8
    head_dim = 128
    page_size = 16                      # tokens per page of the paged caches (FOSCAR's and FlashInfer's)
    page_order = "shuffled"             # their pages in memory: shuffled | in-order (bench/shape.py PAGE_ORDERS)

    [sweep]                             # the grid: batch x context x bits x operand
    batch = [1, 8, 32, 64]
    context = [8192, 32768, 131072]
    bits = [2, 4]
    group_size = 128
    operand = ["bf16"]
    kernels = ["foscar-cuda", "foscar-triton", "flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa"]

    [check]                             # correctness before timing
    tolerance = 2e-2                    # max allowed max_rel_err (FOSCAR rows, BF16 baselines)
    tolerance_fp8_kv = 1e-1             # max allowed max_rel_err of rows reading an FP8 (e4m3) cache
    tolerance_fp8_operand = 1e-1        # ... of FOSCAR rows with FP8 (e4m3) tensor-core operands
    full_check_max_tokens = 262144      # batch * context up to this: check every row

    [timing]
    warmup_ms = 25                      # triton.testing.do_bench warm-up / repetition time
    rep_ms = 100
    cpu_reps = 3                        # interpreter: median of this many perf_counter calls
    seed = 0                            # the random K/V and q
    sustain_s = 0                       # seconds of untimed calls before each row: the power state of sustained decoding
    read_floor = false                  # time a plain read of each row's bytes too: read_floor_us, floor_fraction

    [workload]                          # the [sweep] grid's sequence lengths and cache capacity
    name = "uniform"                    # uniform | one-long | lognormal | capacity (bench/lengths.py)
    capacity = 131072                   # optional: tokens the cache holds per sequence (default: per name)
    seed = 0                            # lognormal: seed of the lengths (not of the data)
    short_len = 4096                    # one-long: tokens of the short sequences

    [[ragged]]                          # the ragged grid: extra points, each entry a workload over
    batch = [8]                         # its own batch x context (bits, operands, kernels: [sweep])
    context = [131072]
    workload = { name = "one-long", short_len = 4096 }   # the [workload] keys, inline

The ``[sweep]`` grid's rows carry ``grid = "sweep"``, the ``[[ragged]]`` grid's
``grid = "ragged"``; ``summary.json`` keeps a geometric mean per grid.
``grids`` (``--grid``, not a TOML key) says which of the two run.

A model preset (``configs/models/<name>.toml``) holds only ``name`` and the
attention shape, ``[shape]`` with ``num_qo_heads``, ``num_kv_heads`` and
``head_dim``: it replaces those three fields of the arch preset and keeps its
grid (and its ``page_size``, a serving-engine choice rather than a model's).

:func:`config_hash` fingerprints a resolved config (sha256 of its canonical JSON);
``meta.json`` records it, and a rerun into the same run directory resumes only when
the hashes match.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from bench.errors import FoscarError, check_choices
from bench.lengths import WorkloadSpec
from bench.shape import FIXED_FIELDS, PAGE_ORDERS, SHAPE_TABLE_FIELDS, SWEEP_TABLE_FIELDS, SWEPT_FIELDS

def _config_dir() -> Path:
    """Where the presets are: ``bench/presets/`` in an installed package (``pip install .``
    puts the repository's ``configs/`` there, see pyproject.toml), else ``configs/`` of the
    checkout this module runs from (the source of truth; also editable installs)."""
    installed = Path(str(importlib.resources.files("bench"))) / "presets"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "configs"


CONFIG_DIR = _config_dir()
MODEL_DIR = CONFIG_DIR / "models"
SMOKE_PRESET = "smoke"

# What FOSCAR's kernels take, repeated from foscar (foscar.quant.SUPPORTED_BITS /
# SUPPORTED_GROUP_SIZES, foscar.OPERAND_MODES, foscar.kernels.decode_triton.SUPPORTED_HEAD_DIMS)
# so that flags and configs are checked without importing torch;
# tests/test_bench_flags.py asserts that the two agree.
SUPPORTED_BITS = (2, 4)
SUPPORTED_GROUP_SIZES = (32, 64, 128)
SUPPORTED_OPERANDS = ("bf16", "fp8")
SUPPORTED_HEAD_DIMS = (64, 128, 256)
# operand modes that DESIGN §4 names but no FOSCAR kernel has: refused with the reason
UNBUILT_OPERANDS = {
    "fp4": "FP4 tensor-core operands need sm_100 (Blackwell) and are not implemented in FOSCAR yet",
}
MAX_SUSTAIN_S = 60  # sustain_s's largest value: a minute of untimed calls before every row
# fields added after runs were recorded, left out of BenchConfig.to_dict (and so of the config hash) at their default:
# an older run's meta.json, which lacks them, then still hashes as recorded (resume, foscar merge, foscar compare)
OMITTED_AT_DEFAULT: dict[str, Any] = {"sustain_s": 0.0, "read_floor": False}
GRIDS = ("sweep", "ragged")  # the [sweep] grid and the [[ragged]] grid (results.csv column grid)
WORKLOAD_KEYS = tuple(f.name for f in dataclasses.fields(WorkloadSpec))
RAGGED_KEYS = ("batch", "context", "workload")


@dataclass
class RaggedGrid:
    """One ``[[ragged]]`` entry: ``workload`` over ``batch`` x ``context`` (bits, operand modes
    and kernels are the ``[sweep]`` grid's)."""

    batch: list[int]
    context: list[int]
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)


@dataclass
class BenchConfig:
    """A resolved sweep. Field names match the TOML keys (tables flattened)."""

    name: str = "custom"
    model: str | None = None  # the model preset that set the shape (--model), or None
    # [shape]
    num_qo_heads: int = 32
    num_kv_heads: int = 8
    head_dim: int = 128
    page_size: int = 16
    page_order: str = "shuffled"
    # [sweep]
    batch: list[int] = field(default_factory=lambda: [1, 8, 32, 64])
    context: list[int] = field(default_factory=lambda: [8192, 32768, 131072])
    bits: list[int] = field(default_factory=lambda: [2, 4])
    group_size: int = 128
    operand: list[str] = field(default_factory=lambda: ["bf16"])
    kernels: list[str] = field(
        default_factory=lambda: ["foscar-cuda", "foscar-triton", "flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa"]
    )
    # [check]
    tolerance: float = 2e-2
    tolerance_fp8_kv: float = 1e-1  # rows whose cache is FP8 e4m3 (per-tensor scale): see tolerance_for
    tolerance_fp8_operand: float = 1e-1  # FOSCAR rows with FP8 e4m3 tensor-core operands: see tolerance_for
    full_check_max_tokens: int = 262144
    # [timing]
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    cpu_reps: int = 3
    seed: int = 0
    # seconds of untimed back-to-back calls before each row's timing (bench.timing.sustain; 0: none)
    sustain_s: float = 0.0
    # time the read floor of every timed row too (bench.hbm.read_floor_us: results.csv read_floor_us, floor_fraction)
    read_floor: bool = False
    # [workload]: lengths and capacity of the [sweep] grid
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    # [[ragged]]: the ragged grid
    ragged: list[RaggedGrid] = field(default_factory=list)
    # which grids run (--grid): "sweep", "ragged"
    grids: list[str] = field(default_factory=lambda: list(GRIDS))

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (meta.json's ``config``, and what :func:`config_hash` hashes), less the fields of
        :data:`OMITTED_AT_DEFAULT` where they hold their default."""
        d = dataclasses.asdict(self)
        for key, default in OMITTED_AT_DEFAULT.items():
            if d.get(key) == default:
                del d[key]
        return d

    def tolerance_for(self, kv_dtype: str | None, operand: str | None = None) -> tuple[float, str]:
        """``(max allowed max_rel_err, the config key it comes from)`` for a row reading a
        cache of ``kv_dtype`` (``"int2"``/``"int4"``/``None``: FOSCAR, ``"bf16"``, ``"fp8_e4m3"``).

        Every row is checked against the same fp64 reference on the point's dequantized
        values. A BF16 cache holds them up to BF16 rounding; an FP8 e4m3 cache with one
        scale per tensor (amax / 448) rounds every K and V value to 3 mantissa bits
        (~2.6% RMS relative error per value), which moves the output by ~4-5% relative
        L2 (a CPU emulation of the bench's data: Gaussian K/V through INT2/INT4
        quantization, 8K-32K tokens, 32/8 heads, head_dim 128), and ~5.5-7% where the
        kernel also rounds q and the softmax weights to FP8 (XQA's FP8 path on sm_90).
        So FP8 rows get ``tolerance_fp8_kv`` (default 0.1, the rtol/atol FlashInfer's
        own FP8-KV decode tests use): wide enough for that rounding, far below the
        errors of 1 and more that a wrong scale or a shared XQA workspace gives.

        FOSCAR rows with ``operand == "fp8"`` round the query (per head) and the
        probabilities (per 64-token tile) to e4m3 instead of BF16; with the first-order
        rounding cancellation of the kernel (csrc/folded_decode_sm90.cuh) a torch
        emulation gives ~4% relative L2 on the same data, so they get
        ``tolerance_fp8_operand`` (default 0.1) for the same reason.
        """
        if kv_dtype is not None and str(kv_dtype).startswith("fp8"):
            return self.tolerance_fp8_kv, "tolerance_fp8_kv"
        if operand == "fp8":
            return self.tolerance_fp8_operand, "tolerance_fp8_operand"
        return self.tolerance, "tolerance"


# TOML table -> the fields it may set
_TABLES: dict[str, tuple[str, ...]] = {
    "": ("name",),
    "shape": SHAPE_TABLE_FIELDS,
    "sweep": (*SWEEP_TABLE_FIELDS, "operand", "kernels"),
    "check": ("tolerance", "tolerance_fp8_kv", "tolerance_fp8_operand", "full_check_max_tokens"),
    "timing": ("warmup_ms", "rep_ms", "cpu_reps", "seed", "sustain_s", "read_floor"),
}
_LIST_FIELDS = (*SWEPT_FIELDS, "operand", "kernels")


def preset_path(name: str) -> Path:
    """``configs/<name>.toml``."""
    return CONFIG_DIR / f"{name}.toml"


def shipped_file(path: str | Path) -> Path:
    """``path`` as given where it exists; else, for a path under ``configs/`` (the defaults of ``--random-init``:
    ``configs/hf/qwen3-8b.json``), the copy shipped with the presets (:data:`CONFIG_DIR`: the checkout's
    ``configs/``, or ``bench/presets/`` of an installed package), so that the defaults work from any directory.
    The name recorded in a run's config stays as given."""
    p = Path(path)
    if not p.exists() and p.parts[:1] == ("configs",) and (CONFIG_DIR / Path(*p.parts[1:])).is_file():
        return CONFIG_DIR / Path(*p.parts[1:])
    return p


MODEL_SHAPE_KEYS = ("num_qo_heads", "num_kv_heads", "head_dim")


@dataclass(frozen=True)
class ModelShape:
    """A model preset: the attention shape of one GPU's share of a model."""

    name: str
    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    source: Path


def model_names() -> list[str]:
    """Names of the presets in ``configs/models/`` (file stems), sorted."""
    return sorted(p.stem for p in MODEL_DIR.glob("*.toml"))


def load_model(name: str | Path) -> ModelShape:
    """Read a model preset: a name from ``configs/models/`` or a path to a TOML file.

    Raises:
        FoscarError: unknown name, missing file, TOML syntax error, a key other than
            ``name`` and ``[shape].num_qo_heads/num_kv_heads/head_dim``, a bad value.
    """
    text = str(name)
    path = Path(text) if text.endswith(".toml") or "/" in text else MODEL_DIR / f"{text}.toml"
    if not path.is_file():
        if path.parent == MODEL_DIR:
            raise FoscarError(f"unknown model {text!r}; known: {', '.join(model_names()) or 'none'} (configs/models/)")
        raise FoscarError(f"model file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise FoscarError(f"model {path}: invalid TOML: {e}") from None
    shape = raw.get("shape")
    for key in raw:
        if key not in ("name", "shape"):
            raise FoscarError(
                f"model {path}: unknown key {key!r}; a model preset holds only name and [shape] "
                f"({', '.join(MODEL_SHAPE_KEYS)}); the grid belongs to the arch preset"
            )
    if not isinstance(shape, dict):
        raise FoscarError(f"model {path}: expected a [shape] table with {', '.join(MODEL_SHAPE_KEYS)}, got none")
    for key in shape:
        if key not in MODEL_SHAPE_KEYS:
            raise FoscarError(
                f"model {path}: unknown key [shape].{key}; known: {', '.join(MODEL_SHAPE_KEYS)} "
                "(page_size and the grid belong to the arch preset)"
            )
    missing = [k for k in MODEL_SHAPE_KEYS if k not in shape]
    if missing:
        raise FoscarError(f"model {path}: [shape] lacks {', '.join(missing)}")
    for key in MODEL_SHAPE_KEYS:
        v = shape[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise FoscarError(f"model {path}: [shape].{key}: expected a positive integer, got {v!r}")
    label = raw.get("name", path.stem)
    if not isinstance(label, str) or not label:
        raise FoscarError(f"model {path}: name: expected a non-empty string, got {label!r}")
    return ModelShape(name=label, source=path, **{k: shape[k] for k in MODEL_SHAPE_KEYS})


def apply_model(cfg: BenchConfig, model: ModelShape) -> BenchConfig:
    """A copy of ``cfg`` with the model's shape (and ``model`` = its name); the grid is kept.

    Raises:
        FoscarError: the shape does not fit the grid (e.g. head_dim not a multiple of group_size).
    """
    out = dataclasses.replace(cfg, model=model.name, **{k: getattr(model, k) for k in MODEL_SHAPE_KEYS})
    try:
        validate(out)
    except FoscarError as e:
        raise FoscarError(f"model {model.name}: {e}") from None
    return out


def config_hash(cfg: BenchConfig | dict[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of a resolved config: keys sorted, no spaces, ASCII.

    Two configs hash alike exactly when every field (grid, shape, model, tolerance,
    timing, seed, name) is equal.
    """
    d = cfg.to_dict() if isinstance(cfg, BenchConfig) else cfg
    canonical = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def config_from_meta(meta: dict[str, Any]):
    """The :class:`bench.config.BenchConfig` a run recorded in ``meta["config"]``.

    Fields the run did not record (added to :class:`BenchConfig` after it) take their defaults.

    Raises:
        FoscarError: the recorded config cannot be rebuilt, or does not hash to the
            recorded ``config_hash`` (the manifest was edited).
    """
    raw = meta.get("config")
    try:
        d = dict(raw)
        d["workload"] = WorkloadSpec(**d["workload"])
        d["ragged"] = [RaggedGrid(r["batch"], r["context"], WorkloadSpec(**r["workload"])) for r in d.get("ragged", [])]
        cfg = BenchConfig(**d)
    except (TypeError, KeyError, ValueError) as e:
        raise FoscarError(f"meta.json config: cannot rebuild the run's config ({e})") from None
    # the recorded dict, not the rebuilt config: fields added since (page_order, ...) take their defaults there, which
    # would change the hash of every older run's config
    if meta.get("config_hash") and config_hash(raw) != meta["config_hash"]:
        raise FoscarError("meta.json config: it does not hash to the recorded config_hash; the manifest was edited")
    return cfg


def load_config(path: str | Path) -> BenchConfig:
    """Read a TOML preset and validate it.

    Raises:
        FoscarError: missing file, TOML syntax error, an empty file, a model preset's format (name and [shape]
            only: it belongs to --model), unknown key, bad value.
    """
    path = Path(path)
    if path.is_dir():
        raise FoscarError(f"config {path}: a directory; expected a TOML file (format: configs/h200.toml)")
    if not path.is_file():
        raise FoscarError(f"config file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise FoscarError(f"config {path}: invalid TOML: {e}") from None
    if not raw:
        raise FoscarError(f"config {path}: empty; expected at least one table such as [sweep] "
                          "(format: configs/h200.toml)")
    if set(raw) == {"name", "shape"}:  # a model preset's format: it would run the default grid under its name
        raise FoscarError(f"config {path}: only a name and a [shape], a model preset's format (configs/models/), "
                          f"which would run the default grid; use it over an arch preset's grid "
                          f"(foscar bench --arch h200 --model {path}), or add a [sweep] table")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "workload":
            values["workload"] = _workload_spec(value, "[workload]", path)
        elif key == "ragged":
            if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
                raise FoscarError(f"config {path}: ragged: expected an array of tables ([[ragged]]), got {value!r}")
            values["ragged"] = [_ragged_entry(e, i, path) for i, e in enumerate(value, 1)]
        elif isinstance(value, dict):
            allowed = _TABLES.get(key)
            if allowed is None or key == "":
                raise FoscarError(f"config {path}: unknown table [{key}]; known: {_known_tables()}")
            for sub, subval in value.items():
                if sub not in allowed:
                    raise FoscarError(f"config {path}: unknown key [{key}].{sub}; known: {', '.join(allowed)}")
                values[sub] = subval
        elif key in _TABLES[""]:
            values[key] = value
        else:
            raise FoscarError(f"config {path}: unknown top-level key {key!r}; known: name, {_known_tables()}")
    for name in _LIST_FIELDS:
        if name in values and not isinstance(values[name], list):
            values[name] = [values[name]]
    cfg = BenchConfig(**values)
    try:
        validate(cfg)
    except FoscarError as e:
        raise FoscarError(f"config {path}: {e}") from None
    return cfg


def _known_tables() -> str:
    return ", ".join([f"[{t}]" for t in _TABLES if t] + ["[workload]", "[[ragged]]"])


def _workload_spec(value: Any, where: str, path: Path) -> WorkloadSpec:
    """A :class:`WorkloadSpec` from a TOML table (``[workload]`` or a ``[[ragged]]`` entry's
    ``workload``); unknown keys and bad values raise :class:`FoscarError` naming the table."""
    if not isinstance(value, dict):
        raise FoscarError(f"config {path}: {where}: expected a table with {', '.join(WORKLOAD_KEYS)}, got {value!r}")
    for key in value:
        if key not in WORKLOAD_KEYS:
            raise FoscarError(f"config {path}: unknown key {where}.{key}; known: {', '.join(WORKLOAD_KEYS)}")
    spec = WorkloadSpec(**value)
    try:
        spec.validate(where)
    except ValueError as e:
        raise FoscarError(f"config {path}: {e}") from None
    return spec


def _ragged_entry(entry: dict[str, Any], index: int, path: Path) -> RaggedGrid:
    where = f"[[ragged]] #{index}"
    for key in entry:
        if key not in RAGGED_KEYS:
            raise FoscarError(f"config {path}: unknown key {where}.{key}; known: {', '.join(RAGGED_KEYS)}")
    for key in ("batch", "context"):
        if key not in entry:
            raise FoscarError(f"config {path}: {where} lacks {key}")
    lists = {k: entry[k] if isinstance(entry[k], list) else [entry[k]] for k in ("batch", "context")}
    spec = _workload_spec(entry.get("workload", {}), f"{where}.workload", path)
    return RaggedGrid(workload=spec, **lists)


def apply_overrides(cfg: BenchConfig, **overrides: Any) -> BenchConfig:
    """A copy of ``cfg`` with every override that is not ``None`` (or an empty list) applied.

    Raises:
        FoscarError: unknown field or an invalid resulting config.
    """
    names = {f.name for f in dataclasses.fields(BenchConfig)}
    changes = {}
    for key, value in overrides.items():
        if key not in names:
            raise FoscarError(f"unknown config field {key!r}")
        if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
            continue
        changes[key] = list(value) if isinstance(value, (list, tuple)) else value
    out = dataclasses.replace(cfg, **changes)
    validate(out)
    return out


def validate(cfg: BenchConfig) -> None:
    """Check value types and ranges.

    Raises:
        FoscarError: the first problem, as "expected X, got Y".
    """

    def positive_ints(name: str, values: list) -> None:
        if not values:
            raise FoscarError(f"{name}: expected at least one value, got none")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise FoscarError(f"{name}: expected positive integers, got {v!r}")

    def one_value(name: str, value: Any) -> None:  # a [shape] or [sweep] key that takes one value, not a list
        if isinstance(value, (list, tuple, dict)):
            raise FoscarError(f"{name}: expected one value, got {value!r} (a config sweeps batch, context, bits and "
                              f"operand only: run one config per {name})")

    def finite_positive(name: str, value: Any) -> None:
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise FoscarError(f"{name}: expected a positive finite number, got {value!r}")

    def int_at_least(name: str, value: Any, least: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise FoscarError(f"{name}: expected an integer >= {least}, got {value!r}")

    if not isinstance(cfg.name, str) or not cfg.name:
        raise FoscarError(f"name: expected a non-empty string, got {cfg.name!r}")
    for key in FIXED_FIELDS:
        one_value(key, getattr(cfg, key))
    positive_ints("batch", cfg.batch)
    positive_ints("context", cfg.context)
    positive_ints("num_qo_heads", [cfg.num_qo_heads])
    positive_ints("num_kv_heads", [cfg.num_kv_heads])
    positive_ints("head_dim", [cfg.head_dim])
    check_choices("head_dim", [cfg.head_dim], SUPPORTED_HEAD_DIMS)
    positive_ints("page_size", [cfg.page_size])
    check_choices("page_order", [cfg.page_order], PAGE_ORDERS)
    check_choices("bits", cfg.bits, SUPPORTED_BITS)
    if not cfg.bits:
        raise FoscarError("bits: expected at least one value, got none")
    check_choices("group_size", [cfg.group_size], SUPPORTED_GROUP_SIZES)
    if cfg.head_dim % cfg.group_size != 0:
        fits = [g for g in SUPPORTED_GROUP_SIZES if cfg.head_dim % g == 0]
        raise FoscarError(f"head_dim: expected a multiple of group_size={cfg.group_size}, got {cfg.head_dim}"
                          + (f"; group_size {' or '.join(map(str, fits))} fits it (--group-size)"
                             if fits else ""))
    if cfg.num_qo_heads % cfg.num_kv_heads != 0:
        raise FoscarError(
            f"num_qo_heads: expected a multiple of num_kv_heads={cfg.num_kv_heads}, got {cfg.num_qo_heads}"
        )
    if not cfg.operand:
        raise FoscarError(f"operand: expected at least one of {', '.join(SUPPORTED_OPERANDS)}, got none")
    check_choices("operand", cfg.operand, SUPPORTED_OPERANDS, UNBUILT_OPERANDS)
    if not cfg.kernels:
        raise FoscarError("kernels: expected at least one kernel, got none")
    for key in ("tolerance", "tolerance_fp8_kv", "tolerance_fp8_operand", "warmup_ms", "rep_ms"):
        finite_positive(key, getattr(cfg, key))
    int_at_least("full_check_max_tokens", cfg.full_check_max_tokens, 0)
    int_at_least("cpu_reps", cfg.cpu_reps, 1)
    int_at_least("seed", cfg.seed, 0)
    _validate_workloads(cfg)
    sustain = cfg.sustain_s
    if isinstance(sustain, bool) or not (isinstance(sustain, (int, float)) and 0 <= sustain <= MAX_SUSTAIN_S):
        raise FoscarError(f"sustain_s: expected seconds from 0 to {MAX_SUSTAIN_S}, got {sustain!r}")
    cfg.sustain_s = float(sustain)  # TOML's 2 and --sustain-s 2.0: one config, one hash
    if not isinstance(cfg.read_floor, bool):
        raise FoscarError(f"read_floor: expected true or false, got {cfg.read_floor!r}")


def _validate_workloads(cfg: BenchConfig) -> None:
    """``[workload]``, every ``[[ragged]]`` entry and ``grids``: names, values, and a
    capacity that holds the largest context of its grid."""

    def check(spec: Any, contexts: list[int], where: str) -> None:
        if not isinstance(spec, WorkloadSpec):
            raise FoscarError(f"{where}: expected a WorkloadSpec, got {spec!r}")
        try:
            spec.validate(where)
        except ValueError as e:
            raise FoscarError(str(e)) from None
        if spec.capacity is not None and spec.capacity < max(contexts):
            raise FoscarError(
                f"{where}.capacity: expected >= the largest context of its grid ({max(contexts)}), got {spec.capacity}"
            )

    check(cfg.workload, cfg.context, "workload")
    for i, entry in enumerate(cfg.ragged, 1):
        where = f"[[ragged]] #{i}"
        for key in ("batch", "context"):
            values = getattr(entry, key)
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in values):
                raise FoscarError(f"{where}.{key}: expected positive integers, got {values!r}")
        check(entry.workload, entry.context, f"{where}.workload")
    if not cfg.grids:
        raise FoscarError(f"grids: expected at least one of {list(GRIDS)}, got none")
    for g in cfg.grids:
        if g not in GRIDS:
            raise FoscarError(f"grid {g!r}: expected one of {', '.join(GRIDS)}")
    if list(cfg.grids) == ["ragged"] and not cfg.ragged:
        raise FoscarError("grid: only 'ragged' asked for, but the config has no [[ragged]] grid; "
                          "add [[ragged]] entries or use --grid sweep")
