"""The facade: `helikon.__all__` is sorted and complete, lazy names stay lazy, type checkers see every name.

The names are written once, in `helikon.core`'s two tables; the `TYPE_CHECKING` imports
there mirror the tables for type checkers, and these tests keep the mirror identical.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import helikon
import helikon.core

CORE_INIT = Path(helikon.core.__file__)
TABLES = {**helikon.core._EAGER, **helikon.core._LAZY}  # pyright: ignore[reportPrivateUsage]
LAZY = helikon.core._LAZY  # pyright: ignore[reportPrivateUsage]


def _public(module: types.ModuleType) -> set[str]:
    """The names a user can reach on `module` that are not submodules or underscored."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }


def _fresh(code: str) -> object:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout)


def test_all_is_sorted_and_has_each_name_once() -> None:
    for module in (helikon, helikon.core):
        assert module.__all__ == sorted(set(module.__all__)), module.__name__


def test_helikon_exports_exactly_core_open_session_and_its_version() -> None:
    assert set(helikon.__all__) == {*helikon.core.__all__, "open_session", "__version__"}


def test_open_session_is_the_sessions_one_and_loads_on_first_use() -> None:
    import helikon.sessions

    assert helikon.open_session is helikon.sessions.open_session
    code = "import sys, helikon; print('helikon.sessions' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "False"


def test_every_listed_name_resolves_to_the_object_of_its_home_module() -> None:
    for module, names in TABLES.items():
        home = importlib.import_module(module, "helikon.core")
        for name in names.split():
            assert getattr(helikon, name) is getattr(home, name), name
            assert getattr(helikon.core, name) is getattr(home, name), name


def test_every_reachable_public_name_is_listed() -> None:
    for module in (helikon, helikon.core):
        for name in helikon.core.__all__:
            getattr(module, name)  # load the lazy ones
        assert sorted(_public(module) - set(module.__all__)) == [], module.__name__


def test_each_exported_name_is_in_its_home_modules_all() -> None:
    for module, names in TABLES.items():
        home = importlib.import_module(module, "helikon.core")
        missing = sorted(set(names.split()) - set(home.__all__))
        assert missing == [], f"{home.__name__}.__all__ lacks {missing}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    for module in (helikon, helikon.core):
        assert not hasattr(module, "NoSuchName")


def test_import_helikon_loads_no_lazy_module_and_dir_shows_the_lazy_names() -> None:
    lazy_modules = sorted(importlib.import_module(m, "helikon.core").__name__ for m in LAZY)
    code = (
        "import json, sys\n"
        "import helikon, helikon.core\n"
        f"lazy = {lazy_modules!r}\n"
        "print(json.dumps({'loaded': [m for m in lazy if m in sys.modules],"
        " 'dir': dir(helikon), 'core_dir': dir(helikon.core)}))\n"
    )
    seen = _fresh(code)
    assert isinstance(seen, dict)
    assert seen["loaded"] == []
    lazy_names = {name for names in LAZY.values() for name in names.split()}
    assert lazy_names <= set(seen["dir"])
    assert lazy_names <= set(seen["core_dir"])


def _mirror() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The `if typing.TYPE_CHECKING:` imports of core/__init__.py: (module, [(name, alias)])."""
    tree = ast.parse(CORE_INIT.read_text())
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING"
    ]
    assert len(blocks) == 1, "core/__init__.py has one TYPE_CHECKING block"
    imports: list[tuple[str, list[tuple[str, str | None]]]] = []
    for statement in blocks[0].body:
        assert isinstance(statement, ast.ImportFrom) and statement.level == 1, ast.unparse(statement)
        imports.append(("." + (statement.module or ""), [(a.name, a.asname) for a in statement.names]))
    return imports


def test_the_type_checking_imports_mirror_the_tables() -> None:
    mirror = _mirror()
    assert [module for module, _ in mirror] == list(TABLES), "one import per module, in the tables' order"
    for module, aliases in mirror:
        assert [name for name, _ in aliases] == TABLES[module].split(), module
        assert all(alias == name for name, alias in aliases), f"{module}: write `X as X` to re-export X"
