"""Per-run state: `RunConfig`, `RunContext`, `ToolContext`, `SessionState`, `ActionsHandle`, cancellation."""

import asyncio
import dataclasses
import gc
import weakref
from datetime import timedelta
from typing import Any

import pytest

from helikon import (
    ActionsHandle,
    ApprovalOutcome,
    CancellationToken,
    HookRegistry,
    MemorySession,
    PermissionDecision,
    PermissionMode,
    RunConfig,
    RunContext,
    SessionState,
    ToolContext,
    TracerHandle,
    UserError,
)

# --- RunConfig --------------------------------------------------------------------------------


def test_run_config_defaults() -> None:
    config = RunConfig()
    assert config.max_turns == 16
    assert config.parallel_tool_call_limit is None
    assert config.max_agent_depth == 8
    assert config.timeout is None


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_turns": 0}, "max_turns=0"),
        ({"max_turns": -1}, "max_turns=-1"),
        ({"max_turns": True}, "max_turns=True"),
        ({"max_turns": 2.5}, "max_turns=2.5"),
        ({"max_turns": "8"}, "max_turns='8'"),
        ({"parallel_tool_call_limit": 0}, "parallel_tool_call_limit=0"),
        ({"parallel_tool_call_limit": -2}, "parallel_tool_call_limit=-2"),
        ({"max_agent_depth": 0}, "max_agent_depth=0"),
        ({"max_agent_depth": False}, "max_agent_depth=False"),
        ({"timeout": 0}, "timeout=0"),
        ({"timeout": -1.5}, "timeout=-1.5"),
        ({"timeout": "30"}, "timeout='30'"),
        ({"timeout": True}, "timeout=True"),
        ({"timeout": timedelta(0)}, "timeout=0.0"),
    ],
)
def test_run_config_validation_names_the_argument(kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises(UserError) as info:
        RunConfig(**kwargs)
    assert f"RunConfig({argument})" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_run_config_accepts_the_smallest_valid_values() -> None:
    config = RunConfig(max_turns=1, parallel_tool_call_limit=1, max_agent_depth=1, timeout=0.001)
    assert (config.max_turns, config.parallel_tool_call_limit, config.max_agent_depth) == (1, 1, 1)
    assert config.timeout == 0.001
    assert RunConfig(timeout=5).timeout == 5


def test_a_timedelta_timeout_becomes_seconds() -> None:
    config = RunConfig(timeout=timedelta(minutes=1, milliseconds=500))  # type: ignore[arg-type]
    assert config.timeout == 60.5
    assert isinstance(config.timeout, float)


def test_run_config_with_setters_return_copies() -> None:
    base = RunConfig()
    assert base.with_max_turns(3) == RunConfig(max_turns=3)
    assert base.with_parallel_tool_call_limit(2).parallel_tool_call_limit == 2
    assert (
        base.with_parallel_tool_call_limit(2).with_parallel_tool_call_limit(None).parallel_tool_call_limit
        is None
    )
    assert base.with_max_agent_depth(2).max_agent_depth == 2
    assert base.with_timeout(12.5).timeout == 12.5
    assert base.with_timeout(timedelta(seconds=3)).timeout == 3.0
    assert base.with_timeout(30).with_timeout(None).timeout is None
    assert base == RunConfig()  # untouched


def test_run_config_with_setters_validate() -> None:
    with pytest.raises(UserError, match=r"RunConfig\(max_turns=0\)"):
        RunConfig().with_max_turns(0)
    with pytest.raises(UserError, match=r"RunConfig\(timeout=-1\)"):
        RunConfig().with_timeout(-1)


def test_run_config_is_a_frozen_carrier() -> None:
    config = RunConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_turns = 3  # type: ignore[misc]
    assert hash(config) == hash(RunConfig())


# --- RunContext -------------------------------------------------------------------------------


def test_ephemeral_defaults() -> None:
    ctx = RunContext.ephemeral({"user_id": 7})
    assert ctx.user_ctx == {"user_id": 7}
    assert isinstance(ctx.session, MemorySession)
    assert len(ctx.session) == 0  # type: ignore[arg-type]
    assert isinstance(ctx.hooks, HookRegistry)
    assert ctx.hooks.is_empty()
    assert ctx.tracer == TracerHandle()
    assert isinstance(ctx.cancel, CancellationToken)
    assert not ctx.cancel.is_cancelled()
    assert ctx.permission_mode is PermissionMode.DEFAULT
    assert ctx.permission_policy is None
    assert ctx.approval_handler is None
    assert ctx.agent_depth == 0
    assert len(ctx.state) == 0
    assert ctx.actions.escalated is False


def test_each_ephemeral_context_is_fresh() -> None:
    a, b = RunContext.ephemeral(None), RunContext.ephemeral(None)
    assert a.session is not b.session
    assert a.cancel is not b.cancel
    assert a.state is not b.state
    a.cancel.cancel()
    assert not b.cancel.is_cancelled()


def _memory_sessions() -> set[int]:
    return {id(o) for o in gc.get_objects() if type(o) is MemorySession}


def test_an_ephemeral_context_makes_its_session_when_it_is_first_read() -> None:
    before = _memory_sessions()
    ctx = RunContext.ephemeral(None)
    assert _memory_sessions() == before  # nothing read it yet
    session = ctx.session
    assert isinstance(session, MemorySession)
    assert _memory_sessions() == before | {id(session)}
    assert ctx.session is session  # the same one on every read


def test_a_context_given_its_own_session_never_makes_a_memory_session() -> None:
    mine = MemorySession()
    before = _memory_sessions()
    ctx = RunContext.ephemeral(None).with_session(mine).child()
    assert ctx.session is mine
    assert _memory_sessions() == before


def test_contexts_derived_before_the_first_read_share_its_session() -> None:
    ctx = RunContext.ephemeral(None)
    derived = [
        ctx.child().child(),
        ctx.with_permission_mode(PermissionMode.PLAN),
        ctx.with_tracer(TracerHandle(user_id="u")),
        ctx.with_cancel(CancellationToken()),
        ctx.without_output_redaction(),
    ]
    first = derived[0].session  # a derived context reads it first
    assert all(d.session is first for d in derived)
    assert ctx.session is first
    assert ctx.with_session(MemorySession()).session is not first


def test_an_isolated_child_has_a_fresh_session_of_its_own() -> None:
    parent = RunContext.ephemeral(None)
    before = _memory_sessions()
    isolated = parent.isolated_child()
    assert _memory_sessions() == before  # made on its first read too
    grandchild = isolated.child()
    assert isinstance(grandchild.session, MemorySession)
    assert isolated.session is grandchild.session
    assert isolated.session is not parent.session


class AllowAll:
    async def check(self, ctx: RunContext[Any], tool: str, args: Any) -> PermissionDecision:
        return PermissionDecision.allow()


class Approver:
    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        return ApprovalOutcome.allow()


@pytest.mark.parametrize(
    ("setter", "value_factory", "reader"),
    [
        ("with_session", MemorySession, "session"),
        ("with_hooks", HookRegistry, "hooks"),
        ("with_tracer", lambda: TracerHandle(session_id="s", user_id="u", tags=("t",)), "tracer"),
        ("with_cancel", CancellationToken, "cancel"),
        ("with_state", lambda: SessionState({"k": 1}), "state"),
        ("with_permission_policy", AllowAll, "permission_policy"),
        ("with_approval_handler", Approver, "approval_handler"),
    ],
)
def test_with_setters_return_a_new_context_and_leave_the_original(
    setter: str, value_factory: Any, reader: str
) -> None:
    original = RunContext.ephemeral("app")
    before = {name: getattr(original, name) for name in ("session", "hooks", "tracer", "cancel", "state")}
    value = value_factory()
    changed = getattr(original, setter)(value)
    assert changed is not original
    assert getattr(changed, reader) is value
    assert getattr(original, reader) is not value
    for name, old in before.items():
        assert getattr(original, name) is old
    # everything else is carried over
    assert changed.user_ctx == "app"
    for name, old in before.items():
        if name != reader:
            assert getattr(changed, name) is old


def test_permission_mode_can_be_set_from_default() -> None:
    ctx = RunContext.ephemeral(None)
    for mode in PermissionMode:
        changed = ctx.with_permission_mode(mode)
        assert changed.permission_mode is mode
    assert ctx.permission_mode is PermissionMode.DEFAULT


@pytest.mark.parametrize("mode", [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN])
def test_bypass_cannot_be_loosened(mode: PermissionMode) -> None:
    ctx = RunContext.ephemeral(None).with_permission_mode(PermissionMode.BYPASS)
    with pytest.raises(UserError) as info:
        ctx.with_permission_mode(mode)
    assert mode.name in str(info.value)
    assert "BYPASS may only be tightened to DONT_ASK" in str(info.value)


def test_bypass_may_tighten_to_dont_ask() -> None:
    ctx = RunContext.ephemeral(None).with_permission_mode(PermissionMode.BYPASS)
    assert ctx.with_permission_mode(PermissionMode.BYPASS).permission_mode is PermissionMode.BYPASS
    assert ctx.with_permission_mode(PermissionMode.DONT_ASK).permission_mode is PermissionMode.DONT_ASK


@pytest.mark.parametrize("mode", [m for m in PermissionMode if m is not PermissionMode.DONT_ASK])
def test_dont_ask_is_terminal(mode: PermissionMode) -> None:
    ctx = RunContext.ephemeral(None).with_permission_mode(PermissionMode.DONT_ASK)
    with pytest.raises(UserError, match="DONT_ASK is terminal"):
        ctx.with_permission_mode(mode)
    assert ctx.with_permission_mode(PermissionMode.DONT_ASK).permission_mode is PermissionMode.DONT_ASK


def test_child_context_is_one_level_deeper_and_shares_state() -> None:
    parent = RunContext.ephemeral("app").with_permission_mode(PermissionMode.PLAN)
    child = parent.child()
    grandchild = child.child()
    assert (parent.agent_depth, child.agent_depth, grandchild.agent_depth) == (0, 1, 2)
    assert child.state is parent.state
    assert child.session is parent.session
    assert child.user_ctx == "app"
    assert child.permission_mode is PermissionMode.PLAN
    assert child.cancel is not parent.cancel


def test_a_child_token_is_cancelled_with_its_parent_but_not_the_reverse() -> None:
    parent = RunContext.ephemeral(None)
    child = parent.child()
    sibling = parent.child()
    child.cancel.cancel("child only")
    assert child.cancel.is_cancelled()
    assert not parent.cancel.is_cancelled()
    assert not sibling.cancel.is_cancelled()
    parent.cancel.cancel("stop")
    assert sibling.cancel.is_cancelled()
    assert sibling.cancel.reason == "stop"
    assert child.cancel.reason == "child only"


def test_a_child_of_a_cancelled_context_starts_cancelled() -> None:
    parent = RunContext.ephemeral(None)
    parent.cancel.cancel("done")
    child = parent.child()
    assert child.cancel.is_cancelled()
    assert child.cancel.reason == "done"


# --- ToolContext ------------------------------------------------------------------------------


def test_tool_context_exposes_the_run_without_the_session() -> None:
    run = (
        RunContext.ephemeral({"user": "ann"})
        .with_permission_mode(PermissionMode.ACCEPT_EDITS)
        .with_tracer(TracerHandle(user_id="ann"))
        .child()
    )
    tool_ctx = ToolContext(run, call_id="call_9", tool_name="lookup", max_agent_depth=5)
    assert tool_ctx.user_ctx == {"user": "ann"}
    assert tool_ctx.state is run.state
    assert tool_ctx.actions is run.actions
    assert tool_ctx.permission_mode is PermissionMode.ACCEPT_EDITS
    assert tool_ctx.cancel is run.cancel
    assert tool_ctx.tracer == TracerHandle(user_id="ann")
    assert tool_ctx.agent_depth == 1
    assert tool_ctx.max_agent_depth == 5
    assert tool_ctx.call_id == "call_9"
    assert tool_ctx.tool_name == "lookup"
    assert not hasattr(tool_ctx, "session")
    assert not hasattr(tool_ctx, "with_session")


def test_tool_state_writes_are_seen_by_the_run() -> None:
    run = RunContext.ephemeral(None)
    ToolContext(run, call_id="c", tool_name="t", max_agent_depth=8).state.set("found", [1, 2])
    assert run.state.get("found") == [1, 2]


# --- SessionState -----------------------------------------------------------------------------


def test_session_state_get_set_delete() -> None:
    state = SessionState()
    assert state.get("missing") is None
    assert state.get("missing", 5) == 5
    state.set("a", {"n": 1})
    state.set("b", "x")
    assert state.get("a") == {"n": 1}
    assert "a" in state
    assert "zzz" not in state
    assert list(state) == ["a", "b"]
    assert len(state) == 2
    state.delete("a")
    state.delete("never-there")  # no error
    assert "a" not in state
    assert state.to_dict() == {"b": "x"}


def test_session_state_stores_none_distinctly_from_missing() -> None:
    state = SessionState()
    state.set("k", None)
    assert "k" in state
    assert state.get("k", "default") is None


def test_session_state_to_dict_is_a_deep_copy() -> None:
    state = SessionState({"outer": {"inner": [1, 2]}})
    snapshot = state.to_dict()
    snapshot["outer"]["inner"].append(3)  # type: ignore[index, union-attr]
    snapshot["new"] = 1
    assert state.get("outer") == {"inner": [1, 2]}
    assert "new" not in state


def test_session_state_copies_its_seed_dict() -> None:
    seed: dict[str, Any] = {"a": 1}
    state = SessionState(seed)
    seed["b"] = 2
    state.set("c", 3)
    assert list(state) == ["a", "c"]
    assert seed == {"a": 1, "b": 2}


# --- ActionsHandle ----------------------------------------------------------------------------


def test_actions_escalate_and_reset() -> None:
    actions = ActionsHandle()
    assert actions.escalated is False
    actions.escalate()
    assert actions.escalated is True
    actions.escalate()
    assert actions.escalated is True
    actions.reset()
    assert actions.escalated is False


# --- CancellationToken ------------------------------------------------------------------------


def test_a_new_token_is_active() -> None:
    token = CancellationToken()
    assert not token.is_cancelled()
    assert token.reason is None
    assert repr(token) == "CancellationToken(active)"


def test_cancel_is_idempotent_and_keeps_the_first_reason() -> None:
    token = CancellationToken()
    token.cancel("user pressed stop")
    token.cancel("second")
    token.cancel()
    assert token.is_cancelled()
    assert token.reason == "user pressed stop"
    assert repr(token) == "CancellationToken(cancelled: 'user pressed stop')"


def test_cancel_without_reason() -> None:
    token = CancellationToken()
    token.cancel()
    assert token.is_cancelled()
    assert token.reason is None


def test_child_tokens() -> None:
    root = CancellationToken()
    child = root.child_token()
    grandchild = child.child_token()
    other = root.child_token()
    child.cancel("child")
    assert grandchild.is_cancelled() and grandchild.reason == "child"
    assert not root.is_cancelled() and not other.is_cancelled()
    root.cancel("root")
    assert other.is_cancelled() and other.reason == "root"
    assert child.reason == "child"


def test_a_child_of_a_cancelled_token_is_born_cancelled() -> None:
    root = CancellationToken()
    root.cancel("gone")
    child = root.child_token()
    assert child.is_cancelled()
    assert child.reason == "gone"


def test_a_parent_does_not_keep_its_children_alive() -> None:
    root = CancellationToken()
    dropped = weakref.ref(root.child_token())
    kept = root.child_token()
    gc.collect()
    assert dropped() is None
    root.cancel()
    assert kept.is_cancelled()


def test_callbacks_run_once_on_cancel() -> None:
    token = CancellationToken()
    calls: list[str] = []
    token.add_callback(lambda: calls.append("a"))
    token.add_callback(lambda: calls.append("b"))
    assert calls == []
    token.cancel()
    token.cancel()
    assert calls == ["a", "b"]


def test_a_removed_callback_does_not_run() -> None:
    token = CancellationToken()
    calls: list[str] = []
    remove = token.add_callback(lambda: calls.append("removed"))
    token.add_callback(lambda: calls.append("kept"))
    remove()
    remove()  # twice is harmless
    token.cancel()
    assert calls == ["kept"]


def test_a_callback_on_an_already_cancelled_token_runs_at_once() -> None:
    token = CancellationToken()
    token.cancel()
    calls: list[str] = []
    remove = token.add_callback(lambda: calls.append("now"))
    assert calls == ["now"]
    remove()  # a no-op
    assert calls == ["now"]


def test_child_callbacks_run_when_the_parent_cancels() -> None:
    root = CancellationToken()
    child = root.child_token()
    calls: list[str] = []
    child.add_callback(lambda: calls.append("child"))
    root.cancel()
    assert calls == ["child"]


async def test_a_failing_callback_does_not_stop_the_cancellation() -> None:
    token = CancellationToken()
    child = token.child_token()
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("callback failed")

    token.add_callback(broken)
    token.add_callback(lambda: calls.append("after"))
    waiter = asyncio.ensure_future(token.wait())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="callback failed"):
        token.cancel("stop")
    assert token.is_cancelled()
    assert calls == ["after"]
    assert child.is_cancelled() and child.reason == "stop"
    await asyncio.wait_for(waiter, timeout=5)


