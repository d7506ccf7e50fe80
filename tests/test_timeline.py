"""bench.timeline: the record layout's arithmetic on synthetic records (CPU) and the profiling build's compile
(nvcc, no GPU). The profile itself runs on the GPU machine (`python -m bench.timeline`, bench/NOTES.md §66)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import timeline
from foscar.kernels import decode_cuda


def _record(t0_ns, find, to_loop, first, loop, epi, iters, ghz=2.0, sm=0, block=0, cuts=(0.1, 0.2, 0.5)):
    """One CTA's record with phases in us at ``ghz`` cycles a ns; ``cuts``: the epilogue's three stamps, us after
    the loop's end (each <= ``epi``)."""
    clk_entry = 1_000_000
    clk_found = clk_entry + find * 1e3 * ghz
    clk_loop = clk_found + to_loop * 1e3 * ghz
    clk_first = clk_loop + first * 1e3 * ghz
    clk_loop_end = clk_loop + loop * 1e3 * ghz
    clk_exit = clk_loop_end + epi * 1e3 * ghz
    total_ns = (clk_exit - clk_entry) / ghz
    meta = sm | (block << 8) | (iters << 40)
    clk_cuts = [clk_loop_end + c * 1e3 * ghz if iters else 0 for c in cuts]
    return [t0_ns, t0_ns + total_ns, clk_entry, clk_found, clk_loop, clk_first, clk_loop_end, clk_exit, meta, 0,
            *clk_cuts]


def test_summarize_phases_span_and_gap():
    call0 = [_record(1000, 0.4, 0.7, 0.2, 1.0, 0.9, iters=1, block=b) for b in range(4)]
    call0.append(_record(1000, 0.4, 0.0, 0.0, 0.0, 0.0, iters=0, block=4))  # an empty CTA: not in the medians
    call1 = [_record(6000, 0.5, 0.8, 0.3, 2.0, 1.0, iters=2, block=b) for b in range(5)]
    rec = np.array(call0 + call1, dtype=np.int64)
    t = timeline.summarize(rec, calls=2)
    assert [x.ctas for x in t] == [5, 5] and [x.working for x in t] == [4, 5]
    assert t[0].ghz == pytest.approx(2.0, rel=1e-3)
    # the epilogue's parts: cuts at 0.1, 0.2, 0.5 us of its 0.9
    for name, want in zip(timeline.PHASES, (0.4, 0.7, 0.2, 1.0, 0.9, 0.1, 0.1, 0.3, 0.4)):
        assert t[0].phases[name] == pytest.approx(want, abs=2e-3), name
    assert t[1].phases["loop"] == pytest.approx(2.0, abs=2e-3)
    assert t[0].span_us == pytest.approx(3.0, abs=2e-3)  # 0.4 + 0.7 + 1.0 + 0.9
    assert t[0].gap_us == pytest.approx(5.0 - 3.0, abs=2e-3) and t[1].gap_us is None


def test_summarize_refuses_bad_input():
    with pytest.raises(ValueError, match=r"expected \[n, 13\]"):
        timeline.split_calls(np.zeros((4, 10), dtype=np.int64), 1)
    with pytest.raises(ValueError, match="not a multiple of calls=3"):
        timeline.split_calls(np.zeros((4, 13), dtype=np.int64), 3)
    with pytest.raises(ValueError, match="no CTA of this call has work"):
        timeline.summarize_call(np.zeros((2, 13), dtype=np.int64))


