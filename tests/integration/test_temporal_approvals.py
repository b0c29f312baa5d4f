"""A durable run pauses for a person, waits in its workflow, and goes on once decided (an update)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporal_helpers import connect, on, runner, worker

from durable_cases import normalized
from helikon import Approve, Deny, LlmAgent, RunConfig, tool
from helikon.core.approvals import ApprovalAlreadyDecided, NothingToResume, UnknownApprovalRequest
from helikon.core.events import ApprovalResolved, MessageOutput, RunCompleted, RunPaused
from helikon.temporal import RunSummary, TemporalAgentWorker
from helikon.testing import MockModel, text_turn, tool_calls_turn

VARYING = ("run_id", "resumes", "decided_at", "request_id")
"""What differs between two runs' logs besides the timestamps: each turn's own ids, when it was decided."""

refunds: list[int] = []


@tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    refunds.append(order)
    return f"refunded {order}"


@tool
def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR"


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/sessions.db"


def clerk() -> LlmAgent[None, str]:
    turns = [
        tool_calls_turn([("lookup", {"order": 7}), ("refund", {"order": 7}), ("refund", {"order": 8})]),
        text_turn("Refunded 7; 8 was not."),
    ]
    return LlmAgent(name="clerk", model=MockModel.with_scripts(turns), tools=[lookup, refund])


async def test_a_paused_run_waits_in_its_workflow_and_goes_on_when_decided(
    temporal_server: str, store: str
) -> None:
    """Pause, a first decision (still paused), a second: the run finishes as the in-process one does."""
    in_process, ctx = on(store, "in-process")
    agent = clerk()
    paused = await agent.run("Refund 7 and 8.", context=ctx)
    first, second = paused.pending
    await agent.resume(in_process, {first.request_id: Approve()}, by="ada")
    expected = await agent.resume(in_process, {second.request_id: Deny("over the limit")}, by="ada")

    client = await connect(temporal_server)
    agent = clerk()
    session, ctx = on(store, "durable")
    refunds.clear()
    async with worker(client, agent, store, "approvals"):
        durable = runner(client, "approvals")
        paused = await durable.run(agent, "Refund 7 and 8.", ctx)
        assert paused.status == "paused" and [p.tool for p in paused.pending] == ["refund", "refund"]
        first, second = paused.pending
        assert refunds == []  # nothing ran that waits for a person
        handle = client.get_workflow_handle("helikon-durable")
        assert (await handle.describe()).status is not None  # the workflow is still there, waiting

        partly = await durable.resume(agent, ctx, {first.request_id: Approve()}, by="ada")
        assert partly.status == "paused" and [p.request_id for p in partly.pending] == [second.request_id]
        events = [
            e
            async for e in durable.resume_streamed(
                agent, ctx, {second.request_id: Deny("over the limit")}, by="ada"
            )
        ]
    assert isinstance(events[0], ApprovalResolved) and isinstance(events[-1], RunCompleted)
    assert refunds == [7]
    answers = [e.item.text for e in events if isinstance(e, MessageOutput)]
    assert answers == [expected.final_output]
    assert normalized(await session.events(), *VARYING) == normalized(await in_process.events(), *VARYING)


async def test_a_bad_decision_is_refused_as_in_process_and_records_nothing(
    temporal_server: str, store: str
) -> None:
    client = await connect(temporal_server)
    agent = clerk()
    session, ctx = on(store, "refused")
    async with worker(client, agent, store, "refusals"):
        durable = runner(client, "refusals")
        paused = await durable.run(agent, "Refund 7 and 8.", ctx)
        before = len(await session.events())
        with pytest.raises(UnknownApprovalRequest):
            await durable.resume(agent, ctx, {"no-such-request": Approve()})
        first = paused.pending[0].request_id
        await durable.resume(agent, ctx, {first: Approve()})
        with pytest.raises(ApprovalAlreadyDecided):
            await durable.resume(agent, ctx, {first: Deny("changed my mind")})
        assert len(await session.events()) == before + 1  # the one decision taken
        done = await durable.resume(agent, ctx, deny_rest=True)
        assert done.final_output == "Refunded 7; 8 was not."
        with pytest.raises(NothingToResume):
            await durable.resume(agent, ctx, {first: Approve()})


async def test_an_expired_request_is_denied_by_a_durable_timer(temporal_server: str, store: str) -> None:
    client = await connect(temporal_server)
    agent = clerk()
    session, ctx = on(store, "expiring")
    expiring = RunConfig(approval_expires_after=1.0)  # the worker's config: it is authoritative
    builder = TemporalAgentWorker.builder().client(client).agent(agent).sessions(store).task_queue("expiry")
    async with builder.config(expiring).build():
        durable = runner(client, "expiry")
        paused = await durable.run(agent, "Refund 7 and 8.", ctx)
        assert paused.status == "paused"
        handle = client.get_workflow_handle("helikon-expiring", result_type=RunSummary)
        summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.outcome == "completed"
    decided = [e.event for e in await session.events() if e.event.type == "approval_decided"]
    assert [d.by for d in decided] == ["helikon:expired", "helikon:expired"]  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(paused.events[-1], RunPaused)
