"""`Handoff`: an agent an `LlmAgent` may transfer the conversation to.

Each handoff becomes one synthetic `transfer_to_<slug>` tool the model can call, described
by the target's description. A call to it ends the current agent's loop: the stream emits
`HandoffItem` then `AgentUpdated`, and the target continues the conversation (one level
deeper, bounded by `RunConfig.max_agent_depth`) until it answers.

`Handoff.to(agent, input_filter=..., input_type=..., on_handoff=...)` controls the transfer:
`input_filter` rewrites the history the target is sent (never what the session stores),
`input_type` gives the transfer tool typed arguments, validated before the handoff goes
ahead, and `on_handoff` is called with them. `remove_tool_calls` and
`keep_last_user_message` are ready filters.

Example:
    ```python
    from helikon import Handoff, LlmAgent
    from helikon.testing import MockModel, text_turn, tool_call_turn

    investing = LlmAgent(
        name="investing specialist",
        description="Answers questions about investing and retirement.",
        model=MockModel.with_scripts([text_turn("Start with a broad index fund.")]),
    )
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_investing_specialist", {})]),
        handoffs=[Handoff.to(investing)],
    )
    result = triage.run_sync("How should I invest $5,000?")
    assert result.final_output == "Start with a broad index fund."
    ```
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

from ._internal.callbacks import call_user
from ._internal.carrier import carrier
from .exceptions import InvalidArgs, UserError
from .input import check_run_signature
from .items import Item, ToolCall, ToolResult, UserMessage
from .model import ToolDef
from .run.tool_args import args_object

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ._internal.json_value import JsonObject, JsonValue
    from .agent import Agent
    from .context import RunContext

Ctx = TypeVar("Ctx")
A = TypeVar("A")

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_MAX_TOOL_NAME = 64  # the providers' limit on tool names
_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def handoff_slug(name: str) -> str:
    """`name` lowercased, other runs as `_`: "Investing Specialist" -> investing_specialist."""
    return _NON_ALNUM.sub("_", name.lower()).strip("_")


def transfer_tool_name(agent_name: str) -> str:
    """The tool a handoff to the agent named `agent_name` becomes, unless renamed: `transfer_to_<slug>`."""
    return f"transfer_to_{handoff_slug(agent_name)}"


@carrier
class HandoffInputData:
    """What a handoff's `input_filter` is given, and returns: the conversation the target is sent.

    The target is sent `all_items`: `input_history`, then `pre_handoff_items`, then
    `new_items`. Return a copy with the parts rewritten (`dataclasses.replace(data, ...)`,
    or `with_items`); what the filter drops is still in the session log.

    Example:
        ```python
        from helikon import HandoffInputData, TextPart, ToolCall, ToolResult, UserMessage

        data = HandoffInputData(
            input_history=(UserMessage.from_text("Invest?"),),
            new_items=(
                ToolCall(call_id="h1", name="transfer_to_x", args={}),
                ToolResult(call_id="h1", content=(TextPart(text='{"assistant": "x"}'),)),
            ),
        )
        assert [i.type for i in data.all_items] == ["user", "tool_call", "tool_result"]
        assert data.with_items(lambda i: i.type == "user").all_items == data.input_history
        ```
    """

    input_history: tuple[Item, ...] = ()
    """The conversation the handing-off agent's run was given (its input, for a target the
    transcript it was handed)."""
    pre_handoff_items: tuple[Item, ...] = ()
    """What the handing-off agent added before the turn that handed off."""
    new_items: tuple[Item, ...] = ()
    """The turn that handed off: the model's answer (with the transfer call) and the results."""
    context: RunContext[Any] | None = None
    """The run's context (None only for data built by hand)."""

    @property
    def all_items(self) -> tuple[Item, ...]:
        """The conversation the target is sent: the three parts, in order."""
        return (*self.input_history, *self.pre_handoff_items, *self.new_items)

    def with_items(self, keep: Callable[[Item], bool]) -> HandoffInputData:
        """A copy keeping, in each part, only the items `keep` accepts."""
        return HandoffInputData(
            input_history=tuple(i for i in self.input_history if keep(i)),
            pre_handoff_items=tuple(i for i in self.pre_handoff_items if keep(i)),
            new_items=tuple(i for i in self.new_items if keep(i)),
            context=self.context,
        )


HandoffFilter: TypeAlias = Callable[[HandoffInputData], "HandoffInputData | Awaitable[HandoffInputData]"]
"""A handoff's `input_filter`: sync or async, from the conversation to the one the target is sent."""


