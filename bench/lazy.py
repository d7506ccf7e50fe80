"""``torch`` for modules that must import without it (the backend registry, whose
names the CLI checks before any heavy import).

``from bench.lazy import torch`` gives a stand-in whose first attribute access
imports the real torch; every access then returns the real attribute
(``torch.zeros``, ``torch.Tensor``, ``torch.cuda``), so code reads as usual. It is
only for names used *inside* functions: a module-level ``torch.X`` would import
torch at import time again. Type annotations are strings
(``from __future__ import annotations``) and never touch it.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """A module imported at the first attribute access (then served from ``sys.modules``)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


torch = LazyModule("torch")
