"""The CPU half of the integer-tensor-core prototype (scripts/prototypes/imma_qk.py, issue 12 lever 4):
the s8 hi/lo split of the 16-bit fixed-point query is exact over its whole range and refuses the first
value past it, and the IMMA arithmetic (exact integer dots, fp32 fold) is closer to the fp64 scores of
the dequantized K than the BF16 query is, on a query with outlier channels. The CUDA kernels are run
by ``python scripts/prototypes/imma_qk.py run`` on an sm_90 GPU."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "prototypes" / "imma_qk.py"
_spec = importlib.util.spec_from_file_location("imma_qk_prototype", _PATH)
proto = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(proto)


def test_hi_lo_split_is_exact_over_the_fixed_point_range():
    qi = torch.arange(-proto.QMAX, proto.QMAX + 1, dtype=torch.int32)
    hi, lo = proto.split_hi_lo(qi)
    assert hi.dtype == lo.dtype == torch.int8  # an int8 that had wrapped would break the identity below
    assert torch.equal(256 * hi.to(torch.int32) + lo.to(torch.int32), qi)
    assert int(hi.min()) >= -128 and int(hi.max()) <= 127


@pytest.mark.parametrize("bad", [proto.QMAX + 1, -proto.QMAX - 1])
def test_hi_lo_split_refuses_values_past_the_range(bad):
    with pytest.raises(ValueError, match="must lie in"):
        proto.split_hi_lo(torch.tensor([0, bad]))


@pytest.mark.parametrize("per_head", [False, True], ids=["scale-per-group", "scale-per-head"])
@pytest.mark.parametrize("bits,group", proto.CONFIGS)
def test_imma_arithmetic_beats_the_bf16_query_on_outliers(bits, group, per_head):
    case = proto.make_case(bits, group, tokens=2048, seed=7)
    args = (case["codes"], case["scale"], case["offset"], case["q"][: proto.HEADS])
    ref = proto.reference_scores(*args)
    imma = proto.imma_mirror_scores(*args, group, per_head=per_head)
    bf16 = proto.bf16_mirror_scores(*args)
    err_imma, err_bf16 = proto.rel_l2(imma, ref).max(), proto.rel_l2(bf16, ref).max()
    assert err_imma <= proto.BOUNDS["imma"]
    assert err_imma < err_bf16
    p = lambda s: torch.softmax(s / math.sqrt(proto.HEAD_DIM), dim=0)  # noqa: E731
    assert proto.rel_l2(p(imma), p(ref)).max() <= proto.BOUNDS["imma"]
