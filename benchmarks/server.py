"""The agent server over HTTP: helikon's AgentServer vs. google-adk's api_server and ``langgraph dev``.

Every contender serves the same instant agent (no LLM): one text turn answering
``"It is sunny in Paris."``. Each server runs in its own process on 127.0.0.1 (uvicorn, a free
port, the same uvicorn settings: ``loop``/``http`` "auto", access log off, log level warning);
this process is the load generator: ``httpx2.AsyncClient``, ``--clients`` concurrent tasks
(default 50) looping for ``--duration`` seconds per block.

- **one-shot**: helikon ``POST /agents/bench/runs`` (JSON, blocks until the run is done) vs.
  ADK ``POST /run`` (the run's events as JSON). Runs/s and p50/p99 latency.
- **SSE**: helikon ``POST /agents/bench/runs?stream=sse`` vs. ADK ``POST /run_sse`` with
  ``streaming: true`` (the fake model yields one partial chunk, then the turn) vs. **the floor**:
  a bare Starlette endpoint whose ``EventSourceResponse`` streams helikon's own frames for one run
  (captured from helikon at start-up) with no agent behind it. Events/s and streams/s.
- **async + join**: helikon ``POST ...?mode=async`` (202) then ``GET .../runs/{id}/wait`` vs.
  ``langgraph dev`` (in-memory): ``POST /threads/{id}/runs`` then ``GET .../runs/{run_id}/join``
  on a one-node ``StateGraph`` returning a fixed message. Latency of the pair, at ``--clients``
  and at one client.

The agents: helikon ``LlmAgent(model=FunctionModel(...))`` served by
``AgentServer.builder().with_default_context().agent(agent).build().app()``; ADK an ``LlmAgent`` on
a ``BaseLlm`` subclass returning a fixed ``LlmResponse`` (with zero usage, as in
``loop_overhead.py``), loaded from an agents directory by ``get_fast_api_app`` with the arguments
``adk api_server`` passes, ``memory://`` sessions, local storage off, ``--auto_create_session``;
LangGraph from a ``langgraph.json`` by the real ``langgraph dev`` CLI (``--no-reload``,
``--n-jobs-per-worker`` = clients instead of its default 1, ``--allow-blocking`` so blockbuster is
off, ``disable_persistence``, ``LOG_LEVEL=WARNING``: its best showing).

Sessions are mirrored: every run is on a new conversation that the server stores. ADK gets a new
``session_id`` per run (auto-created in its ``InMemorySessionService``); LangGraph a new thread per
run (``if_not_exists: "create"``); helikon a new ``X-Session-Id`` per run (stored by its
``InMemorySessionProvider``). One request per run, no session set-up calls.

Each scenario starts fresh servers (none carries an earlier scenario's sessions or runs) and
stops them after it. Contenders take turns in blocks (A, B, B, A, A, B...) after a checked warm-up,
so machine noise hits all; every response is checked (status, the run succeeded, the scripted
text, the stream's end frame) before it counts. Tracing is off everywhere (``OTEL_SDK_DISABLED``,
``LANGSMITH_TRACING=false``...). Besides runs/s, p50/p99 and events/s, each table shows the server's
CPU per run and the cores that the server, the load generator and everything else on the machine
kept busy (``/proc``): on a 2-core machine the client shares the cores with the server, and a
busy "others" column means another process competed for them.

Run: ``bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/server.py``
(``--duration 4 --rounds 3 --clients 50``, about 2.3 minutes). Targets: one-shot runs/s at least
3x ADK's; async + join latency at most 1/2 of LangGraph's; SSE events/s at least 0.7x the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from processes import cpu_seconds, stop_group, versions

PROMPT = "Weather in Paris?"
ANSWER = "It is sunny in Paris."
INSTRUCTIONS = "You answer weather questions."
HOST = "127.0.0.1"

QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_SDK_DISABLED": "true",
    "LOG_LEVEL": "WARNING",  # langgraph-api's structlog
    "LANGGRAPH_NO_VERSION_CHECK": "true",  # langgraph dev asks PyPI for a newer version otherwise
}
_DROP_ENV_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OTEL_", "LOGFIRE_")

ADK_AGENT = f"""
from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmResponse
from google.genai import types

_USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=0, candidates_token_count=0, total_token_count=0
)


def _reply(partial=None):
    content = types.Content(role="model", parts=[types.Part(text={ANSWER!r})])
    return LlmResponse(content=content, partial=partial, usage_metadata=_USAGE)


class FakeLlm(BaseLlm):
    async def generate_content_async(self, llm_request, stream=False):
        if stream:  # SSE mode: one partial chunk, then the aggregated turn
            yield _reply(partial=True)
        yield _reply()


root_agent = LlmAgent(name="bench", model=FakeLlm(model="fake-llm"), instruction={INSTRUCTIONS!r})
"""

LANGGRAPH_GRAPH = f"""
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    input: str
    output: str


def answer(state: State) -> State:
    return {{"output": {ANSWER!r}}}


builder = StateGraph(State)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile()
"""


# --------------------------------------------------------------------------- the servers (children)


def _uvicorn(app: Any, port: int) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=HOST, port=port, log_level="warning", access_log=False)
    uvicorn.Server(config).run()


def serve_helikon(port: int, _: str) -> None:
    from helikon import LlmAgent
    from helikon.server import AgentServer
    from helikon.testing import FunctionModel, text_turn

    agent = LlmAgent(
        name="bench", model=FunctionModel(lambda request: text_turn(ANSWER)), instructions=INSTRUCTIONS
    )
    _uvicorn(AgentServer.builder().with_default_context().agent(agent).build().app(), port)


def serve_adk(port: int, agents_dir: str, *, web: bool = False) -> None:
    """ADK's app as `adk api_server` serves it on `port` (`web`: as `adk web`, with the dev UI)."""
    from google.adk.cli.fast_api import get_fast_api_app

    app = get_fast_api_app(
        agents_dir=agents_dir,
        session_service_uri="memory://",
        use_local_storage=False,
        web=web,
        host=HOST,
        bind_host=HOST,
        port=port,
        auto_create_session=True,
    )
    _uvicorn(app, port)


def serve_floor(port: int, frames_file: str) -> None:
    from sse_starlette import EventSourceResponse, ServerSentEvent
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    frames = json.loads(Path(frames_file).read_text())
    events = [ServerSentEvent(data=f["data"], event=f["event"], id=f["id"]) for f in frames]

    async def stream(request: Request) -> Response:
        await request.json()

        async def source() -> Any:
            for event in events:
                yield event

        return EventSourceResponse(source(), ping=15.0, send_timeout=30.0)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    _uvicorn(Starlette(routes=[Route("/stream", stream, methods=["POST"]), Route("/health", health)]), port)


SERVE: dict[str, Callable[[int, str], None]] = {
    "helikon": serve_helikon,
    "google-adk": serve_adk,
    "floor": serve_floor,
}


# --------------------------------------------------------------------------- starting and stopping them


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process so far (all its threads)."""
        return cpu_seconds(f"/proc/{self.proc.pid}/stat")

    def stop(self) -> None:
        stop_group(self.proc)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV_PREFIXES)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(QUIET_ENV)
    return env


def start(name: str, command: list[str], work: Path, cwd: Path | None = None) -> Server:
    port = _free_port()
    log = work / f"{name}-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [part.replace("{port}", str(port)) for part in command],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_env(),
            cwd=cwd,
            start_new_session=True,  # its own process group: stopped as one
        )
    return Server(name, port, proc, log)


def start_child(name: str, work: Path, arg: str = "") -> Server:
    return start(name, [sys.executable, __file__, "--serve", name, "--port", "{port}", "--arg", arg], work)


def start_langgraph(work: Path, jobs: int) -> Server:
    project = work / "langgraph"
    project.mkdir(exist_ok=True)
    (project / "graph.py").write_text(LANGGRAPH_GRAPH)
    config = {"dependencies": ["."], "graphs": {"bench": "./graph.py:graph"}, "disable_persistence": True}
    (project / "langgraph.json").write_text(json.dumps(config))
    cli = Path(sys.executable).parent / "langgraph"
    command = [str(cli), "dev", "--no-browser", "--no-reload", "--allow-blocking", "--port", "{port}"]
    command += ["--n-jobs-per-worker", str(jobs), "--server-log-level", "WARNING"]
    return start("langgraph", command, work, cwd=project)


async def wait_ready(client: Any, server: Server, path: str, limit: float = 90.0) -> str | None:
    """None once `path` answers 200; else why not (the process died, or it never answered)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            tail = server.log.read_text(errors="replace").strip().splitlines()[-5:]
            return f"the server exited ({server.proc.returncode}): {' | '.join(tail)}"
        with contextlib.suppress(Exception):
            if (await client.get(server.base + path, timeout=2.0)).status_code == 200:
                return None
        await asyncio.sleep(0.2)
    return f"no answer on {path} within {limit:g} s"


