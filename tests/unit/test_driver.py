"""The async driver: streaming, concurrency, limits, cancellation, repair, tool errors, seams."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from helikon import (
    ApprovalOutcome,
    ApprovalRequested,
    CancellationToken,
    Denied,
    GuardrailInput,
    GuardrailTriggered,
    GuardrailVerdict,
    HookDecision,
    HookEvent,
    HookRegistry,
    InvalidStructuredOutput,
    LlmAgent,
    MaxTurnsExceeded,
    MessageOutput,
    ModelRequest,
    PermissionDecision,
    PermissionDenied,
    PermissionMode,
    RateLimited,
    RunCancelled,
    RunCompleted,
    RunConfig,
    RunContext,
    RunError,
    RunFailed,
    SystemMessage,
    TokenDelta,
    ToolCallDelta,
    ToolContext,
    ToolEffect,
    ToolOutputItem,
    UserError,
    tool,
)
from helikon.core.events import AgentEvent, RunPaused
from helikon.core.items import ToolResult
from helikon.testing import Delay, FunctionModel, MockModel, text_turn, tool_call_turn, tool_calls_turn


@tool
async def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo:{text}"


def agent_with(scripts: list[Any], **kwargs: Any) -> tuple[LlmAgent[Any], MockModel]:
    model = MockModel.with_scripts(scripts)
    kwargs.setdefault("tools", [echo])
    return LlmAgent(name="a", model=model, **kwargs), model


async def events_of(
    agent: LlmAgent[Any], input: str = "hi", ctx: RunContext[Any] | None = None
) -> list[AgentEvent]:
    return [e async for e in agent.run(input, context=ctx or RunContext.ephemeral(None))]


def types(events: list[AgentEvent]) -> list[str]:
    return [e.type for e in events]


def tool_texts(events: list[AgentEvent]) -> list[str]:
    return [e.item.text for e in events if isinstance(e, ToolOutputItem)]


# --- streaming and event order ------------------------------------------------------------------


async def test_a_tool_run_streams_deltas_before_the_settled_items() -> None:
    agent, model = agent_with(
        [tool_call_turn("echo", {"text": "x"}, call_id="c1"), text_turn("done", chunk_size=2)]
    )
    events = await events_of(agent)
    assert types(events) == [
        "run_started",
        "turn_started",
        "tool_call_delta",
        "tool_call_item",
        "tool_output_item",
        "turn_started",
        "token_delta",
        "token_delta",
        "message_output",
        "run_completed",
    ]
    assert tool_texts(events) == ["echo:x"]
    assert [e.text for e in events if isinstance(e, TokenDelta)] == ["do", "ne"]
    assert isinstance(events[-2], MessageOutput) and events[-2].item.text == "done"
    assert events[-2].item.agent == "a"
    second = model.requests[1]
    assert [m.type for m in second.messages] == ["user", "tool_call", "tool_result"]


async def test_raw_deltas_are_the_models_own_objects() -> None:
    delta = TokenDelta(text="same object")
    agent, _ = agent_with([[delta]])
    events = await events_of(agent)
    assert any(e is delta for e in events)


async def test_instructions_lead_every_request_and_can_be_dynamic() -> None:
    async def instructions(ctx: RunContext[dict[str, str]]) -> str:
        return f"Help {ctx.user_ctx['name']}."

    agent, model = agent_with([text_turn("ok")], instructions=instructions)
    await agent.run("hi", context=RunContext.ephemeral({"name": "Ada"}))
    assert model.requests[0].messages[0] == SystemMessage(text="Help Ada.")


async def test_tool_call_arguments_are_assembled_from_fragments() -> None:
    script = [
        ToolCallDelta(call_id="c1", name="echo", args_delta='{"te'),
        ToolCallDelta(call_id="c1", args_delta='xt": "joined"}'),
    ]
    agent, _ = agent_with([script, text_turn("ok")])
    events = await events_of(agent)
    assert tool_texts(events) == ["echo:joined"]


# --- concurrency and limits ---------------------------------------------------------------------


async def test_tool_calls_of_one_turn_run_concurrently_with_results_in_call_order() -> None:
    both_started = asyncio.Event()
    started: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Wait until both calls have started."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), timeout=5)
        if name == "first":
            await asyncio.sleep(0.01)  # finishes last, still reported first
        return name

    calls = tool_calls_turn([("slow", {"name": "first"}), ("slow", {"name": "second"})])
    agent, _ = agent_with([calls, text_turn("ok")], tools=[slow])
    events = await events_of(agent)
    assert tool_texts(events) == ["first", "second"]


async def test_parallel_tool_call_limit_bounds_concurrency() -> None:
    running = 0
    peak = 0

    @tool
    async def work(n: int) -> int:
        """Do some work."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.005)
        running -= 1
        return n

    calls = tool_calls_turn([("work", {"n": i}) for i in range(5)])
    for limit, expected in ((2, 2), (None, 5)):
        peak = 0
        agent, _ = agent_with([calls, text_turn("ok")], tools=[work])
        config = agent.run_config.with_parallel_tool_call_limit(limit)
        events = [e async for e in agent.run("go", config=config)]
        assert peak == expected
        assert tool_texts(events) == ["0", "1", "2", "3", "4"]


