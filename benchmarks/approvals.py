"""Pause for approval, then resume: helikon on SQLite vs. openai-agents' ``RunState`` round trip.

The same two-call run in each framework: a fake model's first answer calls ``lookup(1)``
(runs at once) and ``refund(7)`` (needs approval) together; its second answer is text.
One round trip is:

- helikon: ``agent.run(...)`` on a fresh SQLite session (durable: every event is written
  to the file as it settles) pauses; a **new session object** for the same id (what the
  next request of a service, or a restarted process, opens: nothing cached) is resumed
  with ``agent.resume(session, {id: Approve()})``, which reads the pause back from the
  log, records the decision and finishes the run. The database is opened once, as a
  service opens it at startup (``SqliteDatabase.open``; a session per request is no IO).
- openai-agents: ``Runner.run`` pauses (``result.interruptions``); ``result.to_state()``
  → ``to_json()`` → ``json.dumps`` / ``json.loads`` (what a service stores) →
  ``RunState.from_json(agent, ...)`` → ``state.approve(item)`` → ``Runner.run(agent, state)``.
  Nothing is written to disk: storing the JSON is the application's job.

So helikon's number includes durable storage that openai-agents' does not. Both fakes
are stateless (they decide from the last input item), tracing is off, and each round
trip's answer and call counts are checked during warm-up.

Run: ``bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/approvals.py``
(``--rounds N`` for more; the target is a ratio of at most 1/3).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ANSWER = "Refunded order 7."
PROMPT = "Look up order 1 and refund order 7."
RoundTrip = Callable[[], Awaitable[str]]


async def build_helikon(path: Path) -> tuple[RoundTrip, Callable[[], Awaitable[None]]]:
    """The round trip, and what closes the database after it."""
    from helikon import Approve, LlmAgent, RunConfig, tool
    from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
    from helikon.testing import FunctionModel, text_turn, tool_calls_turn

    @tool
    def lookup(order: int) -> str:
        """Look an order up."""
        return f"order {order}: 12 EUR"

    @tool(needs_approval=True)
    def refund(order: int) -> str:
        """Refund an order."""
        return f"refunded {order}"

    def answer(request: Any) -> Any:
        last = request.messages[-1]
        if last.type == "tool_result":
            return text_turn(ANSWER)
        return tool_calls_turn([("lookup", {"order": 1}), ("refund", {"order": 7})])

    agent = LlmAgent(
        name="clerk", model=FunctionModel(answer), tools=[lookup, refund], run_config=RunConfig()
    )
    counter = iter(range(10**9))
    db = await SqliteDatabase.open(path)
    await SqliteSession.migrate(db)

    async def round_trip() -> str:
        session_id = f"ticket-{next(counter)}"
        session = SqliteSession.open_without_migrate(db, session_id)
        paused = await agent.run(PROMPT, session=session)
        [request] = paused.pending
        again = SqliteSession.open_without_migrate(db, session_id)  # the next request's object
        done = await agent.resume(again, {request.request_id: Approve()}, by="ops")
        return str(done.final_output)

    return round_trip, db.aclose


def build_openai_agents() -> RoundTrip:
    from agents import Agent, ModelResponse, Runner, RunState, function_tool, set_tracing_disabled
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    def call(call_id: str, name: str, arguments: str) -> Any:
        return ResponseFunctionToolCall(
            id=f"fc_{call_id}", call_id=call_id, type="function_call", name=name, arguments=arguments
        )

    def output_for(input: Any) -> list[Any]:
        last = input[-1] if isinstance(input, list) else {}
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            part = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
            message = ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[part]
            )
            return [message]
        return [call("call_1", "lookup", '{"order": 1}'), call("call_2", "refund", '{"order": 7}')]

    class FakeModel(Model):
        async def get_response(self, system_instructions: Any, input: Any, *a: Any, **kw: Any) -> Any:
            return ModelResponse(output=output_for(input), usage=Usage(), response_id="resp_1")

        async def stream_response(self, *a: Any, **kw: Any) -> Any:  # type: ignore[override]
            raise NotImplementedError("the benchmark does not stream")

    @function_tool
    def lookup(order: int) -> str:
        """Look an order up."""
        return f"order {order}: 12 EUR"

    @function_tool(needs_approval=True)
    def refund(order: int) -> str:
        """Refund an order."""
        return f"refunded {order}"

    agent = Agent(name="clerk", model=FakeModel(), tools=[lookup, refund])

    async def round_trip() -> str:
        paused = await Runner.run(agent, PROMPT)
        stored = json.dumps(paused.to_state().to_json())  # what the application keeps
        state = await RunState.from_json(agent, json.loads(stored))
        for item in state.get_interruptions():
            state.approve(item)
        done = await Runner.run(agent, state)
        return str(done.final_output)

    return round_trip


async def measure(round_trip: RoundTrip, rounds: int) -> list[float]:
    """Per-round-trip times in microseconds, after a checked warm-up."""
    for _ in range(5):
        answer = await round_trip()
        if answer != ANSWER:
            raise SystemExit(f"a round trip answered {answer!r}, not {ANSWER!r}")
    times: list[float] = []
    gc.collect()
    for _ in range(rounds):
        start = time.perf_counter()
        await round_trip()
        times.append((time.perf_counter() - start) * 1e6)
    return times


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        helikon, close = await build_helikon(Path(tmp) / "tickets.db")
        openai = build_openai_agents()
        results: dict[str, list[float]] = {"helikon (SQLite)": [], "openai-agents (RunState JSON)": []}
        for _ in range(3):  # interleaved blocks: the machine's noise hits both alike
            results["helikon (SQLite)"] += await measure(helikon, rounds)
            results["openai-agents (RunState JSON)"] += await measure(openai, rounds)
        await close()
    medians = {name: statistics.median(times) for name, times in results.items()}
    print(f"pause + resume round trip, two calls (one needs approval), median of {3 * rounds}:")
    for name, median in medians.items():
        print(f"  {name:<32} {median / 1000:8.2f} ms")
    ratio = medians["helikon (SQLite)"] / medians["openai-agents (RunState JSON)"]
    print(f"  helikon / openai-agents         {ratio:8.2f}x   (target <= 0.33)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=100, help="round trips per block (3 blocks each)")
    asyncio.run(main(parser.parse_args().rounds))
