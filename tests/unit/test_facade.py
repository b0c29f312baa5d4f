"""The facade: `helikon.__all__` is sorted and complete, lazy names stay lazy, type checkers see every name.

The names are written once in `helikon.core`: the eager ones as its plain imports, the lazy
ones in its `_LAZY` table, which its `TYPE_CHECKING` imports mirror for type checkers; these
tests keep `__all__` their union and the mirror identical to the table.
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
LAZY = helikon.core._LAZY  # pyright: ignore[reportPrivateUsage]


def _relative_imports(body: list[ast.stmt]) -> dict[str, list[str]]:
    """The `from .x import a, b` statements in `body`: module -> names (the moved paths' finder aside)."""
    imports: dict[str, list[str]] = {}
    for node in body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 1
            and node.module
            and node.module != "_internal"
        ):
            assert all(alias.asname is None for alias in node.names), ast.unparse(node)
            imports.setdefault("." + node.module, []).extend(alias.name for alias in node.names)
    return imports


EAGER = _relative_imports(ast.parse(CORE_INIT.read_text()).body)
TABLES = {**{module: " ".join(names) for module, names in EAGER.items()}, **LAZY}


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


def test_core_all_is_its_eager_imports_and_its_lazy_table() -> None:
    names = [name for table in TABLES.values() for name in table.split()]
    assert helikon.core.__all__ == sorted(names)
    assert not set(EAGER) & set(LAZY), "a module is either imported or lazy"


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


def _mirror() -> dict[str, list[str]]:
    """The `if typing.TYPE_CHECKING:` imports of core/__init__.py: module -> names."""
    tree = ast.parse(CORE_INIT.read_text())
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING"
    ]
    assert len(blocks) == 1, "core/__init__.py has one TYPE_CHECKING block"
    assert all(isinstance(statement, ast.ImportFrom) for statement in blocks[0].body)
    return _relative_imports(blocks[0].body)


def test_the_type_checking_imports_mirror_the_lazy_table() -> None:
    mirror = _mirror()
    assert sorted(mirror) == sorted(LAZY), "one import per lazy module, and no other"
    for module, names in mirror.items():
        assert sorted(names) == sorted(LAZY[module].split()), module
