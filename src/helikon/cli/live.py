"""Hot reload: a sidecar's registry kept current as its files are saved, and agents that follow it.

`LiveRegistry` loads the sidecar once (a bad one fails at start), then `watch()` reloads
it on every save of the sidecar or a file it references (watchfiles, debounced): a good
save replaces the registry and reports a one-line summary of what changed; a broken one
keeps the last good definitions and reports the error with its line. `LiveAgents` is the
registry as a mapping of agents built at each lookup: a run takes the definitions current
when it starts, and keeps them to its end.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.exceptions import UserError
from .registry import Registry
from .sidecar import Sidecar


def say(line: str) -> None:
    """Report a reload on stderr."""
    print(line, file=sys.stderr, flush=True)


class LiveRegistry:
    """The current `Registry` of the sidecar at `path` (see the module)."""

    def __init__(self, path: Path, report: Callable[[str], None] = say) -> None:
        self.path = path
        self.current = Registry.load(path)
        self._report = report

    def reload(self, saved: set[Path] | None = None) -> bool:
        """Load the sidecar again after `saved` files were saved; False if it is broken (nothing changes)."""
        try:
            fresh = Registry.load(self.path)
        except UserError as exc:
            self._report(f"helikon: {self.path.name} not reloaded, keeping the last good definitions:\n{exc}")
            return False
        changes = changes_between(self.current.sidecar, fresh.sidecar)
        if not changes:  # a referenced file (a script, a prompt) changed, or nothing did
            others = sorted(path.name for path in saved or set() if path != self.path.absolute())
            changes = [f"{name} changed" for name in others] or ["no definition changed"]
        self.current = fresh
        self._report(f"reloaded {self.path.name}: {', '.join(changes)}")
        return True

    async def watch(self) -> None:
        """Reload on every save until cancelled."""
        from watchfiles import awatch  # pyright: ignore[reportUnknownVariableType] - trio in its signature

        while True:
            files = set(self.current.sidecar.files)
            names = {str(path) for path in files}

            def watched(change: Any, path: str, names: set[str] = names) -> bool:
                return str(Path(path).absolute()) in names

            async for saved in awatch(*{path.parent for path in files}, watch_filter=watched, debounce=300):
                self.reload({Path(path) for _, path in saved})  # watchfiles gives absolute paths
                if set(self.current.sidecar.files) != files:
                    break  # a file is referenced or dropped: watch the new set


def changes_between(old: Sidecar, new: Sidecar) -> list[str]:
    """What a reload changed, one phrase per agent or tool: `agent 'a' changed`, `tool 't' added`."""
    out: list[str] = []
    for kind, before, after in (("agent", old.agents, new.agents), ("tool", old.tools, new.tools)):
        for name in sorted(set(before) | set(after)):
            if name not in after:
                out.append(f"{kind} {name!r} removed")
            elif name not in before:
                out.append(f"{kind} {name!r} added")
            elif before[name] != after[name]:
                out.append(f"{kind} {name!r} changed")
    if old.eval != new.eval:
        out.append("eval settings changed")
    return out


class LiveAgents(Mapping[str, Any]):
    """The registry's runnable agents, each built afresh from the current definitions when looked up."""

    def __init__(self, live: LiveRegistry) -> None:
        self._live = live

    def __getitem__(self, name: str) -> Any:
        registry = self._live.current
        if name not in registry.names():
            raise KeyError(name)
        return registry.agent(name)

    def __contains__(self, name: object) -> bool:
        return name in self._live.current.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._live.current.names())

    def __len__(self) -> int:
        return len(self._live.current.names())


class LiveAgent:
    """One agent of a `LiveRegistry`: each run uses the definitions current when it starts."""

    def __init__(self, live: LiveRegistry, name: str) -> None:
        live.current.agent(name)  # unknown or disabled: fail now, not at the first call
        self._live = live
        self._name = name

    @property
    def name(self) -> str:
        """The agent's name."""
        return self._name

    @property
    def description(self) -> str:
        """Its description, as the sidecar says now."""
        spec = self._live.current.sidecar.agents.get(self._name)
        return spec.description if spec is not None else ""

    def run(self, input: Any, *, context: Any = None, config: Any = None) -> Any:
        """A run of the agent as currently defined."""
        return self._live.current.agent(self._name).run(input, context=context, config=config)


__all__ = ["LiveAgent", "LiveAgents", "LiveRegistry", "changes_between", "say"]
