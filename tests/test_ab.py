"""bench.ab: the A/B probe's point syntax and its table (the timing itself needs a GPU: the device runs it)."""

import pandas as pd
import pytest

from bench import ab


def test_parse_point_forms():
    assert ab.parse_point("2x8x32768") == ab.ProbePoint(2, 8, 32768)
    assert ab.parse_point("4x64x8192:paged") == ab.ProbePoint(4, 64, 8192, paged=True)
    assert ab.parse_point("2x8x32768:lognormal:paged") == ab.ProbePoint(2, 8, 32768, "lognormal", True)
    assert ab.parse_point("2x8x32768:lognormal:paged").label == "2x8x32768:lognormal:paged"
    assert ab.parse_point("8x32768:paged", bits=4) == ab.ProbePoint(4, 8, 32768, paged=True)  # bench.timeline's form
    assert ab.parse_point("2x8x32768", bits=4) == ab.ProbePoint(2, 8, 32768)  # the point's own bits win
    assert ab.parse_point("4x8x32768:paged:g64") == ab.ProbePoint(4, 8, 32768, paged=True, group_size=64)
    assert ab.parse_point("4x8x32768:g64:paged").label == "4x8x32768:paged:g64"
    assert ab.parse_point("4x8x32768:g128") == ab.ProbePoint(4, 8, 32768)  # the default group, unlabelled
    assert ab.parse_point("4x1x32768:h8-1:paged") == ab.ProbePoint(4, 1, 32768, paged=True, num_qo_heads=8,
                                                                    num_kv_heads=1)
    assert ab.parse_point("4x1x32768:h8-1:paged").label == "4x1x32768:paged:h8-1"
    assert ab.parse_point("4x1x32768:h8-1").heads() == (8, 1)
    assert ab.parse_point("4x1x32768").heads() == (32, 8) and ab.parse_point("4x1x32768").heads(16, 2) == (16, 2)
    assert ab.parse_point("4x1x32768:h32-8") == ab.ProbePoint(4, 1, 32768)  # the default heads, unlabelled
    assert ab.parse_point("4x8x32768:c32:h8-1") == ab.ProbePoint(4, 8, 32768, num_qo_heads=8, num_kv_heads=1,
                                                                  k_block=32)
    assert ab.parse_point("4x8x32768:c32:h8-1").label == "4x8x32768:h8-1:c32"
    assert ab.parse_point("4x8x32768:capacity").workload == "capacity"  # a workload, not a k_block
    assert ab.parse_point("2x1x524288:fp8:h8-1") == ab.ProbePoint(2, 1, 524288, num_qo_heads=8, num_kv_heads=1,
                                                                   mode="fp8")
    assert ab.parse_point("2x1x524288:fp8:h8-1").label == "2x1x524288:h8-1:fp8"
    assert ab.parse_point("4x8x32768:per-value:paged").label == "4x8x32768:paged:per-value"
    assert ab.parse_point("4x8x32768:fp8").plan_options() == {"operand": "fp8"}
    assert ab.parse_point("4x8x32768:per-value").plan_options() == {"method": "per-value"}
    assert ab.parse_point("4x8x32768").plan_options() == {"operand": "bf16"}  # folded BF16, unlabelled
    assert ab.parse_point("4x8x32768:bf16") == ab.ProbePoint(4, 8, 32768)  # the default mode, unlabelled
    with pytest.raises(ValueError, match="both head counts or neither"):
        ab.ProbePoint(4, 1, 32768, num_qo_heads=8)
    with pytest.raises(ValueError, match="mode 'int8', expected one of bf16, fp8, per-value"):
        ab.ProbePoint(4, 1, 32768, mode="int8")
    assert ab.parse_point("2x1x8192:d256:h16-4").label == "2x1x8192:h16-4:d256"  # head_dim 256
    assert ab.parse_point("2x1x8192:d256").dim() == 256 and ab.parse_point("2x1x8192").dim(64) == 64
    assert ab.parse_point("2x1x8192:d128") == ab.ProbePoint(2, 1, 8192)  # the default head_dim, unlabelled
    assert ab.parse_point("4x1x8192:fp8:d64:g64").label == "4x1x8192:g64:d64:fp8"
    with pytest.raises(ValueError, match="head_dim 96, expected one of 64, 128, 256"):
        ab.ProbePoint(2, 1, 8192, head_dim=96)
    with pytest.raises(ValueError, match="head_dim 64 is not a multiple of the group size 128"):
        ab.parse_point("4x1x8192:d64")  # (what the quantizer would refuse when the point is built)
    with pytest.raises(ValueError, match="FP8 operands need head_dim \\* bits / 128 even, got INT2 at head_dim 64"):
        ab.parse_point("2x1x8192:d64:g64:fp8")
    cap = ab.parse_point("2x8x4096:cap131072:h8-1")  # eight of 4K in a cache allocated for 128K
    assert cap.capacity == 131072 and cap.cache_tokens() == 131072 and cap.label == "2x8x4096:h8-1:cap131072"
    assert ab.parse_point("2x8x4096:cap4096") == ab.ProbePoint(2, 8, 4096)  # the context: the default, unlabelled
    assert ab.ProbePoint(2, 8, 4096).cache_tokens() == 4096
    assert ab.parse_point("2x8x4096:capacity:cap8192").workload == "capacity"  # the workload, then a capacity
    with pytest.raises(ValueError, match="capacity 2048 below the context 4096"):
        ab.ProbePoint(2, 8, 4096, capacity=2048)
    short = ab.parse_point("2x64x1024:s512:one-long:h8-1:cap4096")  # one of 1024 among 63 of 512 in a 4K cache
    assert short.short_len == 512 and short.short_tokens() == 512
    assert short.label == "2x64x1024:one-long:h8-1:cap4096:s512" and ab.parse_point(short.label) == short
    assert ab.parse_point("2x8x8192:one-long:s4096") == ab.ProbePoint(2, 8, 8192, "one-long")  # the default
    assert ab.ProbePoint(2, 8, 8192, "one-long").short_tokens() == 4096
    assert ab.ProbePoint(2, 8, 8192).short_tokens() == 0
    with pytest.raises(ValueError, match=r"a short length \(512\) needs the one-long workload"):
        ab.ProbePoint(2, 8, 8192, "lognormal", short_len=512)


