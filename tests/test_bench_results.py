"""The harness's logic without a GPU: speed-ups and geometric means on synthetic rows,
config loading and overrides, arch resolution with fake devices, workload helpers,
the registry, and FlashInfer's paged layout built on CPU."""

from __future__ import annotations

import math

import pytest
import torch

from bench.arch import Arch, DeviceInfo, arch_of, resolve_arch
from bench.backends import registered_backends, select_backends
from bench.config import BenchConfig, apply_overrides, load_config, preset_path
from bench.errors import FoscarError
from bench.results import COLUMNS, add_speedups, new_row, read_results, set_timing, summarize, to_frame, write_csv
from bench.sweep import error_reason, grid, row_specs
from bench.timing import GPU_TIMING, INTERPRETER_TIMING, Timing, summarize as summarize_times
from bench.workload import Point, bytes_per_token, check_rows, describe_rows, estimate_bytes, max_rel_err

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 80 << 30)
H200 = DeviceInfo("NVIDIA H200", (9, 0), 132, 141 << 30)
B200 = DeviceInfo("NVIDIA B200", (10, 0), 148, 180 << 30)
A100 = DeviceInfo("NVIDIA A100-SXM4-80GB", (8, 0), 108, 80 << 30)


def point(batch=8, context=32768, bits=2) -> Point:
    return Point(batch, context, bits, 128, 32, 8, 128, 16)


def row(p: Point, kernel: str, median_us: float | None, status: str = "ok", bits=None, baseline=False) -> dict:
    r = new_row(p, kernel, bits, "bf16" if bits else None, baseline)
    r.update(status=status, median_us=median_us)
    return r


def fi_rows(p, fa2, tc, xqa, xqa_status="ok"):
    return [
        row(p, "flashinfer-fa2", fa2, baseline=True),
        row(p, "flashinfer-fa2-tc", tc, baseline=True),
        row(p, "flashinfer-xqa", xqa if xqa_status == "ok" else None, xqa_status, baseline=True),
    ]


# ---------------------------------------------------------------------------
# speed-ups and geometric means


def test_speedup_uses_fastest_passing_baseline():
    p = point()
    rows = [row(p, "foscar-triton", 50.0, bits=2)] + fi_rows(p, 100.0, 80.0, 10.0, xqa_status="failed")
    df = add_speedups(to_frame(rows))
    ours = df[df["kernel"] == "foscar-triton"].iloc[0]
    assert ours["baseline_kernel"] == "flashinfer-fa2-tc"  # xqa was faster but failed its check
    assert ours["baseline_us"] == 80.0
    assert ours["speedup_vs_flashinfer_bf16"] == pytest.approx(1.6)
    xqa = df[df["kernel"] == "flashinfer-xqa"].iloc[0]
    assert math.isnan(xqa["speedup_vs_flashinfer_bf16"])
    fa2 = df[df["kernel"] == "flashinfer-fa2"].iloc[0]
    assert fa2["speedup_vs_flashinfer_bf16"] == pytest.approx(0.8)
    assert fa2["median_us"] == 100.0  # each row keeps its own time


def test_no_passing_baseline_gives_nan_and_null_geomean():
    p = point()
    rows = [row(p, "foscar-triton", 50.0, bits=2)] + [
        row(p, n, None, "skipped", baseline=True) for n in ("flashinfer-fa2", "flashinfer-fa2-tc")
    ]
    df = add_speedups(to_frame(rows))
    assert df["speedup_vs_flashinfer_bf16"].isna().all()
    s = summarize(df)
    assert s["geomean_speedup"] == {"foscar-triton/int2/bf16": None}
    assert s["num_points"] == {"foscar-triton/int2/bf16": 0}


