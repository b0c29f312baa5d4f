"""Pausing a run for a person's approval and resuming it from the session: each promise, each refusal."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from typing import Any

import pytest

from helikon import (
    AgentAsTool,
    ApprovalAlreadyDecided,
    ApprovalDigestMismatch,
    ApprovalExpired,
    ApprovalResolved,
    ApprovalTargetMissing,
    ApprovalToolChanged,
    Approve,
    Deny,
    Edit,
    GuardrailVerdict,
    InvalidEditedArgs,
    JsonValue,
    LlmAgent,
    MemorySession,
    NothingToResume,
    RunConfig,
    RunContext,
    RunError,
    RunIsPaused,
    RunPaused,
    SequentialAgent,
    SwarmAgent,
    TextPart,
    ToolContext,
    ToolReturned,
    UnknownApprovalRequest,
    UserError,
    input_guardrail,
    tool,
)
from helikon.core.approvals import args_digest, canonical_json
from helikon.core.governance import ApprovalOutcome
from helikon.core.items import ToolResult
from helikon.core.session import (
    ApprovalDecided,
    ApprovalPending,
    SubRunPaused,
    ToolCalled,
    ToolsStarted,
    TurnClosed,
    TurnOpened,
    UserMessageEvent,
)
from helikon.core.session.compaction import CompactingSession
from helikon.core.session.crash_repair import OUTCOME_UNKNOWN_TEXT
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, handoff_turn, text_turn, tool_call_turn, tool_calls_turn

ran: list[str] = []


@tool(needs_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    ran.append(f"refund {order}")
    return f"refunded {order}"


@tool
def lookup(order: int) -> str:
    """Look an order up."""
    ran.append(f"lookup {order}")
    return f"order {order}: 12 EUR"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def two_refunds_and_a_lookup() -> list[Any]:
    """One turn: a lookup (runs at once) and two refunds (each waits), then the answer."""
    calls: list[tuple[str, JsonValue]] = [
        ("lookup", {"order": 1}),
        ("refund", {"order": 7}),
        ("refund", {"order": 8}),
    ]
    return [tool_calls_turn(calls, call_ids=["c-lookup", "c-7", "c-8"]), text_turn("All done.")]


def clerk(model: MockModel, **kwargs: Any) -> LlmAgent[None, str]:
    return LlmAgent(name="clerk", model=model, tools=[refund, lookup], **kwargs)


async def paused_run() -> tuple[LlmAgent[None, str], MockModel, MemorySession, list[Any]]:
    model = MockModel.with_scripts(two_refunds_and_a_lookup())
    agent = clerk(model)
    session = MemorySession()
    result = await agent.run("refund 7 and 8", session=session)
    assert result.status == "paused"
    return agent, model, session, list(result.pending)


async def log(session: MemorySession) -> list[Any]:
    return [event for _, event in await session.events()]


# --- the digest ---------------------------------------------------------------------------------


def test_the_digest_binds_the_arguments_not_their_spelling() -> None:
    assert args_digest({"a": 1, "b": [1, 2]}) == args_digest({"b": [1, 2], "a": 1})
    assert args_digest('{"a": 1,  "b": [1,2]}') == args_digest({"a": 1, "b": [1, 2]})  # JSON text
    assert args_digest({"a": 1}) != args_digest({"a": 1.0})  # as JSON text tells them apart
    assert args_digest({"a": 2**70}) != args_digest({"a": 2**70 + 1})
    astral: JsonValue = {"\U0001d4b3": "\U0001f642"}  # keys and values beyond the BMP
    assert args_digest(astral) == "sha256:" + hashlib.sha256(canonical_json(astral).encode()).hexdigest()
    with pytest.raises(UserError, match="JSON"):
        args_digest({"a": float("nan")})


# --- pausing ------------------------------------------------------------------------------------


async def test_a_call_that_needs_approval_pauses_the_run_and_the_log_says_so() -> None:
    _, model, session, pending = await paused_run()
    assert ran == ["lookup 1"] and len(model.requests) == 1  # the lookup ran; nothing else did
    assert [(p.call_id, p.tool, p.args) for p in pending] == [
        ("c-7", "refund", {"order": 7}),
        ("c-8", "refund", {"order": 8}),
    ]
    first = pending[0]
    assert first.agent_path == ("clerk",) and first.args_digest == args_digest({"order": 7})
    assert first.request_id.startswith("apr_") and first.request_id != pending[1].request_id
    assert first.tool_digest.startswith("sha256:") and first.expires is None
    events = await log(session)
    stored = [e for e in events if isinstance(e, ApprovalPending)]
    assert [e.pending() for e in stored] == pending
    assert [e.call_id for e in events if isinstance(e, ToolReturned)] == [
        "c-lookup"
    ]  # no result for the others


async def test_a_paused_session_refuses_a_new_run_until_it_is_resumed() -> None:
    agent, _, session, _ = await paused_run()
    before = await log(session)
    with pytest.raises(RunIsPaused, match=r"resume it first with agent.resume"):
        await agent.run("something else", session=session)
    assert await log(session) == before  # nothing written: the paused run keeps its place


async def test_an_approval_handler_in_the_process_decides_at_once() -> None:
    class Yes:
        async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
            return ApprovalOutcome.allow()

    model = MockModel.with_scripts(two_refunds_and_a_lookup())
    ctx = RunContext.ephemeral(None).with_approval_handler(Yes())
    result = await clerk(model).run("refund", context=ctx)
    assert result.status == "completed" and sorted(ran) == ["lookup 1", "refund 7", "refund 8"]


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_predicate_decides_which_calls_need_approval(is_async: bool) -> None:
    def big(ctx: RunContext[None], args: Any) -> bool:
        return args["amount"] > 100

    async def big_async(ctx: RunContext[None], args: Any) -> bool:
        return big(ctx, args)

    @tool(name="pay", needs_approval=big_async if is_async else big)
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(f"pay {amount}")
        return "paid"

    calls: list[tuple[str, JsonValue]] = [("pay", {"amount": 50}), ("pay", {"amount": 500})]
    model = MockModel.with_scripts([tool_calls_turn(calls, call_ids=["small", "big"]), text_turn("ok")])
    result = await LlmAgent(name="p", model=model, tools=[pay]).run("pay")
    assert ran == ["pay 50"] and [p.call_id for p in result.pending] == ["big"]


async def test_a_predicate_that_raises_asks_a_person() -> None:
    def broken(ctx: RunContext[None], args: Any) -> bool:
        raise RuntimeError("bug")

    @tool(name="pay", needs_approval=broken)
    def pay(amount: int) -> str:
        """Pay."""
        ran.append("pay")
        return "paid"

    model = MockModel.with_scripts([tool_call_turn("pay", {"amount": 1}), text_turn("ok")])
    result = await LlmAgent(name="p", model=model, tools=[pay]).run("pay")
    assert result.status == "paused" and ran == []


def test_needs_approval_must_be_a_bool_or_a_function() -> None:
    with pytest.raises(UserError, match="needs_approval"):
        tool(name="t", needs_approval="yes")(lambda: None)  # type: ignore[arg-type]


def billing_desk() -> tuple[LlmAgent[None, str], MockModel, MockModel]:
    """A desk agent that calls a billing sub-agent as a tool beside a refund of its own.

    The call ids repeat across the two agents (both scripts say "c-refund"): a resume must
    route each decision by the way it is reached, not by the call id alone.
    """
    inner_calls: list[tuple[str, JsonValue]] = [("lookup", {"order": 3}), ("refund", {"order": 3})]
    inner_model = MockModel.with_scripts(
        [tool_calls_turn(inner_calls, call_ids=["c-lookup", "c-refund"]), text_turn("billing: refunded 3")]
    )
    billing = LlmAgent(name="billing", model=inner_model, tools=[refund, lookup])
    outer_calls: list[tuple[str, JsonValue]] = [("billing", {"input": "refund 3"}), ("refund", {"order": 9})]
    outer_model = MockModel.with_scripts(
        [tool_calls_turn(outer_calls, call_ids=["c-billing", "c-refund"]), text_turn("Both done.")]
    )
    desk = LlmAgent(name="desk", model=outer_model, tools=[AgentAsTool(billing), refund])
    return desk, outer_model, inner_model


async def test_a_sub_agent_called_as_a_tool_pauses_its_callers_run() -> None:
    desk, outer_model, _ = billing_desk()
    session = MemorySession()
    paused = await desk.run("refund 3 and 9", session=session)
    assert paused.status == "paused" and ran == ["lookup 3"]  # the sub-agent's lookup ran
    assert [(p.agent_path, p.via, p.call_id, p.args) for p in paused.pending] == [
        (("desk", "billing"), ("c-billing",), "c-refund", {"order": 3}),
        (("desk",), (), "c-refund", {"order": 9}),
    ]  # listed together, each with the way to it
    [sub] = [e for e in await log(session) if isinstance(e, SubRunPaused)]
    assert sub.via == ("c-billing",) and sub.agent == "billing"
    assert [m.type for m in sub.messages] == ["user", "tool_call", "tool_call", "tool_result"]
    assert len(outer_model.requests) == 1


async def test_a_paused_sub_agent_goes_on_where_it_paused() -> None:
    desk, outer_model, inner_model = billing_desk()
    session = MemorySession()
    inner, outer = (await desk.run("refund 3 and 9", session=session)).pending
    done = await desk.resume(session, {inner.request_id: Approve(), outer.request_id: Deny("not 9")})
    assert done.final_output == "Both done."
    assert ran == ["lookup 3", "refund 3"]  # the lookup not again; the sub-agent was not restarted
    assert len(inner_model.requests) == 2  # one model call before the pause, one after
    results = [m for m in outer_model.requests[-1].messages if isinstance(m, ToolResult)]
    assert [(r.call_id, r.text) for r in results] == [
        ("c-billing", "billing: refunded 3"),
        ("c-refund", "Error: not run: a person denied the call: not 9"),
    ]


async def test_a_sub_agent_that_pauses_again_pauses_its_caller_again() -> None:
    inner_model = MockModel.with_scripts(
        [
            tool_call_turn("refund", {"order": 1}, call_id="r1"),
            tool_call_turn("refund", {"order": 2}, call_id="r2"),
            text_turn("two refunds"),
        ]
    )
    billing = LlmAgent(name="billing", model=inner_model, tools=[refund])
    outer_model = MockModel.with_scripts([tool_call_turn("billing", {"input": "two"}), text_turn("ok")])
    desk = LlmAgent(name="desk", model=outer_model, tools=[AgentAsTool(billing)])
    session = MemorySession()
    [first] = (await desk.run("go", session=session)).pending
    again = await desk.resume(session, {first.request_id: Approve()})
    assert again.status == "paused" and ran == ["refund 1"]
    [second] = again.pending
    assert second.call_id == "r2" and second.agent_path == ("desk", "billing")
    done = await desk.resume(session, {second.request_id: Approve()})
    assert done.final_output == "ok" and ran == ["refund 1", "refund 2"]
    assert [m.type for m in inner_model.requests[-1].messages][-4:] == [
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
    ]


async def test_a_sub_agent_gone_fails_closed() -> None:
    desk, outer_model, _ = billing_desk()
    session = MemorySession()
    pending = (await desk.run("refund 3 and 9", session=session)).pending
    without = LlmAgent(name="desk", model=outer_model, tools=[refund])
    with pytest.raises(ApprovalTargetMissing, match="no longer calls 'billing'"):
        await without.resume(session, {p.request_id: Approve() for p in pending})
    assert ran == ["lookup 3"]


# --- resuming -----------------------------------------------------------------------------------


async def test_resume_runs_the_decided_calls_only_and_the_run_goes_on() -> None:
    model = MockModel.with_scripts([*two_refunds_and_a_lookup(), text_turn("Hi again.")])
    agent = clerk(model)
    session = MemorySession()
    seven, eight = (await agent.run("refund 7 and 8", session=session)).pending
    result = await agent.resume(
        session,
        {seven.request_id: Approve(digest=seven.args_digest), eight.request_id: Deny("over the limit")},
        by={"sub": "u_17", "via": "console"},
    )
    assert result.status == "completed" and result.final_output == "All done."
    assert ran == ["lookup 1", "refund 7"]  # the lookup did not run again; the denied refund never ran
    results = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
    assert [(r.call_id, r.is_error) for r in results] == [("c-lookup", False), ("c-7", False), ("c-8", True)]
    assert results[2].text == "Error: not run: a person denied the call: over the limit"
    decided = [e for e in await log(session) if isinstance(e, ApprovalDecided)]
    assert [(d.decision, d.by, d.reason) for d in decided] == [
        ("approve", {"sub": "u_17", "via": "console"}, ""),
        ("deny", {"sub": "u_17", "via": "console"}, "over the limit"),
    ]
    # the conversation is whole: a next run on the session goes through
    assert (await agent.run("thanks", session=session)).final_output == "Hi again."


async def test_an_edit_runs_the_call_with_the_new_arguments_and_records_their_digest() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    await agent.resume(session, {seven.request_id: Edit({"order": 70}), eight.request_id: Approve()})
    assert ran == ["lookup 1", "refund 70", "refund 8"]
    [edit, _] = [e for e in await log(session) if isinstance(e, ApprovalDecided)]
    assert (
        edit.decision == "edit"
        and edit.args == {"order": 70}
        and edit.args_digest == args_digest({"order": 70})
    )


async def test_decisions_may_come_in_parts() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    partly = await agent.resume(session, {seven.request_id: Approve()}, by="ada")
    assert partly.status == "paused" and [p.request_id for p in partly.pending] == [eight.request_id]
    assert [type(e) for e in partly.events] == [ApprovalResolved, RunPaused]
    assert ran == ["lookup 1"]  # nothing runs until every request is decided
    with pytest.raises(RunIsPaused):
        await agent.run("meanwhile", session=session)
    done = await agent.resume(session, {eight.request_id: Approve()}, by="bob")
    assert done.final_output == "All done." and ran == ["lookup 1", "refund 7", "refund 8"]


async def test_deny_rest_settles_every_request_left() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    result = await agent.resume(session, {seven.request_id: Approve()}, deny_rest=True, by="ada")
    assert result.status == "completed" and ran == ["lookup 1", "refund 7"]
    resolved = [e for e in result.events if isinstance(e, ApprovalResolved)]
    assert [(r.request_id, r.decision) for r in resolved] == [
        (seven.request_id, "approve"),
        (eight.request_id, "deny"),
    ]


async def test_resume_streamed_yields_the_decisions_the_results_and_the_rest() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    decisions = {seven.request_id: Approve(), eight.request_id: Approve()}
    kinds = [event.type async for event in agent.resume(session, decisions)]
    assert kinds[:4] == ["approval_resolved", "approval_resolved", "tool_output_item", "tool_output_item"]
    assert kinds[-1] == "run_completed" and "turn_started" in kinds
    assert kinds.count("tool_output_item") == 2  # the lookup's result is not streamed again


async def test_the_runner_resumes_too() -> None:
    agent, _, session, pending = await paused_run()
    runner = AsyncioRunner[None]()
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await runner.resume(agent, ctx, {p.request_id: Approve() for p in pending}, by="ops")
    assert result.final_output == "All done."
    with pytest.raises(NothingToResume):  # raised as the stream is read
        [e.type async for e in runner.resume_streamed(agent, ctx, {})]


def test_resume_sync_from_synchronous_code() -> None:
    model = MockModel.with_scripts(two_refunds_and_a_lookup())
    agent = clerk(model)
    session = MemorySession()
    paused = agent.run_sync("refund", session=session)
    done = agent.resume_sync(session, {p.request_id: Approve() for p in paused.pending})
    assert done.final_output == "All done."


async def test_the_same_decision_again_is_a_no_op_and_another_one_is_refused() -> None:
    agent, _, session, (seven, _) = await paused_run()
    await agent.resume(session, {seven.request_id: Approve()}, by="ada")
    again = await agent.resume(session, {seven.request_id: Approve()}, by="ada")  # a client's retry
    assert again.status == "paused" and [type(e) for e in again.events] == [RunPaused]
    before = await log(session)
    with pytest.raises(ApprovalAlreadyDecided, match="decided already"):
        await agent.resume(session, {seven.request_id: Deny("changed my mind")}, by="ada")
    assert await log(session) == before


async def test_a_request_whose_call_has_run_takes_no_decision() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    await agent.resume(session, {seven.request_id: Approve(), eight.request_id: Approve()})
    with pytest.raises((ApprovalAlreadyDecided, NothingToResume)):
        await agent.resume(session, {seven.request_id: Deny("late")})


# --- what fails closed ------------------------------------------------------------------------


async def test_every_refusal_records_nothing_and_runs_nothing() -> None:
    agent, _, session, (seven, eight) = await paused_run()
    before = await log(session)
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"apr_nope": Approve()}, UnknownApprovalRequest, "no request 'apr_nope'"),
        ({seven.request_id: Approve(digest=args_digest({"order": 700}))}, ApprovalDigestMismatch, "digest"),
        ({seven.request_id: Edit({"order": "seven"})}, InvalidEditedArgs, "order"),
        ({seven.request_id: Edit({"order": 7, "extra": 1})}, InvalidEditedArgs, "extra"),
        ({seven.request_id: "yes"}, UserError, "Approve"),
        # one bad decision refuses the lot: the good one is not recorded either
        (
            {eight.request_id: Approve(), seven.request_id: Approve(digest="sha256:0")},
            ApprovalDigestMismatch,
            "sha256:0",
        ),
    ]
    for decisions, error, message in cases:
        with pytest.raises(error, match=message):
            await agent.resume(session, decisions)
    assert await log(session) == before and ran == ["lookup 1"]


async def test_a_session_with_nothing_paused_has_nothing_to_resume() -> None:
    agent = clerk(MockModel.with_scripts([text_turn("hi")]))
    session = MemorySession()
    await agent.run("hi", session=session)
    with pytest.raises(NothingToResume):
        await agent.resume(session, {})


async def test_an_altered_log_fails_closed() -> None:
    agent, _, session, (seven, _) = await paused_run()
    # Someone with write access to the store changes what the call would run with.
    events = await log(session)
    forged = MemorySession()
    await forged.append(
        [
            e
            if not (isinstance(e, ApprovalPending) and e.call_id == "c-7")
            else _with_args(e, {"order": 7000})
            for e in events
        ]
    )
    with pytest.raises(ApprovalDigestMismatch, match="altered"):
        await agent.resume(forged, {seven.request_id: Approve()})
    assert ran == ["lookup 1"]


def _with_args(event: ApprovalPending, args: Any) -> ApprovalPending:
    return dataclasses.replace(event, args=args)


async def test_a_resume_with_another_agent_or_a_tool_gone_or_changed_fails_closed() -> None:
    _, model, session, pending = await paused_run()
    decisions = {p.request_id: Approve() for p in pending}
    before = await log(session)
    renamed = LlmAgent(name="other", model=model, tools=[refund, lookup])
    with pytest.raises(ApprovalTargetMissing, match="paused in agent 'clerk'"):
        await renamed.resume(session, decisions)
    without = LlmAgent(name="clerk", model=model, tools=[lookup])
    with pytest.raises(ApprovalTargetMissing, match="no tool 'refund'"):
        await without.resume(session, decisions)

    @tool(name="refund", needs_approval=True)
    def refund_v2(order: int, amount: int) -> str:
        """Refund part of an order."""
        ran.append("v2")
        return "refunded"

    changed = LlmAgent(name="clerk", model=model, tools=[refund_v2, lookup])
    with pytest.raises(ApprovalToolChanged, match="schema of 'refund' changed"):
        await changed.resume(session, decisions)
    assert await log(session) == before and ran == ["lookup 1"]


async def test_a_denial_needs_no_tool() -> None:
    _, model, session, _ = await paused_run()
    without = LlmAgent(name="clerk", model=model, tools=[lookup])
    result = await without.resume(session, {}, deny_rest=True)
    assert result.final_output == "All done." and ran == ["lookup 1"]


# --- expiry -------------------------------------------------------------------------------------


async def expiring_run(on_expire: str) -> tuple[LlmAgent[None, str], MemorySession, list[Any]]:
    config = RunConfig(approval_expires_after=60, on_approval_expired=on_expire)  # type: ignore[arg-type]
    agent = clerk(MockModel.with_scripts(two_refunds_and_a_lookup()), run_config=config)
    session = MemorySession()
    result = await agent.run("refund", session=session)
    return agent, session, list(result.pending)


async def test_an_expired_request_is_denied_and_takes_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, session, (seven, _) = await expiring_run("deny")
    assert seven.expires is not None and seven.expires_at is not None and seven.on_expire == "deny"
    later = time.time() + 3600
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(ApprovalExpired, match="expired"):
        await agent.resume(session, {seven.request_id: Approve()})
    result = await agent.resume(session, {})  # both expired: both denied, the run goes on
    assert result.final_output == "All done." and ran == ["lookup 1"]
    decided = [e for e in await log(session) if isinstance(e, ApprovalDecided)]
    assert [(d.decision, d.by) for d in decided] == [("deny", "helikon:expired")] * 2


async def test_a_kept_request_stays_open_after_its_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, session, (seven, eight) = await expiring_run("keep")
    later = time.time() + 3600
    monkeypatch.setattr(time, "time", lambda: later)
    assert seven.expired(later)
    result = await agent.resume(session, {seven.request_id: Approve(), eight.request_id: Approve()})
    assert result.final_output == "All done." and ran == ["lookup 1", "refund 7", "refund 8"]


def test_the_expiry_options_are_checked() -> None:
    with pytest.raises(UserError, match="approval_expires_after"):
        RunConfig(approval_expires_after=-1)
    with pytest.raises(UserError, match="on_approval_expired"):
        RunConfig(on_approval_expired="maybe")  # type: ignore[arg-type]


# --- handoffs, compaction, crashes ---------------------------------------------------------------


async def test_a_handoff_target_pauses_and_resumes_by_its_path() -> None:
    billing_model = MockModel.with_scripts([tool_call_turn("refund", {"order": 5}), text_turn("Refunded 5.")])
    billing = LlmAgent(name="billing", model=billing_model, tools=[refund])
    triage_model = MockModel.with_scripts([handoff_turn(billing)])
    triage = LlmAgent(name="triage", model=triage_model, handoffs=[billing])
    session = MemorySession()
    paused = await triage.run("refund 5", session=session)
    [request] = paused.pending
    assert request.agent_path == ("triage", "billing") and ran == []
    done = await triage.resume(session, {request.request_id: Approve()})
    assert done.final_output == "Refunded 5." and ran == ["refund 5"]
    assert [m.type for m in billing_model.requests[1].messages][-2:] == ["tool_call", "tool_result"]


@pytest.mark.parametrize("keep_recent", [None, 40])
async def test_the_paused_state_survives_compaction(keep_recent: int | None) -> None:
    summarizer = MockModel.with_scripts([text_turn("they talked")] * 4)
    inner = MemorySession()
    session = CompactingSession(inner, summarizer, threshold=120, keep_recent_tokens=keep_recent)
    model = MockModel.with_scripts([text_turn("a" * 300), *two_refunds_and_a_lookup()])
    agent = clerk(model)
    await agent.run("first " * 60, session=session)
    paused = await agent.run("refund", session=session)
    assert paused.status == "paused"
    await session.compact()
    assert [e.type for _, e in await inner.events()].count("compacted") >= 1
    done = await agent.resume(session, {p.request_id: Approve() for p in paused.pending})
    assert done.status == "completed" and ran == ["lookup 1", "refund 7", "refund 8"]
    # the model saw the turn whole: every call, then every result
    last = model.requests[-1].messages
    kinds = [m.type for m in last]
    assert kinds[-6:] == ["tool_call", "tool_call", "tool_call", "tool_result", "tool_result", "tool_result"]


async def test_a_durable_pause_closes_its_turn_as_paused() -> None:
    agent, _, session, pending = await paused_run_on(durable=True)
    closed = [e for e in await log(session) if isinstance(e, TurnClosed)]
    assert [c.outcome for c in closed] == ["paused"]
    await agent.resume(session, {p.request_id: Approve() for p in pending})
    events = await log(session)
    opened = [e for e in events if e.type == "turn_opened"]
    assert opened[-1].resumes == closed[0].run_id
    assert [e.outcome for e in events if isinstance(e, TurnClosed)] == ["paused", "completed"]


async def paused_run_on(*, durable: bool) -> tuple[LlmAgent[None, str], MockModel, MemorySession, list[Any]]:
    model = MockModel.with_scripts(two_refunds_and_a_lookup())
    agent = clerk(model, run_config=RunConfig(durable=durable))
    session = MemorySession()
    result = await agent.run("refund", session=session)
    return agent, model, session, list(result.pending)


# --- going on after a crash ---------------------------------------------------------------------


@tool
def pay(invoice: int) -> str:
    """Pay an invoice."""
    ran.append(f"pay {invoice}")
    return f"paid {invoice}"


def say(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


async def crashed(*events: Any) -> MemorySession:
    """A durable session whose run's process died after logging `events` (its turn left open)."""
    session = MemorySession()
    await session.append([TurnOpened(run_id="r-dead", agent="clerk"), say("pay 1 and 2"), *events])
    return session


