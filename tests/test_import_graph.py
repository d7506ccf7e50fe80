"""No import cycles among the modules of ``bench/`` (issue 15): every module imports, and the
graph of which module imports which (read from the sources with ``ast``, function-level
imports included) is acyclic."""

from __future__ import annotations

import ast
import importlib
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")


def bench_imports(source: str, modules: set[str]) -> set[str]:
    """The ``bench.<module>`` names a module's source imports anywhere (top level or inside
    a function): ``import bench.x``, ``from bench.x import y``, ``from bench import x``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("bench.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("bench."):
                found.add(node.module.split(".")[1])
            elif node.module == "bench":
                found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from .x import y / from . import x
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
    return found & modules


def import_graph() -> dict[str, set[str]]:
    """Module name -> the ``bench`` modules it imports."""
    names = set(MODULES)
    return {m: bench_imports((BENCH / f"{m}.py").read_text(), names) - {m} for m in MODULES}


def test_the_parser_sees_function_level_and_package_imports():
    src = "from bench.a import x\nimport bench.b\nfrom bench import c, SCHEMA_VERSION\ndef f():\n    from bench.d import y\n"
    assert bench_imports(src, {"a", "b", "c", "d", "e"}) == {"a", "b", "c", "d"}


def test_no_import_cycle_among_bench_modules():
    graph = import_graph()
    assert graph["plan"] and graph["accuracy"]  # the graph is not trivially empty
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        cycle = " -> ".join(f"bench/{m}.py" for m in reversed(e.args[1]))
        pytest.fail(f"import cycle: {cycle}")


@pytest.mark.parametrize("name", MODULES)
def test_every_bench_module_imports(name):
    assert importlib.import_module(f"bench.{name}").__name__ == f"bench.{name}"


def test_the_command_line_sits_on_top():
    """``bench/cli/`` (the ``foscar`` commands) imports the harness; no module of ``bench/`` imports it back."""
    importers = [m for m in MODULES if "cli" in bench_imports((BENCH / f"{m}.py").read_text(), {"cli"})]
    assert importers == [], f"bench modules that import bench.cli: {importers}"
    cli_sources = "".join(p.read_text() for p in (BENCH / "cli").glob("*.py"))
    assert "cli" in bench_imports(cli_sources, {"cli"})  # the parser sees bench.cli imports at all
