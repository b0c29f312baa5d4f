"""A tool's `ToolOutput.metadata` reaches the run's `ToolOutputItem` and the recorded `ToolReturned`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from file_tool_helpers import call, text

from helikon import (
    HookDecision,
    HookEvent,
    LlmAgent,
    RunContext,
    SessionRecorder,
    ToolOutput,
    ToolOutputItem,
    ToolReturned,
    tool,
)
from helikon.core.items import TextPart
from helikon.core.session.codec import MAX_STORED_DEPTH, decode_event, decode_events, encode_event
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn
from helikon.tools import EditTool, GlobTool, GrepTool, ReadTool, Sandbox, WriteTool


@pytest.fixture
def sandbox(tmp_path: Path) -> Any:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    with Sandbox.open(tmp_path) as box:
        yield box


def outputs(events: list[Any]) -> list[ToolOutputItem]:
    return [e for e in events if isinstance(e, ToolOutputItem)]


async def test_a_read_in_a_run_streams_its_metadata(sandbox: Sandbox) -> None:
    model = MockModel.with_scripts(
        [tool_call_turn("Read", {"file_path": "notes.txt", "offset": 2}), text_turn("done")]
    )
    agent = LlmAgent(name="reader", model=model, tools=[ReadTool(sandbox)])
    events = [e async for e in agent.run("read it", context=RunContext.ephemeral(None))]
    [read] = outputs(events)
    assert read.item.text == "     2\ttwo\n     3\tthree"
    assert read.metadata == {
        "path": "notes.txt",
        "bytes": 14,
        "start_line": 2,
        "end_line": 3,
        "total_lines": 3,
        "truncated": False,
    }
    # The model reads the lines only: the metadata is not in what it was sent.
    sent = model.requests[1].messages[-1]
    assert "total_lines" not in str(sent)


async def test_a_tool_without_metadata_and_a_failed_call_have_none(sandbox: Sandbox) -> None:
    @tool
    def plain() -> str:
        """A tool that returns text only."""
        return "just text"

    model = MockModel.with_scripts(
        [
            tool_calls_turn([("plain", {}), ("Read", {"file_path": "missing.txt"})]),
            text_turn("done"),
        ]
    )
    agent = LlmAgent(name="a", model=model, tools=[plain, ReadTool(sandbox)])
    result = await agent.run("go", context=RunContext.ephemeral(None))
    first, missing = outputs(result.events)
    assert (first.item.text, first.metadata) == ("just text", None)
    assert missing.item.is_error and missing.metadata is None


@tool
def fetch_report() -> ToolOutput:
    """Fetch the report."""
    return ToolOutput(
        "fetched",
        metadata={
            "url": "https://api.example/report?key=hunter2hunter2",
            "command": "export GITHUB_TOKEN=ghp_0123456789abcdef",
            "nested": [{"note": "hunter2hunter2 again"}],
            "bytes": 7,
        },
    )


async def test_secrets_are_redacted_from_the_metadata_as_from_the_content() -> None:
    model = MockModel.with_scripts([tool_call_turn("fetch_report", {}), text_turn("done")])
    agent = LlmAgent(name="a", model=model, tools=[fetch_report])
    context = RunContext.ephemeral(None).with_extra_secrets(["hunter2hunter2"])
    [out] = outputs((await agent.run("go", context=context)).events)
    assert out.metadata == {
        "url": "https://api.example/report?key=***",
        "command": "export GITHUB_TOKEN=***",
        "nested": [{"note": "*** again"}],
        "bytes": 7,
    }
    # Without redaction the tool's metadata arrives as it gave it.
    bare = RunContext.ephemeral(None).without_output_redaction()
    model = MockModel.with_scripts([tool_call_turn("fetch_report", {}), text_turn("done")])
    agent = LlmAgent(name="a", model=model, tools=[fetch_report])
    [out] = outputs((await agent.run("go", context=bare)).events)
    assert out.metadata is not None and out.metadata["command"] == "export GITHUB_TOKEN=ghp_0123456789abcdef"


class Replacer:
    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        if event.type == "post_tool_use":
            return HookDecision.replace_output("(contents hidden)")
        return HookDecision.allow()


async def test_a_hook_replacing_the_output_leaves_the_metadata(sandbox: Sandbox) -> None:
    model = MockModel.with_scripts([tool_call_turn("Read", {"file_path": "notes.txt"}), text_turn("done")])
    agent = LlmAgent(name="a", model=model, tools=[ReadTool(sandbox)], hooks=[Replacer()])
    [out] = outputs((await agent.run("go", context=RunContext.ephemeral(None))).events)
    assert out.item.text == "(contents hidden)"
    assert out.metadata is not None and (out.metadata["path"], out.metadata["end_line"]) == ("notes.txt", 3)


async def test_the_recorder_keeps_the_metadata_and_the_codec_stores_it(sandbox: Sandbox) -> None:
    model = MockModel.with_scripts([tool_call_turn("Read", {"file_path": "notes.txt"}), text_turn("done")])
    agent = LlmAgent(name="a", model=model, tools=[ReadTool(sandbox)])
    recorder = SessionRecorder()
    async for event in agent.run("go", context=RunContext.ephemeral(None)):
        recorder.observe(event)
    [returned] = [e for e in recorder.drain() if isinstance(e, ToolReturned)]
    assert returned.metadata is not None and returned.metadata["total_lines"] == 3
    stored = encode_event(returned)
    assert stored.endswith(',"metadata":{"path":"notes.txt","bytes":14,"start_line":1,"end_line":3,'
                           '"total_lines":3,"truncated":false}}')  # fmt: skip
    assert decode_event(stored) == returned
    assert decode_events([stored, stored]) == [returned, returned]


def test_a_result_without_metadata_is_stored_as_before() -> None:
    event = ToolReturned(call_id="c1", content=(TextPart(text="found"),), name="search")
    stored = encode_event(event)
    assert '"metadata"' not in stored
    assert stored.startswith(
        '{"type":"tool_returned","call_id":"c1","content":[{"type":"text","text":"found"}],'
    )
    assert decode_event(stored) == event


@pytest.mark.parametrize("metadata", ['"a string"', "[1, 2]", "17", "true"])
def test_a_malformed_stored_metadata_reads_as_absent_not_as_a_lost_result(metadata: str) -> None:
    stored = (
        '{"type":"tool_returned","call_id":"c1","content":[{"type":"text","text":"found"}],'
        f'"is_error":false,"name":"search","ts":"2026-12-02T07:00:00Z","metadata":{metadata}}}'
    )
    event = decode_event(stored)
    assert isinstance(event, ToolReturned) and event.metadata is None
    assert event.content == (TextPart(text="found"),)


def test_metadata_nested_too_deeply_to_store_is_stored_as_a_note() -> None:
    deep: Any = "bottom"
    for _ in range(400):
        deep = [deep]
    event = ToolReturned(call_id="c1", content=(TextPart(text="ok"),), metadata={"tree": deep})
    read = decode_event(encode_event(event))
    assert isinstance(read, ToolReturned) and read.content == event.content
    assert read.metadata == {
        "unstored": f"this value nested more than {MAX_STORED_DEPTH} levels deep; it was not stored"
    }


def test_every_file_tool_names_path_bytes_and_truncated_the_same_way(sandbox: Sandbox) -> None:
    results = {
        "Read": call(ReadTool(sandbox), {"file_path": "notes.txt"}),
        "Write": call(WriteTool(sandbox), {"file_path": "café.txt", "content": "café\nau lait\n"}),
        "Edit": call(EditTool(sandbox), {"file_path": "café.txt", "old_string": "lait", "new_string": "lé"}),
        "Glob": call(GlobTool(sandbox), {"pattern": "*.txt"}),
        "Grep": call(GrepTool(sandbox), {"pattern": "caf"}),
    }
    for name, out in results.items():
        meta = out.metadata
        assert meta is not None, name
        assert isinstance(meta["path"], str) and type(meta["bytes"]) is int, name
        assert type(meta["truncated"]) is bool, name
    for name in ("Read", "Write", "Edit"):
        meta = results[name].metadata or {}
        assert (meta["start_line"], meta["end_line"]) == {"Read": (1, 3), "Write": (1, 2), "Edit": (2, 2)}[
            name
        ]
    # Of the text the model reads, in UTF-8 bytes (not characters).
    for name in ("Glob", "Grep"):
        assert (results[name].metadata or {})["bytes"] == len(text(results[name]).encode()), name
    assert "é" in text(results["Grep"])