def taking_over() -> tuple[AsyncioRunner[None], RunConfig]:
    """A runner that takes any open turn for its dead writer's (the tests' writer never ran)."""
    return AsyncioRunner[None](stale_turn_after=0), RunConfig(durable=True)


async def test_a_run_killed_mid_tool_goes_on_without_running_the_started_call_again() -> None:
    session = await crashed(
        ToolCalled(call_id="c1", name="pay", args={"invoice": 1}),
        ToolCalled(call_id="c2", name="pay", args={"invoice": 2}),
        ToolsStarted(call_ids=("c1", "c2")),
        ToolReturned(call_id="c1", content=(TextPart(text="paid 1"),), name="pay"),
    )
    model = MockModel.with_scripts([text_turn("Paid 1; 2 unknown.")])
    agent = LlmAgent(name="clerk", model=model, tools=[pay])
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    kinds = [e.type async for e in runner.resume_streamed(agent, ctx, config=config)]
    assert kinds[0] == "tool_output_item" and kinds[-1] == "run_completed" and "turn_started" in kinds
    assert ran == []  # c2 may have run: it is not run again
    results = [m for m in model.requests[0].messages if isinstance(m, ToolResult)]
    assert [(r.call_id, r.is_error) for r in results] == [("c1", False), ("c2", True)]
    assert OUTCOME_UNKNOWN_TEXT in results[1].text
    events = await log(session)
    closed = [(e.run_id, e.outcome) for e in events if isinstance(e, TurnClosed)]
    assert closed[0] == ("r-dead", "interrupted") and closed[1][1] == "completed"
    assert [e for e in events if isinstance(e, TurnOpened)][-1].resumes == "r-dead"


