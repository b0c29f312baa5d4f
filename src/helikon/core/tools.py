"""Tools: the `Tool` protocol, `ToolEffect`, `ToolOutput`, and `@tool` / `FunctionTool`.

`@tool` turns a typed (async or sync) function into a `Tool`: the arguments' JSON Schema
comes from the signature (pydantic), the description from the docstring, parameter
descriptions from its Args section or from `Annotated[..., Field(description=...)]`.

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
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    Literal,
    Protocol,
    TypeAlias,
    TypeVar,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    overload,
    runtime_checkable,
)

from ._internal.carrier import carrier
from ._internal.json_value import JsonObject, JsonValue
from .context import RunContext, ToolContext
from .exceptions import InvalidArgs, UserError
from .items import ContentPart, TextPart
from .run.tool_args import MAX_TOOL_ARGS_CHARS, MAX_TOOL_ARGS_DEPTH, args_object

if TYPE_CHECKING:
    from datetime import timedelta

    from pydantic import BaseModel, TypeAdapter

    from .model import ToolDef

Ctx = TypeVar("Ctx")

TimeoutBehavior: TypeAlias = Literal["error_result", "fail_run"]
"""What a call past its tool's `timeout` becomes: an error result the model reads, or the run's failure."""

Enabled: TypeAlias = Callable[[RunContext[Any]], bool | Awaitable[bool]]
"""A tool's `enabled` predicate: a (sync or async) function of the run's context, asked each model turn."""

NeedsApprovalCheck: TypeAlias = Callable[[RunContext[Any], JsonValue], bool | Awaitable[bool]]
"""A tool's `needs_approval` predicate: a (sync or async) function of the context and a call's arguments."""

PrepareTools: TypeAlias = Callable[
    [RunContext[Any], "list[ToolDef]"],
    "Sequence[ToolDef] | Mapping[str, ToolDef] | Awaitable[Sequence[ToolDef] | Mapping[str, ToolDef]]",
]
"""An agent's `prepare_tools`: given the run's context and the tool definitions on offer this
turn, the ones to offer. A list keeps each tool's name (filter it out, or rewrite its
description or schema with `dataclasses.replace`); a dict of tool name -> definition may
also rename (the model calls the new name; the call runs the tool the key names)."""


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

    A string travels to the model as it is; any other value as compact JSON. `metadata`
    is what a UI shows of the result (a path, a line range, bytes, a truncated flag); the
    model never sees it.
    """

    value: JsonValue = None
    parts: tuple[ContentPart, ...] | None = None
    metadata: JsonObject | None = None

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

    Raise `ToolError.InvalidArgs` when the arguments do not fit, `ModelRetry` to send the
    model back with a reason, `ToolError.Denied` to refuse (the model reads the reason;
    `RunConfig.fail_on_tool_denied` fails the run instead), or any other exception (the
    model sees it as an error result). Arguments past `MAX_TOOL_ARGS_DEPTH` or
    `MAX_TOOL_ARGS_CHARS` never reach `invoke`.

    Optional attributes the run reads when a tool has them: `strict`, `max_retries` (how
    often the model is sent back to correct a call; 1 without it) and `enabled` (a
    predicate of the `RunContext` asked before each model turn), as `FunctionTool` has;
    `approval_prompt`, a question each call is put to the approval handler under the
    `DEFAULT` and `ACCEPT_EDITS` modes unless an allow rule covers it (an MCP tool its
    server marks destructive has one); and `needs_approval` (True, or a predicate of the
    context and the arguments): every call it says so for waits for a person's decision,
    whatever the rules and the mode (see `helikon.core.approvals`).
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