# --------------------------------------------------------------------------- the requests (checked)


class Wrong(Exception):
    """A response that is not the scripted run's: it is not counted."""


Op = Callable[[Any, str], Awaitable[int]]
"""One checked operation against a base URL; returns the events it received (0 for JSON)."""


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise Wrong(what)


async def _sse(response: Any) -> list[tuple[str, str]]:
    """The (event, data) frames of an SSE body; comments are skipped."""
    frames: list[tuple[str, str]] = []
    event, data = "message", []
    async for line in response.aiter_lines():
        if not line:
            if data:
                frames.append((event, "\n".join(data)))
            event, data = "message", []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()
    if data:
        frames.append((event, "\n".join(data)))
    return frames


def _helikon_run_ok(response: Any, status: int = 200) -> dict[str, Any]:
    _expect(response.status_code == status, f"HTTP {response.status_code}: {response.text[:200]}")
    return response.json()


async def helikon_oneshot(client: Any, base: str) -> int:
    response = await client.post(
        f"{base}/agents/bench/runs", json={"input": PROMPT}, headers={"X-Session-Id": uuid.uuid4().hex}
    )
    run = _helikon_run_ok(response)
    _expect(run["status"] == "succeeded" and run["output"] == ANSWER, f"run: {str(run)[:200]}")
    return 0


async def helikon_sse(client: Any, base: str) -> int:
    headers = {"X-Session-Id": uuid.uuid4().hex}
    url = f"{base}/agents/bench/runs?stream=sse"
    async with client.stream("POST", url, json={"input": PROMPT}, headers=headers) as response:
        _expect(response.status_code == 200, f"HTTP {response.status_code}")
        frames = await _sse(response)
    decoded = [json.loads(data) for _, data in frames]
    text = "".join(e["text"] for e in decoded if e["type"] == "token_delta")
    _expect(bool(frames) and frames[-1][0] == "run_completed", f"stream ended with {frames[-1:]}")
    _expect(text == ANSWER, f"streamed text {text!r}")
    return len(frames)


async def helikon_async_join(client: Any, base: str) -> int:
    headers = {"X-Session-Id": uuid.uuid4().hex}
    url = f"{base}/agents/bench/runs?mode=async"
    run = _helikon_run_ok(await client.post(url, json={"input": PROMPT}, headers=headers), 202)
    run = _helikon_run_ok(await client.get(f"{base}/agents/bench/runs/{run['run_id']}/wait"))
    _expect(run["status"] == "succeeded" and run["output"] == ANSWER, f"run: {str(run)[:200]}")
    return 0


def _adk_body(streaming: bool) -> dict[str, Any]:
    return {
        "app_name": "bench",
        "user_id": "u",
        "session_id": uuid.uuid4().hex,
        "new_message": {"role": "user", "parts": [{"text": PROMPT}]},
        "streaming": streaming,
    }


def _adk_text(event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in (event.get("content") or {}).get("parts", ()))


async def adk_oneshot(client: Any, base: str) -> int:
    response = await client.post(f"{base}/run", json=_adk_body(False))
    _expect(response.status_code == 200, f"HTTP {response.status_code}: {response.text[:200]}")
    events = response.json()
    _expect(bool(events) and _adk_text(events[-1]) == ANSWER, f"events: {str(events)[:200]}")
    return 0