async def test_wait_returns_after_cancel_from_another_task() -> None:
    token = CancellationToken()
    order: list[str] = []

    async def waiter() -> None:
        await token.wait()
        order.append("woke")

    async def canceller() -> None:
        await asyncio.sleep(0.01)
        order.append("cancel")
        token.cancel("later")

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)
    assert not task.done()
    await asyncio.wait_for(asyncio.gather(task, canceller()), timeout=5)
    assert order == ["cancel", "woke"]


async def test_many_waiters_all_wake() -> None:
    token = CancellationToken()
    tasks = [asyncio.ensure_future(token.wait()) for _ in range(5)]
    await asyncio.sleep(0)
    assert not any(t.done() for t in tasks)
    token.cancel()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)


async def test_wait_on_a_cancelled_token_returns_at_once() -> None:
    token = CancellationToken()
    token.cancel()
    await asyncio.wait_for(token.wait(), timeout=1)
    assert token.is_cancelled()


async def test_a_parent_cancel_wakes_a_child_waiter() -> None:
    root = CancellationToken()
    child = root.child_token()
    task = asyncio.ensure_future(child.wait())
    await asyncio.sleep(0)
    root.cancel()
    await asyncio.wait_for(task, timeout=5)
    assert child.is_cancelled()


async def test_an_abandoned_wait_does_not_break_a_later_cancel() -> None:
    token = CancellationToken()
    task = asyncio.ensure_future(token.wait())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    token.cancel()  # the abandoned waiter is skipped, nothing raises
    assert token.is_cancelled()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(CancellationToken().wait(), timeout=0.01)


def test_every_derived_context_carries_every_field() -> None:
    # `RunContext._copy` (behind every `with_*`) names its fields one by one: a field added
    # to the class must be added there too.
    ctx = RunContext.ephemeral(None)
    sentinels = {name: object() for name in RunContext.__slots__}
    for name, value in sentinels.items():
        object.__setattr__(ctx, name, value)
    copy = ctx._copy()  # pyright: ignore[reportPrivateUsage]
    assert copy is not ctx
    assert {name: getattr(copy, name) for name in RunContext.__slots__} == sentinels
