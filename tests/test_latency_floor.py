"""The CPU half of scripts/latency_floor.py (issue 11's fixed cost: a decode over empty sequences): its point
selection. The timing itself needs a GPU with the CUDA kernel (``python scripts/latency_floor.py OUT [BATCHxCONTEXT
...]``; bench/NOTES.md §78)."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "latency_floor.py"
_spec = importlib.util.spec_from_file_location("latency_floor_script", _PATH)
floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(floor)


def test_points_given_on_the_command_line_replace_the_default_list():
    assert floor.parse_points(["1x8192", "8X32768"]) == [(1, 8192), (8, 32768)]
    assert floor.parse_points([]) == list(floor.POINTS)


@pytest.mark.parametrize("bad", ["8", "8x", "x8192", "0x8192", "8x-1", "8x8192x2", "eightx8192"])
def test_a_bad_point_names_the_expected_form(bad):
    with pytest.raises(ValueError, match=r"BATCHxCONTEXT.*8x32768"):
        floor.parse_points([bad])
