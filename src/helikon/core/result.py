"""`RunStream` (what `agent.run` returns), `RunResult` (what it collects into), `print_stream`."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Never, TextIO, cast, overload

from ._internal.carrier import carrier
from ._internal.peer_hints import RESULT_HINTS, STREAM_HINTS, forgotten_await, no_attribute
from .events import (
    AgentEvent,
    HandoffItem,
    MessageOutput,
    PersistFailed,
    RepairStarted,
    RunCompleted,
    RunFailed,
    RunPaused,
    TokenUsage,
    ToolCallItem,
    ToolOutputItem,
    TurnStarted,
)
from .exceptions import RunError, UserError
from .items import Item, SystemMessage, ToolCall
from .model import TokenDelta
from .run.sink import Collected, streamed

if TYPE_CHECKING:
    from .agent import Agent
    from .approvals import PendingApproval
    from .input import AgentInput
    from .output import OutputSpec, OutputType
    from .run.sink import Drive

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:  # for the PEP 696 default below (`RunResult` is `RunResult[str]`)
    from typing_extensions import TypeVar

T = TypeVar("T")
OutT = TypeVar("OutT", covariant=True, default=str)
"""What a run produces: the agent's `output_type`, or `str`."""


@carrier
class RunResult(Generic[OutT]):
    """A finished run: the final output, every event, and the summed token usage.

    `final_output` is the agent's `output_type` value (validated), or the final text for an
    agent without one. A run that ends in a handoff target gives that agent's output.

    A run that paused for approval (`status == "paused"`) has no output yet (`final_output`
    is None): `pending` lists the calls it waits on, and `agent.resume(session,
    decisions=...)` continues it (see `helikon.core.approvals`).
    """

    final_output: OutT
    events: list[AgentEvent]
    usage: TokenUsage
    agent: Agent[Any] | None = None
    """The agent the run started with (None when its stream was made without one)."""
    input: AgentInput | None = None
    """What the run was given: the new turn and the history before it (None when unknown)."""

    @property
    def new_items(self) -> tuple[Item, ...]:
        """The items this run added to the conversation: messages, tool calls and results, in order.

        The run's input is not among them (see `all_items`).

        Example:
            ```python
            from helikon import LlmAgent, ToolCall, tool
            from helikon.testing import MockModel, text_turn, tool_call_turn

            @tool
            def add(a: int, b: int) -> int:
                \"\"\"Add two numbers.\"\"\"
                return a + b

            model = MockModel.with_scripts([tool_call_turn("add", {"a": 2, "b": 3}), text_turn("5")])
            result = LlmAgent(name="calc", model=model, tools=[add]).run_sync("2+3?")
            assert [item.type for item in result.new_items] == ["tool_call", "tool_result", "assistant"]
            ```
        """
        # A RepairStarted's item is the message the final output was sent back with.
        items = (
            e.item
            for e in self.events
            if isinstance(e, MessageOutput | ToolCallItem | ToolOutputItem | RepairStarted)
        )
        return tuple(item for item in items if item is not None)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every tool call the model made in this run, in order: each one's `name` and `args`.

        The arguments are the model's (as a hook or policy rewrote them, the tool ran with
        other ones). Calls refused or failed are here too (their results in `new_items` say
        so), and so are handoffs, as calls of their transfer tools (`HandoffItem` events say
        where control went). The calls of an agent run as a tool are its own run's.

        Example:
            ```python
            from helikon import LlmAgent, tool
            from helikon.testing import MockModel, text_turn, tool_call_turn

            @tool
            def add(a: int, b: int) -> int:
                \"\"\"Add two numbers.\"\"\"
                return a + b

            model = MockModel.with_scripts([tool_call_turn("add", {"a": 2, "b": 3}), text_turn("5")])
            result = LlmAgent(name="calc", model=model, tools=[add]).run_sync("2+3?")
            assert [(call.name, call.args) for call in result.tool_calls] == [("add", {"a": 2, "b": 3})]
            ```
        """
        return tuple(e.item for e in self.events if type(e) is ToolCallItem)

    @property
    def all_items(self) -> tuple[Item, ...]:
        """The whole conversation after this run: its history, its new turn, then `new_items`.

        What a session would hold: system messages in the new turn are per-run instructions
        and left out. Raises `UserError` when the result does not know the run's input (a
        runner's result: its session holds the conversation).
        """
        given = self.input
        if given is None:
            raise UserError(
                "this RunResult does not know its run's input (a runner's run, whose session holds the "
                "conversation, or a RunStream made without input=...): continue with the same session"
            )
        turn = tuple(item for item in given.messages if not isinstance(item, SystemMessage))
        return (*given.history, *turn, *self.new_items)

    def to_input_list(self) -> list[Item]:
        """`all_items` as a new list: the input of the next run (`agent.run([*items, next_turn])`).

        To continue with a new question, `agent.run("next question", history=result)` does the same.
        """
        return list(self.all_items)

    @property
    def last_agent(self) -> Agent[Any]:
        """The agent that answered last: the run's agent, or the handoff target the run ended in.

        A workflow agent counts as one: the handoffs inside it do not move `last_agent` out.

        Example:
            ```python
            from helikon import LlmAgent
            from helikon.testing import MockModel, text_turn, tool_call_turn

            billing = LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("Refunded.")]))
            triage = LlmAgent(
                name="triage",
                model=MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})]),
                handoffs=[billing],
            )
            assert triage.run_sync("refund please").last_agent is billing
            ```
        """
        agent = self.agent
        if agent is None:
            raise UserError(
                "this RunResult does not know its run's agent (a RunStream made without agent=...)"
            )
        for event in self.events:
            if type(event) is HandoffItem and event.from_agent == agent.name:
                handoffs: Any = getattr(agent, "handoffs", ())
                agent = next((h.agent for h in handoffs if h.target == event.to_agent), agent)
        return agent

    @property
    def last_message(self) -> MessageOutput | None:
        """The last `MessageOutput` event, if any."""
        for event in reversed(self.events):
            if isinstance(event, MessageOutput):
                return event
        return None

    if not TYPE_CHECKING:  # type checkers still see a misspelt attribute

        def __getattr__(self, name: str) -> Never:
            raise no_attribute(self, name, RESULT_HINTS)  # a peer's name says helikon's

    @property
    def status(self) -> Literal["completed", "paused"]:
        """`"paused"` when the run waits for approval (`pending`), else `"completed"` (failed: it raised)."""
        return "paused" if self.events and type(self.events[-1]) is RunPaused else "completed"

    @property
    def pending(self) -> tuple[PendingApproval, ...]:
        """The calls a paused run waits on a decision for (empty unless `status == "paused"`)."""
        last = self.events[-1] if self.events else None
        return last.pending if type(last) is RunPaused else ()

    @property
    def persisted(self) -> bool:
        """Whether the runner stored every event of the run it meant to (True without a runner).

        False when the run streamed a `PersistFailed` (`persist_failure` says what is missing).
        """
        return self.persist_failure is None

    @property
    def persist_failure(self) -> PersistFailed | None:
        """The run's `PersistFailed` event, if some of its events could not be stored."""
        for event in reversed(self.events):
            if type(event) is PersistFailed:
                return event
        return None


