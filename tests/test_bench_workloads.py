"""Ragged workloads in `foscar bench` (issue 11): length distributions, the [workload] and
[[ragged]] config, the ragged cache and its reference, bytes, a smoke run through the
interpreter, summary per grid, and `foscar compare` matching on the workload (issue 13 item 7).
CPU only, tiny shapes; the GPU test at the end is marked `gpu`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.config import BenchConfig, RaggedGrid, apply_overrides, load_config, preset_path
from bench.errors import FoscarError
from bench.lengths import DEFAULT_SHORT_LEN, WORKLOAD_NAMES, WorkloadSpec, lengths_summary
from bench.results import add_speedups, new_row, read_results, summarize, to_frame, write_csv, write_json
from bench.sweep import grid
from bench.workload import Point, build_workload
from tests.cli_helpers import run_main


def tiny_point(batch=3, context=40, workload=WorkloadSpec(), grid_max=None, bits=2, page_size=16) -> Point:
    return Point(batch=batch, context=context, bits=bits, group_size=32, num_qo_heads=4, num_kv_heads=2, head_dim=64,
                 page_size=page_size, workload=workload.at(context, grid_max or context))  # fmt: skip


# ---------------------------------------------------------------------------
# length distributions


@pytest.mark.parametrize("name", WORKLOAD_NAMES)
@pytest.mark.parametrize("batch,context", [(1, 17), (8, 4096), (64, 32768)])
def test_lengths_are_deterministic_and_in_range(name, batch, context):
    spec = WorkloadSpec(name=name, seed=3)
    lens = spec.lengths(batch, context)
    assert lens == WorkloadSpec(name=name, seed=3).lengths(batch, context)  # a pure function of its inputs
    assert len(lens) == batch and all(isinstance(n, int) and 1 <= n <= context for n in lens)


def test_each_distribution():
    assert WorkloadSpec("uniform").lengths(3, 40) == (40, 40, 40)
    assert WorkloadSpec("capacity").lengths(3, 40) == (40, 40, 40)
    assert WorkloadSpec("one-long").lengths(8, 131072) == (131072,) + (DEFAULT_SHORT_LEN,) * 7
    assert WorkloadSpec("one-long", short_len=100).lengths(3, 40) == (40, 40, 40)  # short clipped to the context
    assert WorkloadSpec("one-long", short_len=7).lengths(1, 40) == (40,)
    a = WorkloadSpec("lognormal", seed=0).lengths(64, 32768)
    assert a != WorkloadSpec("lognormal", seed=1).lengths(64, 32768)  # the seed picks the draw
    assert len(set(a)) > 32  # a mix, not a constant
    med = sorted(a)[len(a) // 2]
    assert 32768 / 32 < med < 32768 / 2  # median near context / 8


def test_capacity_resolution():
    assert WorkloadSpec("uniform").at(4096, 131072).capacity == 4096
    assert WorkloadSpec("capacity").at(4096, 131072).capacity == 131072  # the grid's largest context
    assert WorkloadSpec("capacity", capacity=65536).at(4096, 131072).capacity == 65536
    assert WorkloadSpec("one-long", capacity=8192).at(4096, 4096).capacity == 8192
    with pytest.raises(ValueError, match="capacity: expected >= context 8192"):
        WorkloadSpec("uniform", capacity=4096).at(8192, 8192)
    # fields a distribution does not read do not tell points apart
    assert WorkloadSpec("uniform", seed=5, short_len=9).at(40, 40) == WorkloadSpec("uniform").at(40, 40)
    assert WorkloadSpec("lognormal", seed=5).at(40, 40) != WorkloadSpec("lognormal", seed=6).at(40, 40)


def test_lengths_summary():
    assert lengths_summary([131072] + [4096] * 7) == "131072,4096x7"
    assert lengths_summary([40]) == "40"
    assert lengths_summary([40, 40]) == "40x2"
    many = list(range(1, 20))
    text = lengths_summary(many)
    assert text.startswith("n=19 min=1 max=19 sum=190 #") and text != lengths_summary(many[::-1])


# ---------------------------------------------------------------------------
# config and flags


RAGGED_TOML = """
name = "t"
[shape]
num_qo_heads = 4
num_kv_heads = 2
head_dim = 64
page_size = 16
[sweep]
batch = [2]
context = [40]
bits = [2]
group_size = 32
operand = ["bf16"]
kernels = ["foscar-triton"]
[workload]
name = "uniform"
[[ragged]]
batch = [3]
context = [40]
workload = { name = "one-long", short_len = 9, capacity = 64 }
[[ragged]]
batch = 2
context = 17
workload = { name = "capacity", capacity = 48 }
[timing]
cpu_reps = 1
"""


def write_config(tmp_path: Path, text: str = RAGGED_TOML) -> Path:
    path = tmp_path / "ragged.toml"
    path.write_text(text)
    return path


def test_config_reads_workload_and_ragged_grid(tmp_path):
    cfg = load_config(write_config(tmp_path))
    assert cfg.workload == WorkloadSpec("uniform")
    assert cfg.ragged == [
        RaggedGrid([3], [40], WorkloadSpec("one-long", capacity=64, short_len=9)),
        RaggedGrid([2], [17], WorkloadSpec("capacity", capacity=48)),
    ]
    points = grid(cfg)
    assert [(p.grid, p.lengths, p.capacity) for p in points] == [
        ("sweep", (40, 40), 40),
        ("ragged", (40, 9, 9), 64),
        ("ragged", (17, 17), 48),
    ]
    only = grid(apply_overrides(cfg, grids=["ragged"]))
    assert [p.grid for p in only] == ["ragged", "ragged"]


@pytest.mark.parametrize(
    "patch,needle",
    [
        (('name = "uniform"', 'name = "bursty"'),
         "[workload].name 'bursty': expected one of uniform, one-long, lognormal, capacity"),
        (('name = "uniform"', 'nam = "uniform"'), "unknown key [workload].nam; known: name, capacity, seed, short_len"),
        (("short_len = 9,", "short_len = 0,"), "[[ragged]] #1.workload.short_len: expected a positive integer"),
        (("batch = 2\n", "batch = 2\ncolor = 1\n"), "unknown key [[ragged]] #2.color; known: batch, context, workload"),
        (('name = "uniform"', 'name = "uniform"\ncapacity = 20'),
         "workload.capacity: expected >= the largest context of its grid (40), got 20"),
        (("capacity = 48", "capacity = 16"), "[[ragged]] #2.workload.capacity: expected >= the largest context"),
    ],
)  # fmt: skip
def test_config_errors_name_the_field(tmp_path, patch, needle):
    text = RAGGED_TOML.replace(*patch, 1)
    assert text != RAGGED_TOML
    with pytest.raises(FoscarError) as e:
        load_config(write_config(tmp_path, text))
    assert needle in str(e.value)


def test_ragged_grid_without_entries_is_refused():
    with pytest.raises(FoscarError, match="no \\[\\[ragged\\]\\] grid"):
        apply_overrides(BenchConfig(), grids=["ragged"])


@pytest.mark.parametrize(
    "flag,value,needle",
    [("--workload", "bursty", "--workload 'bursty': expected one of uniform, one-long, lognormal, capacity"),
     ("--grid", "all", "--grid 'all': expected one of sweep, ragged")],
)  # fmt: skip
def test_unknown_workload_or_grid_flag_lists_the_names(capsys, flag, value, needle):
    code, out, err = run_main(capsys, "bench", "--smoke", "--dry-run", flag, value)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]


def test_capacity_flag_below_the_context_is_one_line(capsys):
    code, out, err = run_main(capsys, "bench", "--smoke", "--dry-run", "--capacity", "32")
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ")
    # named by the flag the user typed, then the config key it sets
    assert "--capacity (workload.capacity): expected >= the largest context of its grid (64), got 32" in lines[0]
    code, out, err = run_main(capsys, "bench", "--smoke", "--dry-run", "--num-qo-heads", "3", "--num-kv-heads", "2")
    assert code == 2 and "--num-qo-heads (num_qo_heads): expected a multiple of num_kv_heads=2, got 3" in err
    # the flag set the value the config's field was checked against: both are named
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--num-kv-heads", "3")
    assert code == 2 and ("num_qo_heads: expected a multiple of num_kv_heads=3, got 32 (num_kv_heads from "
                          "--num-kv-heads, num_qo_heads from the config: pass --num-qo-heads too)") in err
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--model", "llama-3.1-70b-tp8",
                              "--num-kv-heads", "3")
    assert code == 2 and "num_qo_heads from --model llama-3.1-70b-tp8: pass --num-qo-heads too" in err


def test_sweep_flags_with_only_the_ragged_grid_are_refused(capsys):
    # --grid ragged alone ran the ragged points and dropped --batch without a word
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--batch", "8", "--grid", "ragged")
    assert code == 2 and ("--batch picks the [sweep] grid's points, and --grid ragged leaves that grid out" in err
                          and "add --grid sweep" in err)
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--json", "--batch", "8",
                              "--grid", "ragged", "--grid", "sweep")
    assert code == 0, err


def test_workload_flags_in_the_dry_run(capsys):
    code, out, err = run_main(capsys, "bench", "--smoke", "--dry-run", "--json", "--batch", "3", "--context", "40",
                              "--workload", "one-long", "--short-len", "9", "--capacity", "64")  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    assert plan["config"]["workload"] == {"name": "one-long", "capacity": 64, "seed": 0, "short_len": 9}
    assert {(p["workload"], tuple(p["lengths"]), p["capacity"]) for p in plan["points"]} == {("one-long", (40, 9, 9), 64)}
    # bytes of one call: the tokens of the lengths, not of the capacity
    tokens = (40 + 9 + 9) * 1  # smoke shape: 1 KV head
    assert plan["points"][0]["bf16_call_bytes"] == tokens * 64 * 2 * 2 + 2 * 3 * 4 * 64 * 2


def test_batch_flag_leaves_the_ragged_grid_out_unless_asked(capsys):
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--json", "--batch", "8")
    assert code == 0, err
    assert {p["grid"] for p in json.loads(out)["points"]} == {"sweep"}
    code, out, err = run_main(capsys, "bench", "--arch", "h200", "--dry-run", "--json", "--grid", "ragged")
    assert code == 0, err
    points = json.loads(out)["points"]
    assert {p["grid"] for p in points} == {"ragged"}
    assert len(points) == len([p for p in grid(load_config(preset_path("h200"))) if p.grid == "ragged"])


# ---------------------------------------------------------------------------
# the ragged cache, its reference and bytes


def test_ragged_cache_holds_the_lengths_in_the_capacity():
    from foscar.quant import QuantizedKVCache
    from foscar.reference import reference_decode

    p = tiny_point(workload=WorkloadSpec("one-long", short_len=9, capacity=64))
    w = build_workload(p, torch.device("cpu"), seed=0, full_check_max_tokens=1 << 20)
    c = w.cache
    assert c.max_seq_len == 64 and c.seq_lens.tolist() == [40, 9, 9]
    assert w.rows == [0, 1, 2]
    # unused slots hold random data (codes and finite scales), not zeros
    assert c.k_codes[1, :, 9:].float().std() > 10 and c.v_codes[0, :, 40:].float().std() > 10
    assert torch.isfinite(c.v_scale).all() and (c.k_scale[2, :, 9:] != 0).any()
    # the reference reads the lengths only: other data in the unused slots give the same answer
    other = QuantizedKVCache(**{f: getattr(c, f).clone() for f in ("k_codes", "v_codes", "k_scale", "k_offset",
                                                                    "v_scale", "v_offset", "seq_lens")},
                             bits=c.bits, group_size=c.group_size, head_dim=c.head_dim)  # fmt: skip
    other.k_codes[1, :, 9:] ^= 0xFF
    other.v_scale[0, :, 40:] *= 3
    torch.testing.assert_close(reference_decode(w.q, other, sm_scale=w.sm_scale), w.reference, rtol=0, atol=0)
    # bytes: the tokens of the lengths (40 + 9 + 9 per KV head)
    assert c.bytes_read() == (40 + 9 + 9) * 2 * c.bytes_per_token()


def test_uniform_points_are_built_as_before():
    """A uniform point (lengths = capacity) draws exactly the random stream of a point without workload."""
    a = build_workload(tiny_point(), torch.device("cpu"), seed=0, full_check_max_tokens=1 << 20)
    gen = torch.Generator().manual_seed(0)
    k = torch.randn((3, 2, 40, 64), dtype=torch.bfloat16, generator=gen)
    v = torch.randn((3, 2, 40, 64), dtype=torch.bfloat16, generator=gen)
    from foscar.quant import quantize_kv

    ref = quantize_kv(k, v, bits=2, group_size=32)
    assert torch.equal(a.cache.k_codes, ref.k_codes) and torch.equal(a.cache.v_scale, ref.v_scale)


def test_check_rows_of_a_large_ragged_point_include_the_longest():
    from bench.workload import check_rows

    lens = (100, 5, 5, 3000, 5, 5, 5, 5)
    assert check_rows(8, 3000, 10**6, lens) == list(range(8))
    assert check_rows(8, 3000, 1000, lens) == [0, 1, 3, 4, 7]  # first, middle, last; the longest, the shortest


@pytest.mark.parametrize("layout", ["HND", "NHD"])
def test_flashinfer_pages_cover_the_lengths_only(layout):
    from bench.flashinfer_backend import bf16_bytes, fp8_bytes, paged_bf16_cache
    from foscar.quant import dequantize_kv

    p = tiny_point(workload=WorkloadSpec("one-long", short_len=9, capacity=64))
    w = build_workload(p, torch.device("cpu"), seed=0, full_check_max_tokens=1 << 20)
    kv = paged_bf16_cache(w, layout)
    assert kv["k"].shape[0] == 3 + 1 + 1  # ceil(40 / 16) + ceil(9 / 16) * 2: not the capacity's 3 * 4 pages
    assert kv["indptr"].tolist() == [0, 3, 4, 5] and kv["last_page_len"].tolist() == [8, 9, 9]
    assert kv["block_tables"].shape == (3, 3) and kv["max_seq_len"] == 40
    assert kv["seq_lens"].tolist() == [40, 9, 9]
    for b, n in enumerate([40, 9, 9]):
        pages = kv["indices"][kv["indptr"][b] : kv["indptr"][b + 1]]
        assert pages.tolist() == kv["block_tables"][b, : len(pages)].tolist()
        for src, paged in zip(dequantize_kv(w.cache, torch.float32, batch_index=b), (kv["k"], kv["v"])):
            sel = paged[pages.long()]
            flat = sel.permute(1, 0, 2, 3) if layout == "HND" else sel.permute(2, 0, 1, 3)
            torch.testing.assert_close(flat.reshape(2, -1, 64)[:, :n], src.to(torch.bfloat16), rtol=0, atol=0)
    io = 2 * w.q.numel() * 2
    assert bf16_bytes(w) == 58 * 2 * 64 * 2 * 2 + io and fp8_bytes(w) == 58 * 2 * 64 * 2 + io


def test_paged_foscar_copy_keeps_the_capacity_bound(monkeypatch):
    import foscar
    from bench import backends

    p = tiny_point(workload=WorkloadSpec("capacity", capacity=64), context=17)
    w = build_workload(p, torch.device("cpu"), seed=0, full_check_max_tokens=1 << 20)
    seen = []

    class Plan:  # what foscar.plan_decode returns: the bench makes it once, then times its run
        def run(self, q, cache):
            runs.append(cache)
            return q

    runs = []
    monkeypatch.setattr(foscar, "plan_decode", lambda cache, num_qo_heads, **kw: seen.append(cache) or Plan())
    prep = backends.foscar_cuda_paged(w, "bf16")
    prep.fn()
    prep.fn()
    (paged,) = seen  # planned once (outside the timed call), run twice
    assert runs == [paged, paged]
    assert paged.max_seq_len == 64  # the host bound a serving engine passes: the capacity
    assert paged.k_codes.shape[0] == 3 * 2  # the pages of the lengths: ceil(17 / 16) per sequence
    assert torch.equal(paged.lengths(), w.cache.seq_lens)
    assert prep.bytes == w.cache.bytes_read() + w.io_bytes()
    assert backends.foscar_paged_cache(w) is paged  # one copy per point, the one bench.ab checks and times too


# ---------------------------------------------------------------------------
# a smoke run with a ragged grid, through the Triton interpreter


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU smoke path (interpreter)")
def test_smoke_run_with_a_ragged_grid(tmp_path, capsys):
    out = tmp_path / "run"
    code, stdout, err = run_main(capsys, "bench", "--smoke", "--config", write_config(tmp_path), "--out", out)
    assert code == 0, err
    df = read_results(out / "results.csv")
    ours = df[df["kernel"] == "foscar-triton"]
    assert (ours["status"] == "ok").all(), ours[["grid", "lengths", "status", "error"]]
    assert (ours["max_rel_err"] < 2e-2).all()  # against the fp64 reference over the lengths
    got = {(r.grid, r.workload, r.lengths, int(r.capacity), int(r.kv_tokens)) for r in ours.itertuples()}
    assert got == {("sweep", "uniform", "40x2", 40, 80), ("ragged", "one-long", "40,9x2", 64, 58),
                   ("ragged", "capacity", "17x2", 48, 34)}  # fmt: skip
    per_token = 2 * 64 * 2 // 8 + 2 * 2 * 4 * 2  # K and V codes + fp32 scale/offset per group, per KV head
    for r in ours.itertuples():
        assert r.bytes == r.kv_tokens * 2 * per_token + 2 * r.batch * 4 * 64 * 2  # 2 KV heads; q and output
    meta = json.loads((out / "meta.json").read_text())
    assert [w["lengths"] for w in meta["workloads"]] == [[40, 40], [40, 9, 9], [17, 17]]
    assert meta["config"]["ragged"][0]["workload"]["name"] == "one-long"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["grid_rows"] == {"sweep": 1, "ragged": 2}
    assert summary["num_points_ragged"] == {"foscar-triton/int2/bf16": 0}  # no FlashInfer on the CPU
    assert "ragged grid" in stdout  # the end-of-run table of the ragged grid


def test_summary_keeps_the_grids_apart():
    rows = []
    for grid_name, spec, ours in (("sweep", WorkloadSpec(), 10.0), ("ragged", WorkloadSpec("one-long", short_len=9), 40.0),
                                  ("ragged", WorkloadSpec("capacity", capacity=64), 20.0)):  # fmt: skip
        p = Point(3, 40, 2, 32, 4, 2, 64, 16, workload=spec.at(40, 40), grid=grid_name)
        q = new_row(p, "foscar-triton", 2, "bf16", None)
        q.update(status="ok", median_us=ours)
        b = new_row(p, "flashinfer-fa2", None, None, "bf16")
        b.update(status="ok", median_us=30.0)
        rows += [q, b]
    s = summarize(add_speedups(to_frame(rows)))
    key = "foscar-triton/int2/bf16"
    assert s["geomean_speedup"][key] == pytest.approx(3.0) and s["num_points"][key] == 1
    assert s["geomean_speedup_ragged"][key] == pytest.approx(math.sqrt(0.75 * 1.5))
    assert s["num_points_ragged"][key] == 2 and s["grid_rows"] == {"sweep": 2, "ragged": 4}
    assert s["geomean_speedup_vs"][key]["flashinfer-fa2"]["num_points"] == 1  # the sweep grid only


def test_old_results_read_back_as_uniform(tmp_path):
    """A results.csv from before the workload columns: every row uniform, capacity = context, sweep grid."""
    p = Point(2, 40, 2, 32, 4, 2, 64, 16)
    row = new_row(p, "foscar-triton", 2, "bf16", None)
    row.update(status="ok", median_us=1.0)
    old = pd.DataFrame([row]).drop(columns=["workload", "capacity", "lengths", "kv_tokens", "k_layout", "grid", "page_order"])
    old.to_csv(tmp_path / "results.csv", index=False)
    back = read_results(tmp_path / "results.csv").iloc[0]
    assert (back["workload"], back["capacity"], back["lengths"], back["kv_tokens"], back["k_layout"], back["grid"]) == (
        "uniform", 40, "40x2", 80, "token", "sweep")  # fmt: skip
    assert back["page_order"] == "shuffled"  # before session 27 (FOSCAR's paged rows were; bench/NOTES.md §65)


# ---------------------------------------------------------------------------
# foscar compare: every field that changes the workload takes part in matching


def compare_run(path: Path, *, page_size=16, slow=1.0, lognormal_seed=0, gpu="NVIDIA H200", page_order="shuffled") -> Path:
    """A run directory with two sweep points and two ragged points; FOSCAR rows take ``slow`` x their time."""
    rows = []
    specs = [("sweep", WorkloadSpec(), 8192), ("sweep", WorkloadSpec(), 32768),
             ("ragged", WorkloadSpec("one-long"), 32768), ("ragged", WorkloadSpec("lognormal", seed=lognormal_seed), 32768)]  # fmt: skip
    for grid_name, spec, context in specs:
        p = Point(8, context, 2, 128, 32, 8, 128, page_size, page_order, workload=spec.at(context, context), grid=grid_name)
        for kernel, bits, op, base, us in (("foscar-cuda", 2, "bf16", None, 10.0 * slow), ("flashinfer-fa2", None, None, "bf16", 25.0)):
            r = new_row(p, kernel, bits, op, base)
            r.update(status="ok", median_us=us, p20_us=us * 0.99, p80_us=us * 1.01, reps=15, timing_mode="cuda_graph")
            rows.append(r)
    df = add_speedups(to_frame(rows))
    path.mkdir(parents=True)
    write_csv(df, path / "results.csv")
    config = {"page_size": page_size, "page_order": page_order, "workload": {"name": "uniform"},
              "ragged": [{"seed": lognormal_seed}]}
    write_json({"gpu": {"name": gpu}, "timing_mode": "cuda_graph", "config": config,
                "git": {"commit": "0" * 40}}, path / "meta.json")  # fmt: skip
    write_json(summarize(df), path / "summary.json")
    return path


def test_compare_matches_ragged_rows_by_their_workload(tmp_path):
    from bench.compare import compare_runs
    from bench.rundir import load_run

    base = compare_run(tmp_path / "a")
    new = compare_run(tmp_path / "b", slow=1.3)
    result = compare_runs(load_run(base), load_run(new))
    assert not result["unmatched"] and len(result["rows"]) == 8  # one-long and uniform at 8 x 32K kept apart
    ours = [r for r in result["rows"] if r["kernel"] == "foscar-cuda"]
    assert all(r["ratio"] == pytest.approx(1.3) and r["verdict"] == "slower" for r in ours)
    assert {r["point"] for r in ours} == {"b8 x 8K", "b8 x 32K", "b8 x 32K one-long", "b8 x 32K lognormal"}
    assert result["notes"] == []


def test_compare_of_another_page_size_lists_unmatched_rows_and_says_why(tmp_path, capsys):
    base = compare_run(tmp_path / "a")
    new = compare_run(tmp_path / "b", page_size=64, slow=1.3)
    code, out, err = run_main(capsys, "compare", base, new, "--json")
    assert code == 2, err  # nothing matched: nothing was compared, and a gate over these runs must not pass
    result = json.loads(out)
    assert result["rows"] == [] and len(result["unmatched"]) == 16 and result["verdict"] == "none"
    assert all("has page_size 64" in u["reason"] or "has page_size 16" in u["reason"] for u in result["unmatched"])
    assert any("different configurations: page_size 16 -> 64" in n for n in result["notes"])
    code, out, err = run_main(capsys, "compare", base, new)
    assert "note:" in out and "different configurations" in out and "unmatched" in out


def test_compare_keeps_page_orders_apart(tmp_path):
    from bench.compare import compare_runs
    from bench.rundir import load_run

    base = compare_run(tmp_path / "a")
    new = compare_run(tmp_path / "b", page_order="in-order")
    result = compare_runs(load_run(base), load_run(new))
    assert result["rows"] == [] and len(result["unmatched"]) == 16
    assert all("page_order" in u["reason"] for u in result["unmatched"])


def test_compare_of_other_lengths_leaves_those_rows_unmatched(tmp_path):
    from bench.compare import compare_runs
    from bench.rundir import load_run

    base = compare_run(tmp_path / "a")
    new = compare_run(tmp_path / "b", lognormal_seed=1, gpu="NVIDIA H100 80GB HBM3")
    result = compare_runs(load_run(base), load_run(new))
    assert len(result["rows"]) == 6 and len(result["unmatched"]) == 4  # the lognormal point's 2 rows, each side
    assert all(u["point"] == "b8 x 32K lognormal" for u in result["unmatched"])
    assert all("has lengths" in u["reason"] for u in result["unmatched"])
    notes = " | ".join(result["notes"])
    assert "different GPUs: base NVIDIA H200, new NVIDIA H100 80GB HBM3" in notes and "different configurations" in notes


def test_report_plots_the_ragged_grid(tmp_path, capsys):
    run = compare_run(tmp_path / "a")
    code, out, err = run_main(capsys, "report", run)
    assert code == 0, err
    assert (run / "ragged.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (run / "report.md").read_text()
    assert "ragged grid: vs FlashInfer BF16 at its best" in md and "![Ragged grid](ragged.png)" in md
    assert "| `foscar-cuda/int2/bf16` | 2.500 | 2 | 2.500 (2) |" in md


# ---------------------------------------------------------------------------
# GPU: the ragged cases through the real kernels and every FlashInfer baseline


@pytest.mark.gpu
def test_ragged_points_pass_their_check_on_the_gpu(tmp_path):
    from bench.backends import select_backends
    from bench.sweep import Sweep, run_sweep

    kernels = ["foscar-cuda", "foscar-cuda-paged", "foscar-triton", "flashinfer-fa2", "flashinfer-fa2-tc",
               "flashinfer-xqa", "flashinfer-fa2-fp8", "flashinfer-fa2-tc-fp8", "flashinfer-xqa-fp8"]  # fmt: skip
    cfg = BenchConfig(
        name="gpu-ragged", batch=[3], context=[1000], bits=[2, 4], operand=["bf16", "fp8"], kernels=kernels,
        grids=["ragged"],
        ragged=[RaggedGrid([4], [5000], WorkloadSpec("one-long", short_len=100)),
                RaggedGrid([4], [1000], WorkloadSpec("capacity", capacity=8192)),
                RaggedGrid([8], [4096], WorkloadSpec("lognormal", seed=0))],
    )  # fmt: skip
    df = run_sweep(Sweep(cfg, select_backends(kernels), torch.device("cuda"), None, tmp_path / "r.csv", console=None))
    ran = df[df["status"] != "skipped"]
    bad = ran[ran["status"] != "ok"]
    assert bad.empty, bad[["kernel", "operand", "workload", "cache_bits", "status", "error"]].to_string()
    assert (df["grid"] == "ragged").all()
    if not ran["kernel"].str.startswith("flashinfer").any():
        pytest.skip("FlashInfer is not installed here: every row checked, no speed-up to compare")
    assert ran.loc[ran["kernel"] == "foscar-cuda", "speedup_vs_flashinfer_bf16"].notna().all()