def test_graph_rounds_and_calls_in():
    # a rotation of fewer than MIN_CALLS copies is repeated (a cache past ~4x the L2 has one copy: the first call
    # alone is not the bench's back-to-back steady state, bench/NOTES.md §88)
    assert [timeline.graph_rounds(c) for c in (1, 2, 3, 8)] == [3, 2, 1, 1]
    with pytest.raises(ValueError, match="copies: expected 1..8, got 0"):
        timeline.graph_rounds(0)
    rec = np.array([_record(1000 * c, 0.4, 0.7, 0.2, 1.0, 0.9, iters=1, block=b) for c in range(3) for b in range(5)],
                   dtype=np.int64)
    assert timeline.calls_in(rec) == 3
    with pytest.raises(ValueError, match="14 is not a multiple of the grid \\(5 CTAs\\)"):
        timeline.calls_in(rec[:-1])
    with pytest.raises(ValueError, match=r"expected \[n, 13\] with n > 0"):
        timeline.calls_in(rec[:0])


def test_point_argument():
    # bench.ab's point syntax, the bit width of a point without one from --bits (bench.ab.parse_point)
    assert timeline.parse_point("8x32768", bits=4) == timeline.ProbePoint(4, 8, 32768)
    assert timeline.parse_point("2x8x32768:paged", bits=4) == timeline.ProbePoint(2, 8, 32768, paged=True)
    assert timeline.record_file(timeline.parse_point("1x16:lognormal:paged", bits=2)) == \
        "timeline-2x1x16-lognormal-paged.npy"
    with pytest.raises(ValueError, match=r"BITSxBATCHxCONTEXT \(or BATCHxCONTEXT\)"):
        timeline.parse_point("8,32768", bits=2)
    with pytest.raises(SystemExit):  # argparse's error: the message names the point
        timeline.main(["--point", "8x0"])


def test_describe_names_workload_paging_and_group():
    assert timeline.describe(timeline.parse_point("2x8x32768")) == "8 x 32768"
    assert timeline.describe(timeline.parse_point("4x8x32768:lognormal:paged:g64")) == "8 x 32768 lognormal paged G=64"
    assert timeline.record_file(timeline.parse_point("4x8x32768:paged:g64")) == "timeline-4x8x32768-paged-g64.npy"
    assert timeline.describe(timeline.parse_point("4x8x32768:h8-1")) == "8 x 32768 heads 8/1"
    assert timeline.describe(timeline.parse_point("4x8x32768:c64")) == "8 x 32768 channel-K 64"
    assert timeline.describe(timeline.parse_point("4x8x32768:c64:fp8")) == "8 x 32768 channel-K 64 fp8"
    assert timeline.describe(timeline.parse_point("2x8x4096:h8-1:cap131072")) == "8 x 4096 heads 8/1 cap 131072"
    assert timeline.describe(timeline.parse_point("2x64x1024:one-long:cap4096:s512")) == (
        "64 x 1024 one-long cap 4096 short 512")
    assert timeline.record_file(timeline.parse_point("4x8x32768:h8-1")) == "timeline-4x8x32768-h8-1.npy"


def test_group_size_flag_and_point_suffix_must_agree(capsys):
    with pytest.raises(SystemExit):
        timeline.main(["--point", "1x16:g64", "--group-size", "32"])
    assert "--group-size 32 and the points' own group sizes differ: 1x16:g64" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an explicit :g128 is a group size of its own too
        timeline.main(["--point", "1x16:g128", "--group-size", "64"])
    assert "differ: 1x16:g128" in capsys.readouterr().err


