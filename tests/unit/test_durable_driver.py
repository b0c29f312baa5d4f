"""The `DurableDriver` and the worker's steps, without Temporal: a port that calls the steps directly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from durable_cases import CASES, add, calculator, config_of, normalized, ran
from helikon import (
    LlmAgent,
    RunConfig,
    RunContext,
    tool,
)
from helikon.core._internal.json_value import JsonValue
from helikon.core.approvals import PendingApproval
from helikon.core.events import RunFailed
from helikon.core.governance import Hook, HookDecision, HookEvent
from helikon.core.loop import TransitionInput
from helikon.core.session import Session
from helikon.sessions import open_session
from helikon.temporal import DurableDriver, RunRef, RunSpec, WorkerSteps
from helikon.temporal.durable_driver import AgentShape
from helikon.temporal.refs import (
    CheckTurn,
    CloseRun,
    Guarded,
    GuardTurn,
    HandoffTurn,
    ModelTurn,
    Opened,
    Resumed,
    ResumeTurn,
    RunSummary,
    StepFailed,
    ToolAnswer,
    ToolTurn,
)
from helikon.temporal.worker import served_agents
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn


class DirectPort:
    """The driver's steps performed by `WorkerSteps` in this process, counting what runs at once."""

    def __init__(self, steps: WorkerSteps) -> None:
        self.steps = steps
        self.tools_running = 0
        self.most_at_once = 0
        self.pauses: list[RunSummary] = []

    async def open_run(self, spec: RunSpec) -> Opened:
        return await self.steps.open_run(spec)

    async def check_output(self, turn: CheckTurn) -> TransitionInput | StepFailed:
        return await self.steps.check_output(turn)

    async def guard_output(self, turn: GuardTurn) -> Guarded:
        return await self.steps.guard_output(turn)

    async def hand_off(self, turn: HandoffTurn) -> TransitionInput | StepFailed:
        return await self.steps.hand_off(turn)

    async def call_model(self, turn: ModelTurn) -> TransitionInput | StepFailed:
        return await self.steps.call_model(turn)

    async def invoke_tool(self, turn: ToolTurn) -> ToolAnswer:
        self.tools_running += 1
        self.most_at_once = max(self.most_at_once, self.tools_running)
        try:
            await asyncio.sleep(0.01)
            return await self.steps.invoke_tool(turn)
        finally:
            self.tools_running -= 1

    async def close_run(self, close: CloseRun) -> None:
        await self.steps.close_run(close)

    def cancel_reason(self) -> str | None:
        return None

    def paused(self, summary: RunSummary) -> None:
        self.pauses.append(summary)

    async def wait_for_decisions(self, pending: tuple[PendingApproval, ...]) -> None:
        raise asyncio.CancelledError  # nobody decides here: the run ends while it waits

    async def resume_run(self, turn: ResumeTurn) -> Resumed:
        return await self.steps.resume_run(turn)


@tool
def long_text() -> str:
    """A long result."""
    return "word " * 1000


def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/sessions.db"


async def durable_run(
    agent: LlmAgent[Any, Any], url: str, session_id: str, text: str, config: RunConfig | None = None
) -> tuple[Any, DirectPort, Session]:
    session = open_session(url, session_id)
    config = config or RunConfig()
    agents = served_agents([agent])
    steps = WorkerSteps(agents, lambda _: session, config=config)
    port = DirectPort(steps)
    from helikon.core.items import UserMessage

    spec = RunSpec(
        run=RunRef(agent=agent.name, session_id=session_id, run_id=f"run-{session_id}"),
        input=(UserMessage.from_text(text),),
    )
    shapes = lambda name, depth: AgentShape.of(agents[name], config, depth)  # noqa: E731
    summary = await DurableDriver(spec, shapes, port, config.parallel_tool_call_limit).run()
    return summary, port, session


async def test_the_driver_records_what_an_in_process_durable_run_records(tmp_path: Path) -> None:
    url = store(tmp_path)
    in_process = open_session(url, "in-process")
    await calculator().run("Add them up.", context=RunContext.ephemeral(None).with_session(in_process))
    summary, _, session = await durable_run(calculator(), url, "durable", "Add them up.")
    assert summary.outcome == "completed" and summary.error is None
    assert normalized(await session.events(), "run_id") == normalized(await in_process.events(), "run_id")


async def test_tool_steps_run_together_within_the_parallel_limit(tmp_path: Path) -> None:
    calls: list[tuple[str, JsonValue]] = [("add", {"a": n, "b": n}) for n in range(5)]
    model = MockModel.with_scripts([tool_calls_turn(calls), text_turn("done")])
    agent = LlmAgent(name="calc", model=model, tools=[add])
    _, port, _ = await durable_run(agent, store(tmp_path), "s", "go", RunConfig(parallel_tool_call_limit=2))
    assert port.most_at_once == 2
    _, port, _ = await durable_run(
        LlmAgent(
            name="calc",
            model=MockModel.with_scripts([tool_calls_turn(calls), text_turn("done")]),
            tools=[add],
        ),
        store(tmp_path),
        "t",
        "go",
    )
    assert port.most_at_once == 5


