"""The kernel registry (TritonBench style).

A backend is one small decorated function ``build(workload, operand) -> Prepared``:
it builds whatever it needs *outside* the timed region (plans, workspaces, caches
in its own layout) and returns the zero-argument callable that is timed, a getter
for the output of the last call, and the bytes one call must move. Metadata
(kernel name, whether it reads the quantized cache, which baseline it counts
towards, the dtype of the cache it reads, what makes it unavailable) sits in the
decorator, so adding a kernel variant or a baseline is one function::

    @register_backend("my-kernel", quantized=True)
    def my_kernel(w: Workload, operand: str) -> Prepared:
        out = {}
        def fn():
            out["o"] = my_decode(w.q, w.cache, operand=operand)
        return Prepared(fn, lambda: out["o"], w.cache.bytes_read() + w.io_bytes())

Rows per point: a ``quantized`` backend gives one row per operand mode of the
config, with ``bits`` = the point's bits; a baseline gives one row with
``bits = None`` that reads the *dequantized* values of the same cache, stored as
``kv_dtype`` (BF16, or FP8 e4m3 with a per-tensor scale).

Baselines (:data:`BASELINE_KINDS`): ``baseline="bf16"`` rows count towards
"FlashInfer BF16 at its best" (the fastest such row per point; the column
``speedup_vs_flashinfer_bf16``), ``baseline="fp8"`` rows towards "FlashInfer
FP8-KV at its best" (``speedup_vs_flashinfer_fp8``). ``None``: not a baseline.

Importing this module, and listing the registry (:func:`registered_backends`,
:func:`kernel_names`), imports no torch: the CLI checks ``--kernel`` against it
before any heavy import. Backend modules therefore use torch inside their
functions only (``bench.lazy.torch`` where a module-level name is handier).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from bench.errors import check_choices
from bench.lazy import torch
from bench.shape import PAGE_SHUFFLE_SEED

if TYPE_CHECKING:
    from bench.workload import Workload

FOSCAR_TRITON = "foscar-triton"  # = foscar.kernels.decode_triton.KERNEL_NAME
FOSCAR_CUDA = "foscar-cuda"  # = foscar.kernels.decode_cuda.KERNEL_NAME
FOSCAR_CUDA_PER_VALUE = "foscar-cuda-per-value"  # the same CUDA kernel, per-value reconstruction
FOSCAR_CUDA_PAGED = "foscar-cuda-paged"  # the folded CUDA kernel on a paged copy of the cache

# modules whose import registers more backends (they import their GPU libraries lazily)
_PLUGIN_MODULES = ("bench.flashinfer_backend",)


@dataclass(frozen=True)
class Prepared:
    """A backend ready to time.

    Attributes:
        fn: the timed call, no arguments, no allocation of inputs.
        output: returns the ``[batch, num_qo_heads, head_dim]`` output of the last ``fn()``.
        bytes: bytes one call must move (reads of K/V, scales, q; write of the output).
        replica: builds another call like ``fn`` over its own copy of the inputs, for
            rotating buffers so that every timed call reads from HBM (None: no copies).
    """

    fn: Callable[[], object]
    output: Callable[[], torch.Tensor]
    bytes: int
    replica: Callable[[], Callable[[], object]] | None = None


# baseline kind -> what "at its best" is taken over (the fastest passing row of that kind per point)
BASELINE_KINDS: dict[str, str] = {
    "bf16": "FlashInfer BF16",
    "fp8": "FlashInfer FP8-KV",
}
# the cache dtype a non-quantized backend reads (the row's kv_dtype column)
NON_QUANTIZED_KV_DTYPES = ("bf16", "fp8_e4m3")


def normalize_baseline(baseline: str | bool | None) -> str | None:
    """A baseline kind from :data:`BASELINE_KINDS` or ``None``; the old boolean form maps
    ``True`` to ``"bf16"`` (every baseline was BF16 then) and ``False`` to ``None``.

    Raises:
        ValueError: an unknown kind.
    """
    if baseline is True:
        return "bf16"
    if baseline is False or baseline is None:
        return None
    if baseline not in BASELINE_KINDS:
        raise ValueError(f"baseline: expected one of {list(BASELINE_KINDS)} or None, got {baseline!r}")
    return baseline


@dataclass(frozen=True)
class Backend:
    """Registry entry. ``unavailable(device)`` returns why it cannot run here, or ``None``.

    Attributes:
        quantized: reads the INT2/INT4 cache; False: reads the dequantized values of
            the same cache, stored as ``kv_dtype``.
        baseline: the baseline kind it counts towards (:data:`BASELINE_KINDS`:
            ``"bf16"``, ``"fp8"``), or ``None``. ``True``/``False`` are accepted and
            normalized (``True`` = ``"bf16"``).
        kv_dtype: the dtype of the K/V cache it reads, for non-quantized backends
            (``"bf16"`` or ``"fp8_e4m3"``); ``None`` for quantized ones (``int<bits>``).
            Picks the check tolerance (:meth:`bench.config.BenchConfig.tolerance_for`).
    """

    name: str
    build: Callable[[Workload, str | None], Prepared]
    quantized: bool
    baseline: str | None
    unavailable: Callable[[torch.device], str | None]
    description: str
    kv_dtype: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "baseline", normalize_baseline(self.baseline))
        if self.quantized:
            if self.kv_dtype is not None:
                raise ValueError(f"backend {self.name!r}: a quantized backend reads int<bits>; kv_dtype must be None")
        else:
            kv = self.kv_dtype or "bf16"
            if kv not in NON_QUANTIZED_KV_DTYPES:
                raise ValueError(f"backend {self.name!r}: kv_dtype: expected one of {list(NON_QUANTIZED_KV_DTYPES)}, got {kv!r}")
            object.__setattr__(self, "kv_dtype", kv)

    @property
    def is_baseline(self) -> bool:
        return self.baseline is not None


_REGISTRY: dict[str, Backend] = {}


def _always(device: torch.device) -> str | None:
    return None


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""


def register_backend(
    name: str,
    *,
    quantized: bool,
    baseline: str | None = None,
    kv_dtype: str | None = None,
    unavailable: Callable[[torch.device], str | None] | None = None,
    description: str = "",
):
    """Decorator: register ``build(workload, operand) -> Prepared`` under ``name``.

    ``baseline``: ``"bf16"``, ``"fp8"`` (:data:`BASELINE_KINDS`) or ``None``;
    ``kv_dtype``: the cache dtype of a non-quantized backend (default ``"bf16"``).
    """

    def deco(build: Callable[[Workload, str | None], Prepared]):
        if name in _REGISTRY:
            raise ValueError(f"backend {name!r} registered twice")
        _REGISTRY[name] = Backend(
            name=name,
            build=build,
            quantized=quantized,
            baseline=baseline,
            unavailable=unavailable or _always,
            description=description or _first_line(build.__doc__),
            kv_dtype=kv_dtype,
        )
        return build

    return deco


def registered_backends() -> dict[str, Backend]:
    """All backends, plugin modules included (importing them imports no GPU library)."""
    for mod in _PLUGIN_MODULES:
        importlib.import_module(mod)
    return dict(_REGISTRY)


def kernel_names() -> list[str]:
    """Names of every registered backend, in registration order (no torch import)."""
    return list(registered_backends())


def select_backends(names: list[str]) -> list[Backend]:
    """The named backends, in the given order.

    Raises:
        FoscarError: an unknown name (``kernels 'x': expected one of ...``).
    """
    known = registered_backends()
    check_choices("kernels", names, list(known))
    out = []
    for n in names:
        if known[n] not in out:
            out.append(known[n])
    return out


# ---------------------------------------------------------------------------
# FOSCAR kernels


def operand_unavailable(device: torch.device, operand: str | None, kernel: str | None = None) -> str | None:
    """Why a FOSCAR row with this operand mode (of ``kernel``) cannot run here, or ``None``.

    ``fp8`` exists in the folded CUDA kernel (``foscar-cuda``) only: such rows are
    recorded as skipped with this reason. Modes no kernel has (``fp4``,
    :data:`bench.config.UNBUILT_OPERANDS`) never get here: the config refuses them.
    """
    if operand in (None, "bf16"):
        return None
    if operand == "fp8":
        if kernel in (None, FOSCAR_CUDA, FOSCAR_CUDA_PAGED):
            return None
        return f"operand fp8 exists in the folded CUDA kernel ({FOSCAR_CUDA}) only, not in {kernel}"
    return f"operand {operand} is not implemented (FOSCAR has bf16, and fp8 in {FOSCAR_CUDA})"


def _cuda_unavailable(device: torch.device) -> str | None:
    from foscar.kernels import decode_cuda

    return decode_cuda.unavailable(device)


@register_backend(FOSCAR_TRITON, quantized=True)
def foscar_triton(w: Workload, operand: str | None) -> Prepared:
    """foscar.plan_decode(backend="triton") and its run: the folded Triton split-KV kernel on the quantized cache."""
    return _foscar(w, operand, "triton")


@register_backend(FOSCAR_CUDA, quantized=True, unavailable=_cuda_unavailable)
def foscar_cuda(w: Workload, operand: str | None) -> Prepared:
    """foscar.plan_decode(backend="cuda") and its run: the folded sm_90 CUDA C++ split-KV kernel (mma.sync) on the quantized cache."""
    return _foscar(w, operand, "cuda")


@register_backend(FOSCAR_CUDA_PER_VALUE, quantized=True, unavailable=_cuda_unavailable)
def foscar_cuda_per_value(w: Workload, operand: str | None) -> Prepared:
    """foscar.plan_decode(backend="cuda", method="per-value") and its run: the same CUDA kernel reconstructing every value as bf16(s*q+z) (ablation baseline)."""
    return _foscar(w, operand, "cuda", method="per-value")


@register_backend(FOSCAR_CUDA_PAGED, quantized=True, unavailable=_cuda_unavailable)
def foscar_cuda_paged(w: Workload, operand: str | None) -> Prepared:
    """foscar.plan_decode(backend="cuda") and its run on a paged copy of the cache (the point's page_size and page_order)."""
    return _foscar(w, operand, "cuda", paged=True)


def _foscar(w: Workload, operand: str | None, backend: str, method: str = "folded", paged: bool = False) -> Prepared:
    """A :func:`foscar.plan_decode` plan made here, once per input copy, and its ``run`` timed: what a serving
    engine does (plan once a step, run every layer, captured in a CUDA graph), and how the FlashInfer baselines
    are timed (their ``plan`` outside the timed call). The CUDA kernel's plans merge split-KV partials in the
    decode kernel; a one-shot ``foscar.decode`` would take the merge kernel instead (bench/NOTES.md §80).

    ``paged``: time a :func:`foscar.paginate` copy of the point's cache (``page_size`` of
    the point, pages in a random order in memory where its ``page_order`` is ``shuffled``, as
    FlashInfer's pages then are; only the pages of the lengths) instead of
    the contiguous cache; the same tokens, so the same bytes and the same reference. Its
    ``max_seq_len`` (the host-side bound that sizes the split plan) is the point's
    capacity, as a serving engine that allocates for the capacity passes it."""
    cache = foscar_paged_cache(w) if paged else w.cache
    return planned_decode(w, cache, operand=operand, backend=backend, method=method)


def planned_decode(w: Workload, cache, **plan_options) -> Prepared:
    """Time ``plan.run(q, cache)`` of a :func:`foscar.plan_decode` plan made here (outside the timed call, once per
    input copy) over ``cache``, a cache of the point's tokens (``w.cache`` or a paged copy), with the point's query
    and softmax scale; ``plan_options`` go to ``plan_decode`` (``operand``, ``backend``, ``method``,
    ``num_splits``). ``bytes``: the point's tokens and query/output (``w.cache.bytes_read() + w.io_bytes()``, which
    syncs on the lengths: here, not in the timed call). The output check reads the first copy's last output. Used by
    ``foscar bench`` (:func:`_foscar`) and ``foscar ablate``.

    Raises:
        ValueError: what :func:`foscar.plan_decode` raises for the cache and the options.
    """
    import foscar

    nbytes = w.cache.bytes_read() + w.io_bytes()
    last: dict[str, torch.Tensor] = {}

    def make(q, c, keep: bool):
        plan = foscar.plan_decode(c, q.shape[1], sm_scale=w.sm_scale, **plan_options)  # checks the cache (one sync)

        def fn():
            out = plan.run(q, c)
            if keep:
                last["out"] = out

        return fn

    return Prepared(fn=make(w.q, cache, keep=True), output=lambda: last["out"], bytes=nbytes,
                    replica=lambda: make(w.q.clone(), clone_cache(cache), keep=False))


def foscar_paged_cache(w: Workload):
    """The point's cache as a :class:`foscar.PagedQuantizedKVCache`: pages of the point's ``page_size`` tokens, in a
    random order in memory (seed :data:`bench.shape.PAGE_SHUFFLE_SEED`) where its ``page_order`` is ``shuffled``, as
    FlashInfer's pages then are; only the pages of the lengths; ``max_seq_len`` the point's capacity (the bound that
    sizes the split plan, as a serving engine that allocates for the capacity passes it). Built once per point and
    shared by every row that asks (:meth:`bench.workload.Workload.shared`)."""
    import foscar

    def build():
        gen = torch.Generator().manual_seed(PAGE_SHUFFLE_SEED)
        shuffle = w.point.page_order == "shuffled"
        paged = foscar.paginate(w.cache, page_size=w.point.page_size, shuffle=shuffle, generator=gen)
        return dataclasses.replace(paged, max_seq_len=w.point.capacity)

    return w.shared(("foscar-paged", w.point.page_size, w.point.page_order), build)


def clone_cache(cache):
    """An independent copy of a ``QuantizedKVCache`` or ``PagedQuantizedKVCache`` (same contents, new memory)."""
    return dataclasses.replace(
        cache, **{f.name: getattr(cache, f.name).clone() for f in dataclasses.fields(cache)
                  if isinstance(getattr(cache, f.name), torch.Tensor)}
    )