class RunStream(Generic[OutT]):
    """A run in progress: an async iterator of `AgentEvent` that is also awaitable.

    Iterate it to react as the run unfolds, or `await` it (or `collect()`) for a
    `RunResult[OutT]` (`OutT`: the agent's `output_type`, or `str`). A failed run ends
    with a `RunFailed` event when iterated, and raises the matching `RunError` when
    collected.

    A stream is read once: by `async for`, by one of its helpers (`text_stream()`,
    `partial_output()`, `print_stream`), or by `await`. After a helper, `await` still gives
    the `RunResult` (it reads what the helper left, if it stopped early); after `async for`
    the events were yours, and `await` is an error.

    Example:
        ```python
        import asyncio

        from helikon import LlmAgent, TokenDelta
        from helikon.testing import MockModel, text_turn

        agent = LlmAgent(name="greeter", model=MockModel.with_scripts([text_turn("Hello!")]))

        async def main() -> None:
            async for event in agent.run("Hi"):
                if isinstance(event, TokenDelta):
                    print(event.text, end="")

        asyncio.run(main())
        ```
    """

    __slots__ = ("_agent", "_drive", "_events", "_input", "_seen", "_used")

    def __init__(
        self,
        events: AsyncIterator[AgentEvent] | None = None,
        *,
        agent: Agent[Any] | None = None,
        input: AgentInput | None = None,
        drive: Drive | None = None,
    ) -> None:
        if (events is None) == (drive is None):
            raise UserError(
                "RunStream(...): give either the run's events or drive=, the run waiting for a sink"
            )
        self._events = events
        self._drive = drive  # helikon's runs: written to a sink (see helikon.core.run.sink)
        self._agent = agent
        self._input = input
        self._used: str | None = None  # how it is being read: "iterated", "read" (a helper), "collected"
        self._seen: list[AgentEvent] | None = None  # what a helper read, for `collect` to finish from

    def _stream(self) -> AsyncIterator[AgentEvent]:
        """The events as an async iterator (a driven run's, handed over one by one as it writes them)."""
        events = self._events
        if events is None:
            assert self._drive is not None
            events = self._events = streamed(self._drive)
        return events

    def _claim(self, how: str, what: str) -> None:
        used = self._used
        if used is not None:
            hint = (
                "; to get both the events and the RunResult, read it with a helper "
                "(text_stream(), partial_output(), print_stream) and then await it"
                if used == "iterated" and how == "collected"
                else ""
            )
            raise UserError(
                f"cannot {what}: this RunStream was already {_HOW[used]}; a stream is read once "
                f"(call agent.run(...) again for a new run){hint}"
            )
        self._used = how

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        self._claim("iterated", "iterate it")
        return self._stream()

    if not TYPE_CHECKING:  # type checkers still see a misspelt attribute

        def __getattr__(self, name: str) -> Never:
            if name in _RESULT_NAMES:  # a RunResult's: the `await` was forgotten
                raise no_attribute(self, name, {name: forgotten_await(name)})
            raise no_attribute(self, name, STREAM_HINTS)

    def __await__(self) -> Generator[Any, None, RunResult[OutT]]:
        return self.collect().__await__()

    @overload
    async def collect(self) -> RunResult[OutT]: ...

    @overload
    async def collect(self, output_type: type[T]) -> RunResult[T]: ...

    async def collect(self, output_type: Any = None) -> RunResult[Any]:
        """Drain the stream into a `RunResult`.

        `final_output` is the output of the agent the run ended with: its `output_type`
        value, or the text without one. `output_type` parses the final text into that type
        instead (for a run whose agent is not known statically, e.g. one ending in a handoff
        target with another output type).

        After a helper (`text_stream()`, ...) it collects the events the helper read and
        the rest of the run.

        Raises:
            RunError: the run failed (the subclass matches the failure, e.g. `MaxTurnsExceeded`),
                or its final text does not parse into `output_type` (`InvalidStructuredOutput`;
                kind `other` when a validator of `output_type` raised something other than
                `ValueError`).
            UserError: the stream was iterated with `async for`, or collected already.
        """
        if self._used == "read" and self._seen is not None:
            self._used = "collected"
            events = self._seen
            # Drain to the very end even after a failure, so that whatever wraps the run (a
            # runner appending to the session) has finished before this returns or raises.
            async for event in self._stream():
                events.append(event)
        else:
            self._claim("collected", "collect it")
            if self._drive is not None:  # the run writes straight into the list
                collected = Collected()
                await self._drive(collected)
                events = collected.events
            else:
                events = [event async for event in self._stream()]
        text = ""
        usage = TokenUsage()
        failure: RunFailed | None = None
        for event in events:
            if isinstance(event, MessageOutput):
                text = event.item.text
            elif isinstance(event, RunCompleted):
                usage = event.usage
                if event.output is not None:  # an output validator changed the output
                    text = event.output
            elif isinstance(event, RunFailed):
                failure = event
        if failure is not None:
            raise RunError.from_agent_error(failure.error)
        last = events[-1] if events else None
        if type(last) is RunPaused:  # no output yet: `pending` says what it waits on
            return RunResult(
                final_output=cast("Any", None),
                events=events,
                usage=last.usage,
                agent=self._agent,
                input=self._input,
            )
        result = RunResult(
            final_output=text, events=events, usage=usage, agent=self._agent, input=self._input
        )
        if output_type is not None:
            from .output import OutputType

            return replace(result, final_output=_parse(OutputType(output_type), text))
        output = _output_of(result)
        if output is None:
            return result
        return replace(result, final_output=_parse(output, text))

    async def _read(self, what: str) -> AsyncIterator[AgentEvent]:
        """The events, for a helper: each is kept for a `collect` after it."""
        self._claim("read", what)
        seen: list[AgentEvent] = []
        self._seen = seen
        append = seen.append
        async for event in self._stream():
            append(event)
            yield event

    async def text_stream(self) -> AsyncIterator[str]:
        """The run's text as it streams: the text deltas only, as strings.

        A message that arrived whole (the merged answer of a workflow agent) comes as one
        string. A failed run raises its `RunError` once the stream ends; `await` the stream
        afterwards for the `RunResult`.

        Example:
            ```python
            import asyncio

            from helikon import LlmAgent
            from helikon.testing import MockModel, text_turn

            agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("Hello there", chunk_size=4)]))

            async def main() -> None:
                run = agent.run("Hi")
                assert [text async for text in run.text_stream()] == ["Hell", "o th", "ere"]
                assert (await run).final_output == "Hello there"

            asyncio.run(main())
            ```
        """
        unmatched = 0  # characters streamed as deltas that no settled message has accounted for yet
        failure: RunFailed | None = None
        async for event in self._read("read its text_stream()"):
            if isinstance(event, TokenDelta):
                if event.text:
                    unmatched += len(event.text)
                    yield event.text
            elif isinstance(event, MessageOutput):
                whole = event.item.text
                if unmatched >= len(whole):
                    unmatched -= len(whole)
                elif whole:
                    yield whole
            elif isinstance(event, RunFailed):
                failure = event
        if failure is not None:
            raise RunError.from_agent_error(failure.error)

    @overload
    def partial_output(self) -> AsyncIterator[OutT]: ...

    @overload
    def partial_output(self, output_type: type[T]) -> AsyncIterator[T]: ...

    def partial_output(self, output_type: Any = None) -> AsyncIterator[Any]:
        """The structured output as it streams: a new, partially validated value at each step.

        `output_type` defaults to the run's agent's. A pydantic model comes as instances
        built (`model_construct`) from the fields complete so far, nested models and lists
        alike; a field not streamed yet is absent (`model_fields_set` lists the present
        ones) and the last string or number may still grow. A `TypedDict` comes as a dict
        of its valid keys; other types once they validate. The last value is the fully
        validated output. A failed run raises its `RunError` once the stream ends.

        Example:
            ```python
            import asyncio

            from pydantic import BaseModel
            from helikon import LlmAgent
            from helikon.testing import MockModel, text_turn

            class Plan(BaseModel):
                title: str
                steps: list[str]

            text = '{"title": "Trip", "steps": ["pack", "go"]}'
            model = MockModel.with_scripts([text_turn(text, chunk_size=8)])
            agent = LlmAgent(name="planner", model=model, output_type=Plan)

            async def main() -> None:
                values = [plan async for plan in agent.run("Plan a trip").partial_output()]
                assert values[1] == Plan.model_construct(title="Trip")  # steps not streamed yet
                assert values[-1] == Plan(title="Trip", steps=["pack", "go"])

            asyncio.run(main())
            ```

        Raises:
            UserError: neither `output_type` nor the run's agent names an output type.
        """
        if output_type is None:
            output_type = getattr(self._agent, "output_type", None)
            if output_type is None:
                raise UserError(
                    "partial_output(): the run's agent has no output_type; "
                    "pass the type: run.partial_output(MyModel)"
                )
        from .output import OutputType

        return self._partials(OutputType(output_type))

    async def _partials(self, output: Any) -> AsyncIterator[Any]:
        parts: list[str] = []
        last: Any = _NONE
        final: str | None = None
        failure: RunFailed | None = None
        async for event in self._read("read its partial_output()"):
            if isinstance(event, TokenDelta):
                parts.append(event.text)
                value = output.validate_partial("".join(parts))
                if value is not None and value != last:
                    last = value
                    yield value
            elif isinstance(event, TurnStarted | RepairStarted | MessageOutput):
                parts = []  # the next turn's text is a new answer
                if isinstance(event, MessageOutput):
                    final = event.item.text
            elif isinstance(event, RunFailed):
                failure = event
        if failure is not None:
            raise RunError.from_agent_error(failure.error)
        if final is not None:
            value = _parse(output, final)
            if value != last:
                yield value


