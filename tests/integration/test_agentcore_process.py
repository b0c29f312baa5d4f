"""`python -m helikon.agentcore` as the container runs it: the image's entry point, PostgreSQL, bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from agentcore_helpers import session
from mcp_server_helpers import free_port, listening, wait_listening

from helikon.server import SqliteSessionProvider
from helikon.sessions.postgres import open_session

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "examples" / "agentcore" / "Dockerfile"


def entrypoint() -> list[str]:
    """The image's ENTRYPOINT, read from the Dockerfile, run by this interpreter."""
    line = next(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("ENTRYPOINT "))
    command = json.loads(line.removeprefix("ENTRYPOINT "))
    assert command[0] == "python"
    return [sys.executable, *command[1:]]


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """The image's /app: the example agent as agent.py (what the Dockerfile copies)."""
    shutil.copy(ROOT / "examples" / "agentcore" / "agent.py", tmp_path / "agent.py")
    return tmp_path


@contextlib.contextmanager
def container(app_dir: Path, *args: str) -> Iterator[str]:
    """The entry point serving on a free loopback port, stopped with SIGTERM (as a container is)."""
    command = [*entrypoint(), "--host", "127.0.0.1", *args]
    with listening(lambda port: [*command, "--port", str(port)], cwd=app_dir) as (base, process):
        yield base
    assert process.returncode in (0, -signal.SIGTERM)  # uvicorn shuts down, then lets the signal end it


def test_the_images_entry_point_keeps_sessions_in_postgres_across_containers(
    app_dir: Path, postgres_dsn: str
) -> None:
    answers = []
    for prompt in ("add 2 and 40", "hello"):  # one container each: the second is a fresh one
        with container(app_dir, "--sessions", postgres_dsn) as base, httpx2.Client(base_url=base) as client:
            assert client.get("/ping").json()["status"] == "Healthy"
            answered = client.post("/invocations", json={"prompt": prompt}, headers=session("pg-1"))
            assert answered.status_code == 200, answered.text
            answers.append(answered.json()["output"])
    assert answers == ["The answer is 42.", "You said: hello"]

    # Read back what the two containers wrote.

    async def users() -> list[str]:
        stored = await open_session("pg-1", dsn=postgres_dsn)
        try:
            return [m.text for m in (await stored.snapshot()).messages if m.type == "user"]
        finally:
            await stored.aclose()

    assert asyncio.run(users()) == ["add 2 and 40", "hello"]


def run_entry_point(app_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*entrypoint()[:3], *args], cwd=app_dir, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["agent"], "name the agent as module:attribute"),
        (["nowhere:assistant"], "cannot import 'nowhere'"),
        (["agent:add"], "it must name an Agent or an AgentCoreServer"),
        (["agent:missing"], "'agent:missing' is nothing"),
        (["agent:assistant", "--sessions", "mysql://u:secret@h/db"], "the scheme must be one of"),
        (["agent:assistant", "--protocol", "mcp", "--durable-mcp"], "durable=True"),
    ],
)
def test_a_bad_target_or_option_is_one_line_that_says_what_to_fix(
    app_dir: Path, args: list[str], message: str
) -> None:
    ran = run_entry_point(app_dir, *args)
    assert ran.returncode == 2
    (line,) = ran.stderr.strip().splitlines()
    assert line.startswith("helikon.agentcore: ") and message in line
    assert "secret" not in line


def test_without_a_session_store_the_entry_point_warns_that_sessions_die_with_the_container(
    app_dir: Path,
) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*entrypoint(), "--host", "127.0.0.1", "--port", str(port)],
        cwd=app_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(port, process, time.monotonic() + 60)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert "sessions live in memory and are lost when the container stops" in err


HANGING = '''
import asyncio

from helikon import LlmAgent, tool
from helikon.testing import FunctionModel, text_turn, tool_call_turn


@tool
async def hang() -> str:
    """Wait for ever."""
    await asyncio.Event().wait()
    return "never"


def reply(request):
    if request.messages[-1].type == "tool_result":
        return text_turn("done")
    return tool_call_turn("hang", {})


agent = LlmAgent(name="stuck", model=FunctionModel(reply), tools=[hang])
'''


def test_sigterm_stops_a_container_with_a_run_still_going_and_writes_its_turn(app_dir: Path) -> None:
    (app_dir / "hanging.py").write_text(HANGING)
    port = free_port()
    store = app_dir / "sessions.db"
    command = [sys.executable, "-m", "helikon.agentcore", "hanging:agent", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--sessions", f"sqlite:///{store}"],
        cwd=app_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events: list[str] = []
    # A server that waits on the run keeps the stream open for ever: kill it then, and fail.
    deadline = threading.Timer(120, process.kill)
    deadline.start()
    try:
        wait_listening(port, process, time.monotonic() + 60)
        headers = {"accept": "text/event-stream", **session("stuck-1")}
        with (
            httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client,
            client.stream("POST", "/invocations", json={"prompt": "go"}, headers=headers) as stream,
        ):
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line.removeprefix("data: "))["type"])
                    if events[-1] == "tool_call_item":  # the run hangs in its tool from here on
                        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)  # uvicorn did not wait on the run
    finally:
        deadline.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert events[-1] == "run_failed" and process.returncode != -signal.SIGKILL

    async def outcome() -> list[str]:
        reader = SqliteSessionProvider(store)
        stored = await (await reader.session("stuck-1")).events()
        await reader.aclose()
        return [e.event.outcome for e in stored if e.event.type == "turn_closed"]  # type: ignore[attr-defined]

    assert asyncio.run(outcome()) == ["cancelled"]
