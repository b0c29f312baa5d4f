"""`EvalRun`: run a dataset's cases through an agent, score them, and report.

Each attempt of a case runs on a fresh context with a fresh in-memory session (a
multi-turn case's turns run on it one after the other), through the runner you give or
`agent.run`. Cases run `concurrency` at a time; the report lists them in dataset order
whatever order they finished in. A run that fails is a failed case (its error in the
report), never a crash of the eval; an evaluator that raises fails the turn, saying so.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch
    from helikon.testing import MockModel, text_turn

    data = EvalDataset((EvalCase.of("2+2?", id="sum", expected="4"),))
    report = (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(lambda case: LlmAgent(name="calc", model=MockModel.with_scripts([text_turn("4")])))
        .evaluator(ExactMatch())
        .build()
        .run_sync()
    )
    assert report.passed() and report.cases[0].scores["exact_match"].value == 1.0
    ```
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core._internal.extras import missing_extra
from ..core.agent import Agent
from ..core.context import RunConfig, RunContext
from ..core.events import MessageOutput, RunCompleted, ToolCallItem, ToolOutputItem
from ..core.exceptions import RunError, UserError
from ..core.result import RunResult
from ..core.runner import Runner
from .dataset import EvalCase, EvalDataset
from .report import CaseResult, EvalReport, EvaluatorResult, TurnResult, new_run_id
from .score import CaseOutcome, Evaluator, Score, ToolCallRecord, score_turn

if TYPE_CHECKING:
    from ..core.session import SessionEvent
    from .sinks import TraceSink

AgentFactory = Callable[[EvalCase], Agent[Any, Any]]
"""Builds the agent for a case (a fresh one per attempt: a scripted model must not be shared)."""

ContextFactory = Callable[[EvalCase], RunContext[Any]]
"""Builds the context for a case (its session is replaced by a fresh one)."""


class EvalRun:
    """A configured eval: `await run()` (or `run_sync()`) gives an `EvalReport`. Build it with `builder()`."""

    __slots__ = (
        "_agent",
        "_concurrency",
        "_config",
        "_ctx",
        "_dataset",
        "_evaluators",
        "_progress",
        "_repeat",
        "_runner",
        "_sink",
    )

    def __init__(
        self,
        *,
        dataset: EvalDataset,
        agent: AgentFactory,
        evaluators: Sequence[Evaluator],
        ctx: ContextFactory | None = None,
        concurrency: int = 1,
        repeat: int = 1,
        runner: Runner[Any] | None = None,
        config: RunConfig | None = None,
        progress: bool | None = None,
        sink: TraceSink | None = None,
    ) -> None:
        if not isinstance(dataset, EvalDataset):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"EvalRun(dataset={dataset!r}): give an EvalDataset (EvalDataset.from_jsonl_path)"
            )
        for option, value in (("concurrency", concurrency), ("repeat", repeat)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"EvalRun: {option}={value!r} must be a whole number >= 1")
        names: set[str] = set()
        for evaluator in evaluators:
            if not isinstance(evaluator, Evaluator):
                raise UserError(
                    f"EvalRun: {evaluator!r} is no evaluator (it needs a name and async evaluate)"
                )
            if evaluator.name in names:
                raise UserError(f"EvalRun: two evaluators are named {evaluator.name!r}; each names a column")
            names.add(evaluator.name)
        self._dataset = dataset
        self._agent = agent
        self._evaluators = tuple(evaluators)
        self._ctx = ctx
        self._concurrency = concurrency
        self._repeat = repeat
        self._runner = runner
        self._config = config
        self._progress = progress
        self._sink = sink

    @staticmethod
    def builder() -> EvalRunBuilder:
        """The builder: `.dataset(...)`, `.agent(...)` or `.agent_factory(...)`, `.evaluator(...)`, ..."""
        return EvalRunBuilder()

    async def run(self) -> EvalReport:
        """Run every case (each `repeat` times), score it, and report in dataset order."""
        cases = self._dataset.cases
        slots = asyncio.Semaphore(self._concurrency)
        results: list[list[tuple[TurnResult, ...]]] = [[] for _ in cases]
        events: dict[tuple[int, int, int], tuple[SessionEvent, ...]] = {}  # (case, attempt, turn) ->
        bar = _Progress.start(len(cases) * self._repeat, self._progress, self._dataset.name)

        async def attempt(index: int) -> None:
            async with slots:
                turns, logged = await self._attempt(cases[index])
            number = len(results[index])
            results[index].append(turns)
            for turn, turn_events in enumerate(logged):
                events[(index, number, turn)] = turn_events
            bar.advance()

        try:
            await asyncio.gather(*(attempt(i) for i in range(len(cases)) for _ in range(self._repeat)))
        finally:
            bar.stop()
        names = tuple(e.name for e in self._evaluators)
        report = EvalReport(
            run_id=new_run_id(),
            dataset=self._dataset.name,
            created=datetime.now(UTC).isoformat(),
            evaluators=names,
            repeat=self._repeat,
            cases=tuple(_case_result(i, case, results[i], names) for i, case in enumerate(cases)),
        )
        if self._sink is not None:  # once the run is complete, in dataset order
            await self._sink.record(report, events)
        return report

    def run_sync(self) -> EvalReport:
        """`run` from synchronous code (not inside a running event loop)."""
        return asyncio.run(self.run())

    async def _attempt(self, case: EvalCase) -> tuple[tuple[TurnResult, ...], list[tuple[SessionEvent, ...]]]:
        """One attempt at `case`: its turns in order on one fresh session, each scored; their events."""
        from ..core.session.memory import MemorySession  # the evals' own in-memory sessions

        try:
            agent = self._agent(case)
            ctx = RunContext.ephemeral(None) if self._ctx is None else self._ctx(case)
        except Exception as exc:  # a factory's bug fails the case, named
            error = f"building the case's agent or context raised {exc!r}"
            return (TurnResult(case.input, "", error=error),), [self._input_only(case.turns[0].input)]
        session = MemorySession() if case.multi_turn or self._runner is not None else None  # else: a bare run
        if session is not None:
            ctx = ctx.with_session(session)
        turns: list[TurnResult] = []
        logged: list[tuple[SessionEvent, ...]] = []
        for index, turn in enumerate(case.turns):
            outcome = await self._turn(agent, turn.input, ctx, session is not None)
            logged.append(outcome.events)
            scores = await self._scores(case.turn_case(index), outcome)
            turns.append(
                TurnResult(
                    input=turn.input,
                    output=outcome.output,
                    tool_calls=outcome.tool_calls,
                    scores=scores,
                    error=outcome.error,
                    usage=outcome.usage,
                    latency_s=outcome.latency_s,
                )
            )
            if outcome.error is not None:
                break  # the turns after a failed one have nothing to go on
        return tuple(turns), logged

    async def _turn(
        self, agent: Agent[Any, Any], text: str, ctx: RunContext[Any], on_session: bool
    ) -> CaseOutcome:
        start = time.perf_counter()
        try:
            if on_session:  # the turns of a case follow each other on its session
                result = await self._session_runner().run(agent, text, ctx, self._config)
            else:
                result = await agent.run(text, context=ctx, config=self._config)
        except RunError as exc:
            return CaseOutcome(
                error=str(exc.error), latency_s=time.perf_counter() - start, events=self._input_only(text)
            )
        except Exception as exc:  # an agent of your own that raised: the case fails, never the eval
            return CaseOutcome(
                error=f"the run raised {type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - start,
                events=self._input_only(text),
            )
        return _outcome(result, time.perf_counter() - start, text if self._sink is not None else None)

    def _input_only(self, text: str) -> tuple[SessionEvent, ...]:
        """A failed turn's events for the sink: its input, so the stored turn says what it was asked."""
        return () if self._sink is None else _logged(text, None)

    def _session_runner(self) -> Runner[Any]:
        """The runner the cases run through on their sessions: yours, or an `AsyncioRunner`."""
        if self._runner is None:
            from ..runtime import AsyncioRunner

            self._runner = AsyncioRunner[Any]()
        return self._runner

    def _scores(self, case: EvalCase, outcome: CaseOutcome) -> Awaitable[dict[str, Score]]:
        return score_turn(self._evaluators, case, outcome)


