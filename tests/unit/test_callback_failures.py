"""User code the run calls raises: the run ends with one `RunFailed` that names what raised,
never with an exception out of `async for`, and a runner closes the turn as failed.

Covered: every hook event the driver fires, input and output guardrails (a guardrail error is
a tripwire, as the book says), the permission policy, the approval handler, the instructions
function (sync and async), a handoff target that is a custom `Agent`, and a custom `Agent`
run directly by `AsyncioRunner`; each of hooks, guardrails, policy and approval handler also
returning the wrong kind of value; a validator on the output type that raises (in the loop and
in `collect(output_type=...)`); an `on_subagent_stop` hook of every workflow agent and of
`AgentAsTool`; and a `CompactingSession` token counter under a runner.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, Self

import pytest
from pydantic import AfterValidator, BaseModel, field_validator, model_validator

from helikon import (
    AgentAsTool,
    AgentInput,
    ApprovalOutcome,
    CompactingSession,
    GraphAgent,
    GuardrailInput,
    GuardrailVerdict,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    PermissionDecision,
    RunCompleted,
    RunConfig,
    RunContext,
    RunError,
    RunFailed,
    RunStarted,
    RunStream,
    SequentialAgent,
    SwarmAgent,
    tool,
)
from helikon.core.agent import Agent
from helikon.core.events import AgentEvent
from helikon.core.model import Usage
from helikon.core.session import TurnClosed
from helikon.core.session.crash_repair import open_turn
from helikon.runtime import AsyncioRunner
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn

HANG_GUARD = 10.0  # seconds; a hang guard, not a timing assertion


@tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo:{text}"


class Raises:
    """A hook that raises on `event_type` and allows everything else."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == self.event_type:
            raise RuntimeError("boom")
        return HookDecision.allow()


class CancelsItself:
    """A hook, guardrail and policy that raises `asyncio.CancelledError` itself (its own bug, no cancel)."""

    run_in_parallel = True

    def __init__(self, event_type: str = "") -> None:
        self.event_type = event_type

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == self.event_type:
            raise asyncio.CancelledError
        return HookDecision.allow()

    async def check(self, ctx: RunContext[Any], *args: Any) -> Any:
        raise asyncio.CancelledError


class BrokenGuardrail:
    def __init__(self, *, run_in_parallel: bool = True) -> None:
        self.run_in_parallel = run_in_parallel

    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        raise RuntimeError("boom")


class AskingPolicy:
    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        return PermissionDecision.ask_user("May I?")


class BrokenPolicy:
    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        raise RuntimeError("boom")


class BrokenApprover:
    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        raise RuntimeError("boom")


class ReturnsNone:
    """Every user callable at once, each returning None (a forgotten `return`)."""

    run_in_parallel = True

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> Any:
        return None

    async def check(self, ctx: RunContext[Any], *args: Any) -> Any:
        return None


class SyncGuardrail:
    """A guardrail whose `check` is a plain function: its verdict cannot be awaited."""

    def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        return GuardrailVerdict.pass_()


class YesApprover:
    async def decide(self, tool: str, prompt: str, args: Any) -> Any:
        return True


def broken_instructions(ctx: RunContext[Any]) -> str:
    raise RuntimeError("boom")


async def broken_async_instructions(ctx: RunContext[Any]) -> str:
    raise RuntimeError("boom")


class BrokenAgent:
    """A custom `Agent` whose stream raises after its first event."""

    name = "billing"
    description = "Answers billing questions."

    def run(self, input: Any, *, context: Any = None, config: Any = None) -> RunStream:
        async def events() -> AsyncIterator[AgentEvent]:
            yield RunStarted(agent=self.name)
            raise RuntimeError("boom")

        return RunStream(events())


def tool_agent(**kwargs: Any) -> LlmAgent[Any]:
    scripts = [
        tool_call_turn("echo", {"text": "x"}, usage=Usage(input_tokens=10, output_tokens=2)),
        text_turn("ok"),
    ]
    return LlmAgent(name="a", model=MockModel.with_scripts(scripts), tools=[echo], **kwargs)


def handoff_agent(target: Any, **kwargs: Any) -> LlmAgent[Any]:
    model = MockModel.with_scripts([tool_call_turn("transfer_to_billing", {}), text_turn("ok")])
    return LlmAgent(name="a", model=model, handoffs=[target], **kwargs)


