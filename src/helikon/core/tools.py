"""Tools: the `Tool` protocol, `ToolEffect`, `ToolOutput`, and the `@tool` decorator.

Example:
    ```python
    from typing import Annotated

    from pydantic import Field

    from helikon import ToolContext, ToolEffect, tool


    @tool(effect=ToolEffect.READ_ONLY)
    async def budget_status(
        ctx: ToolContext[None],
        category: Annotated[str, Field(description='Spending category, e.g. "Dining".')],
    ) -> dict[str, float]:
        \"\"\"Look up the monthly budget for a category.\"\"\"
        return {"budget": 250.0}

    assert budget_status.name == "budget_status"
    assert budget_status.schema["properties"]["category"]["description"].startswith("Spending")
    ```
"""

from __future__ import annotations

import enum
import json
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from ._carrier import carrier
from ._json import JsonObject, JsonValue
from ._tool_args import MAX_TOOL_ARGS_CHARS, MAX_TOOL_ARGS_DEPTH
from .items import ContentPart, TextPart

Ctx = TypeVar("Ctx")

if TYPE_CHECKING:
    from .context import ToolContext


class ToolEffect(enum.Enum):
    """What a tool does to the world; the permission modes test it.

    An undeclared tool is `SIDE_EFFECT`, so `PLAN` mode blocks it.
    """

    READ_ONLY = "read_only"
    WRITE = "write"
    SIDE_EFFECT = "side_effect"


@carrier(kw_only=False)
class ToolOutput:
    """What a tool returned: the JSON value it produced, or explicit content parts.

    A string travels to the model as it is; any other value as compact JSON.
    """

    value: JsonValue = None
    parts: tuple[ContentPart, ...] | None = None

    def to_parts(self) -> tuple[ContentPart, ...]:
        """The content the model sees."""
        if self.parts is not None:
            return self.parts
        value = self.value
        text = (
            value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        )
        return (TextPart(text=text),)


@runtime_checkable
class Tool(Protocol[Ctx]):
    """A callable the model can invoke.

    Raise `ToolError.InvalidArgs` when the arguments do not fit, `ToolError.Denied` to
    refuse (the model reads the reason; `RunConfig.fail_on_tool_denied` fails the run
    instead), or any other exception (the model sees it as an error result). Arguments
    past `MAX_TOOL_ARGS_DEPTH` or `MAX_TOOL_ARGS_CHARS` never reach `invoke`.
    """

    @property
    def name(self) -> str:
        """The name the model calls."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def schema(self) -> JsonObject:
        """JSON Schema of the arguments object."""
        ...

    @property
    def output_schema(self) -> JsonObject | None:
        """JSON Schema of the output, when known."""
        ...

    @property
    def effect(self) -> ToolEffect:
        """What the tool does to the world."""
        ...

    async def invoke(self, ctx: ToolContext[Ctx], args: JsonValue) -> ToolOutput:
        """Run the tool with the model's arguments."""
        ...


__all__ = ["MAX_TOOL_ARGS_CHARS", "MAX_TOOL_ARGS_DEPTH", "Tool", "ToolEffect", "ToolOutput"]