class EvalRunBuilder:
    """Collects an `EvalRun`'s settings; `build()` checks them (see `EvalRun`)."""

    __slots__ = ("_fields",)

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {"evaluators": []}

    def dataset(self, dataset: EvalDataset) -> EvalRunBuilder:
        """The cases to run."""
        self._fields["dataset"] = dataset
        return self

    def agent(self, agent: Agent[Any, Any]) -> EvalRunBuilder:
        """One agent for every case: for stateless or live models (a scripted model wants `agent_factory`)."""

        def shared(case: EvalCase) -> Agent[Any, Any]:
            return agent

        self._fields["agent"] = shared
        return self

    def agent_factory(self, factory: AgentFactory) -> EvalRunBuilder:
        """A function of the case that builds a fresh agent for each attempt."""
        self._fields["agent"] = factory
        return self

    def default_ctx(self) -> EvalRunBuilder:
        """Each case on `RunContext.ephemeral(None)` (the default)."""
        self._fields.pop("ctx", None)
        return self

    def ctx_factory(self, factory: ContextFactory) -> EvalRunBuilder:
        """A function of the case that builds its context (a user context, governance, ...)."""
        self._fields["ctx"] = factory
        return self

    def evaluator(self, evaluator: Evaluator) -> EvalRunBuilder:
        """Add an evaluator (its `name` is its column in the report)."""
        self._fields["evaluators"].append(evaluator)
        return self

    def concurrency(self, n: int) -> EvalRunBuilder:
        """How many attempts run at once (default 1); the report keeps dataset order."""
        self._fields["concurrency"] = n
        return self

    def repeat(self, n: int) -> EvalRunBuilder:
        """Run each case `n` times: the report gives each evaluator's mean, stddev and pass@k."""
        self._fields["repeat"] = n
        return self

    def runner(self, runner: Runner[Any]) -> EvalRunBuilder:
        """Run the cases through `runner` (default: `agent.run`)."""
        self._fields["runner"] = runner
        return self

    def config(self, config: RunConfig) -> EvalRunBuilder:
        """The `RunConfig` of every run (default: each agent's own)."""
        self._fields["config"] = config
        return self

    def sink(self, sink: TraceSink) -> EvalRunBuilder:
        """Record the run, once complete, with `sink` (e.g. `SqliteTraceSink`)."""
        self._fields["sink"] = sink
        return self

    def progress(self, show: bool) -> EvalRunBuilder:
        """Show a progress bar (default: on a terminal, when rich is there; True needs the `evals` extra)."""
        self._fields["progress"] = show
        return self

    def build(self) -> EvalRun:
        """The eval run.

        Raises:
            UserError: No dataset, no agent, or a setting out of range.
        """
        if "dataset" not in self._fields:
            raise UserError("EvalRun.builder(): call .dataset(...) before .build()")
        if "agent" not in self._fields:
            raise UserError("EvalRun.builder(): call .agent(...) or .agent_factory(...) before .build()")
        return EvalRun(**self._fields)

    async def run(self) -> EvalReport:
        """`build().run()`."""
        return await self.build().run()