@pytest.mark.parametrize("text, words", [("2x8", "BITSxBATCHxCONTEXT"), ("2x0x16", "positive"), ("3x1x16", "2 or 4"),
                                         ("2x1x16:zipf", "'paged', 'gN' \\(group size\\), 'hQ-K'"),
                                         ("2x1xk", "BITSxBATCHxCONTEXT"),
                                         ("2x1x16:g48", "group size 48, expected one of 32, 64, 128"),
                                         ("2x1x16:h8-3", "8 query heads over 3 KV heads"),
                                         ("2x1x16:h0-1", "expected positive counts"),
                                         ("2x1x16:c16", "k_block 16, expected one of 32, 64, 128"),
                                         ("2x1x16:h8", "'hQ-K' \\(query and KV heads\\)"),
                                         ("2x1x16:fp16", "'bf16', 'fp8' or 'per-value' \\(the kernel's mode\\)"),
                                         ("2x1x16:fp8:per-value", "two modes \\('fp8' and 'per-value'\\)"),
                                         ("2x1x16:d96", "head_dim 96, expected one of 64, 128, 256"),
                                         ("2x1x16:dx", "'dN' \\(head_dim\\)"),
                                         ("2x1x4096:cap100", "capacity 100 below the context 4096; expected at least"),
                                         ("2x1x16:capx", "'capN' \\(the cache's capacity\\)"),
                                         ("2x1x16:s512", "a short length \\(:s512\\) needs the one-long workload"),
                                         ("2x1x16:one-long:s0", "short length 0, expected at least 1 token"),
                                         ("2x1x16:sx", "'sN' \\(one-long's short length\\)")])
def test_parse_point_errors_say_what_is_allowed(text, words):
    with pytest.raises(ValueError, match=words):
        ab.parse_point(text)


def _rows(m, rnd, us, sha="s1", err=1e-3, error=""):
    return pd.DataFrame([dict(bits=2, batch=1, context=16, workload="uniform", paged=0, m=m, rnd=rnd, median_us=us,
                              err=err, sha=sha, nan=False, error=error)])