def remove_tool_calls(data: HandoffInputData) -> HandoffInputData:
    """A handoff filter: the target is sent the conversation without tool calls and their results.

    The transfer call and its result go too: the target sees the user's and the agents' messages.

    Example:
        ```python
        from helikon import HandoffInputData, TextPart, ToolCall, ToolResult, UserMessage, remove_tool_calls

        data = HandoffInputData(
            input_history=(UserMessage.from_text("Invest?"),),
            new_items=(
                ToolCall(call_id="h1", name="transfer_to_x", args={}),
                ToolResult(call_id="h1", content=(TextPart(text='{"assistant": "x"}'),)),
            ),
        )
        assert [i.type for i in remove_tool_calls(data).all_items] == ["user"]
        ```
    """
    return data.with_items(lambda item: not isinstance(item, ToolCall | ToolResult))


def keep_last_user_message(data: HandoffInputData) -> HandoffInputData:
    """A handoff filter: the target is sent only the latest user message, a fresh start on it.

    Example:
        ```python
        from helikon import AssistantMessage, HandoffInputData, UserMessage, keep_last_user_message

        data = HandoffInputData(
            input_history=(
                UserMessage.from_text("Hi"),
                AssistantMessage.from_text("Hello!"),
                UserMessage.from_text("Invest?"),
            ),
        )
        assert [i.text for i in keep_last_user_message(data).all_items] == ["Invest?"]
        ```
    """
    last = next((i for i in reversed(data.all_items) if isinstance(i, UserMessage)), None)
    return data.with_items(lambda item: item is last)


