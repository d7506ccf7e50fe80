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


def _module_name(path: Path) -> str:
    """``bench/run.py`` -> ``run``; ``bench/cli/options.py`` -> ``cli.options``; ``bench/cli/__init__.py`` -> ``cli``."""
    parts = list(path.relative_to(BENCH).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = {_module_name(p): p for p in sorted(BENCH.rglob("*.py")) if p != BENCH / "__init__.py"}
MODULES = sorted(FILES)  # every module of bench/, its subpackage bench/cli/ included


def _resolve(dotted: str, modules: set[str]) -> str | None:
    """The longest prefix of ``dotted`` (a name under ``bench``) that is one of ``modules``."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in modules:
            return name
    return None


def bench_imports(source: str, modules: set[str], package: str = "") -> set[str]:
    """The ``bench`` modules (names relative to ``bench``: ``run``, ``cli.options``) a module's
    source imports anywhere (top level or inside a function): ``import bench.x``, ``from
    bench.x import y`` (``y`` when it is a module itself), ``from bench import x``, and
    relative imports within ``package`` (the importing module's package, ``""`` for ``bench``)."""
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name[len("bench."):], modules) for a in node.names if a.name.startswith("bench.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("bench."):
                base = node.module[len("bench."):]
            elif node.level == 0 and node.module == "bench":
                base = ""
            elif node.level == 1:
                base = ".".join(p for p in (package, node.module or "") if p)
            else:
                continue
            for a in node.names:  # `from bench.cli import bench_cmd` imports the module bench.cli.bench_cmd
                found.add(_resolve(f"{base}.{a.name}" if base else a.name, modules) or (_resolve(base, modules) if base else None))
    return {m for m in found if m}


def import_graph() -> dict[str, set[str]]:
    """Module name -> the ``bench`` modules it imports."""
    names = set(MODULES)
    graph = {}
    for m, path in FILES.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        graph[m] = bench_imports(path.read_text(), names, package) - {m}
    return graph


def test_the_parser_sees_function_level_and_package_imports():
    src = "from bench.a import x\nimport bench.b\nfrom bench import c, SCHEMA_VERSION\ndef f():\n    from bench.d import y\n"
    assert bench_imports(src, {"a", "b", "c", "d", "e"}) == {"a", "b", "c", "d"}


def test_the_parser_resolves_submodules_of_the_cli_package():
    src = "from bench.cli.options import X\nfrom bench.cli import bench_cmd, app\nfrom .app import main\nimport bench.engine\n"
    modules = {"cli", "cli.options", "cli.bench_cmd", "cli.app", "engine"}
    assert bench_imports(src, modules, package="cli") == {"cli.options", "cli.bench_cmd", "cli.app", "engine"}


def test_no_import_cycle_among_bench_modules():
    graph = import_graph()
    assert graph["plan"] and graph["accuracy"] and graph["cli.bench_cmd"]  # the graph is not trivially empty
    assert {"cli.options", "engine"} <= graph["cli.ablate_cmd"]  # bench/cli is in it
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
    graph = import_graph()
    cli = {m for m in MODULES if m == "cli" or m.startswith("cli.")}
    importers = sorted(m for m in MODULES if m not in cli and graph[m] & cli)
    assert importers == [], f"bench modules that import bench.cli: {importers}"
    assert any(graph[m] - cli for m in cli)  # the commands do import the harness
