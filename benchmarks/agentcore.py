"""helikon's AgentCore Runtime server against AWS's own SDK (`bedrock-agentcore`), serving the same agent.

Both sides serve `examples/agentcore/agent.py`'s `assistant` (an `LlmAgent` on a scripted
`FunctionModel`: "add 2 and 40" calls its `add` tool and answers "The answer is 42.", anything else
is answered "You said: <text>") behind AgentCore Runtime's container contract: `GET /ping` and
`POST /invocations` (`{"prompt": "..."}`; a JSON answer, or SSE for `Accept: text/event-stream`).

- **helikon**: its own entry point, `python -m helikon.agentcore examples.agentcore.agent:assistant
  --host 127.0.0.1 --port N` (cwd: the repo root), which is what a container runs.
- **official**: `python benchmarks/agentcore_official_app.py N`: `BedrockAgentCoreApp` (Starlette +
  uvicorn) with an `@app.entrypoint` that awaits `assistant.run(prompt)` and returns
  `{"output": <final output>}`, or, for SSE, returns an async generator of the run's events (helikon's
  own event JSON, the frames helikon's server sends), started by the SDK's own `app.run`.

Both run from `.bench-venv-agentcore` (`bash benchmarks/setup_agentcore_env.sh`): the same
interpreter, the same site-packages (pydantic, starlette, uvicorn, no uvloop or httptools, so uvicorn's
"auto" is asyncio + h11 on both), bytecode compiled at install. The SDK pins pydantic<2.41.3, so it
cannot sit in the project's `.venv` or in `.bench-venv`. Each server writes its stdout and stderr to a
log file; the SDK logs one INFO line per invocation there (its default, so its cost is included),
helikon logs nothing per invocation. The children's environment: `HELIKON_*`, `AWS_*`, `OTEL_*`, API
keys and credentials dropped (`HELIKON_MODEL` would swap the agent's model), `OTEL_SDK_DISABLED=true`,
`PYTHONDONTWRITEBYTECODE` unset.

Figures:

1. **Cold start**: from `subprocess.Popen` (timed with `time.perf_counter`) to the first `200` from
   `GET /ping`, polled in a tight loop: a fresh TCP connection per attempt (`Connection: close`), 1 ms
   of sleep after a failed one. Each process is then stopped (SIGTERM, waited), outside the timed
   span, on a fresh port each run. Beside them, for context, **the floor**: a bare Starlette app with
   only `/ping`, on `uvicorn.run` (interpreter start, starlette and uvicorn imports, the listening
   socket; no agent, no SDK). Targets: helikon <= 1.0x official (by medians) and helikon < 1,000 ms.
   `--runs` timed runs of each (default 15) after `--warmup` (default 2) checked runs each; the
   contenders take turns run by run, the order reversed every other round (A B C, C B A, ...), so a
   drift of the machine's speed weighs on all. In each warm-up run the server must, once it answers
   `/ping`, answer `POST /invocations` correctly (JSON "hello", SSE "hello", JSON "add 2 and 40"): a
   broken setup fails loudly, it is never timed.
2. **Invocation latency and overhead**: both servers running (started as above, checked), this
   process the client: one keep-alive `http.client.HTTPConnection` per server (a low client floor; the
   script counts any reconnection). Rows, `--invocations` (default 2,000) timed each, after
   `--warmup-invocations` (default 200) checked ones:
   (a) the direct run in this process: `await assistant.run("hello")` (and, for SSE, `async for
   event in assistant.run("hello")`); (b) helikon's `POST /invocations {"prompt": "hello"}` with a JSON
   answer; (c) the same against the official app; (d) the SSE variant on both (`Accept:
   text/event-stream`, read to the end of the stream). `GET /ping` on each server is the HTTP floor:
   the client, the connection, uvicorn and a route, with no run. Each invocation is timed alone
   (request sent to body read); the rows are measured in `--blocks` blocks (default 10), taking turns
   and reversed every other round, and every block's samples pooled; p50/p90/p99 of the pool.
   Overhead = invocation p50 - the direct run's p50 (JSON against `await`, SSE against the streamed
   run); target: helikon's JSON overhead <= 2 ms. The ratio helikon / official of the p50s is printed
   beside. Every timed answer is checked (status 200, "You said: hello" in the body), outside the
   timed span; the warm-up checks parse it whole (JSON fields; SSE frames from `run_started` to
   `run_completed`, the answer's `token_delta`, no error frame). The servers' CPU per invocation
   (`/proc/PID/stat`, user + system, all threads) is shown beside, and how much of it is the main
   thread's (uvicorn's loop: HTTP, routing, the handler) and the other threads' (the worker loop
   that runs the agent; the SDK's thread pool, which its SSE path and its sync `/ping` go through).

Caveats: on the 2-core machine the client shares the cores with the server (each server also runs
its agent on a worker-loop thread of its own: helikon's `WorkerLoop`, the SDK's
`agentcore-worker-loop`); compare ratios rather than absolute values, on an otherwise idle machine.

Run: `bash benchmarks/setup_agentcore_env.sh && .bench-venv-agentcore/bin/python benchmarks/agentcore.py`
(about a minute; `--quick`: 5 runs, 1 warm-up, 300 invocations, about 15 s).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from processes import cpu_seconds, stop_group, versions

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TARGET = "examples.agentcore.agent:assistant"
PROMPT, ANSWER = "hello", "You said: hello"
ADD_PROMPT, ADD_ANSWER = "add 2 and 40", "The answer is 42."
BODY = json.dumps({"prompt": PROMPT}).encode()
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
SSE_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}

_DROP_ENV_PREFIXES = ("HELIKON_", "AWS_", "OTEL_", "LANGSMITH_", "LANGCHAIN_", "LOGFIRE_")
_DROP_ENV_MARKERS = ("API_KEY", "ACCESS_KEY", "SECRET", "TOKEN", "CREDENTIALS")

FLOOR_APP = """
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def ping(request):
    return JSONResponse({"status": "Healthy"})