def test_table_ratio_identity_and_failures():
    frames = [_rows("a", 0, 4.0), _rows("b", 0, 3.0), _rows("b", 1, 3.4), _rows("a", 1, 4.2, err=2e-3),
              _rows("b", 2, float("nan"), sha="", error="RuntimeError: boom")]
    text = ab.table(frames)
    assert "b/a" in text
    assert "0.78" in text  # mean(3.0, 3.4) / mean(4.0, 4.2) = 0.7805
    assert "points whose outputs differ between builds or rounds: 0 of 1" in text
    assert "'a': 0.002" in text and "NaN seen: False" in text
    assert "failed: b round 2 2x1x16: RuntimeError: boom" in text


def test_table_ratio_pairs_the_rounds_both_labels_ran():
    """Order "off rot rot off" with a drift of +1 us a round and identical builds: when the last off round did not
    run, the ratio of all rounds read mean(11, 12) / 10 = 1.15, drift counted as a difference; over the rounds both
    ran (round 0 of each) it is 11 / 10, and the table says which points lost rounds."""
    frames = [_rows("off", 0, 10.0), _rows("rot", 0, 11.0), _rows("rot", 1, 12.0)]
    text = ab.table(frames)
    assert "1.1" in text and "1.15" not in text  # 11 / 10 (round 0 of each), not mean(11, 12) / 10 = 1.15
    assert "ratios over the rounds both labels ran, not all their rounds" in text
    assert "rot/off at bits=2 batch=1 context=16 workload=uniform capacity=16: rounds [0] of 2" in text
    whole = ab.table(frames + [_rows("off", 1, 13.0)])  # every round: mean(11, 12) / mean(10, 13) = 1.0
    assert "1.0" in whole and "not all their rounds" not in whole


def test_table_counts_differing_outputs_and_base():
    text = ab.table([_rows("a", 0, 4.0), _rows("b", 0, 2.0, sha="s2")], base="b")
    assert "a/b" in text and "2.0" in text
    assert "differ between builds or rounds: 1 of 1" in text
    with pytest.raises(ValueError, match="base 'c' not among the labels"):
        ab.table([_rows("a", 0, 4.0)], base="c")
    with pytest.raises(ValueError, match="no rows"):
        ab.table([])


def test_main_table_from_csv(tmp_path, capsys):
    f1, f2 = tmp_path / "a.csv", tmp_path / "b.csv"
    _rows("a", 0, 4.0).to_csv(f1, index=False)
    _rows("b", 0, 3.0).to_csv(f2, index=False)
    assert ab.main(["table", str(f1), str(f2)]) == 0
    assert "b/a" in capsys.readouterr().out
    assert ab.main(["run", "x", "0", str(tmp_path / "o.csv"), "--point", "5x1x16"]) == 2
    assert "bits 5, expected 2 or 4" in capsys.readouterr().err


def test_table_keeps_group_sizes_apart_and_reads_older_rows_as_group_128():
    old = _rows("a", 0, 4.0)  # a CSV of before the group size was a key: no column
    g64 = _rows("a", 0, 6.0).assign(group_size=64)
    new = pd.concat([_rows("b", 0, 3.0).assign(group_size=128), _rows("b", 0, 5.0).assign(group_size=64)])
    text = ab.table([pd.concat([old, g64]), new])
    assert "0.75" in text and "0.83" in text  # 3 / 4 at group 128, 5 / 6 at group 64: matched within the group
    assert "differ between builds or rounds: 0 of 2" in text
    failed = _rows("c", 0, float("nan"), sha="", error="RuntimeError: boom").assign(group_size=32, paged=1)
    assert "failed: c round 0 2x1x16:paged:g32: RuntimeError: boom" in ab.table([new, failed])


def test_table_keeps_head_counts_apart_and_reads_older_rows_as_32_over_8():
    old = _rows("a", 0, 4.0)  # a CSV of before the head counts were keys (session 57): no columns
    gqa8 = _rows("a", 0, 6.0).assign(num_qo_heads=8, num_kv_heads=1)
    new = pd.concat([_rows("b", 0, 3.0).assign(num_qo_heads=32, num_kv_heads=8),
                     _rows("b", 0, 5.0).assign(num_qo_heads=8, num_kv_heads=1)])
    text = ab.table([pd.concat([old, gqa8]), new])
    assert "0.75" in text and "0.83" in text  # matched within each shape
    failed = _rows("c", 0, float("nan"), sha="", error="RuntimeError: boom").assign(num_qo_heads=8, num_kv_heads=1,
                                                                                     k_block=32)
    assert "failed: c round 0 2x1x16:h8-1:c32: RuntimeError: boom" in ab.table([new, failed])


