"""`capture_requests`: every model request the runs of a block sent, whatever the model."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from helikon.core.run.captured import CAPTURING, CapturedRequest


@contextmanager
def capture_requests() -> Generator[list[CapturedRequest]]:
    """Collect each model request the runs made inside the block send, in order.

    A `MockModel`'s or `TestModel`'s `requests` show what one model received; this shows
    what every `LlmAgent` run of the block sent (handoff targets, agents as tools and
    workflow steps included), to any model, each as a `CapturedRequest` naming the agent,
    the provider and the model. The request is the one the model was given (system
    messages, history, tools, settings). It follows the current context like
    `LlmAgent.override`: runs in this task and the tasks and `run_sync` loops it starts.
    Blocks nest; an outer block also sees the inner block's requests.

    Example:
        ```python
        from helikon import LlmAgent, tool
        from helikon.testing import TestModel, capture_requests

        @tool
        def lookup(city: str) -> str:
            \"\"\"The weather in a city.\"\"\"
            return "sunny"

        agent = LlmAgent(name="weather", model=TestModel(), tools=[lookup], instructions="Be brief.")
        with capture_requests() as sent:
            agent.run_sync("Weather?")
        assert [(s.agent, s.provider) for s in sent] == [("weather", "test")] * 2
        assert [m.type for m in sent[1].request.messages] == ["system", "user", "tool_call", "tool_result"]
        ```
    """
    sink: list[CapturedRequest] = []
    previous = CAPTURING.get()
    token = CAPTURING.set((*previous, sink))
    try:
        yield sink
    finally:
        try:
            CAPTURING.reset(token)
        except ValueError:  # exited in another context (a fixture's teardown task)
            CAPTURING.set(previous)


__all__ = ["CapturedRequest", "capture_requests"]
