"""FOSCAR's kernels, one module per kernel family (kernel, launcher and heuristics together).

* :mod:`foscar.kernels.decode_triton` — folded INT2/INT4 split-KV decode (Triton).
* :mod:`foscar.kernels.merge_triton` — split-KV merge through the LSE (Triton).

Importing this package imports Triton; set ``TRITON_INTERPRET=1`` *before* that
to run the kernels on the CPU interpreter.
"""
