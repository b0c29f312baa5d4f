"""`AgentHost`: the agent's side of an AgentCore container: its runs, sessions, contexts and health.

What both protocols' endpoints call: `begin` starts a run on the worker loop (through the
agent server's `Runs`: one session's runs in line, a cancelled turn still written, a paused
run decided from its session), `cancel` ends one whose client left, `mcp_context` makes an
MCP call's context. `AgentCoreServer` is a host with the two protocols' apps on top.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.agentcore.host import AgentHost
    from helikon.testing import MockModel, text_turn

    host = AgentHost(LlmAgent(name="assistant", model=MockModel.with_scripts([text_turn("Hi!")])))
    request = host.server_request({"X-Amzn-Bedrock-AgentCore-Runtime-User-Id": "ada"}, "s-1")
    assert (request.agent, request.session_id, request.identity) == ("assistant", "s-1", "ada")
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import propagate

from ..core.agent import Agent
from ..core.cancel import CancellationToken
from ..core.context import RunContext
from ..core.exceptions import UserError
from ..core.session.memory import MemorySession
from ..server.context import ContextProvider, DefaultContextProvider, ServerRequest
from ..server.runs import Retention, Runs, ServerRun
from ..server.sessions import InMemorySessionProvider, SessionProvider
from .headers import SESSION_HEADER, USER_ID_HEADER, session_id_of
from .health import Health
from .payloads import Decide, InputFrom, Start, prompt_input
from .worker import WorkerLoop

if TYPE_CHECKING:
    from ..core.session import Session

_TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
_KEPT_RUNS = Retention(seconds=60.0, max_runs=64)
"""Finished runs are not read back over this contract: a few are kept, briefly."""


class AgentHost:
    """One agent's runs, sessions, contexts and health; `AgentCoreServer` documents the arguments."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        sessions: SessionProvider | None = None,
        contexts: ContextProvider[Any] | None = None,
        input_from: InputFrom = prompt_input,
        health: Health | None = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise UserError(
                f"{type(self).__name__}({agent!r}): give an agent (an LlmAgent or a workflow agent)"
            )
        if not callable(input_from):
            raise UserError(
                f"{type(self).__name__}(input_from={input_from!r}): give a function payload -> RunInput"
            )
        self.agent = agent
        self.sessions: SessionProvider = sessions if sessions is not None else InMemorySessionProvider()
        self.contexts: ContextProvider[Any] = contexts if contexts is not None else DefaultContextProvider()
        self.input_from = input_from
        self.health = health if health is not None else Health()
        self.worker = WorkerLoop()
        self.runs = Runs({agent.name: agent}, self._session_for, self.contexts, _KEPT_RUNS)

    def server_request(self, headers: Mapping[str, str], session_id: str | None) -> ServerRequest:
        """What the context provider is told of a request with `headers` (any case)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        return ServerRequest(self.agent.name, session_id, lowered.get(USER_ID_HEADER.lower()), lowered)

    async def begin(self, ask: Start | Decide, request: ServerRequest) -> ServerRun:
        """Start the run `ask` names, on the worker loop; the run (its events in `run.log`).

        The caller's `traceparent` / `baggage` become the run's OpenTelemetry parent
        context, so its spans continue the caller's trace.

        Raises:
            ApprovalError: `Decide` with nothing paused on the session, or a decision that fails its checks.
        """
        self.worker.start()
        return await self.worker.call(self._begin(ask, request))

    async def _begin(self, ask: Start | Decide, request: ServerRequest) -> ServerRun:
        carrier = {name: request.headers[name] for name in _TRACE_HEADERS if name in request.headers}
        token = otel_context.attach(propagate.extract(carrier)) if carrier else None
        try:  # the run's task is created here, and takes this context with it
            if isinstance(ask, Start):
                run = await self.runs.start(self.agent.name, ask.input, request)
            else:
                run = await self.runs.resume_session(
                    self.agent.name, ask.decisions, request, deny_rest=ask.deny_rest
                )
        finally:
            if token is not None:
                otel_context.detach(token)
        if run.task is not None:
            self.health.track(run.task)  # busy until the turn is written, also after a client left
        return run

    def stop_runs(self) -> None:
        """Cancel every run still going (the server stops); safe to call from a signal handler."""
        if self.worker.started:
            self.worker.submit(self.runs.aclose())

    def cancel(self, run: ServerRun) -> None:
        """Cancel `run` (its client left): the turn is closed as cancelled and still written."""
        self.worker.submit(self.runs.cancel(run, "interrupt"))

    async def _session_for(self, session_id: str | None) -> Session:
        if session_id is None:
            return MemorySession()  # a fresh session that is never stored
        return await self.sessions.session(session_id)

    async def mcp_context(self, headers: Mapping[str, str], durable: bool) -> RunContext[Any]:
        """The context of one MCP call with `headers`: a fresh session, or the header's when `durable`."""
        session_id = session_id_of(headers.get(SESSION_HEADER.lower())) if durable else None
        request = self.server_request(headers, session_id)
        return await self.contexts.build(request, await self._session_for(session_id), CancellationToken())

    async def aclose(self) -> None:
        """Cancel the runs still going (their turns are written), close the sessions, stop the worker loop."""
        if self.worker.started:
            await self.worker.call(self._close_runs())
            self.worker.stop()

    async def _close_runs(self) -> None:
        await self.runs.aclose()
        close = getattr(self.sessions, "aclose", None)
        if close is not None:
            await close()


__all__ = ["AgentHost"]