async def adk_sse(client: Any, base: str) -> int:
    async with client.stream("POST", f"{base}/run_sse", json=_adk_body(True)) as response:
        _expect(response.status_code == 200, f"HTTP {response.status_code}")
        frames = await _sse(response)
    decoded = [json.loads(data) for _, data in frames]
    _expect(all("error" not in e for e in decoded), f"error frame: {str(decoded)[:200]}")
    final = [e for e in decoded if not e.get("partial")]
    _expect(len(final) == 1 and _adk_text(final[0]) == ANSWER, f"frames: {str(decoded)[:200]}")
    return len(frames)


def floor_sse(expected: int) -> Op:
    async def op(client: Any, base: str) -> int:
        async with client.stream("POST", f"{base}/stream", json={"input": PROMPT}) as response:
            _expect(response.status_code == 200, f"HTTP {response.status_code}")
            frames = await _sse(response)
        decoded = [json.loads(data) for _, data in frames]
        _expect(len(frames) == expected and decoded[-1]["type"] == "run_completed", f"{len(frames)} frames")
        return len(frames)

    return op


async def langgraph_async_join(client: Any, base: str) -> int:
    thread = str(uuid.uuid4())
    body = {"assistant_id": "bench", "input": {"input": PROMPT}, "if_not_exists": "create"}
    response = await client.post(f"{base}/threads/{thread}/runs", json=body)
    _expect(response.status_code == 200, f"HTTP {response.status_code}: {response.text[:200]}")
    run_id = response.json()["run_id"]
    response = await client.get(f"{base}/threads/{thread}/runs/{run_id}/join")
    _expect(response.status_code == 200, f"join: HTTP {response.status_code}: {response.text[:200]}")
    state = response.json()
    _expect(state.get("output") == ANSWER, f"joined state: {str(state)[:200]}")
    return 0


# --------------------------------------------------------------------------- the load generator


@dataclass
class Tally:
    """What the blocks of one contender in one scenario gathered."""

    latencies: list[float] = field(default_factory=lambda: [])
    runs: int = 0
    events: int = 0
    errors: int = 0
    first_error: str = ""
    seconds: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    machine_cpu: float = 0.0  # busy CPU seconds of the whole machine (every core, every process)
    blocks: list[Tally] = field(default_factory=lambda: [])  # the timed blocks added up here

    def add(self, other: Tally) -> None:
        self.latencies += other.latencies
        self.runs += other.runs
        self.events += other.events
        self.errors += other.errors
        self.first_error = self.first_error or other.first_error
        self.seconds += other.seconds
        self.server_cpu += other.server_cpu
        self.client_cpu += other.client_cpu
        self.machine_cpu += other.machine_cpu
        self.blocks.append(other)

    def rate(self) -> float:
        return self.runs / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


