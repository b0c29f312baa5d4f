"""Eval throughput: helikon's EvalRun vs. pydantic-evals, agent against agent, in cases per second.

The same dataset in both: N cases, each asking for the weather in a city; the agent calls
`get_weather(city)` once (a fixed answer) and then answers `"It is sunny in <city>."`; one
evaluator compares the answer with the case's expected output.

- helikon: `EvalRun` over an `EvalDataset`, one `LlmAgent` on a stateless
  `helikon.testing.FunctionModel` (the documented `.agent(...)` for stateless models),
  `ExactMatch`; the report in dataset order, the progress bar off.
- pydantic-evals: `Dataset.evaluate` over `Case`s, a pydantic-ai `Agent` on its
  `FunctionModel` doing the same turn, `EqualsExpected`; `progress=False`.

Each side runs at concurrency 1 and 16, in interleaved blocks (the machine's noise hits
both alike); each result's answers are checked before anything is timed.

Run: `bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/evals.py [--cases 1000]`
(target: helikon at least 3x pydantic-evals' cases/s).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

CITIES = ("Paris", "Oslo", "Lima", "Kyoto")
Run = Callable[[int], Awaitable[int]]  # concurrency -> cases that passed


def expected(i: int) -> str:
    return f"It is sunny in {CITIES[i % len(CITIES)]}."


def build_helikon(cases: int) -> Run:
    from helikon import LlmAgent, tool
    from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch
    from helikon.testing import FunctionModel, text_turn, tool_call_turn

    @tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return "sunny"

    def answer(request: Any) -> Any:
        last = request.messages[-1]
        if last.type == "tool_result":
            city = request.messages[-2].args["city"]
            return text_turn(f"It is sunny in {city}.")
        return tool_call_turn("get_weather", {"city": last.text.split()[-1].rstrip("?")})

    agent = LlmAgent(name="weather", model=FunctionModel(answer), tools=[get_weather])
    data = EvalDataset(
        tuple(
            EvalCase.of(f"Weather in {CITIES[i % len(CITIES)]}?", id=f"c{i}", expected=expected(i))
            for i in range(cases)
        )
    )

    async def run(concurrency: int) -> int:
        report = await (
            EvalRun.builder()
            .dataset(data)
            .agent(agent)
            .evaluator(ExactMatch())
            .concurrency(concurrency)
            .progress(False)
            .run()
        )
        return sum(c.outcome == "passed" for c in report.cases)

    return run


def build_pydantic_evals(cases: int) -> Run:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import EqualsExpected

    async def function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts
        if any(isinstance(p, ToolReturnPart) for p in last):
            call = next(p for p in messages[-2].parts if isinstance(p, ToolCallPart))
            return ModelResponse(parts=[TextPart(f"It is sunny in {call.args_as_dict()['city']}.")])
        question = str(getattr(last[-1], "content", ""))
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": question.split()[-1].rstrip("?")})])

    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return "sunny"

    agent = Agent(FunctionModel(function), tools=[get_weather])
    dataset = Dataset(
        name="weather",
        cases=[
            Case(name=f"c{i}", inputs=f"Weather in {CITIES[i % len(CITIES)]}?", expected_output=expected(i))
            for i in range(cases)
        ],
        evaluators=[EqualsExpected()],
    )

    async def task(question: str) -> str:
        return (await agent.run(question)).output

    async def run(concurrency: int) -> int:
        report = await dataset.evaluate(task, max_concurrency=concurrency, progress=False)
        return sum(all(r.value is True for r in c.assertions.values()) for c in report.cases)

    return run


async def timed(run: Run, concurrency: int, cases: int) -> float:
    """Cases per second of one whole eval run."""
    gc.collect()
    start = time.perf_counter()
    passed = await run(concurrency)
    elapsed = time.perf_counter() - start
    if passed != cases:
        raise SystemExit(f"only {passed} of {cases} cases passed: the setup is broken")
    return cases / elapsed


async def main(cases: int, blocks: int) -> None:
    contenders = {"helikon": build_helikon(cases), "pydantic-evals": build_pydantic_evals(cases)}
    for run in contenders.values():  # warm-up, checked
        await timed(run, 4, cases)
    print(f"{cases} one-tool-turn cases, one exact-match evaluator; median of {blocks} runs")
    for concurrency in (1, 16):
        rates: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(blocks):
            for name, run in contenders.items():
                rates[name].append(await timed(run, concurrency, cases))
        medians = {name: statistics.median(r) for name, r in rates.items()}
        ratio = medians["helikon"] / medians["pydantic-evals"]
        line = ", ".join(f"{name} {rate:,.0f} cases/s" for name, rate in medians.items())
        print(f"  concurrency {concurrency:>2}: {line}; helikon / pydantic-evals {ratio:.1f}x (target >= 3x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--blocks", type=int, default=3, help="timed runs per contender and concurrency")
    args = parser.parse_args()
    asyncio.run(main(args.cases, args.blocks))
