"""The durable runner under control: cancel and timeout, the worker's posture, the ctx seed."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporal_helpers import connect, on, runner

from helikon import DenyRule, Governance, LlmAgent, RunConfig, RunContext, RunError, ToolContext, tool
from helikon.core.events import RunFailed
from helikon.core.session import Session
from helikon.temporal import RunRef, StepOptions, TemporalAgentWorker
from helikon.testing import MockModel, text_turn, tool_call_turn


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/sessions.db"


class Hang:
    """A tool that waits until it is cancelled, saying when it started and how it ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    def agent(self) -> LlmAgent[None, str]:
        hang = self

        @tool
        async def wait_forever() -> str:
            """Wait."""
            hang.started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                hang.cancelled.set()
                raise
            return "never"

        model = MockModel.with_scripts([tool_call_turn("wait_forever", {}), text_turn("never")])
        return LlmAgent(name="hanging", model=model, tools=[wait_forever])


def beating_worker(client: Any, agent: LlmAgent[Any, Any], store: str, queue: str, **parts: Any) -> Any:
    builder = TemporalAgentWorker.builder().client(client).agent(agent).sessions(store).task_queue(queue)
    builder = builder.options(StepOptions(heartbeat_timeout=timedelta(seconds=1)))
    for name, value in parts.items():
        builder = getattr(builder, name)(value)
    return builder.build()


async def kinds_of(session: Session) -> list[str]:
    return [e.event.type for e in await session.events()]


async def test_cancelling_the_run_s_token_stops_the_tool_and_closes_the_turn(
    temporal_server: str, store: str
) -> None:
    hang = Hang()
    agent = hang.agent()
    client = await connect(temporal_server)
    session, ctx = on(store, "cancelled")
    async with beating_worker(client, agent, store, "cancel"):
        stream = runner(client, "cancel").run_streamed(agent, "Go.", ctx)
        events: list[Any] = []

        async def read() -> None:
            events.extend([event async for event in stream])

        reading = asyncio.ensure_future(read())
        await asyncio.wait_for(hang.started.wait(), 60)
        ctx.cancel.cancel("the user left")
        await asyncio.wait_for(reading, 60)
    assert hang.cancelled.is_set()  # the cancel reached the running tool
    terminal = events[-1]
    assert isinstance(terminal, RunFailed) and terminal.error.kind == "cancelled"
    assert "the user left" in terminal.error.message
    entries = await session.events()
    assert [e.event.type for e in entries][-4:] == [
        "tool_called",
        "tools_started",
        "tool_returned",
        "turn_closed",
    ]
    assert entries[-2].event.is_error  # pyright: ignore[reportAttributeAccessIssue]
    assert entries[-1].event.outcome == "cancelled"  # pyright: ignore[reportAttributeAccessIssue]


async def test_the_run_s_timeout_ends_it_as_timed_out_and_closes_the_turn(
    temporal_server: str, store: str
) -> None:
    hang = Hang()
    agent = hang.agent()
    client = await connect(temporal_server)
    session, ctx = on(store, "timed-out")
    async with beating_worker(client, agent, store, "timeout"):
        with pytest.raises(RunError, match="timed out") as raised:
            await runner(client, "timeout").run(agent, "Go.", ctx, RunConfig(timeout=1.0))
    assert raised.value.error.kind == "timeout"
    kinds = await kinds_of(session)
    assert kinds[0] == "turn_opened" and kinds[-1] == "turn_closed"


async def test_the_worker_s_posture_governs_the_run_whatever_its_context(
    temporal_server: str, store: str
) -> None:
    @tool
    def delete_everything() -> str:
        """Delete everything."""
        raise AssertionError("a denied tool ran")

    @tool
    def read_config() -> str:
        """Read the configuration."""
        return "password=hunter2-very-secret"

    model = MockModel.with_scripts(
        [tool_call_turn("delete_everything", {}), tool_call_turn("read_config", {}), text_turn("ok")]
    )
    agent = LlmAgent(name="admin", model=model, tools=[delete_everything, read_config])
    posture = Governance(
        deny_rules=[DenyRule.tool("delete_everything")], extra_secrets=["hunter2-very-secret"]
    )

    def lenient(run: RunRef, session: Session) -> RunContext[None]:
        return RunContext.ephemeral(None)  # no rules at all: the worker's posture still applies

    client = await connect(temporal_server)
    session, ctx = on(store, "governed")
    async with beating_worker(client, agent, store, "governed", posture=posture, contexts=lenient):
        result = await runner(client, "governed").run(agent, "Clean up.", ctx)
    assert result.final_output == "ok"
    results = [e.event for e in await session.events() if e.event.type == "tool_returned"]
    assert results[0].is_error and "denied" in results[0].content[0].text.lower()  # pyright: ignore[reportAttributeAccessIssue]
    assert "hunter2-very-secret" not in results[1].content[0].text  # pyright: ignore[reportAttributeAccessIssue]
    history = await client.get_workflow_handle("helikon-governed").fetch_history()
    assert "hunter2-very-secret" not in history.to_json()  # redacted before it reached history


async def test_the_ctx_seed_reaches_the_context_factory_and_a_bad_one_fails_fast(
    temporal_server: str, store: str
) -> None:
    seen: list[Any] = []

    @tool
    def whoami(ctx: ToolContext[str]) -> str:
        """Say who the user is."""
        return str(ctx.user_ctx)

    def from_seed(run: RunRef, session: Session) -> RunContext[str]:
        seed: Any = run.ctx_seed
        if not isinstance(seed, dict) or "user" not in seed:
            raise ValueError(f"no user in {json.dumps(seed)}")
        seen.append(seed)
        return RunContext.ephemeral(str(seed["user"]))

    model = MockModel.with_scripts([tool_call_turn("whoami", {}), text_turn("done")])
    agent = LlmAgent(name="seeded", model=model, tools=[whoami])
    client = await connect(temporal_server)
    session, ctx = on(store, "seeded")
    async with beating_worker(client, agent, store, "seeded", contexts=from_seed):
        good = runner(client, "seeded")
        good.config = good.config.with_ctx_seed({"user": "ada"})
        await good.run(agent, "Who am I?", ctx)
        results = [e.event for e in await session.events() if e.event.type == "tool_returned"]
        assert results[0].content[0].text == "ada"  # pyright: ignore[reportAttributeAccessIssue]

        bad_session, bad_ctx = on(store, "bad-seed")
        bad = runner(client, "seeded")
        bad.config = bad.config.with_ctx_seed({"name": "ada"})
        with pytest.raises(RunError, match=r"context factory failed on the run's ctx seed .*no user in"):
            await asyncio.wait_for(bad.run(agent, "Who am I?", bad_ctx), 60)
    assert await bad_session.events() == []  # nothing written
    assert seen and all(seed == {"user": "ada"} for seed in seen)
