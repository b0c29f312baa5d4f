"""What a tool refuses goes back to the model: a tool's `Denied`, and arguments past the
depth and size limits, under `agent.run` and under `AsyncioRunner` with a durable SQLite
session (nothing escapes the stream, the log stays readable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helikon import (
    Denied,
    LlmAgent,
    PermissionDecision,
    PermissionDenied,
    RunCompleted,
    RunContext,
    ToolOutputItem,
    tool,
)
from helikon.core.items import ToolCall, ToolResult
from helikon.core.run.tool_args import nested_deeper, parse_args
from helikon.core.session import ToolCalled, ToolReturned
from helikon.core.tools import MAX_TOOL_ARGS_CHARS, MAX_TOOL_ARGS_DEPTH
from helikon.runtime import AsyncioRunner
from helikon.sessions.sqlite import SqliteSession, open_session
from helikon.testing import MockModel, text_turn, tool_call_turn

REASON = "/etc/passwd is outside the sandbox"


@tool
async def read(path: str) -> str:
    """Read a file inside the sandbox."""
    if path.startswith("/etc"):
        raise Denied(f"{path} is outside the sandbox")
    return f"{len(path)} characters of path"


def agent(*turns: Any) -> tuple[LlmAgent[None], MockModel]:
    model = MockModel.with_scripts(list(turns))
    return LlmAgent[None](name="files", model=model, tools=[read]), model


async def sqlite(tmp_path: Path) -> SqliteSession:
    return await open_session("s1", path=tmp_path / "s.db")


# --- Denied --------------------------------------------------------------------------------------


async def test_a_denied_call_is_recorded_and_a_later_run_sees_it(tmp_path: Path) -> None:
    run, model = agent(
        tool_call_turn("read", {"path": "/etc/passwd"}, call_id="c1"),
        text_turn("That file is off limits."),
        text_turn("I could not read /etc/passwd."),
    )
    runner = AsyncioRunner[None]()
    async with await sqlite(tmp_path) as session:
        ctx = RunContext.ephemeral(None).with_session(session)
        first = await runner.run(run, "Read /etc/passwd", ctx)
        assert first.final_output == "That file is off limits."
        assert PermissionDenied(tool="read", reason=REASON, call_id="c1") in first.events
        returned = [e.event for e in await session.events() if isinstance(e.event, ToolReturned)]
        assert [(r.call_id, r.is_error, r.content[0].text) for r in returned] == [  # type: ignore[union-attr]
            ("c1", True, "Error: the tool refused the call: " + REASON)
        ]
        await runner.run(run, "What happened?", ctx)
    seen = [m for m in model.requests[2].messages if isinstance(m, ToolResult)]
    assert [(m.call_id, m.is_error, m.text) for m in seen] == [
        ("c1", True, "Error: the tool refused the call: " + REASON)
    ]


# --- hostile arguments ---------------------------------------------------------------------------


def deep(levels: int) -> str:
    return '{"path": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


TOO_DEEP_OR_BIG = {
    "1,000 levels": (deep(1_000), "nested more than 64 levels deep"),
    "100,000 levels": (deep(100_000), "nested more than 64 levels deep"),
    "100,000 levels, unclosed": ("[" * 100_000, "nested more than 64 levels deep"),
    "over the size limit": (
        '{"path": "' + "x" * MAX_TOOL_ARGS_CHARS + '"}',
        f"longer than {MAX_TOOL_ARGS_CHARS:,} characters",
    ),
}


def turns_for(raw: str) -> tuple[Any, ...]:
    return (
        tool_call_turn("read", raw, call_id="c1"),
        tool_call_turn("read", {"path": "notes.txt"}, call_id="c2"),
        text_turn("Read it on the second try."),
    )


def assert_refused_then_recovered(model: MockModel, limit: str) -> None:
    [refused, answered] = [m for m in model.requests[2].messages if isinstance(m, ToolResult)]
    assert refused.is_error and refused.text.startswith("Error: invalid arguments:") and limit in refused.text
    assert (answered.is_error, answered.text) == (False, "9 characters of path")


@pytest.mark.parametrize("case", list(TOO_DEEP_OR_BIG))
async def test_hostile_arguments_come_back_as_invalid_args_under_agent_run(case: str) -> None:
    raw, limit = TOO_DEEP_OR_BIG[case]
    run, model = agent(*turns_for(raw))
    events = [e async for e in run.run("Read it", context=RunContext.ephemeral(None))]
    assert isinstance(events[-1], RunCompleted)
    assert [e.item.call_id for e in events if isinstance(e, ToolOutputItem)] == ["c1", "c2"]
    assert_refused_then_recovered(model, limit)
    [call, _] = [m for m in model.requests[2].messages if isinstance(m, ToolCall)]
    assert isinstance(call.args, str) and len(call.args) < 400  # the model gets a cut copy back


@pytest.mark.parametrize("case", list(TOO_DEEP_OR_BIG))
async def test_hostile_arguments_leave_a_durable_sqlite_log_readable(case: str, tmp_path: Path) -> None:
    raw, limit = TOO_DEEP_OR_BIG[case]
    run, model = agent(*turns_for(raw), text_turn("Still here."))
    runner = AsyncioRunner[None]()
    async with await sqlite(tmp_path) as session:
        ctx = RunContext.ephemeral(None).with_session(session)
        result = await runner.run(run, "Read it", ctx)
        assert result.final_output == "Read it on the second try."
        assert (await runner.run(run, "And now?", ctx)).final_output == "Still here."
    assert_refused_then_recovered(model, limit)
    async with await sqlite(tmp_path) as reopened:  # a fresh reader decodes every stored event
        events = [e.event for e in await reopened.events()]
        snapshot = await reopened.snapshot()
    [stored, _] = [e for e in events if isinstance(e, ToolCalled)]
    assert isinstance(stored.args, str) and stored.args.startswith(raw[:100]) and len(stored.args) < 400
    assert len([m for m in snapshot.messages if isinstance(m, ToolResult)]) == 2


@tool
async def keep(data: list[Any]) -> str:
    """Keep a nested list."""
    depth = 1
    while data:
        data, depth = data[0], depth + 1
    return f"kept {depth} levels"


async def test_arguments_at_the_depth_limit_reach_the_tool_and_the_durable_log(tmp_path: Path) -> None:
    levels = MAX_TOOL_ARGS_DEPTH - 1  # inside the arguments object
    raw = '{"data": ' + "[" * levels + "]" * levels + "}"
    model = MockModel.with_scripts([tool_call_turn("keep", raw, call_id="c1"), text_turn("kept")])
    run = LlmAgent[None](name="keeper", model=model, tools=[keep])
    async with await sqlite(tmp_path) as session:
        await AsyncioRunner[None]().run(run, "Keep it", RunContext.ephemeral(None).with_session(session))
    async with await sqlite(tmp_path) as reopened:
        events = [e.event for e in await reopened.events()]
        snapshot = await reopened.snapshot()
    [stored] = [e for e in events if isinstance(e, ToolCalled)]
    assert isinstance(stored.args, dict)
    [result] = [m for m in snapshot.messages if isinstance(m, ToolResult)]
    assert (result.is_error, result.text) == (False, f"kept {levels} levels")


async def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    raw = '{"path": "' + "[{" * 50_000 + '"}'
    run, model = agent(tool_call_turn("read", raw, call_id="c1"), text_turn("done"))
    await run.run("Read it", context=RunContext.ephemeral(None))
    [result] = [m for m in model.requests[1].messages if isinstance(m, ToolResult)]
    assert (result.is_error, result.text) == (False, "100000 characters of path")


def test_arguments_at_the_depth_limit_parse_and_one_level_more_does_not() -> None:
    at_limit = "[" * MAX_TOOL_ARGS_DEPTH + "]" * MAX_TOOL_ARGS_DEPTH
    assert isinstance(parse_args(at_limit), list)
    over = "[" + at_limit + "]"
    assert parse_args(over) == over + " ...[cut: nested more than 64 levels deep]"


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        ('["\\"[[[", [[]]]', False),  # an escaped quote does not end the string
        ('["\\\\", [[[]]]]', True),  # an escaped backslash does
        ('"unclosed [[[[[', False),  # everything after an open quote is string
        ("[[[[\\", True),  # a lone backslash at the end
        ("]]]][[[", False),
        ("{" * 4, True),
    ],
)
def test_nesting_is_read_with_strings_skipped(text: str, deeper: bool) -> None:
    assert nested_deeper(text, 3) is deeper


# --- the reason is redacted like the result ------------------------------------------------------

SECRET = "s3cr3t-value-9f8e7d"


class DeniesWithTheArgs:
    """A policy whose reason quotes the call's arguments (a secret among them)."""

    async def check(self, ctx: RunContext[None], tool: str, args: Any) -> PermissionDecision:
        return PermissionDecision.deny(f"not with {args}")


@tool
async def login(password: str) -> str:
    """Log in."""
    raise Denied(f"the password {password} is not allowed here")


@pytest.mark.parametrize("where", ["the permission policy", "the tool"])
async def test_a_denied_calls_reason_is_redacted_in_its_event_as_in_what_the_model_reads(where: str) -> None:
    ctx = RunContext.ephemeral(None).with_extra_secrets([SECRET])
    if where == "the permission policy":
        ctx = ctx.with_permission_policy(DeniesWithTheArgs())
    model = MockModel.with_scripts([tool_call_turn("login", {"password": SECRET}), text_turn("ok")])
    result = await LlmAgent[None](name="a", model=model, tools=[login]).run("hi", context=ctx)
    [denied] = [e for e in result.events if isinstance(e, PermissionDenied)]
    [output] = [e.item.text for e in result.events if isinstance(e, ToolOutputItem)]
    assert SECRET not in output and "***" in output
    assert SECRET not in denied.reason and "***" in denied.reason, denied.reason
