"""FOSCAR's kernels, one module per kernel family (kernel, launcher and heuristics together).

* :mod:`foscar.kernels.decode_cuda` — the sm_90 CUDA C++ folded (and per-value) split-KV
  decode, ``csrc/`` compiled at first use.
* :mod:`foscar.kernels.decode_triton` — the portable folded split-KV decode (Triton),
  contiguous and paged caches.
* :mod:`foscar.kernels.merge_triton` — split-KV merge through the LSE (Triton).
* :mod:`foscar.kernels.quantize_triton` — quantize-on-append (Triton).
* :mod:`foscar.kernels.splits` — the split-KV plan shared by the decode kernels.

Importing the Triton modules imports Triton; set ``TRITON_INTERPRET=1`` *before* that
to run the kernels on the CPU interpreter.
"""