async def block(op: Op, client: Any, server: Server, clients: int, seconds: float) -> Tally:
    """`clients` tasks run `op` back to back for `seconds`; in-flight ones finish and count."""
    tally = Tally()
    end = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < end:
            began = time.perf_counter()
            try:
                events = await op(client, server.base)
            except Wrong as exc:
                tally.errors += 1
                tally.first_error = tally.first_error or str(exc)
                continue
            except Exception as exc:  # a transport error counts as an error, never as a run
                tally.errors += 1
                tally.first_error = tally.first_error or f"{type(exc).__name__}: {exc}"
                continue
            tally.latencies.append(time.perf_counter() - began)
            tally.runs += 1
            tally.events += events

    cpu0, srv0, all0, t0 = time.process_time(), server.cpu_seconds(), _machine_busy(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    tally.seconds = time.perf_counter() - t0
    tally.client_cpu = time.process_time() - cpu0
    tally.server_cpu = server.cpu_seconds() - srv0
    tally.machine_cpu = _machine_busy() - all0
    return tally


def _machine_busy() -> float:
    """Busy CPU seconds of the machine so far, all cores (/proc/stat: all but idle and iowait)."""
    ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


@dataclass
class Contender:
    name: str
    op: Op
    server: Server | None = None
    unavailable: str = ""  # why it cannot be measured, if it cannot


@dataclass
class Scenario:
    title: str
    clients: int
    contenders: list[Contender]
    tallies: dict[str, Tally] = field(default_factory=lambda: {})


async def run_scenario(scenario: Scenario, pools: dict[str, Any], args: argparse.Namespace) -> None:
    live = [c for c in scenario.contenders if not c.unavailable]
    for contender in live:  # warm-up, checked too: connections opened, lazy imports and caches done
        assert contender.server is not None
        warm = await block(
            contender.op, pools[contender.name], contender.server, scenario.clients, args.warmup
        )
        if warm.errors and not warm.runs:
            contender.unavailable = f"every warm-up request failed: {warm.first_error}"
        scenario.tallies[contender.name] = Tally()
    for round_ in range(args.rounds):
        order = [c for c in live if not c.unavailable]
        if round_ % 2:
            order.reverse()  # A, B, B, A, A, B...: drift over time hits both sides alike
        for contender in order:
            assert contender.server is not None
            tally = await block(
                contender.op, pools[contender.name], contender.server, scenario.clients, args.duration
            )
            scenario.tallies[contender.name].add(tally)
            print(
                f"  {scenario.title} | {contender.name:<10} round {round_ + 1}: {tally.rate():8.1f} runs/s"
                f"  {tally.errors} errors",
                flush=True,
            )


# --------------------------------------------------------------------------- the report


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if value != value else f"{value:,.{digits}f}"  # NaN: not applicable


def print_scenario(scenario: Scenario) -> None:
    clients = f"{scenario.clients} client{'s' if scenario.clients > 1 else ''}"
    print(
        f"\n{scenario.title} ({clients}; server, client, others: cores busy; others: the rest of the machine)"
    )
    head = f"{'contender':<12}{'runs/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'events/s':>11}{'ev/run':>8}"
    print(head + f"{'srv CPU ms/run':>16}{'server':>8}{'client':>8}{'others':>8}{'errors':>8}")
    for contender in scenario.contenders:
        tally = scenario.tallies.get(contender.name)
        if contender.unavailable or tally is None or not tally.runs:
            reason = contender.unavailable or (tally.first_error if tally else "no run")
            print(f"{contender.name:<12}not measurable: {reason}")
            continue
        others = (tally.machine_cpu - tally.server_cpu - tally.client_cpu) / tally.seconds
        events = tally.events / tally.seconds if tally.events else float("nan")
        per_run = tally.events / tally.runs if tally.events else float("nan")
        print(
            f"{contender.name:<12}{_fmt(tally.rate()):>10}{_fmt(tally.quantile(0.5), 2):>9}"
            f"{_fmt(tally.quantile(0.99), 2):>9}{_fmt(events, 0):>11}{_fmt(per_run):>8}"
            f"{_fmt(tally.server_cpu / tally.runs * 1000, 2):>16}"
            f"{tally.server_cpu / tally.seconds:>8.2f}{tally.client_cpu / tally.seconds:>8.2f}"
            f"{others:>8.2f}{tally.errors:>8}"
        )
        if tally.errors:
            print(f"{'':<12}first error: {tally.first_error}")


@dataclass(frozen=True)
class Figure:
    label: str
    scenario: str
    peer: str
    metric: str  # runs/s, events/s, p50, p99, cpu (the server's CPU ms per run)
    target: str = ""  # ">= 3", "<= 0.5", "" (context)


def _value(tally: Tally, metric: str) -> float:
    if metric == "runs/s":
        return tally.rate()
    if metric == "events/s":
        return tally.events / tally.seconds if tally.seconds else 0.0
    if metric == "cpu":
        return tally.server_cpu / tally.runs * 1000 if tally.runs else float("nan")
    return tally.quantile(0.5 if metric == "p50" else 0.99)


def print_summary(scenarios: dict[str, Scenario], figures: list[Figure]) -> None:
    print("\nSummary: helikon against each peer (ratio = helikon / peer)")
    print(
        f"{'figure':<40}{'helikon':>10}{'peer':>12}  {'peer name':<11}{'ratio':>8}  {'per block':<13}target"
    )
    for figure in figures:
        scenario = scenarios[figure.scenario]
        label = figure.label.replace("N clients", f"{scenario.clients} clients")
        ours, theirs = scenario.tallies.get("helikon"), scenario.tallies.get(figure.peer)
        peer = next(c for c in scenario.contenders if c.name == figure.peer)
        if peer.unavailable or not theirs or not theirs.runs or not ours or not ours.runs:
            why = peer.unavailable or (theirs.first_error if theirs else "") or "no run"
            print(f"{label:<40}{'':>22}  {figure.peer:<11}not measurable: {why}")
            continue
        a, b = _value(ours, figure.metric), _value(theirs, figure.metric)
        ratio = a / b if b else float("nan")
        spread = ""
        if figure.metric in ("runs/s", "events/s"):  # the same ratio block by block
            blocks = zip(ours.blocks, theirs.blocks, strict=True)
            pairs = [_value(x, figure.metric) / _value(y, figure.metric) for x, y in blocks if y.runs]
            spread = f"{min(pairs):.2f}-{max(pairs):.2f}x" if pairs else ""
        verdict = "(context)"
        if figure.target:
            op, bound = figure.target.split()
            met = ratio >= float(bound) if op == ">=" else ratio <= float(bound)
            verdict = f"{op} {bound}x {'met' if met else 'NOT MET'}"
        digits = 0 if figure.metric in ("runs/s", "events/s") else 2
        print(
            f"{label:<40}{_fmt(a, digits):>10}{_fmt(b, digits):>12}  {figure.peer:<11}"
            f"{ratio:>7.{2 if ratio >= 0.1 else 3}f}x  {spread:<13}{verdict}"
        )
    print("(events/s counts each server's own events: ev/run above; CPU ms per run: lower is better)")


# --------------------------------------------------------------------------- the orchestration


def _versions() -> str:
    names = ("paigasus-helikon", "google-adk", "langgraph", "langgraph-api", "uvicorn", "starlette")
    return versions((*names, "sse-starlette", "httpx2", "uvloop", "httptools"))


async def capture_frames(client: Any, helikon: Server) -> list[dict[str, str]]:
    """Helikon's SSE frames for one run (id, event, data), for the floor server to replay."""
    url = f"{helikon.base}/agents/bench/runs?stream=sse"
    frames: list[dict[str, str]] = []
    async with client.stream("POST", url, json={"input": PROMPT}) as response:
        event: dict[str, str] = {}
        async for line in response.aiter_lines():
            if not line:
                if "data" in event:
                    frames.append(event)
                event = {}
            elif ":" in line and not line.startswith(":"):
                key, _, value = line.partition(":")
                event[key] = value.removeprefix(" ")
    return frames


def build_scenarios(clients: int) -> dict[str, Scenario]:
    def async_join(n: int) -> Scenario:
        return Scenario(
            "background run + join",
            n,
            [Contender("helikon", helikon_async_join), Contender("langgraph", langgraph_async_join)],
        )

    return {
        "one-shot": Scenario(
            "one-shot POST, JSON until done",
            clients,
            [Contender("helikon", helikon_oneshot), Contender("google-adk", adk_oneshot)],
        ),
        "sse": Scenario(
            "SSE stream of one run",
            clients,
            [
                Contender("helikon", helikon_sse),
                Contender("google-adk", adk_sse),
                Contender("floor", floor_sse(0)),  # its frame count is known once helikon is up
            ],
        ),
        "async": async_join(clients),
        "async-1": async_join(1),
    }


FIGURES = [
    Figure("one-shot runs/s", "one-shot", "google-adk", "runs/s", ">= 3"),
    Figure("one-shot p50 latency ms", "one-shot", "google-adk", "p50"),
    Figure("one-shot p99 latency ms", "one-shot", "google-adk", "p99"),
    Figure("one-shot server CPU ms per run", "one-shot", "google-adk", "cpu"),
    Figure("SSE events/s", "sse", "google-adk", "events/s"),
    Figure("SSE streams/s", "sse", "google-adk", "runs/s"),
    Figure("SSE p50 latency ms (whole stream)", "sse", "google-adk", "p50"),
    Figure("SSE server CPU ms per stream", "sse", "google-adk", "cpu"),
    Figure("SSE events/s against the floor", "sse", "floor", "events/s", ">= 0.7"),
    Figure("SSE server CPU ms per stream", "sse", "floor", "cpu"),
    Figure("async+join p50 ms, N clients", "async", "langgraph", "p50", "<= 0.5"),
    Figure("async+join p99 ms, N clients", "async", "langgraph", "p99"),
    Figure("async+join runs/s, N clients", "async", "langgraph", "runs/s"),
    Figure("async+join server CPU ms per run", "async", "langgraph", "cpu"),
    Figure("async+join p50 ms, 1 client", "async-1", "langgraph", "p50", "<= 0.5"),
]


HEALTH = {"helikon": "/agents", "google-adk": "/list-apps", "langgraph": "/ok", "floor": "/health"}


async def launch(
    scenario: Scenario,
    work: Path,
    args: argparse.Namespace,
    pools: dict[str, Any],
    servers: dict[str, Server],
) -> None:
    """Start fresh servers for the scenario into `servers`: none keeps an earlier scenario's state."""
    for contender in scenario.contenders:
        if contender.name == "helikon":
            servers["helikon"] = start_child("helikon", work)
        elif contender.name == "google-adk":
            servers["google-adk"] = start_child("google-adk", work, str(work / "agents"))
        elif contender.name == "langgraph":
            if shutil.which("langgraph", path=str(Path(sys.executable).parent)):
                servers["langgraph"] = start_langgraph(work, args.langgraph_jobs or args.clients)
            else:
                contender.unavailable = "the `langgraph` CLI is not installed here (langgraph-cli[inmem])"
    problems = await asyncio.gather(
        *(wait_ready(pools[n], server, HEALTH[n]) for n, server in servers.items())
    )
    for name, problem in zip(servers, problems, strict=True):
        if name == "helikon" and problem:
            raise SystemExit(f"helikon's server did not start: {problem}")
        contender = next(c for c in scenario.contenders if c.name == name)
        contender.server, contender.unavailable = servers[name], problem or ""
    floor = next((c for c in scenario.contenders if c.name == "floor"), None)
    if floor is not None:  # helikon's own frames for one run, replayed by a bare endpoint
        captured = await capture_frames(pools["helikon"], servers["helikon"])
        frames = work / "frames.json"
        frames.write_text(json.dumps(captured))
        floor.server = servers["floor"] = start_child("floor", work, str(frames))
        floor.op = floor_sse(len(captured))
        floor.unavailable = await wait_ready(pools["floor"], floor.server, HEALTH["floor"]) or ""


async def bench(args: argparse.Namespace, work: Path) -> None:
    import httpx2

    started = time.perf_counter()
    (work / "agents" / "bench").mkdir(parents=True)
    (work / "agents" / "bench" / "__init__.py").write_text("from . import agent\n")
    (work / "agents" / "bench" / "agent.py").write_text(ADK_AGENT)
    limits = httpx2.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    scenarios = build_scenarios(args.clients)
    for scenario in scenarios.values():
        pools = {c.name: httpx2.AsyncClient(limits=limits, timeout=60.0) for c in scenario.contenders}
        servers: dict[str, Server] = {}
        try:
            await launch(scenario, work, args, pools, servers)
            await run_scenario(scenario, pools, args)
        finally:
            for pool in pools.values():
                await pool.aclose()
            for server in servers.values():
                server.stop()
    for scenario in scenarios.values():
        print_scenario(scenario)
    print_summary(scenarios, FIGURES)
    print(f"\n(whole run: {time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per timed block (default 4)")
    parser.add_argument("--rounds", type=int, default=3, help="timed blocks per contender and scenario")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of checked warm-up per contender")
    parser.add_argument(
        "--langgraph-jobs", type=int, default=0, help="langgraph dev --n-jobs-per-worker (default: clients)"
    )
    parser.add_argument("--serve", choices=sorted(SERVE), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--arg", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:  # a child: one server, until stopped
        SERVE[args.serve](args.port, args.arg)
        return
    print("helikon AgentServer vs. google-adk api_server and langgraph dev: same instant agent")
    print(f"{os.cpu_count()} cores; {_versions()}")
    print(
        f"{args.clients} clients, {args.rounds} blocks of {args.duration:g} s per contender, "
        f"{args.warmup:g} s warm-up",
        flush=True,
    )
    loop_factory = None
    with contextlib.suppress(ImportError):
        import uvloop

        loop_factory = uvloop.new_event_loop
    with (
        tempfile.TemporaryDirectory(prefix="helikon-server-bench-") as work,
        asyncio.Runner(loop_factory=loop_factory) as runner,
    ):
        runner.run(bench(args, Path(work)))


if __name__ == "__main__":
    main()
