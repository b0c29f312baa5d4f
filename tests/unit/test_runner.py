"""AsyncioRunner (session lifecycle, timeout) and RetryingModel."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from helikon import (
    CancellationToken,
    ContextLengthExceeded,
    GuardrailInput,
    GuardrailVerdict,
    LlmAgent,
    MemorySession,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    RateLimited,
    Refused,
    RunConfig,
    RunContext,
    RunError,
    RunTimeout,
    SequenceId,
    SessionEntry,
    SessionEvent,
    TokenDelta,
    Transport,
    Unavailable,
    tool,
)
from helikon.core.items import UserMessage
from helikon.core.session import ConversationSnapshot, ToolReturned
from helikon.runtime import AsyncioRunner, RetryingModel, RetryPolicy
from helikon.testing import Delay, MockModel, text_turn, tool_call_turn


@tool
async def wait_forever() -> str:
    """Never returns."""
    await asyncio.sleep(60)
    return "unreachable"


def session_ctx(session: Any = None) -> RunContext[None]:
    return RunContext.ephemeral(None).with_session(session if session is not None else MemorySession())


async def test_the_runner_prepends_history_and_appends_the_new_events() -> None:
    model = MockModel.with_scripts([text_turn("Hello Ada."), text_turn("You are Ada.")])
    agent = LlmAgent(name="a", model=model, instructions="Be brief.")
    session = MemorySession()
    runner = AsyncioRunner[None]()
    await runner.run(agent, "I am Ada.", session_ctx(session))
    result = await runner.run(agent, "Who am I?", session_ctx(session))
    assert result.final_output == "You are Ada."
    sent = model.requests[1].messages
    assert [(m.type, getattr(m, "text", None)) for m in sent] == [
        ("system", "Be brief."),
        ("user", "I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "Who am I?"),
    ]
    assert [e.type for _, e in await session.events()] == [
        "user_message",
        "request_header",  # the agent's request record; the second run's is the same, so not repeated
        "assistant_message",
        "user_message",
        "assistant_message",
    ]


async def test_a_bare_agent_run_neither_loads_nor_persists() -> None:
    session = MemorySession()
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("x")]))
    await agent.run("hi", context=session_ctx(session))
    assert len(session) == 0


class BrokenSession:
    durable = False
    supports_ids = False  # its append takes only the events

    def __init__(self, *, read: bool = True, write: bool = True) -> None:
        self.read, self.write = read, write
        self.inner = MemorySession()

    async def append(self, events: Sequence[SessionEvent]) -> None:
        if not self.write:
            raise ConnectionError("backend gone")
        await self.inner.append(events)

    async def events(self, since: SequenceId | None = None) -> list[SessionEntry]:
        return await self.inner.events(since)

    async def snapshot(self) -> ConversationSnapshot:
        if not self.read:
            raise ConnectionError("backend gone")
        return await self.inner.snapshot()


async def test_an_unreadable_session_fails_the_run_before_the_model_is_called() -> None:
    model = MockModel.with_scripts([text_turn("never")])
    agent = LlmAgent(name="a", model=model)
    with pytest.raises(RunError) as info:
        await AsyncioRunner[None]().run(agent, "hi", session_ctx(BrokenSession(read=False)))
    assert info.value.kind == "session_error"
    assert "backend gone" in str(info.value)
    assert model.requests == []


async def test_a_failed_append_is_logged_and_the_run_still_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("fine")]))
    with caplog.at_level(logging.WARNING, logger="helikon.runtime"):
        result = await AsyncioRunner[None]().run(agent, "hi", session_ctx(BrokenSession(write=False)))
    assert result.final_output == "fine"
    assert "could not append 3 event(s)" in caplog.text


async def test_the_timeout_cancels_the_run_and_the_log_stays_provider_valid() -> None:
    model = MockModel.with_scripts([tool_call_turn("wait_forever", call_id="c1")])
    agent = LlmAgent(name="a", model=model, tools=[wait_forever])
    session = MemorySession()
    config = RunConfig(timeout=0.05)
    with pytest.raises(RunTimeout):
        await AsyncioRunner[None]().run(agent, "go", session_ctx(session), config)
    log = [e for _, e in await session.events()]
    assert [e.type for e in log] == ["user_message", "request_header", "tool_called", "tool_returned"]
    returned = log[-1]
    assert isinstance(returned, ToolReturned)
    assert returned.is_error
    assert returned.call_id == "c1"


async def test_the_timeout_uses_the_agents_run_config_and_spares_the_callers_token() -> None:
    model = MockModel.with_scripts([[Delay(60)]])
    agent = LlmAgent(name="a", model=model, run_config=RunConfig(timeout=0.02))
    token = CancellationToken()
    with pytest.raises(RunTimeout):
        await AsyncioRunner[None]().run(agent, "go", session_ctx().with_cancel(token))
    assert not token.is_cancelled()


async def test_run_streamed_yields_every_event_and_records_them() -> None:
    session = MemorySession()
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("streamed", chunk_size=4)]))
    events = [e async for e in AsyncioRunner[None]().run_streamed(agent, "hi", session_ctx(session))]
    assert [e.text for e in events if isinstance(e, TokenDelta)] == ["stre", "amed"]
    assert (await session.snapshot()).messages[-1].text == "streamed"  # type: ignore[union-attr]


# --- RetryingModel ------------------------------------------------------------------------------


def fast(**kwargs: Any) -> RetryPolicy:
    return RetryPolicy(base_delay=0.0, jitter=0.0, **kwargs)


async def collect(model: RetryingModel, token: CancellationToken | None = None) -> list[ModelEvent]:
    request = ModelRequest(messages=())
    return [e async for e in model.invoke(request, token or CancellationToken())]


@pytest.mark.parametrize("error", [RateLimited("429"), Unavailable("503"), Transport("reset")])
async def test_transient_errors_are_retried_before_any_content(error: Exception) -> None:
    model = RetryingModel(MockModel.with_scripts([[error], [error], text_turn("ok")]), fast(max_attempts=3))
    events = await collect(model)
    assert [e.type for e in events] == ["token_delta", "finish"]
    assert model.retries == 2


async def test_retries_stop_at_max_attempts() -> None:
    model = RetryingModel(
        MockModel.with_scripts([[Unavailable("a")], [Unavailable("b")], text_turn("x")]), fast(max_attempts=2)
    )
    with pytest.raises(Unavailable, match="b"):
        await collect(model)


@pytest.mark.parametrize("error", [Refused("no"), ContextLengthExceeded("too long")])
async def test_permanent_errors_are_not_retried(error: Exception) -> None:
    inner = MockModel.with_scripts([[error], text_turn("x")])
    with pytest.raises(type(error)):
        await collect(RetryingModel(inner, fast()))
    assert inner.remaining == 1


async def test_an_error_after_content_has_streamed_is_not_retried() -> None:
    inner = MockModel.with_scripts([[TokenDelta(text="part"), Transport("dropped")], text_turn("x")])
    model = RetryingModel(inner, fast())
    seen: list[ModelEvent] = []

    async def consume() -> None:
        async for event in model.invoke(ModelRequest(messages=()), CancellationToken()):
            seen.append(event)  # noqa: PERF401 - keeps what arrived before the error

    with pytest.raises(Transport):
        await consume()
    assert seen == [TokenDelta(text="part")]
    assert inner.remaining == 1


async def test_retry_after_is_honoured() -> None:
    model = RetryingModel(MockModel.with_scripts([[RateLimited(retry_after_ms=50)], text_turn("ok")]), fast())
    loop = asyncio.get_running_loop()
    started = loop.time()
    await collect(model)
    assert loop.time() - started >= 0.045  # a lower bound only: sleeps never end early


async def test_a_cancel_during_the_backoff_abandons_it_at_once() -> None:
    model = RetryingModel(
        MockModel.with_scripts([[RateLimited("429", retry_after_ms=60_000)], text_turn("x")]), fast()
    )
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.01, token.cancel)
    with pytest.raises(RateLimited):
        await asyncio.wait_for(collect(model, token), timeout=10)
    assert model.retries == 0


async def test_an_agent_on_a_retrying_model_completes_through_transient_errors() -> None:
    inner = MockModel.with_scripts([[Unavailable("busy")], text_turn("made it")])
    agent = LlmAgent(name="a", model=RetryingModel(inner, fast()))
    result = await agent.run("hi")
    assert result.final_output == "made it"


async def test_retrying_model_delegates_identity_and_capabilities() -> None:
    class Named(MockModel):
        pass

    inner = Named(provider="acme", model_name="m-1", capabilities=ModelCapabilities.empty().with_tools())
    model = RetryingModel(inner)
    assert (model.provider, model.model_name, model.capabilities().tools) == ("acme", "m-1", True)


class Tripwire:
    def __init__(self, word: str) -> None:
        self.word = word

    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        return GuardrailVerdict.tripwire("other") if self.word in input.text else GuardrailVerdict.pass_()


async def test_a_refused_input_is_not_persisted_and_does_not_poison_later_runs() -> None:
    session = MemorySession()
    # The guardrail runs beside the first model call, whose answer is then dropped.
    model = MockModel.with_scripts([text_turn("Dropped."), text_turn("Sunny.")])
    agent = LlmAgent(name="a", model=model, input_guardrails=[Tripwire("password")])
    runner = AsyncioRunner[None]()
    with pytest.raises(RunError):
        await runner.run(agent, "my password is hunter2", session_ctx(session))
    assert len(session) == 0
    result = await runner.run(agent, "What's the weather?", session_ctx(session))
    assert result.final_output == "Sunny."
    sent = model.requests[-1].messages
    assert len(sent) == 1 and isinstance(sent[0], UserMessage) and sent[0].text == "What's the weather?"


async def test_an_answer_blocked_by_an_output_guardrail_is_not_persisted() -> None:
    session = MemorySession()
    model = MockModel.with_scripts([text_turn("Your SSN is 123-45-6789"), text_turn("I can't share that.")])
    agent = LlmAgent(name="a", model=model, output_guardrails=[Tripwire("SSN")])
    runner = AsyncioRunner[None]()
    with pytest.raises(RunError):
        await runner.run(agent, "What's my SSN?", session_ctx(session))
    # the request was sent, so its record stays; the answer it got does not
    assert [e.type for _, e in await session.events()] == ["user_message", "request_header"]
    await runner.run(agent, "Then tell me something else.", session_ctx(session))
    assert all("123-45" not in getattr(m, "text", "") for m in model.requests[1].messages)
