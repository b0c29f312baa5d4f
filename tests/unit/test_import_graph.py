"""No import cycle in `src/helikon`: not at module level, not through imports deferred into functions.

Imports under `if TYPE_CHECKING:` are for the type checker only and are left out; every other
import counts, wherever it stands, because a deferred import that closes a loop is a cycle
held open by hand (issue 17). `from . import sibling` imports the sibling module, not a name
the package defines: it counts as an import of the sibling alone.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from pathlib import Path

import helikon

ROOT = Path(helikon.__file__).parent.parent


def _modules() -> dict[str, tuple[Path, bool]]:
    modules: dict[str, tuple[Path, bool]] = {}
    for path in (ROOT / "helikon").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(tree: ast.Module, module: str, is_package: bool, modules: Container[str] = ()) -> list[str]:
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, is_package)
                names = [f"{base}.{alias.name}" for alias in node.names]
                if not all(name in modules for name in names):  # a name the package defines
                    found.append(base)
                found.extend(names)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])

    visit(tree.body)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        for target in _imports(ast.parse(path.read_text()), name, is_package, modules):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (found := walk(start)):
            return found
    return None


def test_the_package_imports_without_a_cycle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_check_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_deferred_and_type_only_imports_are_told_apart() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .x import A\n"
        "def f():\n    from .y import B\n"
    )
    found = _imports(ast.parse(source), "helikon.core.m", is_package=False)
    assert "helikon.core.y" in found
    assert "helikon.core.x" not in found


def test_core_imports_no_sibling_package() -> None:
    # Core is the heart the other packages build on: it never reaches out to one of them (the
    # runner a run on a session goes through is core's own, not one the facade plants).
    graph = _graph()
    outside = {
        (name, target)
        for name, targets in graph.items()
        if name.startswith("helikon.core")
        for target in targets
        if target.startswith("helikon") and not target.startswith("helikon.core")
    }
    assert outside == set()


def test_the_sibling_check_sees_an_import_out_of_core() -> None:
    tree = ast.parse("from ...runtime import AsyncioRunner\n")
    found = _imports(tree, "helikon.core.session.turn", False)
    assert found == ["helikon.runtime", "helikon.runtime.AsyncioRunner"]
