"""The web console on a big session: how long until a 2,000-event session is drawn, in headless Chromium.

helikon: `AgentServer` with its in-memory provider, one session of N events (default 2,000:
user messages, assistant answers, tool calls and their results, as a session logs them)
written before it starts. The console is opened on that session (`/ui#session=big`, the token
already exchanged for the cookie).

google-adk: its dev UI (`adk web`: `get_fast_api_app(..., web=True)`, `memory://` sessions) in a
child process run by the interpreter that has google-adk (`--adk-python`, default
`.bench-venv/bin/python`), with one instant fake-model agent. The same N events (the question
from `user`, the agent's function call, its function response, its answer) are given to ADK's
create-session endpoint (`POST /apps/bench/users/user/sessions` with `events`), and the dev UI is
opened on that session (`/dev-ui/?app=bench&userId=user&session=big`, the form its
`loadSessionByUrlOrReset` reads).

Both are drawn in Debian's Chromium, driven by Playwright (`executable_path`, never a downloaded
browser), in interleaved rounds, each on a fresh page, and timed:

- ready: from navigation start until the page has drawn the session's conversation. helikon
  stamps `document.body.dataset.ready` with `performance.now()` then; for ADK a
  `requestAnimationFrame` poll takes `performance.now()` on the first frame in which all N
  message rows are in the DOM and the last one holds the session's last answer. The figure the
  issue names, target under 1.5 s;
- first contentful paint, as Chromium reports it;
- the sessions tab (helikon only): a click until the session's tree is drawn.

Without google-adk (or its dev UI's assets) the ADK column says why it is not measured.

Run: `uv run python benchmarks/ui.py [--events 2000] [--rounds 5]` (needs Debian's chromium:
`make test-deps`; ADK's side runs under `.bench-venv/bin/python`, see `--adk-python`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from headless_chromium import FLAGS, chromium_path
from server import serve_adk

TARGET_S = 1.5
TOKEN = "benchmark-console-token-0123456789"
HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[1]
ADK_PYTHON = ROOT / ".bench-venv" / "bin" / "python"
ADK_APP, ADK_USER, ADK_SESSION = "bench", "user", "big"

# The agent is never run: the dev UI only needs an app to list and to open the session under.
ADK_AGENT = """
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmResponse
from google.genai import types


class FakeLlm(BaseLlm):
    async def generate_content_async(self, llm_request, stream=False):
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="It is sunny.")]))


