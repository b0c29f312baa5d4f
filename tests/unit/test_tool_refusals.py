"""What a tool refuses goes back to the model: a tool's `Denied`, under `AsyncioRunner` with a
durable SQLite session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helikon import (
    Denied,
    LlmAgent,
    PermissionDenied,
    RunContext,
    tool,
)
from helikon.core.items import ToolResult
from helikon.core.session import ToolReturned
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