def test_geomean_over_points_and_per_baseline():
    rows = []
    for ctx, ours_us, fa2_us, tc_us in ((8192, 10.0, 20.0, 40.0), (32768, 10.0, 80.0, 100.0)):
        p = point(context=ctx)
        rows += [row(p, "foscar-triton", ours_us, bits=2)] + fi_rows(p, fa2_us, tc_us, 1000.0)
    # a point where our kernel failed its check: excluded
    p = point(context=131072)
    rows += [row(p, "foscar-triton", None, "failed", bits=2)] + fi_rows(p, 1.0, 1.0, 1.0)
    # int4 at another point, timed but "suspect" (above the HBM ceiling): excluded
    rows += [row(point(bits=4), "foscar-triton", 1.0, "suspect", bits=4)] + fi_rows(point(bits=4), 5.0, 5.0, 5.0)
    s = summarize(add_speedups(to_frame(rows)))
    assert s["geomean_speedup"]["foscar-triton/int2/bf16"] == pytest.approx(4.0)  # sqrt(2 * 8)
    assert s["num_points"]["foscar-triton/int2/bf16"] == 2
    assert s["geomean_speedup"]["foscar-triton/int4/bf16"] is None
    vs = s["geomean_speedup_vs"]["foscar-triton/int2/bf16"]
    assert vs["flashinfer-fa2"]["geomean_speedup"] == pytest.approx(4.0)
    assert vs["flashinfer-fa2-tc"]["geomean_speedup"] == pytest.approx(math.sqrt(4 * 10))
    assert vs["flashinfer-xqa"]["num_points"] == 2
    assert s["status_counts"]["failed"] == 1


def test_points_differ_by_cache_bits():
    """BF16 rows of an int2 point and of an int4 point are separate baselines."""
    rows = []
    for bits, fi_us in ((2, 100.0), (4, 50.0)):
        p = point(bits=bits)
        rows += [row(p, "foscar-triton", 25.0, bits=bits)] + fi_rows(p, fi_us, fi_us, fi_us)
    df = add_speedups(to_frame(rows))
    got = df[df["kernel"] == "foscar-triton"].set_index("bits")["speedup_vs_flashinfer_bf16"]
    assert got[2] == pytest.approx(4.0) and got[4] == pytest.approx(2.0)


def test_set_timing_flags_rows_above_the_ceiling():
    p = point()
    r = new_row(p, "foscar-triton", 2, "bf16", False)
    set_timing(r, Timing(1.0, 0.9, 1.1, 10, GPU_TIMING), nbytes=10_000_000, hbm_tbps=4.0)  # 10 TB/s
    assert r["tbps"] == pytest.approx(10.0)
    assert r["status"] == "suspect" and "exceeds the measured HBM ceiling" in r["error"]
    r = new_row(p, "foscar-triton", 2, "bf16", False)
    set_timing(r, Timing(10.0, 9.0, 11.0, 10, GPU_TIMING), nbytes=10_000_000, hbm_tbps=4.0)
    assert r["status"] == "ok" and r["sol_fraction"] == pytest.approx(0.25)
    r = new_row(p, "foscar-triton", 2, "bf16", False)
    set_timing(r, Timing(1e5, 1e5, 1e5, 3, INTERPRETER_TIMING), nbytes=100, hbm_tbps=None)
    assert r["status"] == "ok" and r["tbps"] is None and r["timing_mode"] == "interpreter"


def test_csv_round_trip(tmp_path):
    p = point()
    rows = [row(p, "foscar-triton", 50.0, bits=2)] + fi_rows(p, 100.0, 80.0, None, xqa_status="error")
    rows[-1]["error"] = "RuntimeError: XQA, with a comma"
    df = add_speedups(to_frame(rows))
    write_csv(df, tmp_path / "results.csv")
    back = read_results(tmp_path / "results.csv")
    assert list(back.columns) == COLUMNS
    assert back["bits"].tolist()[0] == 2 and back["bits"].isna().sum() == 3
    assert back.loc[3, "error"] == "RuntimeError: XQA, with a comma"
    assert back["is_baseline"].tolist() == [False, True, True, True]


# ---------------------------------------------------------------------------
# config


@pytest.mark.parametrize("name", ["h100", "h200", "b200", "smoke"])
def test_presets_load(name):
    cfg = load_config(preset_path(name))
    assert cfg.name == name
    hopper = name in ("h100", "h200")  # FP8 operands: the sm_90 CUDA kernel
    assert cfg.bits == [2, 4] and cfg.operand == (["bf16", "fp8"] if hopper else ["bf16"])