app = Starlette(routes=[Route("/ping", ping)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


class Wrong(Exception):
    """A server or an answer that is not what the contract and the agent say: it is never timed."""


# --------------------------------------------------------------------------- the servers


@dataclass
class Contender:
    name: str
    label: str
    argv: list[str]  # "{port}" is replaced by the port
    checked: bool = True  # serves the agent: its invocations are checked in warm-up
    times: list[float] = field(default_factory=lambda: [])
    unavailable: str = ""


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    began: float  # perf_counter() just before Popen

    def cpu_seconds(self) -> tuple[float, float]:
        """User + system CPU of the server so far: all its threads, and its main thread (uvicorn's)."""
        pid = self.proc.pid
        return cpu_seconds(f"/proc/{pid}/stat"), cpu_seconds(f"/proc/{pid}/task/{pid}/stat")

    def tail(self) -> str:
        lines = self.log.read_text(errors="replace").strip().splitlines()[-4:]
        return " | ".join(line[:300] for line in lines)

    def stop(self) -> None:
        stop_group(self.proc)


def contenders(work: Path) -> list[Contender]:
    (work / "floor_app.py").write_text(FLOOR_APP)
    py = sys.executable
    helikon = [py, "-m", "helikon.agentcore", TARGET, "--host", HOST, "--port", "{port}"]
    return [
        Contender("helikon", "helikon: python -m helikon.agentcore", helikon),
        Contender(
            "official",
            "official: BedrockAgentCoreApp (app.run)",
            [py, str(ROOT / "benchmarks" / "agentcore_official_app.py"), "{port}"],
        ),
        Contender(
            "floor",
            "floor: bare Starlette /ping on uvicorn",
            [py, str(work / "floor_app.py"), "{port}"],
            checked=False,
        ),
    ]


def child_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROP_ENV_PREFIXES) and not any(m in k for m in _DROP_ENV_MARKERS)
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["OTEL_SDK_DISABLED"] = "true"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def spawn(contender: Contender, work: Path, env: dict[str, str]) -> Server:
    port = free_port()
    log = work / f"{contender.name}-{port}.log"
    with log.open("wb") as out:
        began = time.perf_counter()
        proc = subprocess.Popen(
            [part.replace("{port}", str(port)) for part in contender.argv],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as one
        )
    return Server(contender.name, port, proc, log, began)


_PING = f"GET /ping HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode()


def ping_status(port: int) -> int | None:
    """The status of one `GET /ping` on a fresh connection; None while nothing listens."""
    try:
        with socket.create_connection((HOST, port), timeout=5) as sock:
            sock.sendall(_PING)
            head = b""
            while b"\r\n" not in head:
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                head += chunk
    except (ConnectionRefusedError, ConnectionResetError):
        return None
    return int(head.split(b" ", 2)[1])


def wait_for_ping(server: Server, limit: float = 60.0) -> float:
    """Seconds from the spawn until `server` answers 200 on `/ping` (polled: 1 ms between attempts)."""
    began = server.began
    while True:
        if ping_status(server.port) == 200:
            return time.perf_counter() - began
        if server.proc.poll() is not None:
            raise Wrong(f"exited ({server.proc.returncode}) before answering /ping: {server.tail()}")
        if time.perf_counter() - began > limit:
            raise Wrong(f"no 200 on /ping within {limit:g} s: {server.tail()}")
        time.sleep(0.001)


# --------------------------------------------------------------------------- the requests and their checks


def post(conn: http.client.HTTPConnection, headers: dict[str, str], body: bytes = BODY) -> tuple[int, bytes]:
    conn.request("POST", "/invocations", body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The JSON of each `data:` frame of an SSE body (comments skipped)."""
    events = []
    for frame in body.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in frame.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def json_output(name: str, status: int, body: bytes) -> str:
    """The output of a JSON answer: helikon's `{"status", "output"}`, the peer's `{"output"}`."""
    if status != 200:
        raise Wrong(f"{name}: HTTP {status}: {body[:300]!r}")
    answer = json.loads(body)
    if name == "helikon" and answer.get("status") != "succeeded":
        raise Wrong(f"{name}: the run did not succeed: {answer}")
    return answer.get("output")


def check_stream(name: str, status: int, body: bytes) -> int:
    """Raises Wrong unless the SSE body is the whole "hello" run; the number of events."""
    if status != 200:
        raise Wrong(f"{name} SSE: HTTP {status}: {body[:300]!r}")
    events = sse_events(body)
    types = [event.get("type") for event in events]
    if not events or types[0] != "run_started" or types[-1] != "run_completed":
        raise Wrong(f"{name} SSE: not one run from run_started to run_completed: {body[:400]!r}")
    if any("error" in event for event in events):
        raise Wrong(f"{name} SSE: an error frame: {body[:400]!r}")
    if not any(e.get("type") == "token_delta" and e.get("text") == ANSWER for e in events):
        raise Wrong(f"{name} SSE: no token_delta {ANSWER!r}: {body[:400]!r}")
    return len(events)


def check_server(server: Server) -> int:
    """Raises Wrong unless `server` answers the agent's three invocations; the events of its SSE run."""
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
    try:
        output = json_output(server.name, *post(conn, JSON_HEADERS))
        if output != ANSWER:
            raise Wrong(f"{server.name}: {PROMPT!r} answered {output!r}, not {ANSWER!r}")
        add = json.dumps({"prompt": ADD_PROMPT}).encode()
        output = json_output(server.name, *post(conn, JSON_HEADERS, add))
        if output != ADD_ANSWER:
            raise Wrong(f"{server.name}: {ADD_PROMPT!r} answered {output!r}, not {ADD_ANSWER!r}")
        return check_stream(server.name, *post(conn, SSE_HEADERS))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise Wrong(f"{server.name}: {type(exc).__name__}: {exc}; log: {server.tail()}") from exc
    finally:
        conn.close()


# --------------------------------------------------------------------------- figure 1: cold start


def cold_start(contender: Contender, work: Path, env: dict[str, str], check: bool) -> float:
    """Seconds from spawn to the first 200 on `/ping`; with `check`, then its invocations are checked."""
    server = spawn(contender, work, env)
    try:
        elapsed = wait_for_ping(server)
        if check and contender.checked:
            check_server(server)
        return elapsed
    finally:
        server.stop()


def measure_cold(
    contenders: list[Contender], work: Path, env: dict[str, str], runs: int, warmup: int
) -> None:
    for contender in contenders:
        try:
            for _ in range(warmup):
                cold_start(contender, work, env, check=True)
        except Wrong as exc:
            contender.unavailable = str(exc)
    for round_ in range(runs):
        live = [c for c in contenders if not c.unavailable]
        for contender in reversed(live) if round_ % 2 else live:
            try:
                contender.times.append(cold_start(contender, work, env, check=False))
            except Wrong as exc:
                contender.unavailable = f"round {round_ + 1}: {exc}"


# --------------------------------------------------------------------------- figure 2: invocations


@dataclass
class Row:
    name: str
    label: str
    block: Callable[[int], list[float]]  # n timed operations, each checked; their seconds
    server: Server | None = None
    times: list[float] = field(default_factory=lambda: [])
    cpu: float = 0.0  # the server's CPU seconds over the timed blocks
    cpu_main: float = 0.0  # of which its main thread's (uvicorn's loop)


def load_agent() -> Any:
    os.environ.pop("HELIKON_MODEL", None)  # the scripted model, as in the servers
    sys.path.insert(0, str(ROOT))
    from examples.agentcore.agent import assistant

    return assistant


def direct_block(agent: Any, streamed: bool) -> Callable[[int], list[float]]:
    async def timed(n: int) -> list[float]:
        times, clock = [], time.perf_counter
        for _ in range(n):
            began = clock()
            if streamed:
                last = None
                async for last in agent.run(PROMPT):  # noqa: B007 - the stream is consumed to its end
                    pass
                elapsed = clock() - began
                if getattr(last, "type", None) != "run_completed":
                    raise Wrong(f"the direct streamed run ended with {last!r}")
            else:
                result = await agent.run(PROMPT)
                elapsed = clock() - began
                if result.final_output != ANSWER:
                    raise Wrong(f"the direct run answered {result.final_output!r}")
            times.append(elapsed)
        return times

    return lambda n: asyncio.run(timed(n))


class Connection:
    """One keep-alive connection to a server; counts the times it had to connect again."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection(HOST, server.port, timeout=30)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reconnects = 0

    def _reopened(self) -> None:
        if self.conn.sock is None:  # the server closed it: http.client opens a new one next time
            self.reconnects += 1

    def invocations(self, headers: dict[str, str]) -> Callable[[int], list[float]]:
        conn, expected = self.conn, ANSWER.encode()

        def timed(n: int) -> list[float]:
            times, clock = [], time.perf_counter
            for _ in range(n):
                began = clock()
                conn.request("POST", "/invocations", body=BODY, headers=headers)
                response = conn.getresponse()
                body = response.read()
                elapsed = clock() - began
                if response.status != 200 or expected not in body:
                    raise Wrong(f"{self.server.name}: HTTP {response.status}: {body[:300]!r}")
                self._reopened()
                times.append(elapsed)
            return times

        return timed

    def pings(self, n: int) -> list[float]:
        conn, times, clock = self.conn, [], time.perf_counter
        for _ in range(n):
            began = clock()
            conn.request("GET", "/ping")
            response = conn.getresponse()
            body = response.read()
            elapsed = clock() - began
            if response.status != 200 or b"Healthy" not in body:
                raise Wrong(f"{self.server.name} /ping: HTTP {response.status}: {body[:300]!r}")
            self._reopened()
            times.append(elapsed)
        return times


def warm_up(rows: list[Row], agent: Any, connections: list[Connection], n: int) -> None:
    """`n` checked operations of each row; the JSON and SSE answers parsed whole."""

    async def direct() -> None:
        for _ in range(n):
            result = await agent.run(PROMPT)
            if result.final_output != ANSWER:
                raise Wrong(f"the direct run answered {result.final_output!r}")
            events = [event async for event in agent.run(PROMPT)]
            if events[-1].type != "run_completed":
                raise Wrong(f"the direct streamed run ended with {events[-1]!r}")

    asyncio.run(direct())
    for connection in connections:
        name = connection.server.name
        for _ in range(n):
            output = json_output(name, *post(connection.conn, JSON_HEADERS))
            if output != ANSWER:
                raise Wrong(f"{name}: {PROMPT!r} answered {output!r}, not {ANSWER!r}")
            check_stream(name, *post(connection.conn, SSE_HEADERS))
    for row in rows:
        row.block(max(1, n // 4))


def invocation_rows(agent: Any, helikon: Connection, official: Connection) -> list[Row]:
    return [
        Row("direct", "(a) direct: await assistant.run('hello')", direct_block(agent, streamed=False)),
        Row(
            "direct-sse", "(a') direct: async for event in assistant.run", direct_block(agent, streamed=True)
        ),
        Row("helikon-ping", "helikon GET /ping (HTTP floor)", helikon.pings, helikon.server),
        Row("official-ping", "official GET /ping (HTTP floor)", official.pings, official.server),
        Row(
            "helikon-json",
            "(b) helikon POST /invocations, JSON",
            helikon.invocations(JSON_HEADERS),
            helikon.server,
        ),
        Row(
            "official-json",
            "(c) official POST /invocations, JSON",
            official.invocations(JSON_HEADERS),
            official.server,
        ),
        Row(
            "helikon-sse",
            "(d) helikon POST /invocations, SSE",
            helikon.invocations(SSE_HEADERS),
            helikon.server,
        ),
        Row(
            "official-sse",
            "(d) official POST /invocations, SSE",
            official.invocations(SSE_HEADERS),
            official.server,
        ),
    ]


def measure_invocations(rows: list[Row], invocations: int, blocks: int) -> None:
    size = max(1, invocations // blocks)
    for round_ in range(blocks):
        for row in reversed(rows) if round_ % 2 else rows:
            before = row.server.cpu_seconds() if row.server else (0.0, 0.0)
            row.times += row.block(size)
            if row.server:
                after = row.server.cpu_seconds()
                row.cpu += after[0] - before[0]
                row.cpu_main += after[1] - before[1]


def run_invocations(work: Path, env: dict[str, str], args: argparse.Namespace, by_name: dict[str, Contender]):
    """Figure 2: both servers up and checked, the rows measured; (rows, reconnects, events per stream)."""
    agent = load_agent()
    servers: list[Server] = []
    try:
        for name in ("helikon", "official"):
            server = spawn(by_name[name], work, env)
            servers.append(server)
            wait_for_ping(server)
        events = {server.name: check_server(server) for server in servers}
        connections = [Connection(server) for server in servers]
        rows = invocation_rows(agent, *connections)
        warm_up(rows, agent, connections, args.warmup_invocations)
        for connection in connections:
            connection.reconnects = 0
        measure_invocations(rows, args.invocations, args.blocks)
        reconnects = {c.server.name: c.reconnects for c in connections}
        for connection in connections:
            connection.conn.close()
        return rows, reconnects, events
    finally:
        for server in servers:
            server.stop()


# --------------------------------------------------------------------------- the report


def pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f}"


def print_cold(contenders: list[Contender]) -> None:
    print("\n1. Cold start: spawn to the first 200 on GET /ping (a fresh connection per attempt)")
    print(f"{'contender':<44}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'helikon / it':>14}")
    ours = contenders[0]
    for contender in contenders:
        if contender.unavailable or not contender.times:
            print(f"{contender.label:<44}not measurable: {contender.unavailable or 'no run'}")
            continue
        ratio = ""
        if contender is not ours and ours.times and not ours.unavailable:
            ratio = f"{statistics.median(ours.times) / statistics.median(contender.times):.2f}x"
        times = contender.times
        print(
            f"{contender.label:<44}{_ms(statistics.median(times)):>11}{_ms(min(times)):>9}"
            f"{_ms(max(times)):>9}{ratio:>14}"
        )


def print_invocations(rows: list[Row], reconnects: dict[str, int], events: dict[str, int]) -> None:
    by_name = {row.name: row for row in rows}
    n = len(rows[0].times)
    print(f"\n2. Invocation latency: {n:,} timed each, one at a time, keep-alive connection; µs")
    print(
        f"{'row':<47}{'p50':>8}{'p90':>8}{'p99':>8}{'- direct p50':>14}{'srv CPU/op':>12}"
        f"{'main thr':>10}{'others':>8}"
    )
    for row in rows:
        base = by_name["direct-sse" if row.name.endswith("sse") else "direct"]
        over = ""
        if row.server is not None and not row.name.endswith("ping"):
            over = _us(pct(row.times, 0.5) - pct(base.times, 0.5))
        cpu = main = others = ""
        if row.server is not None:
            n, rest = len(row.times), max(0.0, row.cpu - row.cpu_main)  # ticks read apart: never below 0
            cpu, main, others = _us(row.cpu / n), _us(row.cpu_main / n), _us(rest / n)
        print(
            f"{row.label:<47}{_us(pct(row.times, 0.5)):>8}{_us(pct(row.times, 0.9)):>8}"
            f"{_us(pct(row.times, 0.99)):>8}{over:>14}{cpu:>12}{main:>10}{others:>8}"
        )
    print(
        f"events per SSE stream: helikon {events.get('helikon')}, official {events.get('official')}; "
        f"reconnections while timed: helikon {reconnects.get('helikon')}, "
        f"official {reconnects.get('official')}"
    )
    print(
        "srv CPU/op: the server process's user + system CPU per operation (/proc, 10 ms ticks, summed "
        "over the blocks); main thr: its main thread (uvicorn's loop); others: the rest (the worker "
        "loop that runs the agent, a thread pool)"
    )


def print_summary(contenders: list[Contender], rows: list[Row] | None) -> None:
    print("\nSummary (ratio = helikon / official)")
    print(f"{'figure':<44}{'helikon':>10}{'official':>10}{'ratio':>8}  target")
    ours, peer = contenders[0], contenders[1]
    if ours.times and peer.times and not ours.unavailable and not peer.unavailable:
        a, b = statistics.median(ours.times), statistics.median(peer.times)
        verdict = (
            f"<= 1.0x {'met' if a / b <= 1.0 else 'NOT MET'}; < 1,000 ms {'met' if a < 1.0 else 'NOT MET'}"
        )
        print(f"{'cold start, median ms':<44}{_ms(a):>10}{_ms(b):>10}{a / b:>7.2f}x  {verdict}")
    else:
        print(f"{'cold start':<44}not measurable: {ours.unavailable or peer.unavailable or 'no run'}")
    if rows is None:
        return
    p50 = {row.name: pct(row.times, 0.5) for row in rows}
    for kind, base in (("json", "direct"), ("sse", "direct-sse")):
        a, b = p50[f"helikon-{kind}"], p50[f"official-{kind}"]
        print(f"{f'invocation {kind.upper()}, p50 µs':<44}{_us(a):>10}{_us(b):>10}{a / b:>7.2f}x  (context)")
        oa, ob = a - p50[base], b - p50[base]
        verdict = f"<= 2,000 µs {'met' if oa <= 0.002 else 'NOT MET'}" if kind == "json" else "(context)"
        label = f"overhead {kind.upper()}: p50 - direct p50, µs"
        print(f"{label:<44}{_us(oa):>10}{_us(ob):>10}{oa / ob:>7.2f}x  {verdict}")


def _versions() -> str:
    names = ("paigasus-helikon", "bedrock-agentcore", "starlette", "uvicorn", "sse-starlette", "pydantic")
    return versions(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="timed cold starts of each (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="checked cold starts of each first (default 2)")
    parser.add_argument(
        "--invocations", type=int, default=2000, help="timed operations per row (default 2000)"
    )
    parser.add_argument("--warmup-invocations", type=int, default=200, help="checked ones per row first")
    parser.add_argument("--blocks", type=int, default=10, help="blocks the rows take turns in (default 10)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 5 runs, 1 warm-up, 300 invocations")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.warmup, args.invocations, args.warmup_invocations, args.blocks = 5, 1, 300, 50, 4
    try:
        metadata.version("bedrock-agentcore")
    except metadata.PackageNotFoundError:
        raise SystemExit(
            "bedrock-agentcore is not installed here: run `bash benchmarks/setup_agentcore_env.sh`, "
            "then `.bench-venv-agentcore/bin/python benchmarks/agentcore.py`"
        ) from None
    print("helikon.agentcore vs. AWS's BedrockAgentCoreApp, both serving examples/agentcore/agent.py")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores; python {platform.python_version()}; load average {load}; {_versions()}")
    print(
        f"cold start: {args.runs} timed runs of each, turn about, after {args.warmup} checked; "
        f"invocations: {args.invocations:,} per row in {args.blocks} blocks, "
        f"after {args.warmup_invocations} checked"
    )
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="helikon-agentcore-bench-") as tmp:
        work = Path(tmp)
        cold = contenders(work)
        measure_cold(cold, work, env, args.runs, args.warmup)
        print_cold(cold)
        rows = None
        try:
            rows, reconnects, events = run_invocations(work, env, args, {c.name: c for c in cold})
            print_invocations(rows, reconnects, events)
        except Wrong as exc:
            print(f"\n2. Invocation latency: not measurable: {exc}")
        print_summary(cold, rows)
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    broken = [c.name for c in cold[:2] if c.unavailable or not c.times]
    if broken or rows is None:
        raise SystemExit(f"not measurable: {', '.join(broken) or 'invocations'} (see above)")


if __name__ == "__main__":
    main()