async def test_a_call_that_never_started_runs_when_the_run_goes_on() -> None:
    session = await crashed(
        ToolCalled(call_id="c1", name="pay", args={"invoice": 1}),
        ToolCalled(call_id="c2", name="pay", args={"invoice": 2}),
    )
    model = MockModel.with_scripts([text_turn("Both paid.")])
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await runner.resume(LlmAgent(name="clerk", model=model, tools=[pay]), ctx, config=config)
    assert result.final_output == "Both paid." and ran == ["pay 1", "pay 2"]


async def test_a_run_killed_before_its_first_answer_checks_its_input_again() -> None:
    seen: list[str] = []

    @input_guardrail
    async def watch(ctx: RunContext[None], text: str) -> GuardrailVerdict:
        seen.append(text)
        return GuardrailVerdict.pass_()

    session = await crashed()
    model = MockModel.with_scripts([text_turn("Paying.")])
    agent = LlmAgent(name="clerk", model=model, tools=[pay], input_guardrails=[watch])
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    kinds = [e.type async for e in runner.resume_streamed(agent, ctx, config=config)]
    assert kinds[0] == "turn_started" and kinds[-1] == "run_completed"
    assert seen == ["pay 1 and 2"]
    assert [getattr(m, "text", None) for m in model.requests[0].messages] == ["pay 1 and 2"]


