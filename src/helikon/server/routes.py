"""The server's endpoints: agents, runs (one-shot, SSE, async), streams, cancel, approvals, sessions.

Every handler reads its request strictly (`wire`), answers a refusal as a 4xx JSON error
(`errors`), and puts `X-Run-Id` on every response about a run. See `docs/server.md` for
the API as a client sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.websockets import WebSocket

from ..core.approvals import ApprovalError, UnknownApprovalRequest
from ..core.exceptions import SessionConflict, UserError
from ..core.session.branches import Branching, event_parents
from ..core.session.codec import encode_event
from .context import ServerRequest
from .errors import ApiError, error_response
from .model_calls import model_calls
from .runs import RunConflict, ServerRun
from .streams import sse_response, websocket_stream
from .wire import check_session_id, decisions, read_json, run_request, seq_field, session_id

if TYPE_CHECKING:
    from .app import AgentServer

logger = logging.getLogger("helikon.server")


class Api:
    """The handlers, over one server's runs and providers."""

    def __init__(self, server: AgentServer) -> None:
        self.server = server

    # --- agents and runs --------------------------------------------------------------------

    async def agents(self, request: Request) -> Response:
        """`GET /agents`: the agents this server runs."""
        listed = [
            {"name": name, "description": getattr(agent, "description", None) or None}
            for name, agent in self.server.agents.items()
        ]
        return JSONResponse({"agents": listed})

    async def start_run(self, request: Request) -> Response:
        """`POST /agents/{name}/runs`: one-shot JSON, `?stream=sse`, or `?mode=async` (202)."""
        name = self._agent_name(request)
        stream, mode = request.query_params.get("stream"), request.query_params.get("mode")
        if stream not in (None, "sse") or mode not in (None, "async"):
            raise ApiError(400, "invalid_request", "the options are ?stream=sse and ?mode=async")
        body = run_request(await read_json(request, self.server.body_limit))
        server_request = self._server_request(request, name)
        try:
            run = await self.server.runs.start(name, body.input, server_request, body.multitask_strategy)
        except RunConflict as exc:
            raise ApiError(409, "session_busy", str(exc), run_id=exc.run_id) from None
        headers = {"X-Run-Id": run.id}
        on_disconnect = body.on_disconnect or ("continue" if mode == "async" else "cancel")
        if stream == "sse":  # with mode=async too: a stream whose run goes on if its client leaves
            subscription = self._subscribe(run, -1)
            canceller = self._canceller(run, on_disconnect)
            return sse_response(run, subscription, self.server.limits, canceller, headers)
        if mode == "async":
            return JSONResponse(run.to_json(), status_code=202, headers=headers)
        if not await _settled_or_gone(request, run):
            if on_disconnect == "cancel":
                await self.server.runs.cancel(run, "interrupt")
            return Response(status_code=499, headers=headers)  # no one reads it: the client left
        if run.error is not None and run.error.get("cause") == "not_started":
            message = run.error["message"]
            return error_response(500, "run_not_started", message, headers=headers, run_id=run.id)
        return JSONResponse(run.to_json(), headers=headers)

    async def get_run(self, request: Request) -> Response:
        """`GET /agents/{name}/runs/{run_id}`: the run's status and result."""
        await self.server.ready()
        run = self._run(request)
        return JSONResponse(run.to_json(), headers={"X-Run-Id": run.id})

    async def wait_run(self, request: Request) -> Response:
        """`GET .../runs/{run_id}/wait`: block until the run is paused or finished; the run."""
        await self.server.ready()
        run = self._run(request)
        if not await _settled_or_gone(request, run):
            return Response(status_code=499, headers={"X-Run-Id": run.id})
        return JSONResponse(run.to_json(), headers={"X-Run-Id": run.id})

    async def stream_run(self, request: Request) -> Response:
        """`GET .../runs/{run_id}/stream`: SSE from `Last-Event-ID` (or `?after=`), replay then tail."""
        await self.server.ready()
        run = self._run(request)
        after = _seq(
            request.headers.get("last-event-id") or request.query_params.get("after"), "Last-Event-ID"
        )
        subscription = self._subscribe(run, after)
        return sse_response(run, subscription, self.server.limits, None, {"X-Run-Id": run.id})

    async def run_events(self, websocket: WebSocket) -> None:
        """`GET .../runs/{run_id}/events` (WebSocket): replay after `?after=`, then tail."""
        await self.server.ready()
        try:
            run = self._run(websocket)
            after = _seq(websocket.query_params.get("after"), "after")
            subscription = self._subscribe(run, after)
        except ApiError as exc:
            await websocket.accept()
            await websocket.send_text(json.dumps({"type": "error", "code": exc.code, "message": exc.message}))
            await websocket.close(code=1008)
            return
        await websocket.accept(headers=[(b"x-run-id", run.id.encode())])
        await websocket_stream(websocket, run, subscription, self.server.limits)

    async def cancel_run(self, request: Request) -> Response:
        """`POST .../runs/{run_id}/cancel?action=interrupt|rollback`: idempotent; the final status."""
        await self.server.ready()
        run = self._run(request)
        action = request.query_params.get("action", "interrupt")
        if action not in ("interrupt", "rollback"):
            raise ApiError(400, "invalid_request", f"action must be interrupt or rollback, not {action!r}")
        try:
            await self.server.runs.cancel(run, action)  # type: ignore[arg-type]
        except RunConflict as exc:
            raise ApiError(409, "run_paused", str(exc)) from None
        return JSONResponse(run.to_json(), headers={"X-Run-Id": run.id})

    async def decide(self, request: Request) -> Response:
        """`POST .../runs/{run_id}/approvals`: decide a paused run's calls; the run goes on (202)."""
        await self.server.ready()
        run = self._run(request)
        chosen, deny_rest = decisions(await read_json(request, self.server.body_limit))
        server_request = self._server_request(request, run.agent)
        if server_request.session_id != run.session_id:
            server_request = ServerRequest(
                run.agent, run.session_id, server_request.identity, server_request.headers
            )
        try:
            await self.server.runs.resume(run, chosen, server_request, deny_rest=deny_rest)
        except RunConflict as exc:
            raise ApiError(409, "not_paused", str(exc)) from None
        except UnknownApprovalRequest as exc:
            raise ApiError(404, "unknown_request", str(exc)) from None
        except ApprovalError as exc:
            raise ApiError(409, type(exc).__name__, str(exc)) from None
        return JSONResponse(run.to_json(), status_code=202, headers={"X-Run-Id": run.id})

    # --- sessions ------------------------------------------------------------------------------

    async def sessions(self, request: Request) -> Response:
        """`GET /sessions?limit=&offset=`: the provider's sessions, most recently updated first."""
        limit = _int(request.query_params.get("limit"), "limit", 100, 1, 1000)
        offset = _int(request.query_params.get("offset"), "offset", 0, 0, 10**9)
        infos = await self.server.sessions.list_sessions(limit=limit, offset=offset)
        return JSONResponse({"sessions": [_info(info) for info in infos]})

    async def session(self, request: Request) -> Response:
        """`GET /sessions/{session_id}`: metadata, branches, the event count."""
        session = await self._session(request)
        entries = await session.events()
        meta = await session.metadata()  # type: ignore[attr-defined]
        branches = await session.branches()  # type: ignore[attr-defined]
        return JSONResponse(
            {
                "session_id": request.path_params["session_id"],
                "title": meta.title,
                "metadata": meta.metadata,
                "event_count": len(entries),
                "last_seq": entries[-1].seq if entries else -1,
                "paused": any(
                    run.status == "paused"
                    for run in self.server.runs.of_session(request.path_params["session_id"])
                ),
                "branches": [
                    {"head_seq": b.head_seq, "base_seq": b.base_seq, "length": b.length, "active": b.active}
                    for b in branches
                ],
            }
        )

    async def session_events(self, request: Request) -> Response:
        """`GET /sessions/{session_id}/events?after_seq=`: the log after a seq, in the stored form.

        Each entry has its `parent` (the event it follows in the log's tree; null for a
        marker) and whether it is on the `active` branch: a client draws the tree from these.
        """
        session = await self._session(request)
        after = _int(request.query_params.get("after_seq"), "after_seq", -1, -1, 2**62)
        entries = await session.events()
        parents, head = event_parents([entry.event for entry in entries])
        active: set[int] = set()
        while head >= 0:
            active.add(head)
            head = parents.get(head, -1)
        events = [
            f'{{"seq":{entry.seq},"parent":{json.dumps(parents.get(index))},'
            f'"active":{json.dumps(index in active)},"event":{encode_event(entry.event)}}}'
            for index, entry in enumerate(entries)
            if entry.seq > after
        ]
        return Response(f'{{"events":[{",".join(events)}]}}', media_type="application/json")

    async def rewind_session(self, request: Request) -> Response:
        """`POST /sessions/{session_id}/rewind` `{"to_seq", "expected_seq"?}`: move the head back."""
        await self.server.ready()
        session = await self._idle_session(request)
        body = await read_json(request, self.server.body_limit)
        to_seq = seq_field(body, "to_seq")
        assert to_seq is not None
        with _session_errors():
            await session.rewind(to_seq, expected_seq=seq_field(body, "expected_seq", required=False))
        return await self.session(request)

    async def fork_session(self, request: Request) -> Response:
        """`POST /sessions/{session_id}/fork` `{"at_seq", "session_id"?}`: a new session from there (201)."""
        await self.server.ready()
        session = await self._idle_session(request)
        body = await read_json(request, self.server.body_limit)
        at_seq = seq_field(body, "at_seq")
        assert at_seq is not None
        new_id = cast("dict[str, Any]", body).get("session_id")
        if new_id is not None and not isinstance(new_id, str):
            raise ApiError(400, "invalid_request", "`session_id` must be a string")
        if new_id is not None:
            check_session_id(new_id)
        with _session_errors():
            fork = await session.fork(at_seq, session_id=new_id)
        return JSONResponse({"session_id": fork.session_id}, status_code=201)

    async def session_requests(self, request: Request) -> Response:
        """`GET /sessions/{session_id}/requests?turn=`: each model call, as sent and answered (`model_calls`).

        With `turn`, that call carries the messages it was sent.
        """
        session = await self._session(request)
        turn = _int(request.query_params.get("turn"), "turn", -1, 0, 2**31)
        try:
            calls = model_calls(await session.events(), with_messages=None if turn < 0 else turn)
        except UserError as exc:
            raise ApiError(409, "no_request_records", str(exc)) from None
        return JSONResponse({"calls": calls})

    async def session_runs(self, request: Request) -> Response:
        """`GET /sessions/{session_id}/runs`: the runs this server keeps for the session, oldest first."""
        await self.server.ready()
        session_id_ = check_session_id(request.path_params["session_id"])
        return JSONResponse({"runs": [run.to_json() for run in self.server.runs.of_session(session_id_)]})

    # --- helpers -------------------------------------------------------------------------------

    def _agent_name(self, request: Request | WebSocket) -> str:
        name = request.path_params["name"]
        if name not in self.server.agents:
            raise ApiError(404, "unknown_agent", f"no agent {name!r} here; GET /agents lists them")
        return name

    def _run(self, request: Request | WebSocket) -> ServerRun:
        name = self._agent_name(request)
        run = self.server.runs.get(request.path_params["run_id"])
        if run is None or run.agent != name:
            raise ApiError(
                404, "unknown_run", f"agent {name!r} has no run {request.path_params['run_id']!r} here"
            )
        return run

    async def _idle_session(self, request: Request) -> Any:
        """The path's session, refused (409) while one of its runs is queued or running here."""
        session_id_ = check_session_id(request.path_params["session_id"])
        busy = [r for r in self.server.runs.of_session(session_id_) if r.status in ("queued", "running")]
        if busy:
            raise ApiError(409, "session_busy", f"session {session_id_!r} is busy with run {busy[-1].id}")
        session = await self.server.sessions.session(session_id_)
        if not isinstance(session, Branching):
            raise ApiError(400, "no_branches", f"session {session_id_!r} cannot be rewound or forked")
        return session

    async def _session(self, request: Request) -> Any:
        session_id_ = check_session_id(request.path_params["session_id"])
        return await self.server.sessions.session(session_id_)

    def _server_request(self, request: Request, agent: str) -> ServerRequest:
        headers = {key.lower(): value for key, value in request.headers.items()}
        identity = request.scope.get("state", {}).get("identity")
        return ServerRequest(agent, session_id(headers), identity, headers)

    def _subscribe(self, run: ServerRun, after: int) -> Any:
        limits = self.server.limits
        if run.log.subscribers >= limits.per_run:
            raise ApiError(
                429, "too_many_subscribers", f"run {run.id} has {limits.per_run} subscribers already"
            )
        if self.server.runs.subscribers.count >= limits.total:
            raise ApiError(429, "too_many_subscribers", "this server has as many subscribers as it takes")
        return run.log.subscribe(after, limit=limits.backlog, idle=limits.idle_timeout)

    def _canceller(self, run: ServerRun, on_disconnect: str) -> Callable[[], None] | None:
        if on_disconnect != "cancel":
            return None

        def cancel() -> None:
            if run.status in ("queued", "running"):
                task = asyncio.get_running_loop().create_task(self.server.runs.cancel(run, "interrupt"))
                self.server.background.add(task)
                task.add_done_callback(self.server.background.discard)

        return cancel