async def test_max_turns_fails_the_run() -> None:
    agent, _ = agent_with([tool_call_turn("echo", {"text": str(i)}) for i in range(3)])
    config = agent.run_config.with_max_turns(2)
    with pytest.raises(MaxTurnsExceeded) as info:
        await agent.run("loop", config=config).collect()
    assert info.value.error.limit == 2
    events = [
        e async for e in agent_with([tool_call_turn("echo", {"text": "x"})] * 3)[0].run("x", config=config)
    ]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "max_turns_exceeded"


async def test_sync_tools_run_off_the_event_loop_thread() -> None:
    seen: list[int] = []

    @tool
    def blocking(x: int) -> int:
        """A blocking tool."""
        seen.append(threading.get_ident())
        return x * 2

    agent, _ = agent_with([tool_call_turn("blocking", {"x": 21}), text_turn("ok")], tools=[blocking])
    events = await events_of(agent)
    assert tool_texts(events) == ["42"]
    assert seen and seen[0] != threading.get_ident()


# --- cancellation at each phase -----------------------------------------------------------------


async def test_a_token_cancelled_before_the_run_fails_it_without_calling_the_model() -> None:
    agent, model = agent_with([text_turn("never")])
    token = CancellationToken()
    token.cancel("user left")
    ctx = RunContext.ephemeral(None).with_cancel(token)
    events = await events_of(agent, ctx=ctx)
    assert types(events) == ["run_started", "turn_started", "run_failed"]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "cancelled"
    assert model.requests == []


async def test_cancel_during_the_model_stream_interrupts_it() -> None:
    agent, _ = agent_with([[TokenDelta(text="partial"), Delay(10), TokenDelta(text="never")]])
    token = CancellationToken()
    ctx = RunContext.ephemeral(None).with_cancel(token)
    events: list[AgentEvent] = []
    async for event in agent.run("hi", context=ctx):
        events.append(event)
        if isinstance(event, TokenDelta):
            asyncio.get_running_loop().call_later(0.01, token.cancel, "stop")
    assert types(events) == ["run_started", "turn_started", "token_delta", "run_failed"]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the consumer's task is left clean
    with pytest.raises(RunCancelled):
        await (
            agent_with([[Delay(10)]])[0]
            .run("x", context=RunContext.ephemeral(None).with_cancel(token))
            .collect()
        )


async def test_cancel_during_tool_execution_cancels_the_tools() -> None:
    tool_cancelled = asyncio.Event()

    @tool
    async def forever() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            tool_cancelled.set()
            raise
        return "unreachable"

    agent, _ = agent_with([tool_call_turn("forever")], tools=[forever])
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.02, token.cancel)
    events = await events_of(agent, ctx=RunContext.ephemeral(None).with_cancel(token))
    assert types(events)[-1] == "run_failed"
    assert "tool_output_item" not in types(events)
    assert tool_cancelled.is_set()


async def test_a_cancel_from_the_consumer_between_events_is_noticed_at_the_next_phase() -> None:
    agent, model = agent_with([tool_call_turn("echo", {"text": "x"}), text_turn("never")])
    token = CancellationToken()
    events: list[AgentEvent] = []
    async for event in agent.run("hi", context=RunContext.ephemeral(None).with_cancel(token)):
        events.append(event)
        if event.type == "tool_call_item":
            token.cancel()
    assert types(events)[-1] == "run_failed"
    assert len(model.requests) == 1