async def test_a_run_killed_before_a_model_call_calls_the_model_again() -> None:
    session = await crashed(
        ToolCalled(call_id="c1", name="pay", args={"invoice": 1}),
        ToolsStarted(call_ids=("c1",)),
        ToolReturned(call_id="c1", content=(TextPart(text="paid 1"),), name="pay"),
    )
    model = MockModel.with_scripts([text_turn("Paid.")])
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await runner.resume(LlmAgent(name="clerk", model=model, tools=[pay]), ctx, config=config)
    assert result.final_output == "Paid." and ran == []
    assert [m.type for m in model.requests[0].messages] == ["user", "tool_call", "tool_result"]


async def test_a_resumed_pause_killed_mid_call_goes_on_with_the_decisions() -> None:
    model = MockModel.with_scripts([*two_refunds_and_a_lookup(), text_turn("Checked.")])
    agent = clerk(model, run_config=RunConfig(durable=True))
    session = MemorySession()
    seven, eight = (await agent.run("refund", session=session)).pending
    # A resume recorded its decisions, opened its turn, started refund 7 and died.
    paused_turn = next(e for e in await log(session) if isinstance(e, TurnClosed))
    await session.append(
        [
            ApprovalDecided(request_id=seven.request_id, decision="approve", args_digest=seven.args_digest),
            ApprovalDecided(
                request_id=eight.request_id, decision="deny", args_digest=eight.args_digest, reason="no"
            ),
            TurnOpened(run_id="r-resume", agent="clerk", resumes=paused_turn.run_id),
            ToolsStarted(call_ids=("c-7",)),
        ]
    )
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    result = await runner.resume(agent, ctx, config=config)
    assert result.final_output == "All done." and ran == ["lookup 1"]  # refund 7 not again, 8 denied
    results = [m for m in model.requests[-1].messages if isinstance(m, ToolResult)]
    assert [r.call_id for r in results] == ["c-lookup", "c-7", "c-8"]
    assert OUTCOME_UNKNOWN_TEXT in results[1].text and "denied the call: no" in results[2].text


