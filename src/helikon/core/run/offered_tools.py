"""The tools a turn offers: the sources' tools, each tool's `enabled`, then the `prepare_tools` functions.

Only runs that use one of them come here (`LlmAgent.dynamic_tools`, `RunConfig.prepare_tools`);
the others send the definitions the agent built once. What the model is offered is what it
may call: the driver keeps this turn's name -> tool map for the tool calls that follow.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._internal.callbacks import CallbackRaised, CallbackReturned
from ..model import ModelRequest, ToolDef
from ..tool_sources import source_tools

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..context import RunContext
    from ..tools import PrepareTools, Tool


async def offer(
    agent: LlmAgent[Any], ctx: RunContext[Any], request: ModelRequest, run_prepare: PrepareTools | None
) -> tuple[ModelRequest, dict[str, Tool[Any]]]:
    """`request` with this turn's tool definitions, and the tool each offered name calls.

    Raises:
        CallbackRaised: An `enabled` predicate or `prepare_tools` raised, or returned
            something it should not have (the run fails, naming it).
    """
    defs: list[ToolDef] = []
    by_name: dict[str, Tool[Any]] = {}
    offered: list[tuple[Tool[Any], ToolDef]] = list(zip(agent.tools, agent.tool_defs, strict=True))
    if agent.tool_sources:
        try:
            offered += await source_tools(agent, ctx)
        except Exception as exc:
            raise CallbackRaised("a tool source", "tool_source", exc) from exc
    for tool, tool_def in offered:
        enabled = getattr(tool, "enabled", None)
        if enabled is None or await _ask(f"the enabled predicate of the tool {tool.name!r}", enabled, ctx):
            defs.append(tool_def)
            by_name[tool_def.name] = tool
    preparers = (
        (f"the prepare_tools function of {agent.name!r}", agent.prepare_tools),
        ("RunConfig.prepare_tools", run_prepare),
    )
    for what, prepare in preparers:
        if prepare is None:
            continue
        try:
            prepared: object = prepare(ctx, list(defs))
            if inspect.isawaitable(prepared):
                prepared = await prepared
        except Exception as exc:
            raise CallbackRaised(what, "prepare_tools", exc) from exc
        defs, by_name = _prepared(what, prepared, by_name, agent)
    return replace(request, tools=(*defs, *agent.handoff_defs)), by_name


async def _ask(what: str, enabled: Any, ctx: RunContext[Any]) -> bool:
    try:
        answer = enabled(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        raise CallbackRaised(what, "enabled", exc) from exc
    if not isinstance(answer, bool):
        raise CallbackReturned(what, "enabled", answer, "a bool")
    return answer


def _prepared(
    what: str, prepared: object, tools: dict[str, Tool[Any]], agent: LlmAgent[Any]
) -> tuple[list[ToolDef], dict[str, Tool[Any]]]:
    """The definitions `prepare_tools` gave and the tool each calls.

    A sequence keeps the names (a definition is the tool of its name); a mapping says which
    tool each definition is (tool name -> definition), so it may rename.
    """
    expected = "a list of ToolDef, or a dict of tool name -> ToolDef (to rename)"
    pairs: list[tuple[object, object]]
    if isinstance(prepared, Mapping):
        pairs = list(prepared.items())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    elif isinstance(prepared, Sequence) and not isinstance(prepared, str):
        items: Sequence[object] = prepared  # pyright: ignore[reportUnknownVariableType]
        pairs = [(getattr(d, "name", None), d) for d in items]
    else:
        raise CallbackReturned(what, "prepare_tools", prepared, expected)
    defs: list[ToolDef] = []
    by_name: dict[str, Tool[Any]] = {}
    for key, tool_def in pairs:
        if not isinstance(tool_def, ToolDef):
            raise CallbackReturned(what, "prepare_tools", tool_def, expected)
        tool = tools.get(key) if isinstance(key, str) else None
        if tool is None:
            raise CallbackReturned(
                what,
                "prepare_tools",
                tool_def,
                f"a definition of one of this turn's tools ({', '.join(tools) or 'none'}); "
                "to rename one, return a dict of its name -> the renamed ToolDef",
            )
        name = tool_def.name
        if name in by_name or name in agent.handoffs_by_tool:
            raise CallbackReturned(what, "prepare_tools", tool_def, "a ToolDef with a name of its own")
        defs.append(tool_def)
        by_name[name] = tool
    return defs, by_name