async def test_a_late_cancel_does_not_override_completion() -> None:
    agent, _ = agent_with([text_turn("done")])
    token = CancellationToken()
    events: list[AgentEvent] = []
    async for event in agent.run("hi", context=RunContext.ephemeral(None).with_cancel(token)):
        events.append(event)
        if isinstance(event, RunCompleted):
            token.cancel()
    assert types(events)[-1] == "run_completed"
    assert sum(isinstance(e, RunFailed) for e in events) == 0


async def test_cancelling_the_consumer_task_itself_propagates() -> None:
    agent, _ = agent_with([[Delay(10)]])

    async def consume() -> None:
        async for _ in agent.run("hi"):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- tool errors -------------------------------------------------------------------------------


async def test_an_exception_in_a_tool_becomes_an_error_result() -> None:
    @tool
    async def broken() -> str:
        """Always fails."""
        raise ValueError("disk full")

    agent, model = agent_with([tool_call_turn("broken"), text_turn("sorry")], tools=[broken])
    result = await agent.run("go")
    assert result.final_output == "sorry"
    sent = model.requests[1].messages[-1]
    assert isinstance(sent, ToolResult) and sent.is_error
    assert sent.text == "Error: ValueError: disk full"


async def test_an_unknown_tool_is_reported_to_the_model() -> None:
    agent, model = agent_with([tool_call_turn("nope"), text_turn("ok")])
    await agent.run("go")
    sent = model.requests[1].messages[-1]
    assert isinstance(sent, ToolResult) and sent.is_error
    assert "no tool named 'nope'" in sent.text and "echo" in sent.text


async def test_invalid_arguments_are_fed_back_once_then_the_run_fails() -> None:
    agent, model = agent_with(
        [tool_call_turn("echo", {"wrong": 1}), tool_call_turn("echo", {"text": "fixed"}), text_turn("ok")]
    )
    result = await agent.run("go")
    assert result.final_output == "ok"
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, ToolResult) and feedback.is_error and "text" in feedback.text

    agent, _ = agent_with(
        [tool_call_turn("echo", {"wrong": 1}), tool_call_turn("echo", "not json"), text_turn("x")]
    )
    with pytest.raises(RunError) as info:
        await agent.run("go")
    assert info.value.kind == "tool_error"


@tool
async def guarded(path: str) -> str:
    """Read a file inside the sandbox."""
    raise Denied(f"{path} is outside the sandbox")


async def test_a_denied_tool_goes_back_to_the_model_and_the_run_goes_on() -> None:
    agent, model = agent_with(
        [tool_call_turn("guarded", {"path": "/etc/passwd"}, call_id="c1"), text_turn("I may not read that.")],
        tools=[guarded],
    )
    events = await events_of(agent)
    assert isinstance(events[-1], RunCompleted)
    seen = model.requests[1].messages[-1]
    assert isinstance(seen, ToolResult) and seen.is_error
    assert seen.text == "Error: the tool refused the call: /etc/passwd is outside the sandbox"
    # The same event a permission denial streams, before the result the model reads.
    denied = PermissionDenied(tool="guarded", reason="/etc/passwd is outside the sandbox", call_id="c1")
    assert denied in events
    assert events.index(denied) < next(i for i, e in enumerate(events) if isinstance(e, ToolOutputItem))


async def test_a_denied_tool_streams_the_event_live_beside_an_approval_handler() -> None:
    agent, _ = agent_with(
        [tool_call_turn("guarded", {"path": "/etc"}, call_id="c1"), text_turn("ok")], tools=[guarded]
    )
    ctx = RunContext.ephemeral(None).with_approval_handler(Approver(True))
    events = await events_of(agent, ctx=ctx)
    assert PermissionDenied(tool="guarded", reason="/etc is outside the sandbox", call_id="c1") in events
    assert isinstance(events[-1], RunCompleted)


async def test_fail_on_tool_denied_fails_the_run_as_before() -> None:
    agent, model = agent_with(
        [tool_call_turn("guarded", {"path": "/etc/passwd"}), text_turn("x")],
        tools=[guarded],
        run_config=RunConfig(fail_on_tool_denied=True),
    )
    with pytest.raises(RunError) as info:
        await agent.run("go")
    assert info.value.kind == "tool_denied"
    assert str(info.value).endswith("tool 'guarded' refused: /etc/passwd is outside the sandbox")
    assert len(model.requests) == 1


