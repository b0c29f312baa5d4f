"""`helikon web` and `helikon mcp serve` as real processes: served, then reloaded on a save."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cli_helpers import HELIKON, WORD_COUNT, Lines, call, helikon_process, script, text, turns
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp_server_helpers import free_port, inspector, wait_listening


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hi.json").write_text(turns("Hi there!", "Hi again!"))
    (tmp_path / "agents.toml").write_text(
        '[agents.greeter]\ndescription = "Says hi"\nmodel = { provider = "mock", script = "hi.json" }\n'
        '[agents.writer]\nmodel = { provider = "openai", id = "gpt-5-mini" }\n'
    )
    return tmp_path


@pytest.fixture
def web(project: Path) -> Iterator[tuple[str, str, Lines]]:
    with helikon_process("web", "--port", "0", cwd=project, drop=("OPENAI_API_KEY",)) as (_, out, err):
        match = re.match(r"helikon console: (http://127\.0\.0\.1:\d+)/ui\?token=(\S+)", out.next())
        assert match is not None
        yield match.group(1), match.group(2), err


def test_web_serves_the_working_agents_and_a_save_reaches_the_next_run(
    project: Path, web: tuple[str, str, Lines]
) -> None:
    base, token, err = web
    assert err.next().startswith("helikon web: agent 'writer' is disabled: its model openai:gpt-5-mini needs")
    auth = {"Authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=base, headers=auth, timeout=60) as client:
        assert client.get("/agents", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/agents").json() == {"agents": [{"name": "greeter", "description": "Says hi"}]}
        first = client.post(
            "/agents/greeter/runs", json={"input": "hi"}, headers={"X-Session-Id": "s1"}
        ).json()
        assert (first["status"], first["output"]) == ("succeeded", "Hi there!")
        (project / "agents.toml").write_text(
            '[agents.greeter]\ndescription = "Says hello"\n'
            'model = { provider = "mock", script = "hi.json" }\n'
        )
        assert (
            err.until("reloaded agents.toml:")
            == "reloaded agents.toml: agent 'greeter' changed, agent 'writer' removed\n"
        )
        assert client.get("/agents").json()["agents"] == [{"name": "greeter", "description": "Says hello"}]
        (project / "agents.toml").write_text('[agents.greeter]\nmodel = "gpt-5"\n')  # a broken save
        assert err.until("helikon: agents.toml not reloaded").startswith(
            "helikon: agents.toml not reloaded, keeping"
        )
        assert err.next().startswith("agents.toml:2: agents.greeter.model:")
        again = client.post(
            "/agents/greeter/runs", json={"input": "hi"}, headers={"X-Session-Id": "s2"}
        ).json()
        assert again["output"] == "Hi there!"  # the last good definitions, a fresh mock since the reload
        sessions = client.get("/sessions").json()
        assert {s["session_id"] for s in sessions["sessions"]} >= {"s1", "s2"}
    assert (project / ".helikon" / "sessions.db").exists()  # the web's sessions are the CLI's


async def test_mcp_serve_over_stdio_answers_and_follows_a_save(project: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "helikon.cli", "mcp", "serve"], cwd=str(project)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        (tool,) = (await client.list_tools()).tools
        assert (tool.name, tool.description) == ("greeter", "Says hi")
        result = await client.call_tool("greeter", {"input": "hi"})
        assert not result.is_error and result.content[0].text == "Hi there!"  # type: ignore[union-attr]
        (project / "hi.json").write_text(turns("Reloaded!"))
        for _ in range(600):  # wait for the reload: each call runs the definitions current at its start
            result = await client.call_tool("greeter", {"input": "hi"})
            if result.content[0].text == "Reloaded!":  # type: ignore[union-attr]
                break
        assert result.content[0].text == "Reloaded!"  # type: ignore[union-attr]


# --- the real MCP Inspector CLI ---------------------------------------------------------------

COUNTER = (
    '[agents.counter]\ndescription = "Counts words"\nmodel = { provider = "mock", script = "count.json" }\n'
    'tools = ["word_count"]\n' + WORD_COUNT
)


@pytest.fixture
def counter(tmp_path: Path) -> Path:
    (tmp_path / "count.json").write_text(script(call("word_count", {"text": "a b c"}), text("3 words.")))
    (tmp_path / "agents.toml").write_text(COUNTER)
    return tmp_path / "agents.toml"


def _printed(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_inspector_lists_and_calls_the_agent_over_stdio(counter: Path) -> None:
    server = [sys.executable, "-m", "helikon.cli", "mcp", "serve", "--agents", str(counter)]
    listed = _printed(inspector(*server, "--method", "tools/list"))
    assert [(t["name"], t["description"]) for t in listed["tools"]] == [("counter", "Counts words")]
    called = _printed(
        inspector(*server, "--method", "tools/call", "--tool-name", "counter", "--tool-arg", "input=a b c")
    )
    assert called == {"content": [{"type": "text", "text": "3 words."}], "isError": False}


def test_the_inspector_calls_the_agent_over_streamable_http(counter: Path) -> None:
    port = free_port()
    command = [*HELIKON, "mcp", "serve", "--agents", str(counter), "--http", f"127.0.0.1:{port}"]
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = Lines(process.stderr).next()
            assert line == f"helikon mcp: serving 'counter' at http://127.0.0.1:{port}/mcp\n"
            url = f"http://127.0.0.1:{port}/mcp"
            wait_listening(port, process, time.monotonic() + 60)
            called = _printed(
                inspector(
                    url, "--transport", "http", "--method", "tools/call",
                    "--tool-name", "counter", "--tool-arg", "input=a b c",
                )
            )  # fmt: skip
            assert called["content"] == [{"type": "text", "text": "3 words."}]
        finally:
            process.terminate()


# --- helikon web in headless Chromium ---------------------------------------------------------


@pytest.fixture
def starter_web(tmp_path: Path) -> Iterator[str]:
    """`helikon init`, then `helikon web` in the new directory: the console URL it printed."""
    subprocess.run([*HELIKON, "init", str(tmp_path)], capture_output=True, check=True)
    with helikon_process("web", "--port", "0", cwd=tmp_path) as (_, out, _err):
        url = re.match(r"helikon console: (\S+)", line := out.next())
        assert url is not None, line
        yield url.group(1)


async def test_helikon_web_from_a_starter_opens_in_chromium_and_chats(starter_web: str) -> None:
    from browser import artifact, browser_page

    async with browser_page() as page:
        await page.goto(starter_web)
        await page.wait_for_selector("body[data-ready]")
        assert "token" not in page.url
        await page.fill("#input", "How many words: the quick brown fox")
        await page.press("#input", "Enter")
        answer = page.locator(".message.assistant").last
        await answer.wait_for()
        await page.wait_for_function("document.getElementById('send').disabled === false")
        assert "4 words" in await answer.inner_text()
        assert "word_count" in await page.locator(".tool").first.inner_text()
        await page.screenshot(path=artifact("cli-web-starter.png"))
