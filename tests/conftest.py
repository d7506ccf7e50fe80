"""Test setup: without a GPU, Triton kernels run in the CPU interpreter.

``TRITON_INTERPRET`` must be set before Triton decorates the kernels, i.e. before
``foscar.kernels`` is first imported, hence here at conftest import time.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
# the CLI's consoles take COLUMNS when output is not a terminal (bench.tables.make_console): the tests read tables at
# the default width, whatever the shell exports
os.environ.pop("COLUMNS", None)


# The longest test (nvcc on every kernel instance, minutes of CPU on its own) runs first: under
# pytest-xdist (`-n auto`, README's test command) its worker compiles while the others run the
# CPU tests, instead of nvcc running alone at the end.
FIRST = "test_cuda_source_compiles_for_sm90"  # tests/test_decode_cuda.py


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: getattr(item, "originalname", item.name) != FIRST)  # stable: the rest keep their order
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords and "nvcc" not in item.keywords:  # nvcc: the GPU suite's compile-only tests
            item.add_marker(skip)


@pytest.fixture
def device():
    """The device kernels run on: CUDA when present, else the CPU interpreter."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
