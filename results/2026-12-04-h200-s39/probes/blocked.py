"""Issue-12 probe (session 39): the decode reading a cache laid out block by block (bench/NOTES.md §83).

A build with ``FOSCAR_NVCC_DEFINES="... FOSCAR_BLOCKED=1"`` reads each token-wise cache as blocks of rows (64 tokens of
one (sequence, KV head) on a contiguous cache, one (page, KV head) on a paged one), each block holding its K codes, V
codes, K scales, K offsets, V scales and V offsets one after the other. With ``PROBE_BLOCKED=1`` this wrapper of
``python -m bench.ab`` hands the kernel such a copy of every point's cache: the six tensors are views (contiguous
strides, their own offsets) into one buffer, so that the binding's checks pass and the kernel's own addressing finds
the blocks. The check against the fp64 reference then holds only where build and layout agree. Usage as bench.ab's:

    PROBE_BLOCKED=1 FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_BLOCKED=1" \\
        python .ab/blocked.py run b 0 OUT.csv --point 2x8x32768 --point 2x8x32768:paged
"""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
import bench.ab as ab  # noqa: E402
import bench.backends as bb  # noqa: E402

BLOCKED = os.environ.get("PROBE_BLOCKED") == "1"


def _rows_per_block(cache) -> int:
    return cache.k_codes.shape[2] if hasattr(cache, "kv_indices") else 64


def _views(cache, buf):
    n0, h, length, rb = cache.k_codes.shape
    ng = cache.k_scale.shape[-1]
    r = _rows_per_block(cache)
    f = buf.view(torch.float32)
    cs, ss = (h * length * rb, length * rb, rb, 1), (h * length * ng, length * ng, ng, 1)
    sc = [f.as_strided(cache.k_scale.shape, ss, (2 * r * rb) // 4 + j * r * ng) for j in range(4)]
    return dataclasses.replace(cache, k_codes=buf.as_strided(cache.k_codes.shape, cs, 0),
                               v_codes=buf.as_strided(cache.k_codes.shape, cs, r * rb),
                               k_scale=sc[0], k_offset=sc[1], v_scale=sc[2], v_offset=sc[3])


def to_blocked(cache):
    """The cache's blocked copy (new memory); the index tensors shared."""
    assert cache.k_block is None, "token-wise K only"
    n0, h, length, rb = cache.k_codes.shape
    ng = cache.k_scale.shape[-1]
    r = _rows_per_block(cache)
    assert length % r == 0, (length, r)
    nb = length // r
    parts = [cache.k_codes.reshape(n0, h, nb, r * rb), cache.v_codes.reshape(n0, h, nb, r * rb)]
    parts += [t.contiguous().view(torch.uint8).reshape(n0, h, nb, r * ng * 4)
              for t in (cache.k_scale, cache.k_offset, cache.v_scale, cache.v_offset)]
    buf = torch.cat(parts, -1).contiguous().reshape(-1)
    return _views(cache, buf)


def clone_blocked(cache):
    buf = torch.empty(0, dtype=torch.uint8, device=cache.k_codes.device).set_(cache.k_codes.untyped_storage())
    idx = {f.name: getattr(cache, f.name).clone() for f in dataclasses.fields(cache)
           if isinstance(getattr(cache, f.name), torch.Tensor) and "codes" not in f.name and "scale" not in f.name
           and "offset" not in f.name}
    return _views(dataclasses.replace(cache, **idx), buf.clone())


def unblock(cache, which: str):
    """A blocked view's logical tensor read back through the kernel's addressing (CPU check)."""
    n0, h, length, rb = cache.k_codes.shape
    ng = cache.k_scale.shape[-1]
    r = _rows_per_block(cache)
    buf = torch.empty(0, dtype=torch.uint8).set_(cache.k_codes.untyped_storage())
    rows = torch.arange(n0 * h * length)
    blk = (rows // r) * (r * (2 * rb + 16 * ng))
    t = getattr(cache, which)
    base = t.storage_offset() * t.element_size()
    w = rb if "codes" in which else ng * 4
    off = base + blk + (rows % r) * w
    out = buf[(off[:, None] + torch.arange(w)[None, :]).reshape(-1)]
    return out.view(torch.uint8 if "codes" in which else torch.float32).reshape(t.shape)


if BLOCKED:
    _build = ab.build_point

    def build_point(pp, dev, **kw):
        w, cache, nbytes = _build(pp, dev, **kw)
        return w, to_blocked(cache), nbytes

    ab.build_point = build_point
    _clone = bb.clone_cache
    bb.clone_cache = clone_blocked

if __name__ == "__main__":
    sys.exit(ab.main(sys.argv[1:]))