_pydantic: Any = None  # the pydantic module, once a FunctionTool has been built
_pydantic_core: Any = None

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class FunctionTool(Generic[Ctx]):
    """A `Tool` made from a Python function by `@tool`."""

    __slots__ = (
        "_args_model",
        "_fn",
        "_from_text",
        "_is_async",
        "_lone_model",
        "_param_names",
        "_return_adapter",
        "_takes_ctx",
        "description",
        "effect",
        "enabled",
        "max_retries",
        "name",
        "needs_approval",
        "output_schema",
        "schema",
        "strict",
        "timeout",
        "timeout_behavior",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effect: ToolEffect = ToolEffect.SIDE_EFFECT,
        strict: bool = False,
        timeout: float | timedelta | None = None,
        timeout_behavior: TimeoutBehavior = "error_result",
        max_retries: int = 1,
        enabled: Enabled | None = None,
        needs_approval: bool | NeedsApprovalCheck = False,
    ) -> None:
        global _pydantic, _pydantic_core
        import pydantic
        import pydantic_core
        from pydantic import ConfigDict, Field, TypeAdapter, create_model
        from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

        # Bound here, not at module import: `import helikon` must not import pydantic.
        _pydantic, _pydantic_core = pydantic, pydantic_core

        if not callable(fn):
            raise UserError(f"@tool: expected a function, got {type(fn).__name__}")
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if not _NAME.match(tool_name):
            raise UserError(
                f"@tool(name={tool_name!r}): a tool name must be 1-64 letters, digits, '_' or '-'"
            )
        if not isinstance(effect, ToolEffect):
            raise UserError(f"@tool(effect={effect!r}): use ToolEffect.READ_ONLY, WRITE or SIDE_EFFECT")
        self.name = tool_name
        self.effect = effect
        self.strict = strict
        self.timeout = _checked_options(tool_name, timeout, timeout_behavior, max_retries, enabled)
        self.timeout_behavior: TimeoutBehavior = timeout_behavior
        self.max_retries = max_retries
        self.enabled = enabled
        if not isinstance(needs_approval, bool) and not callable(needs_approval):
            raise UserError(
                f"@tool {tool_name!r}: needs_approval={needs_approval!r}; give True, False or a "
                "function of (ctx, args) that says whether a call needs approval"
            )
        self.needs_approval: bool | NeedsApprovalCheck = needs_approval
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)

        doc = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else doc.description
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise UserError(f"@tool {tool_name!r}: cannot resolve the type hints ({exc})") from exc

        params = list(inspect.signature(fn).parameters.values())
        self._takes_ctx = bool(params) and _is_tool_context(hints.get(params[0].name))
        if self._takes_ctx:
            params = params[1:]
        fields: dict[str, Any] = {}
        annotations: dict[str, Any] = {}
        for param in params:
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise UserError(
                    f"@tool {tool_name!r}: parameter {param.name!r} is *args/**kwargs; "
                    "a tool needs named parameters so its schema can list them"
                )
            if param.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise UserError(
                    f"@tool {tool_name!r}: parameter {param.name!r} is positional-only; make it a normal one"
                )
            if _is_tool_context(hints.get(param.name)):
                raise UserError(
                    f"@tool {tool_name!r}: parameter {param.name!r} is a ToolContext; "
                    "the ToolContext must be the first parameter"
                )
            annotation = hints.get(param.name, Any)
            default = ... if param.default is inspect.Parameter.empty else param.default
            # Fields are named p0, p1, ... and aliased to the parameter's name, so that a
            # parameter may be called `schema`, `json`, `model_config` or `_id` without
            # clashing with (or being hidden by) pydantic's own BaseModel attributes.
            described = doc.params.get(param.name)
            alias = Field(alias=param.name, description=described) if described else Field(alias=param.name)
            fields[f"p{len(fields)}"] = (Annotated[annotation, alias], default)
            annotations[param.name] = annotation
        self._param_names = tuple(annotations)
        # A lone pydantic-model parameter is the arguments object itself: the model calls
        # `{"city": "Paris"}`, not `{"args": {"city": "Paris"}}`, and the function gets the model.
        lone = _lone_model(annotations, pydantic.BaseModel)
        self._lone_model = lone is not None
        try:
            self._args_model: type[BaseModel] = (
                lone
                if lone is not None
                else create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
            )
            schema = self._args_model.model_json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            culprit = _unschemable(annotations)
            where = f"parameter {culprit!r}" if culprit else "a parameter"
            raise UserError(
                f"@tool {tool_name!r}: the type of {where} cannot be turned into a JSON Schema: {exc}"
            ) from exc
        self.schema: JsonObject = _tidy_schema(schema)
        self._from_text = _json_mode_agrees(self._args_model.__pydantic_core_schema__)

        self._return_adapter: TypeAdapter[Any] | None = None
        self.output_schema: JsonObject | None = None
        returns = hints.get("return", inspect.Signature.empty)
        # A tool that builds its own ToolOutput has no JSON output to describe.
        if returns not in (inspect.Signature.empty, None, type(None), Any, ToolOutput):
            try:
                self._return_adapter = TypeAdapter(returns)
                self.output_schema = _tidy_schema(self._return_adapter.json_schema(mode="serialization"))
            except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
                raise UserError(
                    f"@tool {tool_name!r}: the return type {returns!r} cannot be serialized to JSON: {exc}"
                ) from exc

    def __repr__(self) -> str:
        return f"FunctionTool({self.name!r})"

    async def invoke(self, ctx: ToolContext[Ctx], args: JsonValue) -> ToolOutput:
        """Validate `args`, call the function, serialize what it returns."""
        parsed = self._validated(args)
        if self._lone_model:
            kwargs = {self._param_names[0]: parsed}
        else:
            kwargs = {name: getattr(parsed, f"p{i}") for i, name in enumerate(self._param_names)}
        if self.timeout is None:
            result = await self._call(ctx, kwargs)
        else:
            import asyncio

            try:
                # Cancels the coroutine; a sync tool's thread cannot be stopped, only no longer awaited.
                result = await asyncio.wait_for(self._call(ctx, kwargs), self.timeout)
            except TimeoutError:
                raise TimedOut(self.name, self.timeout, self.timeout_behavior) from None
        if isinstance(result, ToolOutput):
            return result
        return ToolOutput(self._to_json(result))

    def validate_args(self, args: JsonValue) -> None:
        """Check `args` against the tool's schema, as a call would be.

        Raises:
            InvalidArgs: They do not fit; the message lists what is wrong.
        """
        self._validated(args)

    def _validated(self, args: JsonValue) -> BaseModel:
        """The arguments model of `args` (JSON text or its parsed form); `InvalidArgs` if they do not fit."""
        if self._from_text and isinstance(args, str):
            # JSON text is validated as pydantic parses it, with no dict in between. Text it
            # refuses takes the way below, so every refusal reads as it always has.
            try:
                return self._args_model.model_validate_json(args)
            except _pydantic.ValidationError:
                pass
        args = args_object(args)
        try:
            return self._args_model.model_validate(args)
        except _pydantic.ValidationError as exc:
            raise InvalidArgs(_format_errors(exc)) from None

    def _call(self, ctx: ToolContext[Ctx], kwargs: dict[str, Any]) -> Awaitable[Any]:
        fn = self._fn
        if self._is_async:
            return fn(ctx, **kwargs) if self._takes_ctx else fn(**kwargs)
        import asyncio  # only sync tools need it, and then a thread hop costs far more

        return asyncio.to_thread(fn, ctx, **kwargs) if self._takes_ctx else asyncio.to_thread(fn, **kwargs)

    def _to_json(self, value: Any) -> JsonValue:
        try:
            if self._return_adapter is not None:
                return self._return_adapter.dump_python(value, mode="json")
            if value is None or isinstance(value, str | int | float | bool):
                return value
            return _pydantic_core.to_jsonable_python(value)
        except (_pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
            raise TypeError(
                f"tool {self.name!r} returned a {type(value).__name__}, "
                f"which cannot be serialized to JSON: {exc}"
            ) from exc


class TimedOut(Exception):
    """A tool call ran past its tool's `timeout`; how the run takes it is the tool's `timeout_behavior`."""

    def __init__(self, tool: str, seconds: float, behavior: TimeoutBehavior) -> None:
        super().__init__(f"the tool {tool!r} timed out after {seconds:g}s")
        self.seconds = seconds
        self.behavior = behavior


def _checked_options(
    tool_name: str, timeout: object, behavior: object, max_retries: object, enabled: object
) -> float | None:
    """Check `@tool`'s call options; the timeout in seconds."""
    if behavior not in ("error_result", "fail_run"):
        raise UserError(
            f"@tool {tool_name!r}: timeout_behavior={behavior!r}; "
            "use 'error_result' (the model reads the timeout) or 'fail_run'"
        )
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise UserError(
            f"@tool {tool_name!r}: max_retries={max_retries!r}; give how many times the model may "
            "be sent back to correct a call (an int >= 0)"
        )
    if enabled is not None and not callable(enabled):
        raise UserError(
            f"@tool {tool_name!r}: enabled={enabled!r}; give a function of the RunContext "
            "returning whether the tool is offered this turn"
        )
    if timeout is None:
        return None
    from datetime import timedelta

    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise UserError(
            f"@tool {tool_name!r}: timeout={timeout!r}; give positive seconds (or a timedelta), "
            "or None for no limit"
        )
    return float(timeout)


def _lone_model(annotations: dict[str, Any], base: type[BaseModel]) -> type[BaseModel] | None:
    """The pydantic model that is the only parameter (beside the context), if it is one."""
    if len(annotations) != 1:
        return None
    (annotation,) = annotations.values()
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, base):
        return annotation
    return None