def test_hopper_preset_is_the_issue_grid():
    cfg = load_config(preset_path("h200"))
    assert (cfg.num_qo_heads, cfg.num_kv_heads, cfg.head_dim, cfg.group_size) == (32, 8, 128, 128)
    assert cfg.batch == [1, 8, 32, 64] and cfg.context == [8192, 32768, 131072]
    assert cfg.kernels == ["foscar-cuda", "foscar-cuda-paged", "foscar-cuda-per-value", "foscar-triton",
                           "flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa",
                           "flashinfer-fa2-fp8", "flashinfer-fa2-tc-fp8", "flashinfer-xqa-fp8"]  # fmt: skip
    points = grid(cfg)
    sweep = [p for p in points if p.grid == "sweep"]
    assert len(sweep) == 4 * 3 * 2 and all(p.is_plain() for p in sweep)  # the uniform grid, as before workloads
    ragged = {(p.batch, p.context, p.workload.name, p.capacity, p.lengths[:2]) for p in points if p.grid == "ragged"}
    assert {  # issue 11's cases
        (8, 131072, "one-long", 131072, (131072, 4096)),
        (8, 4096, "uniform", 4096, (4096, 4096)),
        (8, 4096, "capacity", 131072, (4096, 4096)),
    } <= ragged
    assert any(name == "lognormal" and cap == 32768 for _, _, name, cap, _ in ragged)


def test_overrides_replace_only_what_is_given():
    cfg = load_config(preset_path("h200"))
    out = apply_overrides(cfg, bits=[2], batch=[8], context=[], group_size=None)
    assert out.bits == [2] and out.batch == [8]
    assert out.context == cfg.context and out.group_size == 128
    assert cfg.bits == [2, 4]  # the original is untouched