# Each case: an agent and a context whose user code raises, and what the error must say.
Case = tuple[Callable[[], tuple[LlmAgent[Any], RunContext[Any]]], str, str]


def plain(agent: Callable[[], LlmAgent[Any]]) -> Callable[[], tuple[LlmAgent[Any], RunContext[Any]]]:
    return lambda: (agent(), RunContext.ephemeral(None))


def registry_with(hook: Any) -> HookRegistry[Any]:
    registry: HookRegistry[Any] = HookRegistry()
    registry.push(hook)
    return registry


CASES: dict[str, Case] = {
    "on_run_start hook": (
        plain(lambda: tool_agent(hooks=[Raises("on_run_start")])),
        "other",
        "the on_run_start hook Raises raised RuntimeError: boom",
    ),
    "on_turn_start hook": (
        plain(lambda: tool_agent(hooks=[Raises("on_turn_start")])),
        "other",
        "the on_turn_start hook Raises raised RuntimeError: boom",
    ),
    "pre_tool_use hook": (
        plain(lambda: tool_agent(hooks=[Raises("pre_tool_use")])),
        "other",
        "the pre_tool_use hook Raises raised RuntimeError: boom",
    ),
    "post_tool_use hook in the context's registry": (
        lambda: (tool_agent(), RunContext.ephemeral(None).with_hooks(registry_with(Raises("post_tool_use")))),
        "other",
        "the post_tool_use hook Raises raised RuntimeError: boom",
    ),
    "on_handoff hook": (
        plain(
            lambda: handoff_agent(
                LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("paid")])),
                hooks=[Raises("on_handoff")],
            )
        ),
        "other",
        "the on_handoff hook Raises raised RuntimeError: boom",
    ),
    "input guardrail beside the model": (
        plain(lambda: tool_agent(input_guardrails=[BrokenGuardrail()])),
        "guardrail_tripwire",
        "the input guardrail BrokenGuardrail raised RuntimeError: boom",
    ),
    "input guardrail before the model": (
        plain(lambda: tool_agent(input_guardrails=[BrokenGuardrail(run_in_parallel=False)])),
        "guardrail_tripwire",
        "the input guardrail BrokenGuardrail raised RuntimeError: boom",
    ),
    "output guardrail": (
        plain(lambda: tool_agent(output_guardrails=[BrokenGuardrail()])),
        "guardrail_tripwire",
        "the output guardrail BrokenGuardrail raised RuntimeError: boom",
    ),
    "permission policy": (
        lambda: (tool_agent(), RunContext.ephemeral(None).with_permission_policy(BrokenPolicy())),
        "other",
        "the permission policy BrokenPolicy raised RuntimeError: boom",
    ),
    "approval handler": (
        lambda: (
            tool_agent(),
            RunContext.ephemeral(None)
            .with_permission_policy(AskingPolicy())
            .with_approval_handler(BrokenApprover()),
        ),
        "other",
        "the approval handler BrokenApprover raised RuntimeError: boom",
    ),
    "instructions function": (
        plain(lambda: tool_agent(instructions=broken_instructions)),
        "other",
        "the instructions function of 'a' raised RuntimeError: boom",
    ),
    "async instructions function": (
        plain(lambda: tool_agent(instructions=broken_async_instructions)),
        "other",
        "the instructions function of 'a' raised RuntimeError: boom",
    ),
    "handoff target agent": (
        plain(lambda: handoff_agent(BrokenAgent())),
        "other",
        "the handoff target 'billing' raised RuntimeError: boom",
    ),
    # What the run calls returning the wrong kind of value fails the run the same way.
    "hook that returns None": (
        plain(lambda: tool_agent(hooks=[ReturnsNone()])),
        "other",
        "the on_run_start hook ReturnsNone returned None, not a HookDecision (e.g. HookDecision.allow())",
    ),
    "input guardrail beside the model that returns None": (
        plain(lambda: tool_agent(input_guardrails=[ReturnsNone()])),
        "guardrail_tripwire",
        "the input guardrail ReturnsNone returned None, not a GuardrailVerdict",
    ),
    "input guardrail with a sync check": (
        plain(lambda: tool_agent(input_guardrails=[SyncGuardrail()])),
        "guardrail_tripwire",
        "the input guardrail SyncGuardrail raised TypeError: "
        "object GuardrailVerdict can't be used in 'await' expression",
    ),
    "output guardrail that returns None": (
        plain(lambda: tool_agent(output_guardrails=[ReturnsNone()])),
        "guardrail_tripwire",
        "the output guardrail ReturnsNone returned None, not a GuardrailVerdict",
    ),
    "permission policy that returns None": (
        lambda: (tool_agent(), RunContext.ephemeral(None).with_permission_policy(ReturnsNone())),  # type: ignore[arg-type]
        "other",
        "the permission policy ReturnsNone returned None, not a PermissionDecision",
    ),
    "approval handler that returns True": (
        lambda: (
            tool_agent(),
            RunContext.ephemeral(None)
            .with_permission_policy(AskingPolicy())
            .with_approval_handler(YesApprover()),
        ),
        "other",
        "the approval handler YesApprover returned True, not an ApprovalOutcome",
    ),
    # `asyncio.CancelledError` raised by the code itself (the run was not cancelled) is its failure too.
    **{
        f"{event} hook raising CancelledError": (
            plain(lambda event=event: tool_agent(hooks=[CancelsItself(event)])),
            "other",
            f"the {event} hook CancelsItself raised CancelledError",
        )
        for event in ("on_run_start", "on_turn_start", "pre_tool_use", "post_tool_use")
    },
    "on_handoff hook raising CancelledError": (
        plain(
            lambda: handoff_agent(
                LlmAgent(name="billing", model=MockModel.with_scripts([text_turn("paid")])),
                hooks=[CancelsItself("on_handoff")],
            )
        ),
        "other",
        "the on_handoff hook CancelsItself raised CancelledError",
    ),
    "permission policy raising CancelledError": (
        lambda: (tool_agent(), RunContext.ephemeral(None).with_permission_policy(CancelsItself())),  # type: ignore[arg-type]
        "other",
        "the permission policy CancelsItself raised CancelledError",
    ),
    "input guardrail beside the model raising CancelledError": (
        plain(lambda: tool_agent(input_guardrails=[CancelsItself()])),
        "guardrail_tripwire",
        "the input guardrail CancelsItself raised CancelledError",
    ),
    "output guardrail raising CancelledError": (
        plain(lambda: tool_agent(output_guardrails=[CancelsItself()])),
        "guardrail_tripwire",
        "the output guardrail CancelsItself raised CancelledError",
    ),
}


