"""helikon's MCP servers driven by the real MCP Inspector CLI (@modelcontextprotocol/inspector 0.15.0).

Scenario S7(b): `mcp-inspector --cli <server> --method tools/list` and `--method tools/call
--tool-name ... --tool-arg k=v` exit 0 and print the result, over stdio and over
streamable HTTP on 127.0.0.1, as they do against the official Python example.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from mcp_server_helpers import EXAMPLE_COMMAND, example_http, inspector

pytestmark = pytest.mark.integration


def _printed(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """What the Inspector printed, once it exited 0."""
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_inspector_lists_the_agent_tool_over_stdio() -> None:
    listed = _printed(inspector(*EXAMPLE_COMMAND, "--method", "tools/list"))
    (tool,) = listed["tools"]
    assert tool["name"] == "calculator"
    assert tool["inputSchema"]["required"] == ["input"]
    assert tool["description"].startswith("Adds two numbers")


def test_the_inspector_calls_the_agent_over_stdio() -> None:
    called = _printed(
        inspector(
            *EXAMPLE_COMMAND,
            "--method",
            "tools/call",
            "--tool-name",
            "calculator",
            "--tool-arg",
            "input=add 2 and 40",
        )
    )
    assert called == {"content": [{"type": "text", "text": "The answer is 42."}], "isError": False}


def test_the_inspector_lists_and_calls_over_streamable_http() -> None:
    with example_http() as url:
        listed = _printed(inspector(url, "--transport", "http", "--method", "tools/list"))
        called = _printed(
            inspector(
                url, "--transport", "http", "--method", "tools/call",
                "--tool-name", "calculator", "--tool-arg", "input=hello there",
            )
        )  # fmt: skip
    assert [t["name"] for t in listed["tools"]] == ["calculator"]
    assert called["content"] == [{"type": "text", "text": "You said: hello there"}]


def test_the_inspector_drives_the_tool_server() -> None:
    listed = _printed(inspector(*EXAMPLE_COMMAND, "--tools", "--method", "tools/list"))
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == {"add", "echo_tool"}
    assert tools["add"]["annotations"]["readOnlyHint"] is True
    called = _printed(
        inspector(
            *EXAMPLE_COMMAND, "--tools", "--method", "tools/call",
            "--tool-name", "add", "--tool-arg", "a=2", "b=40",
        )
    )  # fmt: skip
    assert called["structuredContent"] == {"result": 42}
    assert called["content"] == [{"type": "text", "text": "42"}]


def test_the_inspector_reports_an_unknown_tool_and_fails() -> None:
    run = inspector(
        *EXAMPLE_COMMAND, "--method", "tools/call", "--tool-name", "nope", "--tool-arg", "input=x"
    )
    assert run.returncode != 0
    assert "Unknown tool 'nope'" in run.stdout + run.stderr