async def test_a_model_error_fails_the_run_with_its_kind() -> None:
    agent, _ = agent_with([[RateLimited("slow down", retry_after_ms=100)]])
    events = await events_of(agent)
    assert isinstance(events[-1], RunFailed)
    assert (events[-1].error.kind, events[-1].error.cause) == ("model_error", "rate_limited")


async def test_a_broken_model_adapter_fails_the_run_instead_of_crashing() -> None:
    def boom(request: ModelRequest) -> list[Any]:
        raise KeyError("adapter bug")

    agent = LlmAgent(name="a", model=FunctionModel(boom))
    events = await events_of(agent)
    assert isinstance(events[-1], RunFailed) and "adapter bug" in events[-1].error.message


async def test_running_out_of_scripts_is_a_model_error() -> None:
    agent, _ = agent_with([])
    events = await events_of(agent)
    assert isinstance(events[-1], RunFailed) and "ran out of scripts" in events[-1].error.message


async def test_the_tool_context_carries_the_run() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def whoami(ctx: ToolContext[dict[str, int]]) -> str:
        """Report the caller."""
        seen.update(user=ctx.user_ctx["id"], call=ctx.call_id, name=ctx.tool_name, depth=ctx.agent_depth)
        ctx.state.set("touched", True)
        return "ok"

    agent, _ = agent_with([tool_call_turn("whoami", call_id="c9"), text_turn("ok")], tools=[whoami])
    ctx = RunContext.ephemeral({"id": 7})
    await agent.run("go", context=ctx)
    assert seen == {"user": 7, "call": "c9", "name": "whoami", "depth": 0}
    assert ctx.state.get("touched") is True


# --- structured output ---------------------------------------------------------------------------


class Verdict(BaseModel):
    label: str
    score: float


async def test_structured_output_is_repaired_once() -> None:
    agent, model = agent_with(
        [text_turn('{"label": "ok"}'), text_turn('{"label": "ok", "score": 0.5}')],
        tools=[],
        output_type=Verdict,
    )
    events = await events_of(agent)
    assert "repair_started" in types(events) and "structured_output_failed" in types(events)
    assert types(events)[-1] == "run_completed"
    result = (
        await agent_with(
            [text_turn("bad"), text_turn('{"label": "ok", "score": 0.5}')], tools=[], output_type=Verdict
        )[0]
        .run("x")
        .collect(output_type=Verdict)
    )
    assert result.final_output == Verdict(label="ok", score=0.5)
    assert model.requests[0].model_settings.response_format is not None
    assert model.requests[1].model_settings.response_format is not None


async def test_structured_output_that_never_validates_raises_with_the_errors() -> None:
    agent, _ = agent_with([text_turn("nope"), text_turn('{"label": 1}')], tools=[], output_type=Verdict)
    with pytest.raises(InvalidStructuredOutput) as info:
        await agent.run("x")
    assert info.value.final_text == '{"label": 1}'
    assert any("score" in e for e in info.value.schema_errors)


async def test_a_structured_agent_with_tools_finalizes_after_them() -> None:
    agent, model = agent_with(
        [
            tool_call_turn("echo", {"text": "a"}),
            text_turn("I know."),
            text_turn('{"label": "a", "score": 1}'),
        ],
        output_type=Verdict,
    )
    result = await agent.run("x").collect(output_type=Verdict)
    assert result.final_output == Verdict(label="a", score=1.0)
    assert [r.model_settings.response_format is not None for r in model.requests] == [False, False, True]
    assert list(model.requests[2].tools) == []


# --- governance seams ---------------------------------------------------------------------------


class Recorder:
    def __init__(self, decisions: dict[str, HookDecision] | None = None) -> None:
        self.seen: list[str] = []
        self.decisions = decisions or {}

    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        self.seen.append(event.type)
        return self.decisions.get(event.type, HookDecision.allow())


async def test_hooks_see_the_lifecycle_in_order() -> None:
    hook = Recorder()
    agent, _ = agent_with([tool_call_turn("echo", {"text": "x"}), text_turn("ok")], hooks=[hook])
    await agent.run("go")
    assert hook.seen == [
        "on_run_start",
        "on_turn_start",
        "pre_tool_use",
        "post_tool_use",
        "on_turn_start",
        "on_run_complete",
    ]