async def all_events(stream: RunStream) -> list[AgentEvent]:
    async def drain() -> list[AgentEvent]:
        return [event async for event in stream]

    return await asyncio.wait_for(drain(), HANG_GUARD)


def assert_failed_with(events: list[AgentEvent], kind: str, message: str) -> RunFailed:
    """One terminal event, last: a `RunFailed` of `kind` whose message is `message`."""
    terminals = [e for e in events if isinstance(e, RunCompleted | RunFailed)]
    assert terminals == [events[-1]], [e.type for e in events]
    failed = events[-1]
    assert isinstance(failed, RunFailed), [e.type for e in events]
    assert failed.error.kind == kind and failed.error.message == message, failed.error
    assert isinstance(events[0], RunStarted)
    return failed


@pytest.mark.parametrize("case", list(CASES))
async def test_user_code_that_raises_fails_the_run_inside_the_stream(case: str) -> None:
    build, kind, message = CASES[case]
    agent, ctx = build()
    events = await all_events(agent.run("hi", context=ctx))
    assert_failed_with(events, kind, message)
    with pytest.raises(RunError, match=re.escape(message)):
        await build()[0].run("hi", context=build()[1])


async def test_the_failure_names_its_kind_and_keeps_the_usage_spent() -> None:
    events = await all_events(tool_agent(hooks=[Raises("post_tool_use")]).run("hi"))
    failed = assert_failed_with(events, "other", "the post_tool_use hook Raises raised RuntimeError: boom")
    assert failed.error.cause == "hook"
    assert failed.usage.input_tokens == 10 and failed.usage.output_tokens == 2
    assert "tool_output_item" not in [e.type for e in events]


