"""The ``foscar`` command line: the entry point of :mod:`bench.cli`, which wires commands to ``bench/``.

    foscar bench --arch h200                      # the preset grid of configs/h200.toml
    foscar bench --arch auto --bits 2 --batch 8 --context 32768
    foscar bench --config my.toml --out results/my-run
    foscar bench --smoke                          # tiny grid; Triton interpreter when there is no GPU
    foscar bench --arch h200 --model llama-3.1-70b-tp8    # a model's shape (configs/models/) on the h200 grid
    foscar bench --arch h200 --dry-run            # the grid, memory per point, estimated time; runs nothing
    foscar bench --arch h200 --grid ragged        # only the preset's ragged grid ([[ragged]])
    foscar bench --arch h200 --workload one-long --capacity 131072   # the [sweep] grid with other lengths
    foscar bench --arch h200 --shard 0/2 --out results/s0 # every 2nd point from point 0 (one shard)
    foscar merge results/s0 results/s1 --out results/all  # shards -> one run
    foscar bench --arch h200 --devices all        # one worker per local GPU, merged at the end
    foscar report results/<run> [more runs] [--out DIR]   # PNG plots + report.md, for any run's kind (bench.study)
    foscar compare BASE NEW [--threshold 0.05] [--json]   # two runs of one kind; exit 1 on a regression
    foscar export-gab RUN [--out FILE]            # github-action-benchmark customSmallerIsBetter JSON
    foscar accuracy [--smoke] [--out DIR]         # kernel error vs exact attention: data x bits x group x rotation x layout
    foscar ablate [--smoke]                       # folded vs per-value, group size, split-KV, operands, paging
    foscar eval-model --model DIR --bits 4 --group-size 32   # a real model: INT2/INT4 cache vs its BF16 cache
    foscar dump-kv --model DIR --out kv.safetensors          # per-layer post-RoPE q/k/v; then accuracy --kv-file

Errors the user can fix raise :class:`bench.errors.FoscarError`; :func:`main` prints
them as one line on stderr and exits with code 2 (``--debug`` or ``FOSCAR_DEBUG=1``
shows the traceback). Exit codes: 0 done, 1 ``compare`` found a regression, 2 bad
input, 3 ``bench`` finished but its numbers need a look (:mod:`bench.errors`).

This file is the entry point only (``foscar = "foscar_cli:main"``, ``python foscar_cli.py``,
``python -m foscar_cli``): the commands live in :mod:`bench.cli`, one module each
(``bench/cli/<command>_cmd.py``), with the options that several commands share in
:mod:`bench.cli.options` and the typer ``app`` and :func:`main` in :mod:`bench.cli.app`.
"""

from __future__ import annotations

from bench.cli import app, main

__all__ = ["app", "main"]

if __name__ == "__main__":
    main()