async def test_hooks_can_deny_rewrite_and_inject() -> None:
    deny = Recorder({"pre_tool_use": HookDecision.deny("not today")})
    agent, model = agent_with([tool_call_turn("echo", {"text": "x"}), text_turn("ok")], hooks=[deny])
    await agent.run("go")
    assert "not today" in model.requests[1].messages[-1].text  # type: ignore[union-attr]

    rewrite = Recorder(
        {
            "pre_tool_use": HookDecision.replace_input({"text": "rewritten"}),
            "post_tool_use": HookDecision.replace_output("redacted"),
            "on_turn_start": HookDecision.inject_system_message("Mind the budget."),
        }
    )
    registry: HookRegistry[Any] = HookRegistry()
    registry.push(rewrite)
    agent, model = agent_with([tool_call_turn("echo", {"text": "x"}), text_turn("ok")])
    events = await events_of(agent, ctx=RunContext.ephemeral(None).with_hooks(registry))
    assert tool_texts(events) == ["redacted"]
    assert SystemMessage(text="Mind the budget.") in model.requests[0].messages

    refuse = Recorder({"on_run_start": HookDecision.deny("closed")})
    agent, model = agent_with([text_turn("never")], hooks=[refuse])
    with pytest.raises(RunError, match="closed"):
        await agent.run("go")
    assert model.requests == []


@tool(effect=ToolEffect.WRITE)
async def save(text: str) -> str:
    """Save a note."""
    return "saved"


class Policy:
    def __init__(self, decision: PermissionDecision) -> None:
        self.decision = decision

    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        return self.decision


class Approver:
    def __init__(self, approve: bool) -> None:
        self.approve = approve

    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        return ApprovalOutcome.allow() if self.approve else ApprovalOutcome.deny("no")


async def test_plan_mode_denies_a_writing_tool() -> None:
    agent, model = agent_with([tool_call_turn("save", {"text": "x"}), text_turn("ok")], tools=[save])
    ctx = RunContext.ephemeral(None).with_permission_mode(PermissionMode.PLAN)
    events = await events_of(agent, ctx=ctx)
    denied = [e for e in events if isinstance(e, PermissionDenied)]
    assert len(denied) == 1 and denied[0].tool == "save"
    assert "permission denied" in model.requests[1].messages[-1].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("decision", "approver", "expected"),
    [
        (PermissionDecision.allow(), None, "saved"),
        (PermissionDecision.deny("policy says no"), None, "Error: permission denied: policy says no"),
        (PermissionDecision.ask_user("ok?"), Approver(True), "saved"),
        (PermissionDecision.ask_user("ok?"), Approver(False), "Error: permission denied: no"),
        (PermissionDecision.ask_user("ok?"), None, None),
    ],
)
async def test_the_permission_policy_and_approval_handler(
    decision: PermissionDecision, approver: Approver | None, expected: str | None
) -> None:
    agent, _ = agent_with([tool_call_turn("save", {"text": "x"}), text_turn("ok")], tools=[save])
    ctx = RunContext.ephemeral(None).with_permission_policy(Policy(decision)).with_approval_handler(approver)
    events = await events_of(agent, ctx=ctx)
    if expected is None:  # no one here to ask: the run pauses for a person
        assert tool_texts(events) == []
        paused = events[-1]
        assert isinstance(paused, RunPaused) and [p.prompt for p in paused.pending] == ["ok?"]
        return
    [text] = tool_texts(events)
    assert text == expected
    assert any(isinstance(e, ApprovalRequested) for e in events) == (decision.kind == "ask_user")


class Tripwire:
    def __init__(self, word: str) -> None:
        self.word = word

    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        if self.word in input.text:
            kind = "input_policy" if input.kind == "user_text" else "output_policy"
            return GuardrailVerdict.tripwire(kind, {"matched": self.word})
        return GuardrailVerdict.pass_()


