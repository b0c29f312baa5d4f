"""Old import paths of modules that moved: importing an old name gives the module it is now.

`core/` was one flat folder until 0.2; its session, governance and shell modules now live in
`core/session/`, `core/governance/` and `core/governance/shell/`, the other compositions of
agents in `core/workflows/`, and `@tool` beside the `Tool` protocol in `core/tools.py`
(`MOVED`). A package whose modules moved too keeps its own table and hands it to `install`
(`helikon.tools._moved`, `helikon.sessions._moved`). Code written against the old paths keeps
working: importing an old name gives the new module itself (the same object, so patching
either name patches both).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType, ModuleType

MOVED = MappingProxyType(
    {
        "helikon.core.codec": "helikon.core.session.codec",
        "helikon.core._envelope": "helikon.core.session._envelope",
        "helikon.core._log_cache": "helikon.core.session._log_cache",
        "helikon.core._memory_session": "helikon.core.session.memory",
        "helikon.core.branches": "helikon.core.session.branches",
        "helikon.core.checkpoint": "helikon.core.session.checkpoint",
        "helikon.core.compaction": "helikon.core.session.compaction",
        "helikon.core.crash_repair": "helikon.core.session.crash_repair",
        "helikon.core.request_log": "helikon.core.session.request_log",
        "helikon.core.recorder": "helikon.core.session.recorder",
        "helikon.core.permissions": "helikon.core.governance.permissions",
        "helikon.core.rules": "helikon.core.governance.rules",
        "helikon.core.path_glob": "helikon.core.governance.path_glob",
        "helikon.core.redaction": "helikon.core.governance.redaction",
        "helikon.core._guards": "helikon.core.governance._guards",
        "helikon.core._guard_find": "helikon.core.governance._guard_find",
        "helikon.core._guard_patterns": "helikon.core.governance._guard_patterns",
        "helikon.core.shell": "helikon.core.governance.shell",
        "helikon.core._shell_compound": "helikon.core.governance.shell._compound",
        "helikon.core._shell_env": "helikon.core.governance.shell._env",
        "helikon.core._shell_lex": "helikon.core.governance.shell._lex",
        "helikon.core._shell_parse": "helikon.core.governance.shell._parse",
        "helikon.core._shell_resolve": "helikon.core.governance.shell._resolve",
        "helikon.core._shell_words": "helikon.core.governance.shell._words",
        "helikon.core._shell_wrappers": "helikon.core.governance.shell._wrappers",
        "helikon.core.swarm": "helikon.core.workflows.swarm",
        "helikon.core.agent_tool": "helikon.core.workflows.agent_tool",
        "helikon.core._pair_cut": "helikon.core.session._pair_cut",
        "helikon.core._function_tool": "helikon.core.tools",
    }
)
"""`core`'s old module names -> the module each is now."""


class _Alias:  # a loader (duck-typed: importlib.abc costs ~9 ms to import)
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a throwaway module; exec_module puts the real one in its place

    def exec_module(self, module: ModuleType) -> None:
        # The import system reads sys.modules again after exec_module, so the import
        # statement binds the moved module itself.
        sys.modules[module.__name__] = importlib.import_module(self.new)


class MovedModules:
    """A meta path finder: an old module name in `moves` loads as the module it is now."""

    def __init__(self, moves: Mapping[str, str]) -> None:
        self.moves = moves

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = self.moves.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))  # pyright: ignore[reportArgumentType]  (a duck-typed Loader)


def install(moves: Mapping[str, str]) -> None:
    """Put a finder for the table `moves` on `sys.meta_path` once (a no-op when it is already there)."""
    if not any(isinstance(finder, MovedModules) and finder.moves is moves for finder in sys.meta_path):
        sys.meta_path.append(MovedModules(moves))
