"""`ParallelAgent`: branches run concurrently on the event loop; their outputs merge into one JSON object."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Self, TypeVar

from ..agent import Agent
from ..context import RunConfig, RunContext
from ..events import (
    AgentError,
    AgentEvent,
    MessageOutput,
    RunCompleted,
    RunFailed,
    RunStarted,
)
from ..input import AgentInput
from ..items import AssistantMessage
from ._base import WorkflowAgent
from ._merge import (
    DEFAULT_CONFIG,
    ChildRun,
    aggregate,
    check_agent,
    check_key,
    preflight,
)

Ctx = TypeVar("Ctx")


def merged_json(outputs: dict[str, str]) -> str:
    """The sorted-key JSON object `{key: output}` (compact, so it reads the same everywhere)."""
    return json.dumps(outputs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class ParallelAgent(WorkflowAgent[Ctx]):
    """Runs branches concurrently on the same input, each in its own asyncio task.

    Concurrency is cooperative: it suits IO-bound model calls, while a CPU-bound branch
    starves its siblings between awaits. Each branch's final text goes to
    `state[key]`; the run's final output is a sorted-key JSON object `{key: output}`.
    Keys must be unique: a duplicate fails the run before any branch starts. Failure is
    collect-all: the other branches finish, then one `RunFailed` names every failed
    branch. Cancelling the run's token, or abandoning its stream, cancels every branch.

    Example:
        ```python
        import json

        from helikon import LlmAgent, ParallelAgent
        from helikon.testing import MockModel, text_turn

        def lens(name: str, take: str) -> LlmAgent[None]:
            return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(take)]))

        fan_out = (
            ParallelAgent("multi-lens", "Three independent takes.")
            .branch("optimist", lens("o", "Great!"))
            .branch("pessimist", lens("p", "Risky."))
            .add(lens("realist", "Fine."))
        )
        result = fan_out.run_sync("Should I buy a house?")
        outputs = json.loads(result.final_output)
        assert outputs == {"optimist": "Great!", "pessimist": "Risky.", "realist": "Fine."}
        ```
    """

    __slots__ = ("branches",)

    _kind = "ParallelAgent"

    def __init__(self, name: str, description: str = "") -> None:
        super().__init__(name, description)
        self.branches: list[tuple[str, Agent[Ctx]]] = []
        """The `(state key, agent)` branches, in the order they start."""

    def add(self, agent: Agent[Ctx]) -> Self:
        """Add a branch keyed by the agent's name."""
        agent = check_agent(f"ParallelAgent({self.name!r}).add", agent)
        self.branches.append((agent.name, agent))
        return self

    def branch(self, key: str, agent: Agent[Ctx]) -> Self:
        """Add a branch whose final text goes to `state[key]` and the output's `key` field."""
        where = f"ParallelAgent({self.name!r}).branch"
        self.branches.append((check_key(where, key), check_agent(where, agent)))
        return self

    def _duplicate_keys(self) -> AgentError | None:
        seen: set[str] = set()
        duplicates = sorted({key for key, _ in self.branches if key in seen or seen.add(key)})
        if not duplicates:
            return None
        # Concurrent writers to one state key would race: refuse before anything starts.
        return AgentError(
            kind="other",
            message=f"ParallelAgent {self.name!r}: duplicate branch key(s) "
            f"{', '.join(map(repr, duplicates))}; give each branch its own key with .branch(key, agent)",
        )

    async def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        from ._fanout import Fanout, Starts  # asyncio loads on the first run, not at `import helikon`

        yield RunStarted(agent=self.name)
        error = preflight(self._kind, self.name, ctx, config or DEFAULT_CONFIG, empty=not self.branches)
        if error is None:
            error = self._duplicate_keys()
        if error is not None:
            yield RunFailed(error=error)
            return
        runs = [ChildRun(agent, key, index) for index, (key, agent) in enumerate(self.branches)]
        state = ctx.state
        failed: list[ChildRun] = []

        def finished(run: ChildRun) -> Starts:
            if run.error is None:
                state.set(run.key, run.text)
            else:
                failed.append(run)
            return ()

        fan = Fanout(self._kind, self.name, ctx, config)
        async with aclosing(fan.run([(run, input) for run in runs], finished)) as events:
            async for event in events:
                yield event
        if fan.ended:
            return
        if failed:
            failed.sort(key=lambda r: r.key)
            error = aggregate(self._kind, self.name, "branches", failed, len(runs))
            yield RunFailed(error=error, usage=fan.usage)
            return
        text = merged_json({run.key: run.text for run in runs})
        yield MessageOutput(item=AssistantMessage.from_text(text, agent=self.name))
        yield RunCompleted(usage=fan.usage)


__all__ = ["ParallelAgent"]