@pytest.mark.parametrize(
    "overrides, needle",
    [
        (dict(bits=[3]), "bits 3: expected one of 2, 4"),
        (dict(group_size=48), "group_size"),
        (dict(batch=[0]), "batch: expected positive integers"),
        (dict(operand=["int8"]), "operand 'int8': expected one of bf16, fp8"),
        (dict(operand=["fp4"]), "operand 'fp4': FP4 tensor-core operands need sm_100"),
        (dict(head_dim=96), "head_dim 96: expected one of 64, 128, 256"),
    ],
)
def test_bad_overrides(overrides, needle):
    with pytest.raises(FoscarError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        apply_overrides(BenchConfig(), **overrides)


def test_config_file_errors(tmp_path):
    with pytest.raises(FoscarError, match="config file not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[shape]\nnum_heads = 4\n")
    with pytest.raises(FoscarError, match=r"unknown key \[shape\].num_heads"):
        load_config(bad)
    bad.write_text("[sweep\n")
    with pytest.raises(FoscarError, match="invalid TOML"):
        load_config(bad)
    bad.write_text("[shape]\nnum_qo_heads = 6\nnum_kv_heads = 4\n")
    with pytest.raises(FoscarError, match="num_qo_heads: expected a multiple of num_kv_heads=4"):
        load_config(bad)
    ok = tmp_path / "ok.toml"
    ok.write_text('name = "mine"\n[sweep]\nbatch = 4\nbits = [4]\n')
    cfg = load_config(ok)
    assert cfg.batch == [4] and cfg.bits == [4] and cfg.num_qo_heads == 32  # scalar -> list, defaults kept


# ---------------------------------------------------------------------------
# arch


def test_arch_of_devices():
    assert arch_of(H100) is Arch.h100
    assert arch_of(H200) is Arch.h200
    assert arch_of(B200) is Arch.b200
    assert arch_of(A100) is None


def test_resolve_arch_auto_and_explicit():
    assert resolve_arch("auto", H200, smoke=False) == "h200"
    assert resolve_arch("auto", H100, smoke=False) == "h100"
    assert resolve_arch("auto", B200, smoke=False) == "b200"
    assert resolve_arch("h100", H200, smoke=False) == "h100"  # same sm_90: the H100 grid on an H200 is allowed
    assert resolve_arch("auto", None, smoke=True) == "cpu"
    assert resolve_arch("auto", A100, smoke=True) == "sm80"
    assert resolve_arch("auto", H200, smoke=True) == "h200"  # smoke: labelled by what is here
    for device in (None, H200):  # an explicit --arch beside --smoke was dropped without a word: refused
        with pytest.raises(FoscarError, match="--smoke runs the tiny grid .* --arch b200 picks configs/b200.toml"):
            resolve_arch("b200", device, smoke=True)
    assert resolve_arch("auto", A100, smoke=False, custom_config=True) == "sm80"


@pytest.mark.parametrize(
    "requested, device, needle",
    [
        ("b200", H200, "--arch b200 needs an sm_100 (Blackwell) GPU such as the B200; detected NVIDIA H200 (sm_90)"),
        ("h200", B200, "--arch h200 needs an sm_90 (Hopper) GPU such as the H200; detected NVIDIA B200 (sm_100)"),
        ("auto", A100, "detected NVIDIA A100-SXM4-80GB (sm_80)"),
        ("auto", None, "no CUDA GPU detected"),
        ("h100", None, "no CUDA GPU detected; --arch h100 needs an sm_90"),
    ],
)
def test_resolve_arch_errors(requested, device, needle):
    with pytest.raises(FoscarError) as e:
        resolve_arch(requested, device, smoke=False)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------------------
# workload helpers, timing, registry


def test_check_rows():
    assert check_rows(8, 32768, 262144) == list(range(8))
    assert check_rows(64, 32768, 262144) == [0, 32, 63]
    assert check_rows(1, 131072, 65536) == [0]
    assert describe_rows([0, 1], 2) == "all"
    assert describe_rows([0, 32, 63], 64) == "0;32;63"


def test_bytes_per_token_matches_design():
    assert bytes_per_token(2, 128, 128) == 80  # DESIGN §5: INT2, G=128
    assert bytes_per_token(4, 128, 128) == 144


def test_memory_estimate_fits_the_h200_grid():
    biggest = estimate_bytes(point(batch=64, context=131072, bits=4), with_bf16_cache=True)
    bf16_cache = 64 * 8 * 131072 * 128 * 2 * 2
    assert bf16_cache < biggest < 100e9  # 34 GB BF16 + 9.7 GB INT4 + scratch: fits in 141 GB
    big = point(batch=64, context=131072, bits=4)
    assert estimate_bytes(big, with_bf16_cache=False) < biggest


def test_max_rel_err():
    ref = torch.randn(3, 4, 8, dtype=torch.float64)
    out = ref.clone()
    out[1] *= 1.01  # row 1: relative error 0.01
    out[2, 0, 0] = float("nan")
    assert max_rel_err(out, ref, [0, 1]) == pytest.approx(0.01)
    assert max_rel_err(out, ref, [0]) == 0.0
    assert math.isnan(max_rel_err(out, ref, [0, 2]))
    with pytest.raises(ValueError, match="expected shape"):
        max_rel_err(out[:, :2], ref, [0])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", ["reference", "output"])
def test_max_rel_err_non_finite_fails_the_row(bad, where):
    """A NaN/Inf in a checked row of the output or the reference gives NaN (max() would drop a NaN row)."""
    ref = torch.randn(3, 4, 8, dtype=torch.float64)
    out = ref.clone()
    out[0] *= 1.001
    (ref if where == "reference" else out)[1, 2, 3] = bad
    assert math.isnan(max_rel_err(out, ref, [0, 1, 2]))
    assert max_rel_err(out, ref, [0, 2]) == pytest.approx(1e-3)  # the row is not checked: no effect


def test_timing_summary():
    t = summarize_times([5.0, 1.0, 3.0, 2.0, 4.0], GPU_TIMING)
    assert t.median_us == 3.0 and t.reps == 5
    assert t.p20_us == pytest.approx(1.8) and t.p80_us == pytest.approx(4.2)


def test_registry():
    names = list(registered_backends())
    assert names[:1] == ["foscar-triton"]
    assert {"flashinfer-fa2", "flashinfer-fa2-tc", "flashinfer-xqa"} <= set(names)
    fi = registered_backends()["flashinfer-xqa"]
    assert fi.baseline and not fi.quantized
    assert "CUDA GPU" in fi.unavailable(torch.device("cpu"))
    with pytest.raises(FoscarError, match="kernels 'x': expected one of foscar-triton, "):
        select_backends(["foscar-triton", "x"])
    backends = select_backends(["foscar-triton", "flashinfer-fa2"])
    specs = row_specs(point(bits=4), backends, ["bf16", "fp8"])
    assert [(b.name, bits, op) for b, bits, op in specs] == [
        ("foscar-triton", 4, "bf16"),
        ("foscar-triton", 4, "fp8"),
        ("flashinfer-fa2", None, None),
    ]


def test_error_reason_is_one_line():
    msg = error_reason(RuntimeError("CUDA out of memory.\n  Tried to allocate 2.00 GiB"))
    assert msg == "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert len(error_reason(ValueError("x" * 1000))) == 300


# ---------------------------------------------------------------------------
# FlashInfer's paged BF16 cache, built on CPU (the part of the adapter that needs no GPU)


@pytest.mark.parametrize("page_order", ["shuffled", "in-order"])
@pytest.mark.parametrize("layout", ["HND", "NHD"])
@pytest.mark.parametrize("context", [40, 48])  # a partial last page, and whole pages
def test_paged_cache_holds_the_dequantized_values(layout, context, page_order):
    from bench.flashinfer_backend import bf16_bytes, paged_bf16_cache
    from bench.workload import Workload, build_cache
    from foscar.quant import dequantize_kv

    p = Point(batch=3, context=context, bits=2, group_size=32, num_qo_heads=4, num_kv_heads=2, head_dim=64, page_size=16,
              page_order=page_order)  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    cache = build_cache(p, torch.device("cpu"), gen)
    q = torch.randn(3, 4, 64, dtype=torch.bfloat16)
    w = Workload(point=p, q=q, cache=cache, sm_scale=0.125, rows=[0], reference=torch.zeros(3, 4, 64))
    kv = paged_bf16_cache(w, layout)
    assert paged_bf16_cache(w, layout) is kv  # built once per point
    pps = math.ceil(context / 16)
    # every page of the pool once; in order, or (shuffled, as FOSCAR's paged copy) in another order
    assert sorted(kv["indices"].tolist()) == list(range(3 * pps))
    assert (kv["indices"].tolist() == list(range(3 * pps))) == (page_order == "in-order")
    assert kv["block_tables"].shape == (3, pps) and kv["block_tables"].dtype == torch.int32
    assert kv["indptr"].tolist() == [0, pps, 2 * pps, 3 * pps]
    assert kv["last_page_len"].tolist() == [context - (pps - 1) * 16] * 3
    assert kv["seq_lens"].tolist() == [context] * 3
    for b in range(3):
        pages = kv["indices"][kv["indptr"][b] : kv["indptr"][b + 1]]
        assert pages.tolist() == kv["block_tables"][b].tolist()
        for src, paged in zip(dequantize_kv(cache, torch.float32, batch_index=b), (kv["k"], kv["v"])):
            sel = paged[pages.long()]  # HND [pps, H, page, D] or NHD [pps, page, H, D]
            flat = sel.permute(1, 0, 2, 3) if layout == "HND" else sel.permute(2, 0, 1, 3)
            flat = flat.reshape(2, pps * 16, 64)[:, :context]
            torch.testing.assert_close(flat, src.to(torch.bfloat16), rtol=0, atol=0)
    assert bf16_bytes(w) == 3 * context * 2 * 64 * 2 * 2 + 2 * q.numel() * 2


def test_nearest_preset_only_when_asked():
    a100 = DeviceInfo("NVIDIA A100-SXM4-80GB", (8, 0), 108, 80 << 30)
    with pytest.raises(FoscarError, match="--nearest-preset to run the nearest preset \\(h100\\)"):
        resolve_arch("auto", a100, smoke=False)
    assert resolve_arch("auto", a100, smoke=False, nearest_preset=True) == "h100"
    future = DeviceInfo("NVIDIA X300", (12, 0), 200, 300 << 30)
    assert resolve_arch("auto", future, smoke=False, nearest_preset=True) == "b200"


def test_operand_rows_skipped_with_the_reason():
    from bench.backends import operand_unavailable

    cpu = torch.device("cpu")
    assert operand_unavailable(cpu, "bf16") is None
    assert operand_unavailable(cpu, "fp8", "foscar-cuda") is None  # the folded CUDA kernel has it
    assert "folded CUDA kernel (foscar-cuda) only" in operand_unavailable(cpu, "fp8", "foscar-triton")
    assert "folded CUDA kernel (foscar-cuda) only" in operand_unavailable(cpu, "fp8", "foscar-cuda-per-value")
    assert operand_unavailable(cpu, "fp8", "foscar-cuda-paged") is None
