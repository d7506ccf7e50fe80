"""The HBM ceiling probe (bench/hbm.py): its refusal on CPU, its figures on a GPU."""

from __future__ import annotations

import pytest
import torch

from bench.hbm import MIN_BYTES, measure_hbm


def test_a_buffer_that_fits_in_l2_is_refused():
    with pytest.raises(ValueError, match=r"nbytes: at least 67108864 \(64 MiB\).*got 1048576"):
        measure_hbm(torch.device("cpu"), 1 << 20)


@pytest.mark.gpu
def test_the_probe_reports_the_larger_of_read_and_copy_over_the_bytes_it_used():
    r = measure_hbm(torch.device("cuda"), 256 << 20)
    assert set(r) == {"copy_tbps", "read_tbps", "ceiling_tbps", "bytes"}
    assert MIN_BYTES <= r["bytes"] <= 256 << 20 and r["bytes"] % (1 << 20) == 0
    assert r["ceiling_tbps"] == max(r["copy_tbps"], r["read_tbps"])
    # any GPU with HBM streams between 0.1 and 20 TB/s; a bad byte count or a stream served from L2 would not
    assert 0.1 < r["copy_tbps"] < 20 and 0.1 < r["read_tbps"] < 20