async def test_a_hook_raising_for_one_call_stops_the_others_of_its_turn() -> None:
    cancelled = asyncio.Event()

    @tool
    async def slow() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    class RaisesForEcho:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            if event.type == "pre_tool_use" and event.tool == "echo":
                await asyncio.sleep(0)  # the other call is running by now
                raise RuntimeError("boom")
            return HookDecision.allow()

    model = MockModel.with_scripts(
        [tool_calls_turn([("slow", {}), ("echo", {"text": "x"})]), text_turn("no")]
    )
    agent = LlmAgent(name="a", model=model, tools=[slow, echo], hooks=[RaisesForEcho()])
    events = await all_events(agent.run("hi"))
    assert_failed_with(events, "other", "the pre_tool_use hook RaisesForEcho raised RuntimeError: boom")
    assert cancelled.is_set()


async def test_an_on_run_complete_hook_that_raises_leaves_the_outcome_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = tool_agent(hooks=[Raises("on_run_complete")])
    with caplog.at_level(logging.WARNING, logger="helikon.run"):
        events = await all_events(agent.run("hi"))
    assert isinstance(events[-1], RunCompleted)
    assert "the on_run_complete hook Raises raised RuntimeError: boom" in caplog.text


# --- under a runner, on a durable session ------------------------------------------------------


@pytest.fixture
async def sqlite_session(tmp_path: Path) -> AsyncIterator[SqliteSession]:
    async with await SqliteDatabase.open(tmp_path / "sessions.db") as db:
        yield await SqliteSession.open(db, "user-1")


async def assert_turn_closed(session: SqliteSession, outcomes: tuple[list[str], ...] = (["failed"],)) -> None:
    entries = await session.events()
    assert open_turn(entries) is None
    closed = [e.event.outcome for e in entries if isinstance(e.event, TurnClosed)]
    assert closed in outcomes, closed


@pytest.mark.parametrize("case", list(CASES))
async def test_a_runner_closes_the_turn_of_a_run_whose_user_code_raised(
    case: str, sqlite_session: SqliteSession
) -> None:
    build, kind, message = CASES[case]
    agent, ctx = build()
    stream = AsyncioRunner[Any]().run_streamed(agent, "hi", ctx.with_session(sqlite_session), RunConfig())
    assert_failed_with(await all_events(stream), kind, message)
    if case.startswith("input guardrail"):
        # A refused input leaves no trace in the session (or is rewound out of it).
        await assert_turn_closed(sqlite_session, ([], ["refused"]))
    else:
        await assert_turn_closed(sqlite_session)


async def test_a_runner_fails_the_run_of_an_agent_whose_stream_raises(sqlite_session: SqliteSession) -> None:
    ctx = RunContext.ephemeral(None).with_session(sqlite_session)
    stream = AsyncioRunner[Any]().run_streamed(BrokenAgent(), AgentInput.from_user_text("hi"), ctx)
    assert_failed_with(
        await all_events(stream), "other", "the run of agent 'billing' raised RuntimeError: boom"
    )
    await assert_turn_closed(sqlite_session)


# --- a validator on the output type that raises --------------------------------------------------


class FieldRaises(BaseModel):
    category: str

    @field_validator("category")
    @classmethod
    def known(cls, value: str) -> str:
        raise RuntimeError("boom")


class ModelRaises(BaseModel):
    category: str

    @model_validator(mode="after")
    def known(self) -> Self:
        raise KeyError("boom")


def lookup(value: int) -> int:
    raise LookupError("boom")


HINT = "; to reject a value, raise ValueError in the validator"

# Each case: the output type, a model answer that parses, and what the run's error says.
VALIDATORS: dict[str, tuple[Any, str, str]] = {
    "field validator": (
        FieldRaises,
        '{"category": "x"}',
        "a validator of the output type FieldRaises raised RuntimeError: boom" + HINT,
    ),
    "model validator": (
        ModelRaises,
        '{"category": "x"}',
        "a validator of the output type ModelRaises raised KeyError: 'boom'" + HINT,
    ),
    "validator inside a wrapped type": (
        list[Annotated[int, AfterValidator(lookup)]],
        '{"response": [1]}',
        "a validator of the output type list raised LookupError: boom" + HINT,
    ),
}


def structured_agent(output_type: Any, answer: str) -> LlmAgent[Any]:
    model = MockModel.with_scripts([text_turn(answer, usage=Usage(input_tokens=7, output_tokens=3))])
    return LlmAgent(name="a", model=model, output_type=output_type)