def _outcome(result: RunResult[Any], latency: float, logged_input: str | None) -> CaseOutcome:
    """What a finished run made of a turn: its answer, its tool calls in order, its usage.

    With `logged_input` (the turn's input: a trace sink records the run), also its events
    as a session logs them.
    """
    text = ""
    calls: dict[str, ToolCallRecord] = {}
    for event in result.events:
        if isinstance(event, MessageOutput):
            text = event.item.text
        elif isinstance(event, RunCompleted) and event.output is not None:
            text = event.output
        elif isinstance(event, ToolCallItem):
            call = event.item
            calls[call.call_id] = ToolCallRecord(call.name, call.args, call_id=call.call_id)
        elif isinstance(event, ToolOutputItem):
            made = calls.get(event.item.call_id)
            if made is not None:
                calls[made.call_id] = ToolCallRecord(
                    made.name, made.args, event.item.text, event.item.is_error, made.call_id
                )
    if result.status == "paused":
        return CaseOutcome(
            error="the run paused for approval: give eval runs an approval handler", latency_s=latency
        )
    return CaseOutcome(
        output=text,
        value=result.final_output,
        tool_calls=tuple(calls.values()),
        usage=result.usage,
        latency_s=latency,
        events=() if logged_input is None else _logged(logged_input, result),
    )


def _logged(text: str, result: RunResult[Any] | None) -> tuple[SessionEvent, ...]:
    """The turn's events as a session would log them: its input only, when it has no result."""
    from ..core.items import UserMessage
    from ..core.session.recorder import SessionRecorder

    recorder = SessionRecorder([UserMessage.from_text(text)])
    for event in () if result is None else result.events:
        recorder.observe(event)
    return tuple(recorder.drain())


def _case_result(
    index: int, case: EvalCase, attempts: list[tuple[TurnResult, ...]], names: tuple[str, ...]
) -> CaseResult:
    scores = {
        name: EvaluatorResult.of([[t.scores[name] for t in turns if name in t.scores] for turns in attempts])
        for name in names
    }
    return CaseResult(
        index=index,
        case_id=case.id,
        attempts=tuple(attempts),
        scores=scores,
        metadata=case.metadata,
        case=case.to_json(),
    )


class _Progress:
    """A rich progress bar on a terminal; nothing elsewhere."""

    __slots__ = ("_bar", "_task")

    def __init__(self, bar: Any = None, task: Any = None) -> None:
        self._bar = bar
        self._task = task

    @staticmethod
    def start(total: int, show: bool | None, title: str) -> _Progress:
        if show is False or (show is None and not sys.stderr.isatty()):
            return _Progress()
        try:
            from rich.progress import Progress
        except ImportError as exc:
            if show is None:
                return _Progress()  # a nicety on a terminal: without rich there is none
            raise missing_extra("EvalRun(progress=True) needs rich", "evals") from exc
        bar = Progress(transient=True)
        task = bar.add_task(f"eval {title}", total=total)
        bar.start()
        return _Progress(bar, task)

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


__all__ = ["AgentFactory", "ContextFactory", "EvalRun", "EvalRunBuilder"]