def _is_tool_context(annotation: object) -> bool:
    return annotation is ToolContext or get_origin(annotation) is ToolContext


class _Doc:
    __slots__ = ("description", "params")

    def __init__(self, description: str, params: dict[str, str]) -> None:
        self.description = description
        self.params = params


def _parse_docstring(text: str) -> _Doc:
    if not text:
        return _Doc("", {})
    from docstring_parser import parse

    parsed = parse(text)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {p.arg_name: p.description for p in parsed.params if p.description}
    return _Doc("\n\n".join(parts), params)


def _unschemable(annotations: dict[str, Any]) -> str | None:
    """The first parameter whose type pydantic cannot turn into a JSON Schema."""
    from pydantic import TypeAdapter

    for name, annotation in annotations.items():
        try:
            TypeAdapter(annotation).json_schema()
        except Exception:
            return name
    return None


# Keywords whose values are data (a default, an example), not schemas: leave them whole.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})


def _tidy_schema(schema: dict[str, Any]) -> JsonObject:
    """Drop pydantic's auto-generated titles: they add tokens and tell the model nothing."""

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                k: v if k in _DATA_KEYWORDS and not in_properties else walk(v, k in ("properties", "$defs"))
                for k, v in node.items()  # pyright: ignore[reportUnknownVariableType]
                if not (k == "title" and not in_properties and isinstance(v, str))
            }
        if isinstance(node, list):
            return [walk(v) for v in node]  # pyright: ignore[reportUnknownVariableType]
        return node

    return walk(schema)


