"""`helikon web` and `helikon mcp serve` as real processes: served, then reloaded on a save."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx2
import pytest
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

HELIKON = [sys.executable, "-m", "helikon.cli"]


def turns(*texts: str) -> str:
    return json.dumps({"default": [[{"type": "token_delta", "text": t}, {"type": "finish"}] for t in texts]})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hi.json").write_text(turns("Hi there!", "Hi again!"))
    (tmp_path / "agents.toml").write_text(
        '[agents.greeter]\ndescription = "Says hi"\nmodel = { provider = "mock", script = "hi.json" }\n'
        '[agents.writer]\nmodel = { provider = "openai", id = "gpt-5-mini" }\n'
    )
    return tmp_path


class Lines:
    """A pipe's lines, read in a thread: a test waits for the next one, never for ever."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self._lines.put(line) for line in stream], daemon=True).start()

    def next(self) -> str:
        return self._lines.get(timeout=120)  # generous: only a hung process takes this long

    def until(self, prefix: str) -> str:
        while not (line := self.next()).startswith(prefix):
            pass
        return line


@pytest.fixture
def web(project: Path) -> Iterator[tuple[str, str, Lines]]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | {"PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*HELIKON, "web", "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            out, err = Lines(process.stdout), Lines(process.stderr)
            match = re.match(r"helikon console: (http://127\.0\.0\.1:\d+)/ui\?token=(\S+)", out.next())
            assert match is not None
            yield match.group(1), match.group(2), err
        finally:
            process.terminate()


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