def test_table_keeps_modes_apart_and_reads_older_rows_as_bf16():
    old = _rows("a", 0, 4.0)  # a CSV of before the mode was a key (session 64): no column, folded BF16
    fp8 = _rows("a", 0, 8.0).assign(mode="fp8")
    new = pd.concat([_rows("b", 0, 3.0).assign(mode="bf16"), _rows("b", 0, 6.0).assign(mode="fp8")])
    text = ab.table([pd.concat([old, fp8]), new])
    assert text.count("0.75") == 2  # 3 / 4 and 6 / 8: matched within each mode
    failed = _rows("c", 0, float("nan"), sha="", error="RuntimeError: boom").assign(mode="per-value")
    assert "failed: c round 0 2x1x16:per-value: RuntimeError: boom" in ab.table([new, failed])


@pytest.mark.parametrize("key, older, other, label", [
    ("head_dim", 128, 256, "2x1x16:d256"),  # no head_dim column before session 71: 128
    ("capacity", 16, 4096, "2x1x16:cap4096"),  # no capacity column before session 72: the context (16)
])
def test_table_keeps_a_later_key_apart_and_reads_older_rows_at_its_default(key, older, other, label):
    old = _rows("a", 0, 4.0)  # a CSV of before the key was one: no column
    big = _rows("a", 0, 8.0).assign(**{key: other})
    new = pd.concat([_rows("b", 0, 3.0).assign(**{key: older}), _rows("b", 0, 6.0).assign(**{key: other})])
    text = ab.table([pd.concat([old, big]), new])
    assert text.count("0.75") == 2  # 3 / 4 and 6 / 8: matched within each value of the key
    failed = _rows("c", 0, float("nan"), sha="", error="RuntimeError: boom").assign(**{key: other})
    assert f"failed: c round 0 {label}: RuntimeError: boom" in ab.table([new, failed])


def test_table_keeps_short_lengths_apart_and_reads_older_one_long_rows_at_4096():
    old = pd.concat([_rows("a", 0, 4.0).assign(workload="one-long"), _rows("a", 0, 5.0)])  # no short_len column
    short = _rows("a", 0, 8.0).assign(workload="one-long", short_len=512)
    new = pd.concat([_rows("b", 0, 3.0).assign(workload="one-long", short_len=4096),
                     _rows("b", 0, 5.0).assign(short_len=0),
                     _rows("b", 0, 6.0).assign(workload="one-long", short_len=512)])
    text = ab.table([pd.concat([old, short]), new])
    assert text.count("0.75") == 2 and "0 of 3" in text  # 3 / 4 and 6 / 8 (and 5 / 5): three points, kept apart
    failed = _rows("c", 0, float("nan"), sha="", error="RuntimeError: boom").assign(workload="one-long", short_len=512)
    assert "failed: c round 0 2x1x16:one-long:s512: RuntimeError: boom" in ab.table([new, failed])


def test_table_base_with_failed_rows_only():
    frames = [_rows("a", 0, float("nan"), sha="", error="RuntimeError: boom"), _rows("b", 0, 3.0)]
    text = ab.table(frames)  # the default base: the first label with a point that ran
    assert "failed: a round 0 2x1x16: RuntimeError: boom" in text and "a/b" not in text
    with pytest.raises(ValueError, match="base 'a' has no point that ran"):
        ab.table(frames, base="a")


def test_table_reads_hashes_as_text(tmp_path, capsys):
    # an all-digit hash with a leading zero must stay what it was (read as a number it lost the zero)
    f1, f2 = tmp_path / "a.csv", tmp_path / "b.csv"
    _rows("a", 0, 4.0, sha="012345678901").to_csv(f1, index=False)
    _rows("b", 0, 3.0, sha="012345678901").to_csv(f2, index=False)
    assert ab.main(["table", str(f1), str(f2)]) == 0
    assert "differ between builds or rounds: 0 of 1" in capsys.readouterr().out


def test_run_refuses_a_missing_folder_before_gpu_work(tmp_path, capsys):
    assert ab.main(["run", "x", "0", str(tmp_path / "nope" / "o.csv"), "--point", "2x1x16"]) == 2
    assert "no folder" in capsys.readouterr().err


