"""The ``foscar bench`` harness: sweep FOSCAR kernels against FlashInfer BF16.

One small module per job:

* :mod:`bench.cli`          the ``foscar`` command line: one module per command, shared options (``bench/cli/``)
* :mod:`bench.errors`       the one user-facing error type (exit code 2 in the CLI)
* :mod:`bench.arch`         which GPU is here, and which preset it runs
* :mod:`bench.config`       TOML presets (``configs/*.toml``, model shapes in ``configs/models/``),
  CLI overrides, the config hash
* :mod:`bench.backends`     the kernel registry (``foscar-triton`` lives here)
* :mod:`bench.flashinfer_backend`  FlashInfer BF16 baselines (fa2, fa2 + tensor cores, XQA)
* :mod:`bench.workload`     one sweep point's inputs: random K/V, quantized cache, reference
* :mod:`bench.timing`       ``do_bench`` on GPU, ``perf_counter`` under the interpreter
* :mod:`bench.hbm`          the measured HBM ceiling
* :mod:`bench.results`      the results schema, speedups, geometric means, files
* :mod:`bench.manifest`     ``meta.json``: versions, GPU (NVML: UUID, clocks, temperature), git, config
* :mod:`bench.tables`       rich tables
* :mod:`bench.points`       a sweep's points (the grid) and each point's rows
* :mod:`bench.sweep`        the loop over points
* :mod:`bench.plan`         what a sweep will do: ``--dry-run``, memory per point, the run-time estimate
* :mod:`bench.progress`     the progress bar and ETA of a sweep
* :mod:`bench.resume`       resuming a run directory (config hash check, finished points)
* :mod:`bench.run`          what ``foscar bench`` does, end to end
* :mod:`bench.shard`        ``--shard K/N``: which grid points one run measures
* :mod:`bench.merge`        ``foscar merge``: shard runs -> one run (refuses mismatched shards)
* :mod:`bench.devices`      ``--devices``: one worker process per local GPU, then the merge
* :mod:`bench.warm`         compile every kernel once before the workers start
* :mod:`bench.rundir`       reading a run directory back (for report and compare)
* :mod:`bench.kinds`        a run's study kind (meta.json ``kind``)
* :mod:`bench.study`        ``foscar report`` / ``foscar compare`` on any run: dispatch on its kind
* :mod:`bench.plotting`     what every plot shares (resolution, width, palette)
* :mod:`bench.report`       ``foscar report`` of bench runs: PNG plots and report.md
* :mod:`bench.compare`      ``foscar compare`` of bench runs (regressions), ``foscar export-gab``
* :mod:`bench.accuracy`     ``foscar accuracy``: kernel error vs exact attention (data x bits x group x rotation x layout)
* :mod:`bench.accuracy_grid`  its grid, variants, columns and tolerances (no torch)
* :mod:`bench.accuracy_report`  its rich table, PNGs and accuracy.md
* :mod:`bench.accuracy_compare` ``foscar compare`` of two accuracy runs (error metrics)
* :mod:`bench.ablate`       ``foscar ablate``: each idea's speed-up on the same points
* :mod:`bench.ablate_grid`  its settings, columns and speed-ups over each axis' reference (no torch)
* :mod:`bench.ablate_report`  its PNGs and markdown
* :mod:`bench.ablate_compare`  ``foscar compare`` of two ablation runs (times)
* :mod:`bench.hf_model`     loading a local / random-init transformers model (the ``hf`` extra)
* :mod:`bench.eval_model`   ``foscar eval-model``: a model with FOSCAR's cache vs its BF16 cache; its report
* :mod:`bench.dump_kv`      ``foscar dump-kv``: per-layer post-RoPE q/k/v to safetensors (``accuracy --kv-file``)
* :mod:`bench.model_speed_study`  ``foscar model-speed``: whole-model decode tokens/s, BF16 vs INT2/INT4 cache (``scripts/eval_model_gpu.sh``)
* :mod:`bench.model_speed`  ``python -m bench.model_speed``: the same command's older entry point
"""

SCHEMA_VERSION = 1