@pytest.mark.parametrize("case", list(VALIDATORS))
async def test_an_output_validator_that_raises_fails_the_run_inside_the_stream(case: str) -> None:
    output_type, answer, message = VALIDATORS[case]
    events = await all_events(structured_agent(output_type, answer).run("hi"))
    failed = assert_failed_with(events, "other", message)
    assert failed.error.cause == "output_validator"
    assert failed.usage.input_tokens == 7 and failed.usage.output_tokens == 3
    assert "repair_started" not in [e.type for e in events]  # the model cannot fix a bug in the validator
    with pytest.raises(RunError, match=re.escape(message)):
        await structured_agent(output_type, answer).run("hi")


@pytest.mark.parametrize("case", list(VALIDATORS))
async def test_a_runner_closes_the_turn_of_a_run_whose_output_validator_raised(
    case: str, sqlite_session: SqliteSession
) -> None:
    output_type, answer, message = VALIDATORS[case]
    ctx = RunContext.ephemeral(None).with_session(sqlite_session)
    stream = AsyncioRunner[Any]().run_streamed(structured_agent(output_type, answer), "hi", ctx)
    assert_failed_with(await all_events(stream), "other", message)
    await assert_turn_closed(sqlite_session)


@pytest.mark.parametrize("case", list(VALIDATORS))
async def test_collect_into_an_output_type_whose_validator_raises_raises_run_error(case: str) -> None:
    output_type, answer, message = VALIDATORS[case]
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn(answer)]))
    with pytest.raises(RunError, match=re.escape(message)) as raised:
        await agent.run("hi").collect(output_type=output_type)
    assert raised.value.error.kind == "other" and raised.value.error.cause == "output_validator"


# --- on_subagent_stop hooks of the workflow agents and AgentAsTool -----------------------------


def answers(name: str, *texts: str) -> LlmAgent[Any]:
    return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(t) for t in texts]))


def graph() -> GraphAgent[Any]:
    return GraphAgent("wf", nodes={"a": answers("a", "one"), "b": answers("b", "two")}, edges=[("a", "b")])


def agent_as_tool() -> LlmAgent[Any]:
    model = MockModel.with_scripts([tool_call_turn("sub", {"input": "x"}), text_turn("done")])
    return LlmAgent(name="wf", model=model, tools=[AgentAsTool(answers("sub", "one"))])


def swarm() -> SwarmAgent[Any]:
    triage = LlmAgent(
        name="triage", model=MockModel.with_scripts([tool_call_turn("transfer_to_billing", {})])
    )
    return SwarmAgent(name="wf", members=[triage, answers("billing", "paid")])


STOP_HOOK = "the on_subagent_stop hook Raises raised RuntimeError: boom"

# Each case: the agent, the hook event whose hook raises, and the run's error message. A swarm
# has no sub-agents (its members hand off), so its members' own hooks stand in.
WORKFLOWS: dict[str, tuple[Callable[[], Agent[Any]], str, str]] = {
    "SequentialAgent": (
        lambda: SequentialAgent("wf").then(answers("a", "one")).then(answers("b", "two")),
        "on_subagent_stop",
        STOP_HOOK,
    ),
    "ParallelAgent": (
        lambda: ParallelAgent("wf").add(answers("a", "one")).add(answers("b", "two")),
        "on_subagent_stop",
        STOP_HOOK,
    ),
    "LoopAgent": (
        lambda: LoopAgent("wf", max_iterations=2).then(answers("a", "one", "two")),
        "on_subagent_stop",
        STOP_HOOK,
    ),
    "GraphAgent": (graph, "on_subagent_stop", STOP_HOOK),
    "AgentAsTool": (agent_as_tool, "on_subagent_stop", STOP_HOOK),
    "SwarmAgent": (swarm, "on_handoff", "the on_handoff hook Raises raised RuntimeError: boom"),
}


def hooked(event_type: str) -> RunContext[Any]:
    return RunContext.ephemeral(None).with_hooks(registry_with(Raises(event_type)))


