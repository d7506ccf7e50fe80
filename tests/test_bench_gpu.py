"""The harness on a GPU (`pytest -m gpu` on the GPU machine): FlashInfer adapters and a real run.

Small shapes with the Hopper preset's heads (32 query, 8 KV, head_dim 128); a
context that is not a multiple of the page size exercises the last partial page.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch

from bench.backends import select_backends
from bench.config import BenchConfig
from bench.sweep import Sweep, run_sweep

pytestmark = pytest.mark.gpu

ALL = ["foscar-triton", "flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa"]


def small_config(**kw) -> BenchConfig:
    base = dict(name="gpu-test", batch=[1, 3], context=[1000], bits=[2, 4], kernels=ALL)
    base.update(kw)
    return BenchConfig(**base)


def test_flashinfer_rows_pass_their_check(tmp_path):
    pytest.importorskip("flashinfer")
    cfg = small_config()
    df = run_sweep(Sweep(cfg, select_backends(ALL), torch.device("cuda"), None, tmp_path / "r.csv", console=None))
    fi = df[df["kernel"].str.startswith("flashinfer")]
    bad = fi[fi["status"] != "ok"]
    assert bad.empty, bad[["kernel", "batch", "cache_bits", "status", "error"]].to_string()
    assert (fi["max_rel_err"] < 1e-2).all(), fi[["kernel", "max_rel_err"]]
    assert (fi["median_us"] > 0).all()
    ours = df[df["kernel"] == "foscar-triton"]
    assert ours["speedup_vs_flashinfer_bf16"].notna().all()


def test_cli_run_on_gpu(tmp_path):
    from foscar_cli import main

    out = tmp_path / "run"
    try:
        main(["bench", "--arch", "auto", "--batch", "2", "--context", "4096", "--bits", "2", "--out", str(out),
              "--format", "quiet"])  # fmt: skip
    except SystemExit as e:
        assert e.code in (0, None)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["gpu"]["sm_count"] > 0 and meta["gpu"]["name"]
    assert meta["hbm_ceiling_tbps"] > 0.5
    df = pd.read_csv(out / "results.csv")
    ok = df[df["status"] == "ok"]
    assert ok["timing_mode"].isin(["cuda_graph", "do_bench"]).all()
    assert (ok.loc[ok["kernel"].str.startswith("foscar"), "timing_mode"] == "cuda_graph").all()
    assert ok["tbps"].map(math.isfinite).all() and (ok["sol_fraction"] <= 1.0).all()
    summary = json.loads((out / "summary.json").read_text())
    assert "foscar-triton/int2/bf16" in summary["geomean_speedup"]


def test_read_floor_of_a_run(tmp_path):
    """``--read-floor``: every timed row of a CUDA-graph run gets its read floor (a plain read of its bytes over its
    rotation, bench.hbm.read_floor_us) and floor_fraction = read_floor_us / median_us; rows of the same bytes and
    copies share one measurement; the floor reads no faster than the ceiling allows."""
    from bench.hbm import read_floor_us

    cfg = small_config(batch=[2], context=[8192], bits=[2, 4], kernels=["foscar-triton"], read_floor=True)
    sweep = Sweep(cfg, select_backends(cfg.kernels), torch.device("cuda"), None, tmp_path / "r.csv", console=None)
    df = run_sweep(sweep)
    ok = df[df["status"] == "ok"]
    assert len(ok) == 2, df[["kernel", "cache_bits", "status", "error"]].to_string()
    assert ok["read_floor_us"].gt(0).all() and ok["floor_fraction"].gt(0).all(), ok.to_string()
    assert (ok["floor_fraction"] - ok["read_floor_us"] / ok["median_us"]).abs().max() < 1e-9
    assert set(sweep.floors) == {(int(b), int(w) // int(b)) for b, w in zip(ok["bytes"], ok["working_set_bytes"])}
    assert (ok["read_floor_us"] < ok["median_us"]).all()  # the Triton decode does more than read its few MiB
    assert (ok["working_set_bytes"] // ok["bytes"] > 1).all()  # small rows rotate over several copies, and so do floors
    from bench.hbm import measure_hbm

    dev = torch.device("cuda")
    read_1g = measure_hbm(dev, 1 << 30)["read_tbps"]  # the ceiling's read stream over 1 GiB, do_bench-timed
    big = read_floor_us(256 << 20, 1, dev)  # 256 MiB: far from L2, ~60 us on an H100 / H200
    assert big is not None and 0.7 * read_1g < (256 << 20) / (big * 1e-6) / 1e12 < 1.15 * read_1g
    assert read_floor_us(1_000_003, 3, dev) > 0  # not a multiple of 4 or 64 bytes: rounded up to 64-byte blocks
    assert read_floor_us(1 << 50, 1, dev) is None  # a petabyte does not fit: no floor
