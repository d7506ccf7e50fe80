"""The docs name what the code reads: every ``FOSCAR_*`` environment variable of the library and every ``-D`` knob of
the CUDA kernel's header has a row in docs/TUNING.md (default, other values, NOTES section), so a switch added
without its documentation fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tuning() -> str:
    return (ROOT / "docs" / "TUNING.md").read_text()


def _names(pattern: str, files) -> set[str]:
    return {m for f in files for m in re.findall(pattern, f.read_text())}


def test_every_environment_switch_of_the_library_is_in_tuning_md():
    names = _names(r'"(FOSCAR_[A-Z0-9_]+)"', (ROOT / "foscar").rglob("*.py"))
    assert {"FOSCAR_MERGE", "FOSCAR_PDL", "FOSCAR_NVCC_DEFINES"} <= names  # the search finds them
    missing = sorted(n for n in names if f"`{n}`" not in _tuning())
    assert not missing, f"docs/TUNING.md lacks {missing}"


def test_every_build_knob_of_the_kernel_is_in_tuning_md():
    from tests.test_decode_cuda import kernel_knobs

    names = kernel_knobs()
    assert {"FOSCAR_STAGES", "FOSCAR_WAVE_FIT", "FOSCAR_MERGE_WARP"} <= names
    missing = sorted(n for n in names if f"`{n}`" not in _tuning())
    assert not missing, f"docs/TUNING.md lacks {missing}"