@pytest.mark.parametrize("kind", list(WORKFLOWS))
async def test_a_workflow_whose_hook_raises_ends_with_one_run_failed(kind: str) -> None:
    build, event_type, message = WORKFLOWS[kind]
    events = await all_events(build().run("hi", context=hooked(event_type)))
    failed = assert_failed_with(events, "other", message)
    assert failed.error.cause == "hook"
    assert "tool_output_item" not in [e.type for e in events]  # AgentAsTool: not a tool error
    with pytest.raises(RunError, match=re.escape(message)):
        await build().run("hi", context=hooked(event_type))
    await asyncio.sleep(0)
    current = asyncio.current_task()
    assert not {t for t in asyncio.all_tasks() if t is not current and not t.done()}  # no orphans


@pytest.mark.parametrize("kind", list(WORKFLOWS))
async def test_a_runner_closes_the_turn_of_a_workflow_whose_hook_raised(
    kind: str, sqlite_session: SqliteSession
) -> None:
    build, event_type, message = WORKFLOWS[kind]
    ctx = hooked(event_type).with_session(sqlite_session)
    stream = AsyncioRunner[Any]().run_streamed(build(), "hi", ctx, RunConfig())
    assert_failed_with(await all_events(stream), "other", message)
    await assert_turn_closed(sqlite_session)


@pytest.mark.parametrize("kind", ["SequentialAgent", "ParallelAgent", "AgentAsTool"])
async def test_an_on_subagent_stop_hook_raising_cancelled_error_fails_the_run(kind: str) -> None:
    build, event_type, _ = WORKFLOWS[kind]
    ctx = RunContext.ephemeral(None).with_hooks(registry_with(CancelsItself(event_type)))
    events = await all_events(build().run("hi", context=ctx))
    assert_failed_with(events, "other", "the on_subagent_stop hook CancelsItself raised CancelledError")


# --- a real cancellation still cancels -----------------------------------------------------------


class Waits:
    """A hook, guardrail and policy that wait until the test cancels the consumer."""

    run_in_parallel = False

    def __init__(self, event_type: str = "") -> None:
        self.event_type = event_type
        self.entered = asyncio.Event()

    async def wait(self) -> None:
        self.entered.set()
        await asyncio.Event().wait()

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == self.event_type:
            await self.wait()
        return HookDecision.allow()

    async def check(self, ctx: RunContext[Any], *args: Any) -> Any:
        await self.wait()


WAITING: dict[str, Callable[[Waits], tuple[LlmAgent[Any], RunContext[Any]]]] = {
    "on_run_start hook": lambda w: (tool_agent(hooks=[w]), RunContext.ephemeral(None)),
    "pre_tool_use hook": lambda w: (tool_agent(hooks=[w]), RunContext.ephemeral(None)),
    "input guardrail": lambda w: (tool_agent(input_guardrails=[w]), RunContext.ephemeral(None)),
    "permission policy": lambda w: (tool_agent(), RunContext.ephemeral(None).with_permission_policy(w)),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("case", list(WAITING))
async def test_cancelling_the_consumer_while_user_code_waits_cancels_it(case: str) -> None:
    waits = Waits(case.removesuffix(" hook"))
    agent, ctx = WAITING[case](waits)
    consumer = asyncio.ensure_future(all_events(agent.run("hi", context=ctx)))
    await asyncio.wait_for(waits.entered.wait(), HANG_GUARD)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert consumer.cancelled()


# --- a CompactingSession's token counter ---------------------------------------------------------


class BrokenCounter:
    def count(self, items: Any) -> int:
        raise RuntimeError("boom")


async def test_a_token_counter_that_raises_skips_compaction_and_the_turn_is_stored_whole(
    sqlite_session: SqliteSession, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = MockModel.with_scripts([text_turn("summary")])
    session = CompactingSession(sqlite_session, summarizer, threshold=10, token_counter=BrokenCounter())
    ctx = RunContext.ephemeral(None).with_session(session)
    with caplog.at_level(logging.WARNING, logger="helikon.sessions"):
        events = await all_events(AsyncioRunner[Any]().run_streamed(tool_agent(), "hi", ctx))
    assert isinstance(events[-1], RunCompleted)
    await assert_turn_closed(sqlite_session, (["completed"],))
    messages = (await sqlite_session.snapshot()).messages  # every event of the run was stored
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "ToolCall",
        "ToolResult",
        "AssistantMessage",
    ]
    assert "compaction skipped: the token counter BrokenCounter raised RuntimeError: boom" in caplog.text