def _json_mode_agrees(schema: object) -> bool:
    """Whether pydantic, given JSON text for `schema` (a core schema), accepts what it accepts parsed.

    It does, but where a schema is strict (JSON mode takes an ISO string for a strict
    `datetime`, a value for a strict `Enum`, an array for a strict `tuple`) or validates JSON
    and Python apart (`json-or-python`, as `Path` does): arguments with either are validated
    in their parsed form, as before.
    """
    if isinstance(schema, dict):
        node = cast("dict[str, object]", schema)
        if node.get("strict") is True or node.get("type") == "json-or-python":
            return False
        return all(_json_mode_agrees(value) for value in node.values())
    if isinstance(schema, list | tuple):
        return all(_json_mode_agrees(value) for value in cast("Sequence[object]", schema))
    return True


def _format_errors(exc: Any) -> list[str]:
    out: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        out.append(f"{loc}: {err['msg']}")
    return out


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: Callable[..., Awaitable[Any]] | Callable[..., Any], /) -> FunctionTool[Any]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect = ToolEffect.SIDE_EFFECT,
    strict: bool = False,
    timeout: float | timedelta | None = None,
    timeout_behavior: TimeoutBehavior = "error_result",
    max_retries: int = 1,
    enabled: Enabled | None = None,
    needs_approval: bool | NeedsApprovalCheck = False,
) -> Callable[[Callable[..., Any]], FunctionTool[Any]]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: ToolEffect = ToolEffect.SIDE_EFFECT,
    strict: bool = False,
    timeout: float | timedelta | None = None,
    timeout_behavior: TimeoutBehavior = "error_result",
    max_retries: int = 1,
    enabled: Enabled | None = None,
    needs_approval: bool | NeedsApprovalCheck = False,
) -> FunctionTool[Any] | Callable[[Callable[..., Any]], FunctionTool[Any]]:
    """Turn a function into a `Tool`: `@tool` or `@tool(name=..., effect=...)`.

    The function may be async (awaited on the event loop) or sync (run in a worker
    thread, so it may block). An optional first parameter annotated `ToolContext[Ctx]`
    receives the run's tool context. Parameter descriptions come from the docstring's
    Google-style arguments section or from `Annotated[T, Field(description=...)]`.

    Args:
        fn: The function (when used as a bare `@tool`).
        name: The tool's name; defaults to the function's name.
        description: What the tool does; defaults to the docstring.
        effect: What the tool does to the world (default `ToolEffect.SIDE_EFFECT`).
        strict: Ask providers that support it to enforce the schema exactly.
        timeout: Seconds (or a `timedelta`) a call may take; past it the call is cancelled
            (a sync tool's thread is no longer waited for) and becomes what
            `timeout_behavior` says. None (the default): no limit.
        timeout_behavior: `"error_result"` (the default): the model reads that the call timed
            out and may try again; `"fail_run"`: the run fails.
        max_retries: How many times in a run the model is sent back to correct a call of this
            tool, for invalid arguments or a `ModelRetry` the tool raised (default 1); one more
            fails the run, naming the tool.
        enabled: A (sync or async) function of the `RunContext`, asked before each model
            turn: while it says False the tool is not offered, and a call to it gets an
            error result. None (the default): always offered.
        needs_approval: True: every call waits for a person's decision; or a (sync or async)
            function of (ctx, args) saying whether this call does (one that raises: it does).
            An in-process `ApprovalHandler` decides at once; without one the run pauses
            (`RunPaused`) until `agent.resume(session, decisions=...)` (see
            `helikon.core.approvals`). Default False.

    A lone pydantic-model parameter (beside the `ToolContext`) is the arguments object:
    its fields are the tool's schema, and the function receives the validated model.

    Example:
        ```python
        from helikon import tool

        @tool
        async def lookup_spending(category: str, month: str) -> dict[str, float]:
            \"\"\"Look up the user's total spending for a category in a month.\"\"\"
            return {"total": 312.40}

        assert lookup_spending.schema["required"] == ["category", "month"]
        ```
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "effect": effect,
        "strict": strict,
        "timeout": timeout,
        "timeout_behavior": timeout_behavior,
        "max_retries": max_retries,
        "enabled": enabled,
        "needs_approval": needs_approval,
    }
    if fn is not None:
        return FunctionTool(fn, **options)

    def decorate(f: Callable[..., Any]) -> FunctionTool[Any]:
        return FunctionTool(f, **options)

    return decorate


__all__ = [
    "MAX_TOOL_ARGS_CHARS",
    "MAX_TOOL_ARGS_DEPTH",
    "FunctionTool",
    "NeedsApprovalCheck",
    "PrepareTools",
    "Tool",
    "ToolEffect",
    "ToolOutput",
    "tool",
]