async def test_decisions_for_an_interrupted_run_are_refused() -> None:
    session = await crashed()
    runner, config = taking_over()
    ctx = RunContext.ephemeral(None).with_session(session)
    agent = LlmAgent(name="clerk", model=MockModel.with_scripts([]), tools=[pay])
    with pytest.raises(UnknownApprovalRequest, match="interrupted"):
        await runner.resume(agent, ctx, {"apr_x": Approve()}, config=config)


# --- what the peers' users hit -------------------------------------------------------------------


async def test_a_context_given_to_resume_does_not_replace_the_decisions() -> None:
    seen: list[Any] = []

    @tool(name="refund", needs_approval=True)
    def refund_for(ctx: ToolContext[dict[str, str]], order: int) -> str:
        """Refund an order."""
        seen.append((ctx.user_ctx["user"], order))
        return "refunded"

    model = MockModel.with_scripts([tool_call_turn("refund", {"order": 7}), text_turn("Refunded.")])
    agent = LlmAgent[dict[str, str], str](name="clerk", model=model, tools=[refund_for])
    session = MemorySession()
    paused = await agent.run("refund 7", session=session, context=RunContext.ephemeral({"user": "ada"}))
    later = RunContext.ephemeral({"user": "bob"})  # a fresh context, as a new process makes one
    done = await agent.resume(session, {paused.pending[0].request_id: Approve()}, context=later)
    assert done.final_output == "Refunded." and seen == [("bob", 7)]


