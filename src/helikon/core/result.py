"""`RunStream` (what `agent.run` returns) and `RunResult` (what it collects into)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any, Generic, TypeVar, overload

from ._carrier import carrier
from .events import AgentEvent, MessageOutput, PersistFailed, RunCompleted, RunFailed, TokenUsage
from .exceptions import RunError, UserError

T = TypeVar("T")


@carrier
class RunResult(Generic[T]):
    """A finished run: the final output, every event, and the summed token usage."""

    final_output: T
    events: list[AgentEvent]
    usage: TokenUsage

    @property
    def last_message(self) -> MessageOutput | None:
        """The last `MessageOutput` event, if any."""
        for event in reversed(self.events):
            if isinstance(event, MessageOutput):
                return event
        return None

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


class RunStream:
    """A run in progress: an async iterator of `AgentEvent` that is also awaitable.

    Iterate it to react as the run unfolds, or `await` it (or `collect()`) for a
    `RunResult`. A failed run ends with a `RunFailed` event when iterated, and raises
    the matching `RunError` when collected. A stream can be consumed once.

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

    __slots__ = ("_consumed", "_events")

    def __init__(self, events: AsyncIterator[AgentEvent]) -> None:
        self._events = events
        self._consumed = False

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        if self._consumed:
            raise UserError("this RunStream was already consumed; call agent.run(...) again for a new run")
        self._consumed = True
        return self._events

    def __await__(self) -> Generator[Any, None, RunResult[str]]:
        return self.collect().__await__()

    @overload
    async def collect(self) -> RunResult[str]: ...

    @overload
    async def collect(self, output_type: type[T]) -> RunResult[T]: ...

    async def collect(self, output_type: type[T] | None = None) -> RunResult[T] | RunResult[str]:
        """Drain the stream into a `RunResult`; with `output_type`, parse the final text into it.

        Raises:
            RunError: the run failed (the subclass matches the failure, e.g. `MaxTurnsExceeded`),
                or its final text does not parse into `output_type` (`InvalidStructuredOutput`;
                kind `other` when a validator of `output_type` raised something other than
                `ValueError`).
        """
        events: list[AgentEvent] = []
        append = events.append
        text = ""
        usage = TokenUsage()
        failure: RunFailed | None = None
        # Drain to the very end even after a failure, so that whatever wraps the run (a
        # runner appending to the session) has finished before this returns or raises.
        async for event in self.__aiter__():
            append(event)
            if isinstance(event, MessageOutput):
                text = event.item.text
            elif isinstance(event, RunCompleted):
                usage = event.usage
            elif isinstance(event, RunFailed):
                failure = event
        if failure is not None:
            raise RunError.from_agent_error(failure.error)
        if output_type is None:
            return RunResult(final_output=text, events=events, usage=usage)
        from .output import OutputType

        return RunResult(final_output=_parse(OutputType(output_type), text), events=events, usage=usage)


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


__all__ = ["RunResult", "RunStream"]
