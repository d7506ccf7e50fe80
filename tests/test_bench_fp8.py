"""FlashInfer FP8 (e4m3) KV-cache baselines without a GPU: registry metadata, the FP8
pages and their scales (built on CPU), the second speed-up ("vs FlashInfer FP8-KV at
its best") in rows, summary, tables and report, the per-kv-dtype check tolerance, and
backward compatibility with runs written before FP8 baselines existed."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from bench.backends import BASELINE_KINDS, Backend, Prepared, registered_backends
from bench.config import BenchConfig, load_config, preset_path
from bench.errors import FoscarError
from bench.plan import call_bytes
from bench.results import COLUMNS, add_speedups, read_results, summarize, to_frame, write_csv
from bench.sweep import Sweep, run_sweep
from bench.tables import point_table, summary_table, summary_tables
from bench.workload import Point, Workload, build_cache, estimate_bytes
from tests.cli_helpers import render_table
from tests.test_bench_results import point, row

FP8_KERNELS = ("flashinfer-fa2-fp8", "flashinfer-fa2-tc-fp8", "flashinfer-xqa-fp8")
BF16_KERNELS = ("flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa")


def point_rows(p: Point, ours: dict[int, float], bf16: tuple, fp8: tuple, fp8_status=("ok", "ok", "ok")) -> list[dict]:
    """FOSCAR rows (bits -> us), three BF16 and three FP8 baseline rows (us, or None when not timed)."""
    rows = [row(p, "foscar-cuda", us, bits=b) for b, us in ours.items()]
    rows += [row(p, k, us, baseline="bf16") for k, us in zip(BF16_KERNELS, bf16)]
    rows += [row(p, k, us if st == "ok" else None, st, baseline="fp8") for k, us, st in zip(FP8_KERNELS, fp8, fp8_status)]
    return rows


# ---------------------------------------------------------------------------
# registry


def test_fp8_backends_are_registered_as_fp8_baselines():
    reg = registered_backends()
    for name in FP8_KERNELS:
        be = reg[name]
        assert (be.quantized, be.baseline, be.kv_dtype, be.is_baseline) == (False, "fp8", "fp8_e4m3", True)
        assert "CUDA GPU" in be.unavailable(torch.device("cpu"))
        assert "FP8" in be.description
    for name in BF16_KERNELS:
        assert (reg[name].baseline, reg[name].kv_dtype) == ("bf16", "bf16")
    for name in ("foscar-triton", "foscar-cuda", "foscar-cuda-per-value"):
        assert (reg[name].baseline, reg[name].kv_dtype, reg[name].is_baseline) == (None, None, False)
    assert set(BASELINE_KINDS) == {"bf16", "fp8"}


def test_backend_baseline_kind_is_checked_and_the_old_bool_form_still_works():
    def build(w, op):
        raise AssertionError

    def make(**kw):
        return Backend(name="x", build=build, unavailable=lambda d: None, description="", **kw)

    assert make(quantized=False, baseline=True).baseline == "bf16"
    assert make(quantized=True, baseline=False).baseline is None
    assert make(quantized=False, baseline="fp8", kv_dtype="fp8_e4m3").kv_dtype == "fp8_e4m3"
    assert make(quantized=False, baseline=None).kv_dtype == "bf16"  # a non-quantized default
    with pytest.raises(ValueError, match="baseline: expected one of"):
        make(quantized=False, baseline="int8")
    with pytest.raises(ValueError, match="kv_dtype"):
        make(quantized=False, baseline="fp8", kv_dtype="fp8_e5m2")
    with pytest.raises(ValueError, match="quantized backend"):
        make(quantized=True, baseline=None, kv_dtype="bf16")


# ---------------------------------------------------------------------------
# FP8 pages, scales, bytes (the adapter's CPU part)


def _workload(context=40, bits=2, num_kv_heads=2, head_dim=64, group_size=32, num_qo_heads=4) -> Workload:
    p = Point(batch=3, context=context, bits=bits, group_size=group_size, num_qo_heads=num_qo_heads,
              num_kv_heads=num_kv_heads, head_dim=head_dim, page_size=16)  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    cache = build_cache(p, torch.device("cpu"), gen)
    q = torch.randn(3, num_qo_heads, head_dim, dtype=torch.bfloat16, generator=gen)
    return Workload(point=p, q=q, cache=cache, sm_scale=1 / math.sqrt(head_dim), rows=[0, 1, 2],
                    reference=torch.zeros(3, num_qo_heads, head_dim))  # fmt: skip


def test_fp8_pages_hold_the_bf16_pages_over_a_per_tensor_scale():
    from bench.flashinfer_backend import FP8_MAX, fp8_bytes, paged_bf16_cache, paged_fp8_cache

    w = _workload()
    bf = paged_bf16_cache(w, "HND")
    kv = paged_fp8_cache(w, "HND")
    assert paged_fp8_cache(w, "HND") is kv  # built once per point
    for name in ("indptr", "indices", "last_page_len", "block_tables", "seq_lens"):
        assert kv[name] is bf[name]  # the same page table as the BF16 rows
    for t, s, ref in ((kv["k"], kv["k_scale"], bf["k"]), (kv["v"], kv["v_scale"], bf["v"])):
        assert t.dtype == torch.float8_e4m3fn and t.shape == ref.shape
        assert isinstance(s, float) and s == pytest.approx(float(ref.float().abs().max()) / FP8_MAX)
        assert float(t.float().abs().max()) == FP8_MAX  # the largest value maps onto e4m3's largest
        deq = t.float() * s
        # e4m3 keeps 3 mantissa bits: <= 1/16 relative error on normal values; padding stays 0
        normal = ref.float().abs() >= s * 2.0**-6
        assert ((deq - ref.float()).abs()[normal] <= ref.float().abs()[normal] / 16 + 1e-12).all()
        assert (deq[ref == 0] == 0).all()
        rel = float((deq - ref.float()).norm() / ref.float().norm())
        assert 5e-3 < rel < 5e-2
    p = w.point
    assert fp8_bytes(w) == 3 * p.context * p.num_kv_heads * p.head_dim * 1 * 2 + 2 * w.q.numel() * 2


def test_to_fp8_saturates_and_converts_in_chunks():
    from bench.flashinfer_backend import per_tensor_fp8_scale, to_fp8

    x = torch.randn(5, 3, 16, 8, generator=torch.Generator().manual_seed(0))
    s = per_tensor_fp8_scale(x)
    x0 = x.clone()
    whole, chunked = to_fp8(x, s), to_fp8(x, s, chunk_values=7)
    assert torch.equal(x, x0)  # the input is not scaled in place (fp32 input: .float() is no copy)
    assert torch.equal(whole.view(torch.uint8), chunked.view(torch.uint8))
    assert torch.equal(whole.view(torch.uint8), (x * (1.0 / s)).to(torch.float8_e4m3fn).view(torch.uint8))
    big = to_fp8(torch.tensor([1e6, -1e6, 1.0]), 1.0)  # beyond e4m3's range: clamped, not NaN
    assert big.float().tolist() == [448.0, -448.0, 1.0]
    assert per_tensor_fp8_scale(torch.zeros(4, 4)) == 1.0


def test_fp8_scales_as_flashinfer_applies_them_land_within_the_fp8_tolerance():
    """Emulate, in fp64, what the FP8 rows compute: logits over the FP8 K times
    ``sm_scale * k_scale`` (the wrapper folds k_scale into sm_scale; XQA's bmm1_scale),
    the output over the FP8 V times ``v_scale`` (the wrapper's ``out *= v_scale``; XQA's
    bmm2_scale). Against the fp64 reference on the dequantized values, the error is the
    FP8 rounding's: above the BF16 tolerance, below ``tolerance_fp8_kv``."""
    from bench.flashinfer_backend import paged_fp8_cache
    from foscar.reference import reference_decode

    cfg = BenchConfig()
    w = _workload(context=2048, bits=4, num_kv_heads=2, head_dim=128, group_size=128, num_qo_heads=8)
    ref = reference_decode(w.q, w.cache, sm_scale=w.sm_scale, dtype=torch.float64, batch_indices=w.rows)
    kv = paged_fp8_cache(w, "HND")
    p = w.point
    g = p.num_qo_heads // p.num_kv_heads
    worst = 0.0
    for b in range(p.batch):
        pages = kv["block_tables"][b].long()
        k = kv["k"][pages].double().permute(1, 0, 2, 3).reshape(p.num_kv_heads, -1, p.head_dim)[:, : p.context]
        v = kv["v"][pages].double().permute(1, 0, 2, 3).reshape(p.num_kv_heads, -1, p.head_dim)[:, : p.context]
        qb = w.q[b].double().view(p.num_kv_heads, g, p.head_dim)
        logits = torch.einsum("hgd,hld->hgl", qb, k) * (w.sm_scale * kv["k_scale"])
        out = torch.einsum("hgl,hld->hgd", torch.softmax(logits, -1), v) * kv["v_scale"]
        out = out.reshape(p.num_qo_heads, p.head_dim)
        worst = max(worst, float((out - ref[b]).norm() / ref[b].norm()))
    assert cfg.tolerance_for("bf16")[0] < worst < cfg.tolerance_for("fp8_e4m3")[0]


def test_plan_and_memory_count_fp8_at_one_byte():
    p = point(batch=64, context=131072, bits=4)
    io = 2 * 64 * 32 * 128 * 2
    assert call_bytes(p, False, kv_elem_bytes=1) - io == (call_bytes(p, False) - io) // 2
    with_fp8 = estimate_bytes(p, with_bf16_cache=True, with_fp8_cache=True)
    without = estimate_bytes(p, with_bf16_cache=True)
    assert with_fp8 - without >= 64 * 8 * 131072 * 128 * 2  # the FP8 K and V pages
    assert with_fp8 < 130e9  # still fits the H200 (141 GB)


# ---------------------------------------------------------------------------
# speed-ups, summary, CSV


def test_each_baseline_kind_has_its_own_best():
    p = point()
    # BF16: xqa 90 is the best; FP8: xqa-fp8 (30) failed its check, so tc-fp8 (40) is the best, and the
    # FP8 rows, although faster than every BF16 row, do not count towards the BF16 baseline
    rows = point_rows(p, {2: 20.0}, bf16=(120.0, 100.0, 90.0), fp8=(60.0, 40.0, 30.0), fp8_status=("ok", "ok", "failed"))
    df = add_speedups(to_frame(rows))
    ours = df[df["kernel"] == "foscar-cuda"].iloc[0]
    assert (ours["baseline_kernel"], ours["baseline_us"]) == ("flashinfer-xqa", 90.0)
    assert ours["speedup_vs_flashinfer_bf16"] == pytest.approx(4.5)
    assert (ours["baseline_fp8_kernel"], ours["baseline_fp8_us"]) == ("flashinfer-fa2-tc-fp8", 40.0)
    assert ours["speedup_vs_flashinfer_fp8"] == pytest.approx(2.0)
    fa2_fp8 = df[df["kernel"] == "flashinfer-fa2-fp8"].iloc[0]
    assert fa2_fp8["speedup_vs_flashinfer_bf16"] == pytest.approx(1.5)  # every timed row gets both
    assert fa2_fp8["speedup_vs_flashinfer_fp8"] == pytest.approx(40.0 / 60.0)
    assert (fa2_fp8["kv_dtype"], fa2_fp8["baseline_kind"], fa2_fp8["is_baseline"]) == ("fp8_e4m3", "fp8", True)
    assert math.isnan(df[df["kernel"] == "flashinfer-xqa-fp8"].iloc[0]["speedup_vs_flashinfer_fp8"])


def test_summary_has_the_fp8_geomeans():
    rows = []
    for ctx, fp8_best in ((8192, 40.0), (32768, 160.0)):
        rows += point_rows(point(context=ctx), {2: 20.0, 4: 40.0}, bf16=(300.0,) * 3, fp8=(fp8_best,) * 3)
    # a point without any passing FP8 row: counts for BF16 only
    rows += point_rows(point(context=131072), {2: 20.0, 4: 40.0}, bf16=(300.0,) * 3, fp8=(1.0,) * 3,
                       fp8_status=("error",) * 3)  # fmt: skip
    s = summarize(add_speedups(to_frame(rows)))
    assert s["baseline_rows"] == {"bf16": 9, "fp8": 9}
    assert s["geomean_speedup_fp8"]["foscar-cuda/int2/bf16"] == pytest.approx(math.sqrt(2.0 * 8.0))
    assert s["geomean_speedup_fp8"]["foscar-cuda/int4/bf16"] == pytest.approx(math.sqrt(1.0 * 4.0))
    assert s["num_points_fp8"]["foscar-cuda/int2/bf16"] == 2
    assert s["num_points"]["foscar-cuda/int2/bf16"] == 3
    assert s["geomean_speedup"]["foscar-cuda/int2/bf16"] == pytest.approx(15.0)
    lo, hi = s["geomean_ci95_fp8"]["foscar-cuda/int2/bf16"]
    assert 2.0 <= lo <= hi <= 8.0
    assert "FP8-KV at its best" in s["baseline_fp8"]
    assert set(s["geomean_speedup_vs"]["foscar-cuda/int2/bf16"]) == set(BF16_KERNELS) | set(FP8_KERNELS)


def test_summary_without_fp8_rows():
    rows = point_rows(point(), {2: 20.0}, bf16=(100.0,) * 3, fp8=())
    s = summarize(add_speedups(to_frame(rows)))
    assert s["baseline_rows"] == {"bf16": 3, "fp8": 0}
    assert s["geomean_speedup_fp8"] == {"foscar-cuda/int2/bf16": None}
    assert s["num_points_fp8"] == {"foscar-cuda/int2/bf16": 0}


def test_csv_round_trip_keeps_the_baseline_kind(tmp_path):
    rows = point_rows(point(), {2: 20.0}, bf16=(100.0,) * 3, fp8=(50.0,) * 3)
    df = add_speedups(to_frame(rows))
    write_csv(df, tmp_path / "results.csv")
    back = read_results(tmp_path / "results.csv")
    assert list(back.columns) == COLUMNS
    assert back["baseline_kind"].tolist() == [None] + ["bf16"] * 3 + ["fp8"] * 3
    assert back["kv_dtype"].tolist() == ["int2"] + ["bf16"] * 3 + ["fp8_e4m3"] * 3
    assert back["speedup_vs_flashinfer_fp8"].iloc[0] == pytest.approx(2.5)


def test_a_run_from_before_fp8_baselines_reads_as_bf16(tmp_path):
    """Committed runs have no baseline_kind / *_fp8 columns: their baselines are BF16 ones."""
    rows = point_rows(point(), {2: 20.0}, bf16=(100.0, 80.0, 90.0), fp8=())
    old = add_speedups(to_frame(rows)).drop(columns=["baseline_kind", "baseline_fp8_kernel", "baseline_fp8_us",
                                                      "speedup_vs_flashinfer_fp8"])  # fmt: skip
    old.to_csv(tmp_path / "results.csv", index=False)
    back = read_results(tmp_path / "results.csv")
    assert back["baseline_kind"].tolist() == [None, "bf16", "bf16", "bf16"]
    again = add_speedups(back)
    assert again["speedup_vs_flashinfer_bf16"].iloc[0] == pytest.approx(4.0)
    assert again["speedup_vs_flashinfer_fp8"].isna().all()


# ---------------------------------------------------------------------------
# tables


def test_summary_tables_add_the_fp8_table_when_the_run_had_fp8_rows():
    rows = point_rows(point(), {2: 20.0, 4: 25.0}, bf16=(100.0,) * 3, fp8=(50.0,) * 3)
    s = summarize(add_speedups(to_frame(rows)))
    tables = summary_tables(s, interpreter=False)
    assert [t.title for t in tables] == [
        "Geomean speed-up vs FlashInfer BF16 at its best",
        "Geomean speed-up vs FlashInfer FP8-KV at its best",
    ]
    text = render_table(tables[1])
    assert "foscar-cuda/int2/bf16" in text and "2.500" in text and "2.000" in text
    assert "5.000" in render_table(tables[0])
    assert render_table(summary_table(s, interpreter=False)) == render_table(tables[0])  # the default stays BF16
    with pytest.raises(ValueError, match="baseline"):
        summary_table(s, interpreter=False, baseline="int8")


def test_summary_tables_without_fp8_rows_and_with_failed_fp8_rows():
    only_bf16 = summarize(add_speedups(to_frame(point_rows(point(), {2: 20.0}, bf16=(100.0,) * 3, fp8=()))))
    assert len(summary_tables(only_bf16, interpreter=False)) == 1
    all_failed = point_rows(point(), {2: 20.0}, bf16=(100.0,) * 3, fp8=(1.0,) * 3, fp8_status=("failed",) * 3)
    s = summarize(add_speedups(to_frame(all_failed)))
    tables = summary_tables(s, interpreter=False)
    assert len(tables) == 2  # shown, with "-": the FP8 rows ran and failed
    assert "foscar-cuda/int2/bf16 │                -" in render_table(tables[1])


def test_summary_table_reads_an_old_summary_without_fp8_keys():
    old = {"geomean_speedup": {"k/int2/bf16": 2.0}, "geomean_ci95": {"k/int2/bf16": [1.5, 2.5]},
           "num_points": {"k/int2/bf16": 3}}  # fmt: skip
    tables = summary_tables(old, interpreter=False)
    assert len(tables) == 1 and "1.500-2.500" in render_table(tables[0])


def test_point_table_shows_the_fp8_column_only_when_there_is_one():
    p = point()
    df = add_speedups(to_frame(point_rows(p, {2: 20.0}, bf16=(100.0,) * 3, fp8=(50.0,) * 3)))
    text = render_table(point_table(df, p.label(), hbm_tbps=None))
    assert "vs FI FP8" in text and "vs FI BF16" in text and "fp8_e4m3" in text
    df = add_speedups(to_frame(point_rows(p, {2: 20.0}, bf16=(100.0,) * 3, fp8=())))
    assert "vs FI FP8" not in render_table(point_table(df, p.label(), hbm_tbps=None))


# ---------------------------------------------------------------------------
# config: the FP8 tolerance, presets


def test_fp8_tolerance_from_the_config(tmp_path):
    cfg = BenchConfig()
    assert cfg.tolerance_for(None) == (2e-2, "tolerance")
    assert cfg.tolerance_for("int4") == (2e-2, "tolerance")
    assert cfg.tolerance_for("bf16") == (2e-2, "tolerance")
    assert cfg.tolerance_for("fp8_e4m3") == (1e-1, "tolerance_fp8_kv")
    assert cfg.tolerance_for("int2", "fp8") == (1e-1, "tolerance_fp8_operand")  # FP8 tensor-core operands
    assert cfg.tolerance_for("int2", "bf16") == (2e-2, "tolerance")
    f = tmp_path / "c.toml"
    f.write_text("[check]\ntolerance = 1e-2\ntolerance_fp8_kv = 6e-2\n")
    loaded = load_config(f)
    assert (loaded.tolerance, loaded.tolerance_fp8_kv) == (1e-2, 6e-2)
    assert loaded.tolerance_for("fp8_e4m3") == (6e-2, "tolerance_fp8_kv")
    for bad in ("0", "-1", '"x"', "true"):
        f.write_text(f"[check]\ntolerance_fp8_kv = {bad}\n")
        with pytest.raises(FoscarError, match="tolerance_fp8_kv: expected a positive finite number"):
            load_config(f)
    f.write_text("[check]\ntolerance_fp8 = 0.1\n")  # a typo is an error, not a silent default
    with pytest.raises(FoscarError, match=r"unknown key \[check\].tolerance_fp8;"):
        load_config(f)


@pytest.mark.parametrize("name", ["h200", "h100"])
def test_hopper_presets_run_the_fp8_baselines(name):
    cfg = load_config(preset_path(name))
    assert set(FP8_KERNELS) <= set(cfg.kernels) and set(BF16_KERNELS) <= set(cfg.kernels)
    assert cfg.tolerance_fp8_kv == 0.1 and cfg.tolerance == 0.02


def test_smoke_preset_stays_small():
    assert not set(FP8_KERNELS) & set(load_config(preset_path("smoke")).kernels)


# ---------------------------------------------------------------------------
# the sweep checks FP8 rows against their own tolerance


def _fake(name: str, scale: float, baseline=None, kv_dtype=None) -> Backend:
    """A backend whose output is the reference times ``scale`` (relative error |scale - 1|)."""

    def build(w, operand):
        last = {}

        def fn():
            last["out"] = (w.reference * scale).to(torch.bfloat16)

        return Prepared(fn=fn, output=lambda: last["out"], bytes=1000)

    return Backend(name=name, build=build, quantized=baseline is None, baseline=baseline,
                   unavailable=lambda dev: None, description=name, kv_dtype=kv_dtype)  # fmt: skip


def test_sweep_applies_the_fp8_tolerance_to_fp8_rows_only(tmp_path):
    cfg = BenchConfig(name="t", num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=16, batch=[2], context=[17],
                      bits=[2], group_size=32, operand=["bf16"], kernels=["unused"], cpu_reps=1)  # fmt: skip
    backends = [
        _fake("ours", 1.0),
        _fake("bf16-5pct", 1.05, baseline="bf16"),
        _fake("fp8-5pct", 1.05, baseline="fp8", kv_dtype="fp8_e4m3"),
        _fake("fp8-20pct", 1.2, baseline="fp8", kv_dtype="fp8_e4m3"),
    ]
    df = run_sweep(Sweep(cfg, backends, torch.device("cpu"), None, tmp_path / "r.csv", console=None))
    by = df.set_index("kernel")
    assert by.loc["bf16-5pct", "status"] == "failed" and "> tolerance 0.02" in by.loc["bf16-5pct", "error"]
    assert by.loc["fp8-5pct", "status"] == "ok"
    assert by.loc["fp8-20pct", "status"] == "failed" and "> tolerance_fp8_kv 0.1" in by.loc["fp8-20pct", "error"]
    assert by.loc["fp8-5pct", "kv_dtype"] == "fp8_e4m3" and by.loc["fp8-5pct", "baseline_kind"] == "fp8"
    assert by.loc["ours", "baseline_fp8_kernel"] == "fp8-5pct"
    assert pd.notna(by.loc["ours", "speedup_vs_flashinfer_fp8"])
    assert pd.isna(by.loc["ours", "speedup_vs_flashinfer_bf16"])  # the only BF16 row failed


# ---------------------------------------------------------------------------
# foscar report / export-gab on a run with FP8 baselines


def test_report_and_export_show_the_fp8_baseline(tmp_path, capsys):
    import json

    from bench.results import write_json
    from tests.cli_helpers import run_main

    rows = []
    for ctx in (8192, 32768):
        rows += point_rows(point(context=ctx), {2: 20.0, 4: 25.0}, bf16=(100.0, 90.0, 80.0), fp8=(60.0, 50.0, 40.0))
    for r in rows:
        r.update(p20_us=r["median_us"], p80_us=r["median_us"], reps=15, bytes=1000, max_rel_err=1e-2,
                 checked_rows="all", timing_mode="cuda_graph")  # fmt: skip
    df = add_speedups(to_frame(rows))
    run = tmp_path / "run"
    run.mkdir()
    write_csv(df, run / "results.csv")
    write_json({"date": "2026-12-01", "timing_mode": "cuda_graph", "gpu": {"name": "NVIDIA H200"},
                "config": {"tolerance": 0.02, "tolerance_fp8_kv": 0.1}}, run / "meta.json")  # fmt: skip
    write_json(summarize(df), run / "summary.json")

    code, _, err = run_main(capsys, "report", run, "--out", tmp_path / "rep")
    assert code == 0, err
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Second baseline: FlashInfer FP8-KV at its best" in md
    assert "vs FlashInfer FP8-KV at its best (x, points)" in md
    assert "| `foscar-cuda/int2/bf16` | 4.000 | 2 | 2.000 (2) |" in md
    assert "vs flashinfer-xqa-fp8 (x, points)" in md

    code, _, err = run_main(capsys, "export-gab", run, "--out", tmp_path / "gab.json")
    assert code == 0, err
    entries = json.loads((tmp_path / "gab.json").read_text())
    ours = [e for e in entries if e["name"].startswith("foscar-cuda/int2")]
    assert ours and "speed-up vs FlashInfer FP8-KV 2.000x" in ours[0]["extra"]