async def test_two_resumes_racing_with_different_decisions_record_one() -> None:
    agent, _, session, (seven, _) = await paused_run()
    first, second = AsyncioRunner[None](), AsyncioRunner[None]()  # no shared queue: the log decides
    ctx = RunContext.ephemeral(None).with_session(session)
    outcomes = await asyncio.gather(
        first.resume(agent, ctx, {seven.request_id: Approve()}, by="ada"),
        second.resume(agent, ctx, {seven.request_id: Deny("no")}, by="bob"),
        return_exceptions=True,
    )
    refused = [o for o in outcomes if isinstance(o, ApprovalAlreadyDecided)]
    assert len(refused) == 1
    decided = [e for e in await log(session) if isinstance(e, ApprovalDecided)]
    assert len(decided) == 1 and decided[0].by in ("ada", "bob")


# --- workflows and swarms -------------------------------------------------------------------------


async def test_a_workflow_step_that_needs_approval_fails_the_workflow_saying_why() -> None:
    model = MockModel.with_scripts([tool_call_turn("refund", {"order": 1}), text_turn("done")])
    step = LlmAgent(name="step", model=model, tools=[refund])
    flow = SequentialAgent("flow").then(step)
    session = MemorySession()
    with pytest.raises(RunError, match="cannot pause for it: give the run an approval handler"):
        await flow.run("go", session=session)
    assert ran == [] and not [e for e in await log(session) if isinstance(e, ApprovalPending)]
    assert (await session.snapshot()).messages  # the log is whole: the call got an interrupted result


async def test_a_swarm_member_pauses_and_the_swarm_resumes() -> None:
    billing = LlmAgent(
        name="billing",
        model=MockModel.with_scripts([tool_call_turn("refund", {"order": 2}), text_turn("Refunded 2.")]),
        tools=[refund],
    )
    triage = LlmAgent(name="triage", model=MockModel.with_scripts([handoff_turn(billing)]))
    swarm = SwarmAgent(name="desk", members=[triage, billing], entry="triage")
    session = MemorySession()
    paused = await swarm.run("refund 2", session=session)
    [request] = paused.pending
    assert request.agent_path == ("triage", "billing")
    done = await swarm.resume(session, {request.request_id: Approve()})
    assert done.final_output == "Refunded 2." and ran == ["refund 2"]