@contextlib.contextmanager
def _session_errors() -> Generator[None]:
    """A rewind's or fork's refusal as the API's: both are 409s, as each depends on the log as it is now.

    A point the log does not have, or one inside a turn, is `invalid_point`; another writer
    that appended since `expected_seq` is `session_conflict`.
    """
    try:
        yield
    except SessionConflict as exc:
        raise ApiError(409, "session_conflict", str(exc)) from None
    except UserError as exc:
        raise ApiError(409, "invalid_point", str(exc)) from None


async def _settled_or_gone(request: Request, run: ServerRun) -> bool:
    """Wait until the run is paused or finished (True), or the client leaves first (False)."""
    settled = asyncio.ensure_future(run.settled.wait())
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({settled, gone}, return_when=asyncio.FIRST_COMPLETED)
        return settled.done()
    finally:
        for task in (settled, gone):
            task.cancel()
        await asyncio.gather(settled, gone, return_exceptions=True)


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _seq(value: str | None, name: str) -> int:
    if value is None:
        return -1
    if not value.lstrip("-").isdigit() or int(value) < -1:
        raise ApiError(
            400, "invalid_request", f"{name} must be an event's seq (an integer >= -1), not {value!r}"
        )
    return int(value)


def _int(value: str | None, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise ApiError(
            400, "invalid_request", f"{name} must be an integer from {low} to {high}, not {value!r}"
        )
    return number


def _info(info: Any) -> Mapping[str, Any]:
    return {
        "session_id": info.session_id,
        "created": info.created.isoformat(),
        "updated": info.updated.isoformat(),
        "event_count": info.event_count,
        "title": info.title,
        "metadata": info.metadata,
    }


__all__ = ["Api"]
