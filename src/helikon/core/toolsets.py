"""Toolsets: a group of tools that filters, prefixes and renames as a whole.

A `Toolset` goes in `LlmAgent(tools=[...])` beside plain tools; each combinator returns a
new toolset and leaves the old one as it was, so they chain. The decisions are made once,
when the toolset is built: per-turn choices are a tool's `enabled` or the agent's
`prepare_tools`.

The model calls a renamed tool by its new name, and that name is what hooks, events,
`ToolContext.tool_name` and the session record. Permission rules and guards match the
tool's own name (what the tool is: a `Bash` offered as `sh_Bash` is still `Bash` to the
Bash rules), so no rename takes a tool out from under a deny rule.

Example:
    ```python
    from helikon import Toolset, tool

    @tool
    def list_issues(repo: str) -> list[str]:
        \"\"\"List a repository's open issues.\"\"\"
        return []

    @tool
    def delete_repo(repo: str) -> str:
        \"\"\"Delete a repository.\"\"\"
        return "gone"

    github = Toolset([list_issues, delete_repo]).filtered(lambda t: t.name != "delete_repo").prefixed("gh_")
    assert [t.name for t in github] == ["gh_list_issues"]
    assert [t.name for t in github.renamed({"gh_list_issues": "issues"})] == ["issues"]
    ```
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from ._internal.json_value import JsonObject, JsonValue
from .context import ToolContext
from .exceptions import UserError
from .tools import Tool, ToolEffect, ToolOutput

Ctx = TypeVar("Ctx")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class RenamedTool(Generic[Ctx]):
    """`tool` offered to the model as `name`; everything else is the tool's own.

    `own_name` is the name the tool was built with (what permission rules match).
    """

    __slots__ = ("name", "own_name", "wrapped")

    def __init__(self, tool: Tool[Ctx], name: str) -> None:
        if isinstance(tool, RenamedTool):  # one layer, however often it is renamed
            tool = tool.wrapped  # pyright: ignore[reportUnknownMemberType]
        self.wrapped: Tool[Ctx] = tool
        self.own_name: str = tool.name
        self.name = name

    def __repr__(self) -> str:
        return f"RenamedTool({self.wrapped!r}, {self.name!r})"

    @property
    def description(self) -> str:
        """The tool's description."""
        return self.wrapped.description

    @property
    def schema(self) -> JsonObject:
        """The tool's argument schema."""
        return self.wrapped.schema

    @property
    def output_schema(self) -> JsonObject | None:
        """The tool's output schema."""
        return self.wrapped.output_schema

    @property
    def effect(self) -> ToolEffect:
        """The tool's effect."""
        return self.wrapped.effect

    def __getattr__(self, name: str) -> Any:
        # The tool's optional options (strict, max_retries, enabled, ...) read through.
        if name == "wrapped":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    async def invoke(self, ctx: ToolContext[Ctx], args: JsonValue) -> ToolOutput:
        """Run the tool."""
        return await self.wrapped.invoke(ctx, args)


class Toolset(Generic[Ctx]):
    """Tools (and other toolsets) as one group; iterate it for its tools.

    Args:
        tools: The tools, and toolsets whose tools join this one (names must be unique).
    """

    __slots__ = ("tools",)

    def __init__(self, tools: Iterable[Tool[Ctx] | Toolset[Ctx]]) -> None:
        if isinstance(tools, Toolset | str) or not isinstance(tools, Iterable):
            raise UserError(f"Toolset({tools!r}): give a list of tools (and toolsets)")
        flat: list[Tool[Ctx]] = []
        for index, item in enumerate(tools):
            if isinstance(item, Toolset):
                flat.extend(item.tools)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            elif callable(getattr(item, "invoke", None)) and isinstance(getattr(item, "name", None), str):
                flat.append(item)
            else:
                raise UserError(
                    f"Toolset([...]): item {index} ({item!r}) is not a Tool or a Toolset; "
                    "decorate the function with @tool"
                )
        seen: set[str] = set()
        for t in flat:
            if t.name in seen:
                raise UserError(f"Toolset([...]): two tools are named {t.name!r}; rename one (.renamed)")
            seen.add(t.name)
        self.tools: tuple[Tool[Ctx], ...] = tuple(flat)

    def __iter__(self) -> Iterator[Tool[Ctx]]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"Toolset({[t.name for t in self.tools]})"

    def filtered(self, keep: Callable[[Tool[Ctx]], bool]) -> Toolset[Ctx]:
        """The tools `keep` says True for."""
        if not callable(keep):
            raise UserError(f"Toolset.filtered({keep!r}): give a function of a Tool returning a bool")
        return Toolset([t for t in self.tools if keep(t)])

    def prefixed(self, prefix: str) -> Toolset[Ctx]:
        """Every tool offered as `prefix + name` (e.g. `"gh_"`: `list_issues` becomes `gh_list_issues`)."""
        if not isinstance(prefix, str) or not prefix or not _NAME.match(prefix):
            raise UserError(
                f"Toolset.prefixed({prefix!r}): a prefix is letters, digits, '_' or '-', e.g. 'gh_'"
            )
        return self.renamed({t.name: prefix + t.name for t in self.tools})

    def renamed(self, names: Mapping[str, str]) -> Toolset[Ctx]:
        """The tools `names` lists offered under their new names (current name -> new name)."""
        if not isinstance(names, Mapping):
            raise UserError(f"Toolset.renamed({names!r}): give a dict of current name -> new name")
        known = {t.name for t in self.tools}
        for old, new in names.items():
            if old not in known:
                tools = ", ".join(sorted(known))
                raise UserError(f"Toolset.renamed: there is no tool named {old!r} here (tools: {tools})")
            if not isinstance(new, str) or not _NAME.match(new):
                raise UserError(
                    f"Toolset.renamed: {old!r} -> {new!r}: "
                    "a tool name must be 1-64 letters, digits, '_' or '-'"
                )
        return Toolset([RenamedTool(t, names[t.name]) if t.name in names else t for t in self.tools])


def own_name(tool: Tool[Any]) -> str:
    """The name `tool` was built with, under any rename (what permission rules match)."""
    return tool.own_name if isinstance(tool, RenamedTool) else tool.name


__all__ = ["Toolset"]