class Handoff(Generic[Ctx]):
    """A candidate agent the conversation may be transferred to.

    Build with `Handoff.to(agent)`; `LlmAgent(handoffs=[...])` also takes agents directly.
    """

    __slots__ = (
        "_adapter",
        "agent",
        "description",
        "input_filter",
        "input_type",
        "on_handoff",
        "parameters",
        "tool_name",
    )

    def __init__(
        self,
        agent: Agent[Ctx],
        *,
        tool_name: str | None = None,
        description: str | None = None,
        input_filter: HandoffFilter | None = None,
        input_type: type[Any] | None = None,
        on_handoff: Callable[..., object] | None = None,
    ) -> None:
        """Use `Handoff.to`."""
        if not callable(getattr(agent, "run", None)) or not isinstance(getattr(agent, "name", None), str):
            raise UserError(f"Handoff.to({agent!r}): expected an agent (an object with a name and run())")
        check_run_signature(f"Handoff.to({agent.name!r})", agent)
        name = tool_name if tool_name is not None else transfer_tool_name(agent.name)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            raise UserError(
                f"Handoff.to({agent.name!r}): the transfer tool name {name!r} must be 1-{_MAX_TOOL_NAME} "
                "letters, digits, '_' or '-'; pass tool_name=... (or rename the agent)"
            )
        for option, value in (("input_filter", input_filter), ("on_handoff", on_handoff)):
            if value is not None and not callable(value):
                raise UserError(
                    f"Handoff.to({agent.name!r}, {option}={value!r}): expected a function, "
                    f"got {type(value).__name__}"
                )
        self.agent = agent
        self.tool_name = name
        self.description = (
            description
            if description is not None
            else agent.description or f"Transfer the conversation to {agent.name}."
        )
        self.input_filter = input_filter
        self.on_handoff = on_handoff
        self.input_type = input_type
        self._adapter: TypeAdapter[Any] | None = None
        self.parameters: JsonObject = _PARAMETERS
        if input_type is not None:
            self._adapter, self.parameters = _arguments_schema(agent.name, input_type)

    @overload
    @classmethod
    def to(
        cls,
        agent: Agent[Ctx],
        *,
        tool_name: str | None = None,
        description: str | None = None,
        input_filter: HandoffFilter | None = None,
        input_type: type[A],
        on_handoff: Callable[[RunContext[Ctx], A], Awaitable[object] | object] | None = None,
    ) -> Handoff[Ctx]: ...

    @overload
    @classmethod
    def to(
        cls,
        agent: Agent[Ctx],
        *,
        tool_name: str | None = None,
        description: str | None = None,
        input_filter: HandoffFilter | None = None,
        input_type: None = None,
        on_handoff: Callable[[RunContext[Ctx]], Awaitable[object] | object] | None = None,
    ) -> Handoff[Ctx]: ...

    @overload
    @classmethod
    def to(
        cls,
        agent: Agent[Ctx],
        *,
        tool_name: str | None = None,
        description: str | None = None,
        input_filter: HandoffFilter | None = None,
        input_type: type[Any] | None = None,
        on_handoff: None = None,
    ) -> Handoff[Ctx]: ...

    @classmethod
    def to(
        cls,
        agent: Agent[Ctx],
        *,
        tool_name: str | None = None,
        description: str | None = None,
        input_filter: HandoffFilter | None = None,
        input_type: type[Any] | None = None,
        on_handoff: Callable[..., Awaitable[object] | object] | None = None,
    ) -> Handoff[Ctx]:
        """A handoff to `agent`, as the tool `transfer_to_<slug of its name>` (or `tool_name`).

        The tool's description is the agent's `description` unless `description` is given:
        it is what the model routes on, so make it say when to transfer.

        Args:
            agent: The target agent.
            tool_name: The transfer tool's name (default `transfer_to_<slug>`).
            description: The transfer tool's description (default the agent's).
            input_filter: Rewrites the conversation the target is sent: a function (sync or
                async) from `HandoffInputData` to `HandoffInputData`. The session log keeps
                everything; only the target's requests change. One that raises fails the run.
            input_type: The transfer tool's arguments: a pydantic model, dataclass or
                TypedDict (its JSON Schema is the tool's). Arguments that do not validate go
                back to the model as an error result, once, like a tool's.
            on_handoff: Called (sync or async) as the handoff goes ahead: `on_handoff(ctx,
                args)` with the validated `input_type` value, or `on_handoff(ctx)` without
                an `input_type`. One that raises fails the run.

        Example:
            ```python
            from pydantic import BaseModel

            from helikon import Handoff, LlmAgent, remove_tool_calls
            from helikon.testing import MockModel, text_turn, tool_call_turn

            class Escalation(BaseModel):
                reason: str

            reasons: list[str] = []
            refunds = LlmAgent(
                name="refunds",
                model=MockModel.with_scripts([text_turn("Refund issued.")]),
            )
            handoff = Handoff.to(
                refunds,
                input_type=Escalation,
                input_filter=remove_tool_calls,
                on_handoff=lambda ctx, args: reasons.append(args.reason),
            )
            assert handoff.tool_def().parameters["required"] == ["reason"]
            triage = LlmAgent(
                name="triage",
                model=MockModel.with_scripts(
                    [tool_call_turn("transfer_to_refunds", {"reason": "double charge"})]
                ),
                handoffs=[handoff],
            )
            assert triage.run_sync("I was charged twice").final_output == "Refund issued."
            assert reasons == ["double charge"]
            ```
        """
        return cls(
            agent,
            tool_name=tool_name,
            description=description,
            input_filter=input_filter,
            input_type=input_type,
            on_handoff=on_handoff,
        )

    @property
    def target(self) -> str:
        """The target agent's name."""
        return self.agent.name

    def tool_def(self) -> ToolDef:
        """The synthetic transfer tool the model sees."""
        return ToolDef(name=self.tool_name, description=self.description, parameters=self.parameters)

    def parse_args(self, args: JsonValue) -> Any:
        """The model's arguments as an `input_type` value; `InvalidArgs` (what to fix) if they do not fit.

        Without an `input_type` the arguments are not read: None.
        """
        adapter = self._adapter
        if adapter is None:
            return None
        args = args_object(args)
        from pydantic import ValidationError

        try:
            return adapter.validate_python(args)
        except ValidationError as exc:
            errors = [
                f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            ]
            raise InvalidArgs(errors) from None

    async def handed_off(self, ctx: RunContext[Any], value: Any) -> None:
        """Call `on_handoff` (if any) with the validated arguments; if it raises: `CallbackRaised`."""
        callback = self.on_handoff
        if callback is None:
            return

        async def call() -> object:
            returned = callback(ctx, value) if self.input_type is not None else callback(ctx)
            if inspect.isawaitable(returned):
                await returned
            return None

        await call_user(
            f"the on_handoff callback of the handoff to {self.target!r}", "handoff", call, object, "None"
        )

    async def filtered(self, data: HandoffInputData) -> HandoffInputData:
        """What `input_filter` makes of `data`; if it raises or returns something else: `CallbackRaised`."""
        filter = self.input_filter
        if filter is None:
            return data

        async def call() -> object:
            returned = filter(data)
            return await returned if inspect.isawaitable(returned) else returned

        return await call_user(
            f"the input_filter of the handoff to {self.target!r}",
            "handoff",
            call,
            HandoffInputData,
            "a HandoffInputData (return data, or dataclasses.replace(data, ...))",
        )

    def __repr__(self) -> str:
        return f"Handoff.to({self.agent.name!r}, tool_name={self.tool_name!r})"


def _arguments_schema(target: str, input_type: type[Any]) -> tuple[TypeAdapter[Any], JsonObject]:
    """The validator of `input_type` and the transfer tool's JSON Schema from it (an object schema)."""
    from pydantic import TypeAdapter
    from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

    from .tools import _tidy_schema as tidy_schema  # pyright: ignore[reportPrivateUsage]

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(input_type)
        schema = tidy_schema(adapter.json_schema())
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise UserError(
            f"Handoff.to({target!r}, input_type={input_type!r}): the type cannot be turned into a JSON "
            f"Schema: {exc}"
        ) from exc
    if schema.get("type") != "object":
        raise UserError(
            f"Handoff.to({target!r}, input_type={input_type!r}): the arguments must be an object; "
            "use a pydantic model, a dataclass or a TypedDict"
        )
    return adapter, schema


__all__ = [
    "Handoff",
    "HandoffFilter",
    "HandoffInputData",
    "handoff_slug",
    "keep_last_user_message",
    "remove_tool_calls",
    "transfer_tool_name",
]