_RESULT_NAMES = frozenset({*(n for n in vars(RunResult) if not n.startswith("_")), *RESULT_HINTS})
"""What a `RunResult` has (or a peer's result has): read on a `RunStream`, an `await` is missing."""

_HOW = {
    "iterated": "consumed (iterated with async for)",
    "read": "consumed (read by a helper)",
    "collected": "consumed (collected)",
}
_NONE: Any = object()


async def print_stream(run: RunStream[T], *, file: TextIO | None = None) -> RunResult[T]:
    """Print a run as it streams, for scripts: its text as it comes, each tool call on a line.

    Tool calls print as `[tool] name({...args})`, handoffs as `[handoff] a -> b`. Returns
    the `RunResult` (raises its `RunError` if the run failed). Plain text to `file`
    (default `sys.stdout`), flushed as it goes; no terminal styling.

    Example:
        ```python
        import asyncio

        from helikon import LlmAgent, print_stream, tool
        from helikon.testing import MockModel, text_turn, tool_call_turn

        @tool
        def weather(city: str) -> str:
            \"\"\"The weather in a city.\"\"\"
            return "sunny"

        model = MockModel.with_scripts([tool_call_turn("weather", {"city": "Oslo"}), text_turn("Sunny.")])
        agent = LlmAgent(name="w", model=model, tools=[weather])
        result = asyncio.run(print_stream(agent.run("Weather in Oslo?")))
        # prints: [tool] weather({"city": "Oslo"})
        #         Sunny.
        assert result.final_output == "Sunny."
        ```
    """
    out = file if file is not None else sys.stdout
    midline = False
    unmatched = 0
    async for event in run._read("print it"):  # pyright: ignore[reportPrivateUsage]
        text, line = "", ""
        if isinstance(event, TokenDelta):
            text = event.text
            unmatched += len(text)
        elif isinstance(event, MessageOutput):
            whole = event.item.text
            if unmatched >= len(whole):
                unmatched -= len(whole)
            else:
                text = whole  # it arrived whole (a workflow's merged answer)
        elif isinstance(event, ToolCallItem):
            args = json.dumps(event.item.args, ensure_ascii=False)
            line = f"[tool] {event.item.name}({_short(args)})"
        elif isinstance(event, HandoffItem):
            line = f"[handoff] {event.from_agent} -> {event.to_agent}"
        if text:
            out.write(text)
            midline = not text.endswith("\n")
        if line:
            out.write(("\n" if midline else "") + line + "\n")
            midline = False
        if text or line:
            out.flush()
    if midline:
        out.write("\n")
        out.flush()
    return await run.collect()


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _output_of(result: RunResult[Any]) -> OutputType[Any] | None:
    """The output type of the agent `result`'s run ended with (None: it gives text)."""
    agent = result.agent
    if getattr(agent, "handoffs", ()):  # the run may have ended in a handoff target
        agent = result.last_agent
    spec: OutputSpec | None = getattr(agent, "output_spec", None)
    return spec.output if spec is not None else None


def _parse(output: Any, text: str) -> Any:
    from .events import AgentError
    from .output import validator_raised

    try:
        value, errors = output.validate_text(text)
    except Exception as exc:  # a bug in a validator of the output type, not a mismatch
        error = AgentError(kind="other", message=validator_raised(output.name, exc), cause="output_validator")
        raise RunError.from_agent_error(error) from exc
    if errors:
        raise RunError.from_agent_error(
            AgentError(
                kind="invalid_structured_output",
                message=f"the final output does not match {output.name}: " + "; ".join(errors),
                schema_errors=errors,
                final_text=text,
            )
        )
    return value


__all__ = ["RunResult", "RunStream", "print_stream"]