root_agent = LlmAgent(name="bench", model=FakeLlm(model="fake-llm"), instruction="Weather questions.")
"""

# Resolves with performance.now() on the first frame where all rows are drawn, the last one the last answer.
ADK_DRAWN = """([rows, last]) => {
    const drawn = document.querySelectorAll('.message-row-container');
    return drawn.length >= rows && drawn[drawn.length - 1].textContent.includes(last) && performance.now();
}"""
PAINT = "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN}).startTime"


def question(i: int) -> str:
    return f"question {i}: what is the weather in city {i}?"


def answer(i: int) -> str:
    return f"It is **sunny** in city {i}: 21 degrees."


# --------------------------------------------------------------------------- helikon


async def big_session(provider: Any, events: int) -> int:
    """Fill session `big` with about `events` events: a question, a call, its result, an answer, again."""
    from helikon.core.items import TextPart
    from helikon.core.session import AssistantMessageEvent, ToolCalled, ToolReturned, UserMessageEvent

    session = await provider.session("big")
    batch: list[Any] = []
    for i in range(events // 4):
        batch += [
            UserMessageEvent(content=(TextPart(text=question(i)),)),
            ToolCalled(call_id=f"c{i}", name="weather", args={"city": f"city {i}"}),
            ToolReturned(
                call_id=f"c{i}", content=(TextPart(text=f"city {i}: sunny, 21 degrees"),), name="weather"
            ),
            AssistantMessageEvent(content=(TextPart(text=answer(i)),)),
        ]
    await session.append(batch)
    return len(await session.events())


async def helikon_round(context: Any, base: str, events: int, times: dict[str, list[float]]) -> None:
    page = await context.new_page()
    await page.goto(f"{base}/ui#session=big")
    await page.wait_for_selector("body[data-ready]")
    shown = await page.locator(".message.user").count()
    assert shown == events // 4, f"the console drew {shown} questions of {events // 4}"
    times["ready"].append(float(await page.evaluate("document.body.dataset.ready")) / 1000)
    times["first paint"].append(float(await page.evaluate(PAINT)) / 1000)
    start = time.perf_counter()
    await page.click("#tab-sessions")
    await page.locator(".node", has_text=f"question {events // 4 - 1}").first.wait_for()
    times["tree"].append(time.perf_counter() - start)
    await page.close()


# --------------------------------------------------------------------------- google-adk


def adk_events(events: int) -> list[dict[str, Any]]:
    """The same conversation as helikon's, as ADK events: the model's turns are authored by the agent."""
    log: list[dict[str, Any]] = []
    for i in range(events // 4):
        inv = f"inv{i}"
        fcall = {"id": f"c{i}", "name": "weather", "args": {"city": f"city {i}"}}
        fresp = {"id": f"c{i}", "name": "weather", "response": {"result": f"city {i}: sunny, 21 degrees"}}
        log += [
            {
                "author": "user",
                "invocationId": inv,
                "content": {"role": "user", "parts": [{"text": question(i)}]},
            },
            {
                "author": ADK_APP,
                "invocationId": inv,
                "content": {"role": "model", "parts": [{"functionCall": fcall}]},
            },
            {
                "author": ADK_APP,
                "invocationId": inv,
                "content": {"role": "user", "parts": [{"functionResponse": fresp}]},
            },
            {
                "author": ADK_APP,
                "invocationId": inv,
                "content": {"role": "model", "parts": [{"text": answer(i)}]},
            },
        ]
    return log


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def http_json(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


class AdkServer:
    """ADK's dev UI server in a child process, with one session of the benchmark's events."""

    def __init__(self, python: Path, work: Path) -> None:
        self.python, self.work = python, work
        self.process: subprocess.Popen[bytes] | None = None
        self.base = ""

    def launch(self) -> None:
        """Check the interpreter has google-adk and its dev UI, then start the child."""
        found = (
            subprocess.run(
                [
                    str(self.python),
                    "-c",
                    "import google.adk.cli.fast_api, google.adk, uvicorn; print(google.adk.__file__)",
                ],
                capture_output=True,
                text=True,
            )
            if self.python.exists()
            else None
        )
        if found is None or found.returncode != 0:
            why = found.stderr.strip().splitlines()[-1] if found else "no such interpreter"
            raise RuntimeError(f"google-adk is not importable by {self.python} ({why})")
        browser = Path(found.stdout.strip()).parent / "cli" / "browser" / "index.html"
        if not browser.exists():
            raise RuntimeError(f"google-adk ships no dev UI here ({browser} is missing)")
        agent = self.work / "agents" / ADK_APP
        agent.mkdir(parents=True)
        (agent / "__init__.py").write_text("from . import agent\n")
        (agent / "agent.py").write_text(ADK_AGENT)
        # The dev UI asks for telemetry consent in a dialog over the chat unless ~/.adk/config.json answers.
        (self.work / ".adk").mkdir()
        (self.work / ".adk" / "config.json").write_text('{"telemetry": false}\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_CLOUD"))}
        env |= {"HOME": str(self.work), "OTEL_SDK_DISABLED": "true", "PYTHONWARNINGS": "ignore"}
        port = free_port()
        self.process = subprocess.Popen(
            [str(self.python), __file__, "--serve-adk", str(port), str(self.work / "agents")],
            env=env,
            cwd=self.work,
            stderr=subprocess.DEVNULL,
        )
        self.base = f"http://{HOST}:{port}"

    async def start(self, events: int) -> int:
        """Start it and create the session; the number of events ADK returns for it."""
        await asyncio.to_thread(self.launch)
        assert self.process is not None
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"ADK's server exited with {self.process.returncode}")
            try:
                if ADK_APP in await asyncio.to_thread(http_json, f"{self.base}/list-apps"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("ADK's server did not answer /list-apps within 60 s")
            await asyncio.sleep(0.1)
        url = f"{self.base}/apps/{ADK_APP}/users/{ADK_USER}/sessions"
        await asyncio.to_thread(http_json, url, {"sessionId": ADK_SESSION, "events": adk_events(events)})
        session = await asyncio.to_thread(http_json, f"{url}/{ADK_SESSION}")
        return len(session["events"])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    @property
    def url(self) -> str:
        return f"{self.base}/dev-ui/?app={ADK_APP}&userId={ADK_USER}&session={ADK_SESSION}"


async def adk_round(
    context: Any, url: str, events: int, times: dict[str, list[float]], screenshot: str | None
) -> None:
    page = await context.new_page()
    await page.goto(url, wait_until="commit")
    drawn = await page.wait_for_function(
        ADK_DRAWN, arg=[events, f"in city {events // 4 - 1}: 21"], polling="raf", timeout=60_000
    )
    times["ready"].append(float(await drawn.json_value()) / 1000)
    users = await page.locator(".message-row-container.user").count()
    assert users == events // 4, f"ADK's dev UI drew {users} questions of {events // 4}"
    times["first paint"].append(float(await page.evaluate(PAINT)) / 1000)
    if screenshot:
        await page.screenshot(path=screenshot)
    await page.close()


# --------------------------------------------------------------------------- the rounds


async def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import uvicorn
    from playwright.async_api import async_playwright

    from helikon import LlmAgent
    from helikon.server import AgentServer, InMemorySessionProvider
    from helikon.testing import MockModel

    chromium = chromium_path()
    provider = InMemorySessionProvider()
    logged = await big_session(provider, args.events)
    agent = LlmAgent(name="bench", model=MockModel.with_scripts([]))
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(agent)
        .session_provider(provider)
        .local_token(TOKEN)
        .build()
    )
    runner = uvicorn.Server(uvicorn.Config(server.app(), host=HOST, port=0, log_level="warning"))
    serving = asyncio.create_task(runner.serve())
    while not runner.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.01)
    base = f"http://{HOST}:{runner.servers[0].sockets[0].getsockname()[1]}"
    adk = AdkServer(Path(args.adk_python), work)
    result: dict[str, Any] = {
        "helikon": {"ready": [], "first paint": [], "tree": []},
        "adk": {"ready": [], "first paint": []},
        "logged": logged,
        "adk logged": 0,
        "adk problem": "",
    }
    try:
        try:
            result["adk logged"] = await adk.start(args.events)
        except (RuntimeError, OSError) as error:
            result["adk problem"] = str(error)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=list(FLAGS))
            context = await browser.new_context(viewport={"width": 1400, "height": 900})
            page = await context.new_page()
            await page.goto(f"{base}/ui?token={TOKEN}")  # the cookie, once
            await page.wait_for_selector("body[data-ready]")
            await page.close()
            for n in range(args.rounds):  # interleaved, who goes first alternating
                sides = ["helikon", "adk"] if n % 2 == 0 else ["adk", "helikon"]
                for side in sides:
                    if side == "helikon":
                        await helikon_round(context, base, args.events, result["helikon"])
                    elif not result["adk problem"]:
                        shot = args.screenshot if n == args.rounds - 1 else None
                        try:
                            await adk_round(context, adk.url, args.events, result["adk"], shot)
                        except Exception as error:
                            result["adk problem"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
            await browser.close()
    finally:
        adk.stop()
        runner.should_exit = True
        await serving
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--adk-python", default=str(ADK_PYTHON), help="an interpreter with google-adk")
    parser.add_argument("--screenshot", default="/tmp/adk-dev-ui.png", help="ADK's page, last round")
    parser.add_argument("--serve-adk", nargs=2, metavar=("PORT", "AGENTS_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_adk:
        serve_adk(int(args.serve_adk[0]), args.serve_adk[1], web=True)
        return
    with tempfile.TemporaryDirectory(prefix="helikon-ui-bench-") as work:
        result = asyncio.run(measure(args, Path(work)))
    ours, theirs = result["helikon"], result["adk"]
    print(
        f"a session of {result['logged']} events (ADK: {result['adk logged']}), "
        f"{args.rounds} rounds, interleaved"
    )
    print(f"{'':12} {'helikon':>19} {'google-adk':>19} {'helikon/ADK':>12}")
    print(f"{'':12} {'median':>9} {'worst':>9} {'median':>9} {'worst':>9} {'(median)':>12}")
    for name, values in ours.items():
        line = f"{name:12} {statistics.median(values) * 1000:8.0f}ms {max(values) * 1000:8.0f}ms"
        other = theirs.get(name) or []
        if other and len(other) == len(values):
            ratio = statistics.median(values) / statistics.median(other)
            line += f" {statistics.median(other) * 1000:8.0f}ms {max(other) * 1000:8.0f}ms {ratio:11.2f}x"
        else:
            line += f" {'-':>9} {'-':>9} {'-':>12}"
        print(line)
    ready = statistics.median(ours["ready"])
    print(f"helikon drawn in {ready:.2f} s, target {TARGET_S} s ({ready / TARGET_S:.2f}x the target)")
    if result["adk problem"]:
        print(f"ADK dev UI: not measurable: {result['adk problem']}")
    else:
        adk_ready = statistics.median(theirs["ready"])
        print(f"ADK dev UI drawn in {adk_ready:.2f} s; helikon/ADK {ready / adk_ready:.2f}x")
        if args.screenshot:
            print(f"ADK's page, last round: {args.screenshot}")


if __name__ == "__main__":
    main()
