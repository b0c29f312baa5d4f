"""The error tree in `helikon.core.exceptions`' docstring lists every exception helikon defines.

Each class under `HelikonError`, wherever it is defined, appears once in the tree under its
own base class; one defined outside `exceptions.py` names, in backticks and parentheses, a
module it is importable from (or its base's entry does). An exception class outside the root
is an internal signal: never public.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import helikon
from helikon.core import exceptions
from helikon.core.exceptions import HelikonError

SRC = Path(helikon.__file__).parent
_BUILTIN_BASES = {"BaseException", "Exception", "OSError", "ValueError", "RuntimeError", "TypeError"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defined_exceptions() -> set[type[BaseException]]:
    """Every exception class defined in `src/helikon`: found by name in the source, checked on import."""
    bases: dict[str, set[str]] = {}
    homes: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {ast.unparse(base).split(".")[-1] for base in node.bases}
                bases.setdefault(node.name, set()).update(names)
                homes.setdefault(node.name, set()).add(_module_name(path))
    errors = set(_BUILTIN_BASES)
    grown = True
    while grown:
        found = {name for name, named in bases.items() if named & errors} - errors
        errors |= found
        grown = bool(found)
    classes: set[type[BaseException]] = set()
    for module in sorted({home for name in errors - _BUILTIN_BASES for home in homes[name]}):
        for value in vars(importlib.import_module(module)).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module:
                classes.add(value)
    return classes


def _tree() -> dict[str, tuple[str | None, str]]:
    """The docstring's tree: class name -> (its parent's name, the text of its entry)."""
    doc = exceptions.__doc__ or ""
    block = doc.split("```")[1]
    entries: dict[str, tuple[str | None, str]] = {}
    path: list[str] = []
    last = ""
    for line in block.strip("\n").splitlines():
        found = re.match(r"^([│ ├└─]*)([A-Z]\w*)\s*(.*)$", line)
        if found is None or (found.group(1) and "── " not in found.group(1)):
            name, text = last, entries[last][1] + " " + line.strip()  # an entry's continuation line
            entries[name] = (entries[name][0], text)
            continue
        depth = len(found.group(1)) // 4
        name = found.group(2)
        assert name not in entries, f"{name} is in the tree twice"
        del path[depth:]
        entries[name] = (path[-1] if path else None, found.group(3))
        path.append(name)
        last = name
    return entries


def test_the_tree_lists_every_exception_under_the_root_where_it_belongs() -> None:
    tree = _tree()
    rooted = {cls for cls in _defined_exceptions() if issubclass(cls, HelikonError)}
    missing = sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in rooted if cls.__name__ not in tree)
    assert missing == [], f"add these to the tree in core/exceptions.py's docstring: {missing}"
    for cls in rooted:
        parent, _ = tree[cls.__name__]
        base = (
            next(b for b in cls.__bases__ if issubclass(b, HelikonError)) if cls is not HelikonError else None
        )
        assert parent == (base.__name__ if base else None), f"{cls.__name__} is drawn under {parent}"


def test_every_name_in_the_tree_is_such_a_class_importable_where_the_tree_says() -> None:
    tree = _tree()
    for name in tree:
        cls = getattr(exceptions, name, None)
        if cls is None:  # defined elsewhere: the entry, or the nearest one above it, names the module
            home, above = None, name
            while home is None and above is not None:
                parent, text = tree[above]
                found = re.search(r"\(`([a-z_.]+)`\)", text)
                home, above = (found.group(1) if found else None), parent
            assert home is not None, f"{name}: defined outside exceptions.py, so the tree names its module"
            cls = getattr(importlib.import_module(f"helikon.{home}"), name, None)
            assert cls is not None, f"{name} is not importable from helikon.{home}"
        assert isinstance(cls, type) and issubclass(cls, HelikonError), name


def test_an_exception_outside_the_root_is_never_public() -> None:
    public: list[str] = []
    for cls in _defined_exceptions():
        if issubclass(cls, HelikonError):
            continue
        private_module = any(part.startswith("_") for part in cls.__module__.split("."))
        if not private_module and cls.__name__ in getattr(
            importlib.import_module(cls.__module__), "__all__", ()
        ):
            public.append(f"{cls.__module__}.{cls.__qualname__}")
    assert public == [], f"raise a HelikonError subclass to users instead of {public}"


def test_the_tree_and_the_classes_are_read_whole() -> None:
    found = {cls.__name__ for cls in _defined_exceptions()}
    assert {"GraphBuildError", "ServerError", "McpError", "OsSandboxUnsupported", "CallbackRaised"} <= found
    tree = _tree()
    assert {"HelikonError", "UserError", "GraphBuildError", "ServerError"} <= set(tree)
    assert tree["GraphBuildError"][0] == "UserError" and tree["HelikonError"][0] is None
    assert "core.conversation_check" in tree["InvalidConversationError"][1]  # a continuation line