def test_run_takes_query_copy_and_still_checks_the_folder_first(tmp_path, capsys):
    assert ab.main(["run", "x", "0", str(tmp_path / "nope" / "o.csv"), "--point", "2x1x16", "--query-copy"]) == 2
    assert "no folder" in capsys.readouterr().err


def test_run_no_sampler_reaches_run_as_false(tmp_path, monkeypatch):
    seen = {}

    def fake_run(label, rnd, out_csv, points, query_copy=False, sampler=True):
        seen.update(label=label, sampler=sampler, query_copy=query_copy)
        return pd.DataFrame({"error": [""]})

    monkeypatch.setattr(ab, "run", fake_run)
    assert ab.main(["run", "o", "1", str(tmp_path / "o.csv"), "--point", "2x8x32768", "--no-sampler"]) == 0
    assert seen == dict(label="o", sampler=False, query_copy=False)
    assert ab.main(["run", "s", "1", str(tmp_path / "s.csv"), "--point", "2x8x32768"]) == 0
    assert seen["sampler"] is True


def test_table_names_rows_timed_while_the_clock_was_held_down(tmp_path, capsys):
    clock = dict(sm_clock_before_mhz=1980, clock_events_before="none")
    a = _rows("a", 0, 4.0).assign(**clock, sm_clock_after_mhz=1980, clock_events_after="none")
    b = _rows("b", 0, 3.0).assign(**clock, sm_clock_after_mhz=1755, clock_events_after="sw_power_cap+gpu_idle")
    text = ab.table([a, b])
    assert "throttled: b round 0 2x1x16 (sw_power_cap, SM 1755 MHz after)" in text
    assert "throttled: a" not in text and "rows timed while the clock was held down: 1 of 2" in text
    f1, f2 = tmp_path / "a.csv", tmp_path / "b.csv"  # through the CSVs: the clocks read back as integers
    a.to_csv(f1, index=False)
    b.to_csv(f2, index=False)
    assert ab.main(["table", str(f1), str(f2)]) == 0
    assert "(sw_power_cap, SM 1755 MHz after)" in capsys.readouterr().out


def test_table_says_nothing_of_clocks_where_no_row_has_readings():
    # CSVs of before session 50 have no clock columns; a run without NVML has them empty
    assert "held down" not in ab.table([_rows("a", 0, 4.0), _rows("b", 0, 3.0)])
    empty = dict(sm_clock_before_mhz=None, sm_clock_after_mhz=None, clock_events_before=None, clock_events_after=None)
    assert "held down" not in ab.table([_rows("a", 0, 4.0).assign(**empty), _rows("b", 0, 3.0).assign(**empty)])


def test_table_gives_the_clock_during_the_timed_calls(tmp_path, capsys):
    # session 52's columns: the median NVML clock of the samples taken while the timed calls ran, per label over its
    # rounds; a power cap seen only during the calls is a throttled row too
    clock = dict(sm_clock_before_mhz=1980, clock_events_before="none", sm_clock_after_mhz=1980,
                 clock_events_after="none")
    rows = [_rows("t", 0, 46.0).assign(**clock, sm_clock_during_mhz=1755, clock_events_during="sw_power_cap"),
            _rows("t", 1, 46.2).assign(**clock, sm_clock_during_mhz=1770, clock_events_during="sw_power_cap"),
            _rows("l", 0, 41.0).assign(**clock, sm_clock_during_mhz=1980, clock_events_during="none")]
    text = ab.table(rows)
    assert "SM clock during the timed calls" in text
    line = next(x for x in text.splitlines() if x.lstrip().startswith("2 ") and "1755" in x)
    assert "1755-1770" in line and "1980-1980" in line
    assert "throttled: t round 0 2x1x16 (sw_power_cap, SM 1755 MHz during, SM 1980 MHz after)" in text
    assert "rows timed while the clock was held down: 2 of 3" in text
    # rows without the columns (before session 52) print no such table
    assert "during the timed calls" not in ab.table([_rows("a", 0, 4.0).assign(**clock)])
    f = tmp_path / "t.csv"
    pd.concat(rows).to_csv(f, index=False)
    assert ab.main(["table", str(f)]) == 0 and "1755-1770" in capsys.readouterr().out