async def test_a_retried_tool_step_returns_the_stored_result_without_running_the_tool(tmp_path: Path) -> None:
    agent = calculator()
    session = open_session(store(tmp_path), "retry")
    steps = WorkerSteps({"calc": agent}, lambda _: session)
    run = RunRef(agent="calc", session_id="retry", run_id="r1")
    from helikon.core.events import ToolCallItem
    from helikon.core.items import ToolCall, UserMessage

    await steps.open_run(RunSpec(run=run, input=(UserMessage.from_text("go"),)))
    call = ToolCall(call_id="c1", name="add", args={"a": 20, "b": 22})
    turn = ToolTurn(run=run, step=2, turn=0, call=call, batch=("c1",), pending=(ToolCallItem(item=call),))
    ran.clear()
    first = await steps.invoke_tool(turn)
    again = await steps.invoke_tool(turn, attempt=2)
    assert ran == ["add 20 22"]
    assert first == again and first.outcome is not None and first.outcome.content[0].text == "42"  # pyright: ignore[reportAttributeAccessIssue]
    assert [e.event.type for e in await session.events()].count("tool_returned") == 1


async def test_a_long_result_goes_back_as_its_digest_and_stays_whole_in_the_session(tmp_path: Path) -> None:
    model = MockModel.with_scripts([tool_call_turn("long_text", {}), text_turn("done")])
    agent = LlmAgent(name="reader", model=model, tools=[long_text])
    session = open_session(store(tmp_path), "digest")
    steps = WorkerSteps({"reader": agent}, lambda _: session, inline_limit=100)
    run = RunRef(agent="reader", session_id="digest", run_id="r1")
    from helikon.core.items import ToolCall

    call = ToolCall(call_id="c1", name="long_text", args={})
    answer = await steps.invoke_tool(ToolTurn(run=run, step=1, turn=0, call=call, batch=("c1",)))
    assert answer.outcome is not None
    text = answer.outcome.content[0].text  # pyright: ignore[reportAttributeAccessIssue]
    assert text.startswith("[5000 bytes stored in the session as r1:1:r:c1, sha256 ") and len(text) < 200
    stored = [e.event for e in await session.events() if e.event.type == "tool_returned"]
    assert stored[0].content[0].text == "word " * 1000  # pyright: ignore[reportAttributeAccessIssue]


class Refuses(Hook[Any]):
    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == "pre_tool_use":
            raise RuntimeError("audit store down")
        return HookDecision.allow()


async def test_a_hook_that_raises_fails_the_run_as_in_process_and_closes_its_turn(tmp_path: Path) -> None:
    model = MockModel.with_scripts([tool_call_turn("add", {"a": 1, "b": 2}), text_turn("never")])
    agent = LlmAgent(name="calc", model=model, tools=[add], hooks=[Refuses()])
    summary, _, session = await durable_run(agent, store(tmp_path), "hooked", "go")
    assert summary.outcome == "failed" and summary.error is not None
    assert "audit store down" in summary.error.message and summary.error.cause == "hook"
    kinds = [e.event.type for e in await session.events()]
    assert (
        kinds[-1] == "turn_closed" and kinds.count("tool_returned") == 1
    )  # the call answered as interrupted

    in_process = open_session(store(tmp_path), "in-process")
    model = MockModel.with_scripts([tool_call_turn("add", {"a": 1, "b": 2}), text_turn("never")])
    agent = LlmAgent(name="calc", model=model, tools=[add], hooks=[Refuses()])
    stream = agent.run("go", context=RunContext.ephemeral(None).with_session(in_process))
    async for _ in stream:
        pass
    assert normalized(await session.events(), "run_id") == normalized(await in_process.events(), "run_id")


async def test_the_run_s_max_turns_comes_from_its_ref(tmp_path: Path) -> None:
    model = MockModel.with_scripts([tool_call_turn("add", {"a": n, "b": n}) for n in range(5)])
    agent = LlmAgent(name="calc", model=model, tools=[add])
    summary, _, _ = await durable_run(agent, store(tmp_path), "turns", "go", RunConfig(max_turns=2))
    assert summary.outcome == "failed" and summary.error is not None
    assert summary.error.kind == "max_turns_exceeded"


async def test_an_unknown_agent_is_a_user_error_naming_the_served_ones(tmp_path: Path) -> None:
    from helikon.core.exceptions import UserError

    steps = WorkerSteps({"calc": calculator()}, lambda _: open_session(store(tmp_path), "x"))
    with pytest.raises(UserError, match=r"no agent named 'nope' \(it serves: calc\)"):
        await steps.open_run(RunSpec(run=RunRef(agent="nope", session_id="x", run_id="r")))


# --- the same session log as in process, for each kind of run (durable_cases.py) ---------


@pytest.mark.parametrize("case", sorted(CASES))
async def test_each_kind_of_run_records_what_it_records_in_process(tmp_path: Path, case: str) -> None:
    make, text = CASES[case]
    config = config_of(case)
    in_process = open_session(store(tmp_path), "in-process")
    stream = make().run(text, context=RunContext.ephemeral(None).with_session(in_process), config=config)
    terminal = [event async for event in stream][-1]
    summary, _, session = await durable_run(make(), store(tmp_path), "durable", text, config)
    assert normalized(await session.events(), "run_id") == normalized(await in_process.events(), "run_id")
    if isinstance(terminal, RunFailed):
        assert summary.error is not None and summary.outcome == "failed"
        assert (summary.error.kind, summary.error.message) == (terminal.error.kind, terminal.error.message)
    else:
        assert summary.outcome == "completed" and summary.usage == terminal.usage  # pyright: ignore[reportAttributeAccessIssue]
