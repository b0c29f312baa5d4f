"""`ToolSource`: tools that come from elsewhere (an MCP server), asked for at run time.

`LlmAgent(tool_sources=[...])` takes anything with an async `list_tools(ctx)`. Before each
model turn the agent asks every source for its tools and offers them beside its own, so a
source whose list changes (a server's `tools/list_changed`) is seen on the next turn, and
one may filter by the run's context. A source that is slow to list should cache: the MCP
handle does. Two tools of the same name (across sources, or a source's and the agent's)
fail the run with `ToolSourceError.DuplicateName`; `await LlmAgent.builder()...build_resolved()`
asks every source once up front, so the clash (or a server that does not answer) fails
the build instead.

Example:
    ```python
    import asyncio
    from collections.abc import Sequence

    from helikon import LlmAgent, RunContext, Tool, tool
    from helikon.testing import MockModel, text_turn, tool_call_turn

    @tool
    def forecast(city: str) -> str:
        \"\"\"Tomorrow's weather.\"\"\"
        return f"sun in {city}"

    class Weather:
        async def list_tools(self, ctx: RunContext[None] | None) -> Sequence[Tool[None]]:
            return [forecast]

    model = MockModel.with_scripts([tool_call_turn("forecast", {"city": "Oslo"}), text_turn("sunny")])

    async def main() -> None:
        agent = await LlmAgent.builder().name("a").model(model).tool_source(Weather()).build_resolved()
        assert (await agent.run("weather?")).final_output == "sunny"

    asyncio.run(main())
    ```
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .exceptions import DuplicateName, UserError
from .model import ToolDef

if TYPE_CHECKING:
    from .agent import LlmAgent
    from .context import RunContext
    from .tools import Tool

Ctx = TypeVar("Ctx")


@runtime_checkable
class ToolSource(Protocol[Ctx]):
    """Something that provides tools at run time; `McpServerHandle` is one."""

    async def list_tools(self, ctx: RunContext[Ctx] | None) -> Sequence[Tool[Any]]:
        """The tools to offer now (`ctx`: the run's context, `None` when asked at build time)."""
        ...


def checked_sources(sources: Iterable[object], owner: str) -> tuple[ToolSource[Any], ...]:
    """`sources` as a tuple, each with an async `list_tools`, or a `UserError` naming the bad one."""
    if isinstance(sources, (str, bytes)):
        raise UserError(f"{owner}: give a list of tool sources, not {sources!r}")
    checked: list[ToolSource[Any]] = []
    for index, source in enumerate(sources):
        if not isinstance(source, ToolSource):
            raise UserError(
                f"{owner}: item {index} ({source!r}) is not a tool source; give an object with "
                "`async def list_tools(self, ctx)` (an MCP server handle is one)"
            )
        checked.append(source)  # pyright: ignore[reportUnknownArgumentType]
    return tuple(checked)


async def source_tools(
    agent: LlmAgent[Any, Any], ctx: RunContext[Any] | None
) -> list[tuple[Tool[Any], ToolDef]]:
    """Every source's tools now, with their definitions, checked against each other and the agent's.

    Raises:
        DuplicateName: Two tools would share a name.
    """
    owners: dict[str, str] = dict.fromkeys(agent.tools_by_name, "the agent's own tools")
    owners.update(dict.fromkeys(agent.handoffs_by_tool, "the agent's handoffs"))
    found: list[tuple[Tool[Any], ToolDef]] = []
    for source in agent.tool_sources:
        label = repr(source)
        for tool in await source.list_tools(ctx):
            name = tool.name
            if name in owners:
                raise DuplicateName(name, owners[name], label)
            owners[name] = label
            strict = getattr(tool, "strict", False)
            tool_def = ToolDef(name=name, description=tool.description, parameters=tool.schema, strict=strict)
            found.append((tool, tool_def))
    return found


__all__ = ["ToolSource", "checked_sources", "source_tools"]
