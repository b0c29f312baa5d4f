"""The shape every confined file tool shares: a `Tool` over one `Sandbox`, made from a method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.context import ToolContext
from helikon.core.exceptions import UserError
from helikon.core.tools import FunctionTool, ToolEffect, ToolOutput

from .sandbox import Sandbox

Ctx = TypeVar("Ctx")

RULES = (
    "Paths are relative to the sandbox root {root}; absolute paths, '..' out of the root, "
    "symlinks leading out of it, device files and hard-linked files are refused."
)


def output(text: str, metadata: JsonObject) -> ToolOutput:
    """What the model reads (`text`) and what a UI shows (`metadata`)."""
    return ToolOutput(text, metadata=metadata)


class SandboxTool(Generic[Ctx]):
    """A `Tool` confined to `sandbox`; the arguments schema comes from the subclass's `run` method."""

    __slots__ = ("_inner", "sandbox")

    NAME = ""
    EFFECT = ToolEffect.READ_ONLY
    ABOUT = ""
    run: Callable[..., ToolOutput]
    """The tool's work: its parameters are the arguments schema (a subclass defines it)."""

    def __init__(self, sandbox: Sandbox) -> None:
        if not isinstance(sandbox, Sandbox):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"{type(self).__name__}({sandbox!r}): give a helikon.tools.Sandbox, e.g. Sandbox.open('.')"
            )
        self.sandbox = sandbox
        description = self.ABOUT + "\n\n" + RULES.format(root=sandbox.root)
        self._inner: FunctionTool[Ctx] = FunctionTool(
            self.run, name=self.NAME, description=description, effect=self.EFFECT
        )

    @property
    def name(self) -> str:
        """The name the model calls."""
        return self._inner.name

    @property
    def description(self) -> str:
        """What the tool does and the sandbox's rules, for the model."""
        return self._inner.description

    @property
    def schema(self) -> JsonObject:
        """JSON Schema of the arguments object."""
        return self._inner.schema

    @property
    def output_schema(self) -> JsonObject | None:
        """None: the output is text for the model (and metadata for a UI)."""
        return None

    @property
    def effect(self) -> ToolEffect:
        """What the tool does to the world."""
        return self._inner.effect

    async def invoke(self, ctx: ToolContext[Ctx], args: JsonValue) -> ToolOutput:
        """Validate `args` and run the tool (its file work runs in a worker thread)."""
        return await self._inner.invoke(ctx, args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sandbox!r})"


__all__ = ["RULES", "SandboxTool", "output"]