async def test_guardrails_halt_the_run() -> None:
    # By default an input guardrail runs beside the first model call: the call's text may
    # stream, but nothing it asks for happens and the run fails once the verdict is in.
    agent, model = agent_with(
        [tool_call_turn("echo", {"text": "x"}), text_turn("fine")], input_guardrails=[Tripwire("PRIVATE KEY")]
    )
    events = await events_of(agent, "BEGIN PRIVATE KEY")
    assert [t for t in types(events) if t not in ("tool_call_delta", "token_delta")] == [
        "run_started",
        "turn_started",
        "guardrail_triggered",
        "run_failed",
    ]
    assert len(model.requests) <= 1

    class FirstTripwire(Tripwire):
        run_in_parallel = False

    agent, model = agent_with([text_turn("fine")], input_guardrails=[FirstTripwire("PRIVATE KEY")])
    events = await events_of(agent, "BEGIN PRIVATE KEY")
    assert types(events) == ["run_started", "guardrail_triggered", "run_failed"]
    assert model.requests == []

    agent, _ = agent_with([text_turn("the secret is 42")], output_guardrails=[Tripwire("secret")])
    events = await events_of(agent)
    assert types(events)[-2:] == ["guardrail_triggered", "run_failed"]
    trigger = events[-2]
    assert isinstance(trigger, GuardrailTriggered) and trigger.kind == "output_policy"

    class Broken:
        async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
            raise RuntimeError("guardrail down")

    agent, _ = agent_with([text_turn("x")], input_guardrails=[Broken()])
    with pytest.raises(RunError) as info:
        await agent.run("hi")
    assert info.value.kind == "guardrail_tripwire"


# --- the stream object --------------------------------------------------------------------------


async def test_a_stream_is_consumed_once_and_can_be_abandoned() -> None:
    agent, _ = agent_with([text_turn("a b c", chunk_size=1)])
    stream = agent.run("hi")
    async for event in stream:
        if isinstance(event, TokenDelta):
            break
    with pytest.raises(UserError, match="already consumed"):
        await stream.collect()


async def test_run_sync_refuses_to_run_inside_an_event_loop() -> None:
    agent, _ = agent_with([text_turn("x")])
    with pytest.raises(UserError, match="inside a running event loop"):
        agent.run_sync("hi")


async def test_approval_requested_streams_while_the_call_waits_for_approval() -> None:
    seen_request = asyncio.Event()

    class WaitsForTheUi:
        async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
            await asyncio.wait_for(seen_request.wait(), timeout=5)  # the UI saw the event first
            return ApprovalOutcome.allow()

    agent, _ = agent_with([tool_call_turn("save", {"text": "x"}), text_turn("ok")], tools=[save])
    ctx = (
        RunContext.ephemeral(None)
        .with_permission_policy(Policy(PermissionDecision.ask_user("Save it?")))
        .with_approval_handler(WaitsForTheUi())
    )
    events: list[AgentEvent] = []
    async for event in agent.run("go", context=ctx):
        events.append(event)
        if isinstance(event, ApprovalRequested):
            seen_request.set()
    assert types(events).index("approval_requested") < types(events).index("tool_output_item")
    assert tool_texts(events) == ["saved"]


async def test_cancel_while_waiting_for_approval_fails_the_run() -> None:
    class NeverAnswers:
        async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
            await asyncio.sleep(60)
            return ApprovalOutcome.allow()

    agent, _ = agent_with([tool_call_turn("save", {"text": "x"})], tools=[save])
    token = CancellationToken()
    ctx = (
        RunContext.ephemeral(None)
        .with_cancel(token)
        .with_permission_policy(Policy(PermissionDecision.ask_user("?")))
        .with_approval_handler(NeverAnswers())
    )
    events: list[AgentEvent] = []
    async for event in agent.run("go", context=ctx):
        events.append(event)
        if isinstance(event, ApprovalRequested):
            token.cancel()
    assert types(events)[-2:] == ["approval_requested", "run_failed"]


async def test_a_run_reads_the_agent_and_its_config_as_they_are_now() -> None:
    # The transition context is made once per agent and reused while what it is made of stays
    # the same: a change to the agent, or another config, between runs still takes effect.
    from helikon import ModelSettings

    model = MockModel.with_scripts(
        [text_turn("one"), text_turn("two"), tool_call_turn("echo", {"text": "x"}), text_turn("never")]
    )
    agent = LlmAgent(name="a", model=model, tools=[echo])
    await agent.run("hi")
    agent.model_settings = ModelSettings(temperature=0.3)
    await agent.run("hi")
    assert model.requests[0].model_settings.temperature is None
    assert model.requests[1].model_settings.temperature == 0.3
    events = [e async for e in agent.run("hi", config=RunConfig(max_turns=1))]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "max_turns_exceeded"
