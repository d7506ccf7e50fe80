"""The ``>>>`` examples in the public entry points' docstrings run and print what they show.

On the CPU through the Triton interpreter (conftest sets ``TRITON_INTERPRET=1``), like the
rest of the CPU suite; the examples are what a newcomer copies first, so a stale one fails here.
"""

import doctest

import pytest
import torch

import foscar
import foscar.append
import foscar.decode
import foscar.paged
import foscar.quant

EXAMPLES = [foscar.quantize_kv, foscar.decode, foscar.plan_decode, foscar.paginate, foscar.append_kv]


@pytest.mark.parametrize("fn", EXAMPLES, ids=lambda f: f.__name__)
def test_docstring_example_runs(fn):
    torch.manual_seed(0)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(fn, fn.__name__, globs={}) if t.examples]
    assert tests, f"{fn.__name__} has no >>> example"
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0, f"{fn.__name__}: {result.failed} of {result.attempted} examples failed"