def test_timeline_build_compiles(tmp_path):
    # the profiling build (FOSCAR_TIMELINE=1) of the contiguous folded-BF16 instances at head_dim 128; the default
    # build's SASS does not change with it (bench/data/sass_loop_counts.json, test_decode_cuda.py)
    nvcc = decode_cuda.find_nvcc() or shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: cannot compile the CUDA source here")
    src = decode_cuda.CSRC / "decode_mode_bf16.cu"
    proc = subprocess.run([nvcc, *decode_cuda.BASE_NVCC_FLAGS, "-DFOSCAR_ONLY_HEAD_DIM=128", "-DFOSCAR_TIMELINE=1",
                           "-cubin", str(src), "-o", str(tmp_path / "timeline.cubin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]



def test_record_layout_matches_the_c_api():
    # the binding checks the buffer against FOSCAR_TIMELINE_FIELDS; the kernel static_asserts its layout against it
    header = (decode_cuda.CSRC / "folded_decode_sm90.h").read_text()
    assert int(re.search(r"#define FOSCAR_TIMELINE_FIELDS (\d+)", header).group(1)) == len(timeline.FIELDS)


@pytest.mark.gpu
def test_timeline_profile_on_the_gpu(tmp_path):
    # the profiling build end to end (its own extension, head_dim 128): the records' stamps in order in every working
    # CTA, and at least MIN_CALLS calls a point (64 x 8192's 335 MB cache is one rotation copy: repeated, graph_rounds)
    env = dict(os.environ, FOSCAR_NVCC_DEFINES="FOSCAR_ONLY_HEAD_DIM=128 FOSCAR_TIMELINE=1")
    proc = subprocess.run([sys.executable, "-m", "bench.timeline", "--point", "1x16", "--point", "2x4096", "--point",
                           "64x8192", "--save", str(tmp_path)], env=env, capture_output=True, text=True, timeout=1200,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "ep_merge" in proc.stdout
    for name in ("timeline-2x1x16.npy", "timeline-2x2x4096.npy", "timeline-2x64x8192.npy"):
        rec = np.load(tmp_path / name)
        assert rec.shape[1] == len(timeline.FIELDS)
        assert timeline.MIN_CALLS <= timeline.calls_in(rec) <= timeline.MAX_CALLS, name
        f = {k: i for i, k in enumerate(timeline.FIELDS)}
        w = rec[((rec[:, f["meta"]] >> 40) & 0xFFFF) > 0]
        assert len(w) > 0
        order = ["clk_entry", "clk_found", "clk_loop", "clk_loop_end", "clk_cut1", "clk_cut2", "clk_cut3", "clk_exit"]
        for a, b in zip(order, order[1:]):
            assert (w[:, f[a]] <= w[:, f[b]]).all(), (name, a, b)


def test_sm_tail_is_the_time_an_sm_runs_its_last_cta_alone():
    # SM 0: two CTAs exiting 2 us apart; SM 1: 1 us apart; SM 2: one CTA; an empty CTA on SM 1 does not count
    rec = [_record(1000, 0.4, 0.7, 0.2, 10.0, 0.9, iters=8, sm=0, block=0),
           _record(1000, 0.4, 0.7, 0.2, 12.0, 0.9, iters=8, sm=0, block=1),
           _record(1000, 0.4, 0.7, 0.2, 10.0, 0.9, iters=8, sm=1, block=2),
           _record(1000, 0.4, 0.7, 0.2, 11.0, 0.9, iters=8, sm=1, block=3),
           _record(1000, 0.4, 0.0, 0.0, 30.0, 0.0, iters=0, sm=1, block=4),
           _record(1000, 0.4, 0.7, 0.2, 9.0, 0.9, iters=8, sm=2, block=5)]
    t = timeline.summarize_call(np.array(rec, dtype=np.int64))
    assert t.sm_tail_us == pytest.approx(1.5, abs=2e-3) and t.one_cta_sms == 1
    one = timeline.summarize_call(np.array(rec[-1:], dtype=np.int64))  # no SM ran two
    assert one.sm_tail_us is None and one.one_cta_sms == 1


def test_records_from_a_saved_file_print_the_table_with_the_clock(tmp_path, capsys):
    # two calls of three CTAs at 1.75 GHz, saved as --save writes them; --records reads them back on the CPU
    rec = np.array([_record(10_000 * c, 0.4, 0.7, 0.2, 10.0, 0.9, iters=8, ghz=1.75, sm=b, block=b)
                    for c in range(2) for b in range(3)], dtype=np.int64)
    f = tmp_path / "timeline-2x8x32768.npy"
    np.save(f, rec)
    assert timeline.main(["--records", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("timeline-2x8x32768.npy: medians over the working CTAs, us (SM MHz: MHz; loop_kcyc:")
    assert "SM MHz" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "1"] and all(r[-2] == "1750" and r[-1] == "17.50" for r in rows)
    assert float(rows[0][5]) == pytest.approx(10.0, abs=0.01)  # the loop column, us at the records' own clock


def test_records_refuses_a_missing_file_an_old_layout_and_an_archive_and_goes_on(tmp_path, capsys):
    assert timeline.main(["--records", str(tmp_path / "none.npy")]) == 2
    assert "none.npy" in capsys.readouterr().err
    old = tmp_path / "old.npy"
    np.save(old, np.zeros((4, 10), dtype=np.int64))  # session 28's records: 10 fields
    assert timeline.main(["--records", str(old)]) == 2
    assert r"expected [n, 13]" in capsys.readouterr().err
    npz = tmp_path / "x.npz"
    np.savez(npz, a=np.zeros(3))
    good = tmp_path / "timeline-2x1x16.npy"
    np.save(good, np.array([_record(1000, 0.4, 0.7, 0.2, 5.0, 0.9, iters=1, block=b) for b in range(2)],
                           dtype=np.int64))
    assert timeline.main(["--records", str(npz), "--records", str(good)]) == 2  # the good file still prints
    captured = capsys.readouterr()
    assert "x.npz: not one .npy array" in captured.err and captured.out.startswith("timeline-2x1x16.npy")


def test_the_clock_comes_from_working_ctas_of_a_microsecond_or_more():
    # 4 working CTAs at 1.75 GHz; 6 empty sub-us CTAs whose stamps read a lower ratio: they do not count
    work = [_record(1000, 0.4, 0.7, 0.2, 10.0, 0.9, iters=8, ghz=1.75, block=b) for b in range(4)]
    empty = [_record(1000, 0.1, 0.0, 0.0, 0.0, 0.3, iters=0, ghz=1.2, block=4 + b) for b in range(6)]
    t = timeline.summarize_call(np.array(work + empty, dtype=np.int64))
    assert t.ghz == pytest.approx(1.75, rel=1e-3) and t.phases["loop"] == pytest.approx(10.0, abs=2e-3)


def test_head_count_flags_and_point_suffix_must_agree(capsys):
    with pytest.raises(SystemExit):
        timeline.main(["--point", "1x16:h8-1", "--num-qo-heads", "16", "--num-kv-heads", "2"])
    assert "--num-qo-heads / --num-kv-heads 16 / 2 and the points' own head counts differ: 1x16:h8-1" in (
        capsys.readouterr().err)
    with pytest.raises(SystemExit):  # an explicit :h32-8 is a head count of its own too
        timeline.main(["--point", "1x16:h32-8", "--num-qo-heads", "8", "--num-kv-heads", "1"])
    assert "differ: 1x16:h32-8" in capsys.readouterr().err


def test_head_dim_flag_and_point_suffix_must_agree(capsys):
    with pytest.raises(SystemExit):
        timeline.main(["--point", "1x16:d256", "--head-dim", "64"])
    assert "--head-dim 64 and the points' own head_dims differ: 1x16:d256" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an explicit :d128 is a head_dim of its own too
        timeline.main(["--point", "1x16:d128", "--head-dim", "256"])
    assert "differ: 1x16:d128" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a head_dim the point's group size refuses: said before any GPU work
        timeline.main(["--point", "1x16", "--head-dim", "64"])
    assert "--head-dim 64: ProbePoint: head_dim 64 is not a multiple of the group size 128" in capsys.readouterr().err
    pp = timeline.parse_point("4x8x32768:h16-4:d256")
    assert timeline.describe(pp) == "8 x 32768 heads 16/4 D=256"
    assert timeline.record_file(pp) == "timeline-4x8x32768-h16-4-d256.npy"
