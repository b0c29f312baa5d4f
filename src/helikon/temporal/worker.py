"""`TemporalAgentWorker`: a Temporal worker that runs helikon agents durably.

It serves the `helikon.AgentRun` workflow and its step activities on one task queue, for
the agents it registers, over a session store every worker and client reaches. Build it
with `TemporalAgentWorker.builder()`, then `await worker.run()` (until cancelled) or
`async with worker:` (it runs in the background inside the block).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Self

from temporalio.client import Client
from temporalio.worker import Worker

from helikon.core.agent import LlmAgent
from helikon.core.context import RunConfig
from helikon.core.exceptions import UserError
from helikon.core.governance.settings import Governance
from helikon.core.session import Session

from .activities import StepActivities
from .converter import prewarm, with_converter, workflow_runner
from .served import Served, StepOptions, serve, unserve
from .worker_steps import INLINE_LIMIT, ContextFactory, SessionSource, WorkerSteps
from .workflow import AgentRunWorkflow

if TYPE_CHECKING:
    from types import TracebackType

WorkerPosture = Governance
"""A worker's posture is a `Governance` (permission mode, deny, allow and guard rules, policy,
approval handler, default guards, redaction, extra secrets), set on the worker, authoritative
over whatever context its runs are made with."""

_MAX_OPEN_SESSIONS = 256
"""How many session handles a worker keeps open (the least recently used one is closed first)."""


class TemporalAgentWorker:
    """Runs the durable runs of its agents: the workflow and its steps, on `task_queue`.

    Example:
        ```python
        from helikon import LlmAgent
        from helikon.temporal import TemporalAgentWorker
        from helikon.testing import MockModel, text_turn

        agent = LlmAgent(name="assistant", model=MockModel.with_scripts([text_turn("Hi!")]))
        builder = TemporalAgentWorker.builder().agent(agent).sessions("sqlite:///tmp/runs.db")
        assert builder.task_queue("assistants")  # then: .client(client).build()
        ```
    """

    __slots__ = ("_served", "_sessions", "_task", "served", "steps", "task_queue", "worker")

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        agents: list[LlmAgent[Any, Any]],
        sessions: str | SessionSource,
        contexts: ContextFactory | None = None,
        config: RunConfig | None = None,
        options: StepOptions | None = None,
        inline_limit: int = INLINE_LIMIT,
        posture: WorkerPosture[Any] | None = None,
    ) -> None:
        if not agents:
            raise UserError("TemporalAgentWorker: register at least one agent (builder().agent(...))")
        by_name = served_agents(agents)
        self._sessions = _UrlSessions(sessions) if isinstance(sessions, str) else None
        source: SessionSource = self._sessions.open if self._sessions is not None else sessions  # pyright: ignore[reportAssignmentType]
        config = config or RunConfig()
        self.task_queue = task_queue
        self.served = Served(agents=by_name, config=config, options=options or StepOptions())
        self.steps = WorkerSteps(
            by_name, source, contexts=contexts, config=config, inline_limit=inline_limit, posture=posture
        )
        prewarm()
        self.worker = Worker(
            with_converter(client),
            task_queue=task_queue,
            workflows=[AgentRunWorkflow],
            activities=StepActivities(self.steps).all(),
            workflow_runner=workflow_runner(),
        )
        self._task: asyncio.Task[None] | None = None

    @staticmethod
    def builder() -> TemporalAgentWorkerBuilder:
        """A builder: `.agent(...)`, `.sessions(...)`, `.task_queue(...)`, `.client(...)`, `.build()`."""
        return TemporalAgentWorkerBuilder()

    async def run(self) -> None:
        """Serve until cancelled (or `shutdown()`)."""
        serve(self.task_queue, self.served)
        try:
            await self.worker.run()
        finally:
            unserve(self.task_queue, self.served)
            if self._sessions is not None:
                await self._sessions.aclose()

    async def shutdown(self) -> None:
        """Stop taking work, let the steps in progress finish, and stop."""
        await self.worker.shutdown()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def __aenter__(self) -> Self:
        serve(self.task_queue, self.served)  # before a workflow task can arrive
        self._task = asyncio.ensure_future(self.run())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()


def served_agents(agents: list[LlmAgent[Any, Any]]) -> dict[str, LlmAgent[Any, Any]]:
    """The agents a worker serves by name: those registered and the targets of their handoffs.

    Raises:
        UserError: two different agents share a name (a run names its agent), a handoff
            target is not an `LlmAgent`, or a handoff filters its input (not durable yet).
    """
    served: dict[str, LlmAgent[Any, Any]] = {}
    todo = list(agents)
    while todo:
        agent = todo.pop(0)
        known = served.get(agent.name)
        if known is agent:
            continue
        if known is not None:
            raise UserError(
                f"TemporalAgentWorker: two agents are named {agent.name!r}; a run names its agent"
            )
        served[agent.name] = agent
        for handoff in agent.handoffs:
            if handoff.input_filter is not None:
                raise UserError(
                    f"TemporalAgentWorker: the handoff from {agent.name!r} to {handoff.target!r} has an "
                    "input_filter; the durable runner hands off the whole transcript (drop the filter)"
                )
            if not isinstance(handoff.agent, LlmAgent):
                raise UserError(
                    f"TemporalAgentWorker: the handoff target {handoff.target!r} is not an LlmAgent; the "
                    "durable runner steps LlmAgent loops"
                )
            todo.append(handoff.agent)  # pyright: ignore[reportUnknownArgumentType]
    return served


class TemporalAgentWorkerBuilder:
    """Collects a worker's parts; `build()` checks them and makes the worker."""

    __slots__ = (
        "_agents",
        "_client",
        "_config",
        "_contexts",
        "_options",
        "_posture",
        "_sessions",
        "_task_queue",
    )

    def __init__(self) -> None:
        self._agents: list[LlmAgent[Any, Any]] = []
        self._client: Client | None = None
        self._sessions: str | SessionSource | None = None
        self._task_queue = "helikon"
        self._contexts: ContextFactory | None = None
        self._config: RunConfig | None = None
        self._options: StepOptions | None = None
        self._posture: WorkerPosture[Any] | None = None

    def agent(self, agent: LlmAgent[Any, Any]) -> Self:
        """Serve `agent` (its runs name it by `agent.name`)."""
        self._agents.append(agent)
        return self

    def client(self, client: Client) -> Self:
        """The Temporal client the worker polls with."""
        self._client = client
        return self

    def sessions(self, sessions: str | SessionSource) -> Self:
        """The session store: a URL (`sqlite:///...`, `postgresql://`, `redis://`) or `id -> Session`."""
        self._sessions = sessions
        return self

    def task_queue(self, task_queue: str) -> Self:
        """The task queue (default `helikon`); the runner starts its runs on the same one."""
        self._task_queue = task_queue
        return self

    def contexts(self, contexts: ContextFactory) -> Self:
        """How a run's context is made (from its `RunRef`, e.g. its ctx seed, and its session)."""
        self._contexts = contexts
        return self

    def config(self, config: RunConfig) -> Self:
        """The runs' `RunConfig` (limits, `parallel_tool_call_limit`)."""
        self._config = config
        return self

    def posture(self, posture: WorkerPosture[Any]) -> Self:
        """The governance every run of this worker is under, whatever its context says.

        It is the worker's: a client sends only a ctx seed, never permissions.
        """
        self._posture = posture
        return self

    def options(self, options: StepOptions) -> Self:
        """The step options (timeouts, heartbeats, attempts)."""
        self._options = options
        return self

    def build(self) -> TemporalAgentWorker:
        """The worker; a `UserError` says what is missing."""
        if self._client is None:
            raise UserError(
                "TemporalAgentWorker.builder(): give it a client (.client(await Client.connect(...)))"
            )
        if self._sessions is None:
            raise UserError(
                "TemporalAgentWorker.builder(): give it the session store its runs are recorded in "
                "(.sessions('sqlite:///path.db'), a postgresql:// or redis:// URL, or a function "
                "id -> Session)"
            )
        return TemporalAgentWorker(
            self._client,
            task_queue=self._task_queue,
            agents=self._agents,
            sessions=self._sessions,
            contexts=self._contexts,
            config=self._config,
            options=self._options,
            posture=self._posture,
        )


class _UrlSessions:
    """Session handles on one store URL, the most recently used kept open."""

    __slots__ = ("_open", "url")

    def __init__(self, url: str) -> None:
        from helikon.sessions import open_session

        if url.startswith("memory:"):
            raise UserError(_IN_MEMORY)
        self.url = url
        self._open: OrderedDict[str, Session] = OrderedDict()
        open_session(url, "check")  # a bad URL fails here, not at the first run

    async def open(self, session_id: str) -> Session:
        from helikon.sessions import open_session

        session = self._open.pop(session_id, None)
        if session is None:
            session = open_session(self.url, session_id)
            while len(self._open) >= _MAX_OPEN_SESSIONS:
                _, oldest = self._open.popitem(last=False)
                await _close(oldest)
        self._open[session_id] = session
        return session

    async def aclose(self) -> None:
        sessions, self._open = list(self._open.values()), OrderedDict()
        for session in sessions:
            await _close(session)


async def _close(session: Session) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


_IN_MEMORY = (
    "a durable run's session must be in a store its workers and its client all reach (a SQLite file, "
    "PostgreSQL, Redis): an in-memory session lives in one process only"
)

__all__ = ["TemporalAgentWorker", "TemporalAgentWorkerBuilder", "WorkerPosture"]
