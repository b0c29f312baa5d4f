"""The HTTP protocol's endpoints: `GET /ping`, `POST /invocations` (JSON or SSE) and the `/ws` WebSocket.

`/invocations` takes the caller's JSON payload (`{"prompt": "<text>"}` by default) and
answers, by `Accept`:

- `text/event-stream`: each of the run's events as `data: <the event's JSON>`, to the
  terminal one (`run_completed`, `run_failed` or `run_paused`);
- anything else: one JSON object once the run settles, `{"run_id", "session_id",
  "status", "output", "usage"}` (`"pending"` too when paused), or 500 with `{"error":
  <message>, "kind", ...}` when it failed.

A bad request is a 400 `{"error": <what>, "details": <what to fix>}`, as AgentCore's own
SDK answers: JSON that does not parse, a malformed session header, a payload with no
prompt. A client that leaves before the end, on any transport, cancels its run; the
cancelled turn is written to the session all the same.

`/ws` takes one payload per text message and streams that run's events back, one JSON
per message; `{"action": "cancel"}` cancels the run going on. Errors come as
`{"error", "details"}` messages and leave the socket open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from ..core.approvals import ApprovalError
from ..server.context import ServerRequest
from ..server.run_log import LogEntry
from ..server.runs import ServerRun
from ..server.sse import SseResponse
from ..server.streams import sse_chunks
from .headers import SESSION_HEADER, BadSessionId, session_id_of
from .payloads import PayloadError, read_payload

if TYPE_CHECKING:
    from .host import AgentHost

logger = logging.getLogger("helikon.agentcore")

_ALL = 1 << 30
"""A subscriber's backlog: the bridge to the HTTP loop drains it at once, so it never fills."""
FAILED = "the invocation failed; the container's log has the details"
KEEP_ALIVE = 15.0
"""Seconds of quiet after which an SSE stream sends a comment, so proxies keep it open."""


class Refused(Exception):
    """A request answered with a 4xx: `{"error": title, "details": details}`."""

    def __init__(self, status: int, title: str, details: str) -> None:
        super().__init__(details)
        self.status = status
        self.title = title
        self.details = details

    def body(self) -> dict[str, str]:
        return {"error": self.title, "details": self.details}


class Invocations:
    """The endpoints of one `AgentHost`."""

    def __init__(self, server: AgentHost) -> None:
        self.server = server
        self.health = server.health

    async def ping(self, request: Request) -> Response:
        """`GET /ping`: `{"status", "time_of_last_update"}`, read without waiting on anything."""
        return JSONResponse(self.health.ping())

    async def invoke(self, request: Request) -> Response:
        """`POST /invocations`: run the payload; a JSON answer, or SSE for `Accept: text/event-stream`."""
        self.health.enter()
        try:
            response = await self._invoke(request)
        except Refused as refused:
            response = JSONResponse(refused.body(), status_code=refused.status)
        except Exception:
            logger.exception("an invocation failed")
            response = JSONResponse({"error": FAILED}, status_code=500)
        except BaseException:
            self.health.leave()
            raise
        return _Leaving(response, self.health.leave)

    async def _invoke(self, request: Request) -> Response:
        payload = _json(await request.body())
        session_id = _session_id(request.headers.get(SESSION_HEADER))
        ask = _ask(payload, self.server.input_from)
        run = await self._begin(ask, self.server.server_request(request.headers, session_id))
        if "text/event-stream" in request.headers.get("accept", ""):
            chunks = self.server.worker.stream(lambda: _sse_chunks(run))
            return SseResponse(chunks, on_disconnect=lambda: self.server.cancel(run))
        return await self._answer(request, run)

    async def _begin(self, ask: Any, request: ServerRequest) -> ServerRun:
        try:
            return await self.server.begin(ask, request)
        except ApprovalError as exc:
            raise Refused(409, "Cannot resume", str(exc)) from None

    async def _answer(self, request: Request, run: ServerRun) -> Response:
        """The run's outcome as one JSON object, once it settles; its client leaving cancels it."""
        settled = asyncio.ensure_future(self.server.worker.call(run.settled.wait()))
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait((settled, gone), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self.server.cancel(run)
            raise
        finally:
            for task in (settled, gone):
                task.cancel()
        if not settled.done() or settled.cancelled():
            self.server.cancel(run)
            return Response(status_code=499)  # no one is there to read it
        return JSONResponse(outcome(run), status_code=_status(run))

    def _events(self, run: ServerRun) -> AsyncIterator[LogEntry]:
        return self.server.worker.stream(lambda: run.log.subscribe(after=-1, limit=_ALL))

    async def websocket(self, websocket: WebSocket) -> None:
        """`/ws`: one payload per message, that run's events back; the session from header or query."""
        raw = websocket.headers.get(SESSION_HEADER) or websocket.query_params.get(SESSION_HEADER)
        await websocket.accept()
        try:
            session_id = _session_id(raw)
        except Refused as refused:
            with contextlib.suppress(Exception):
                await websocket.send_json(refused.body())
                await websocket.close(code=1008)
            return
        with self.health.busy():  # an open socket is a conversation going on
            await _Conversation(
                self, websocket, self.server.server_request(websocket.headers, session_id)
            ).run()


class _Conversation:
    """One `/ws` connection: at most one run at a time, its events sent as they come."""

    def __init__(self, endpoints: Invocations, websocket: WebSocket, request: ServerRequest) -> None:
        self.endpoints = endpoints
        self.server = endpoints.server
        self.websocket = websocket
        self.request = request
        self.run_now: ServerRun | None = None

    async def run(self) -> None:
        receiver = asyncio.ensure_future(self.websocket.receive())
        sender: asyncio.Future[None] | None = None
        try:
            while True:
                waiting = {receiver} if sender is None else {receiver, sender}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if sender is not None and sender in done:
                    sender.result()
                    sender, self.run_now = None, None
                if receiver not in done:
                    continue
                message = receiver.result()
                if message["type"] == "websocket.disconnect":
                    return
                if sender is not None and self.run_now is not None and _ended(self.run_now):
                    await sender  # its run ended: only its last events are left to send
                    sender, self.run_now = None, None
                receiver = asyncio.ensure_future(self.websocket.receive())
                text = message.get("text")
                if text is None:
                    text = (message.get("bytes") or b"").decode("utf-8", "replace")
                started = await self._take(text)
                if started is not None:
                    sender = asyncio.ensure_future(self._forward(started))
        except WebSocketDisconnect:
            return
        finally:
            if self.run_now is not None and not self.run_now.finished:
                self.server.cancel(self.run_now)  # the client left mid-run
            for task in (receiver, sender):
                if task is not None:
                    task.cancel()
            await asyncio.gather(receiver, *([sender] if sender else []), return_exceptions=True)

    async def _take(self, text: str) -> ServerRun | None:
        """Act on one message: start a run (returned), cancel the one going, or answer an error."""
        try:
            payload = _json(text.encode())
            if isinstance(payload, dict) and payload.get("action") == "cancel":  # pyright: ignore[reportUnknownMemberType]
                if self.run_now is None:
                    raise Refused(409, "Nothing to cancel", "no run is going on this socket")
                self.server.cancel(self.run_now)
                return None
            if self.run_now is not None:
                raise Refused(
                    409,
                    "Busy",
                    "a run is going on this socket: wait for its terminal event, "
                    'or send {"action": "cancel"}',
                )
            ask = _ask(payload, self.server.input_from)
            self.run_now = await self.endpoints._begin(ask, self.request)  # pyright: ignore[reportPrivateUsage]
            return self.run_now
        except Refused as refused:
            await self.websocket.send_json(refused.body())
            return None

    async def _forward(self, run: ServerRun) -> None:
        async for entry in self.endpoints._events(run):  # pyright: ignore[reportPrivateUsage]
            if self.websocket.application_state is not WebSocketState.CONNECTED:
                return
            await self.websocket.send_text(entry.data.decode())


class _Leaving(Response):
    """A response that calls `done` once it has been sent, or could not be (the invocation is over)."""

    def __init__(self, inner: Response, done: Callable[[], None]) -> None:
        self.inner = inner
        self.done = done
        self.status_code = inner.status_code
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        finally:
            self.done()


def outcome(run: ServerRun) -> dict[str, Any]:
    """A settled run as the JSON answer gives it."""
    if run.status in ("failed", "cancelled"):
        error = run.error or {}
        return {
            "error": error.get("message") or f"the run {run.status}",
            "kind": error.get("kind"),
            "run_id": run.id,
            "session_id": run.session_id,
        }
    body: dict[str, Any] = {
        "run_id": run.id,
        "session_id": run.session_id,
        "status": run.status,
        "output": run.output,
        "usage": run.usage,
    }
    if run.status == "paused":
        body["pending"] = run.pending
    return body


def _sse_chunks(run: ServerRun) -> AsyncIterator[bytes]:
    """The run's events as SSE chunks, made on the worker loop: `data:` frames, a comment every 15 s."""
    subscription = run.log.subscribe(after=-1, limit=_ALL)
    return sse_chunks(subscription, run, _data_frame, ping=KEEP_ALIVE, idle=None)


def _data_frame(entry: LogEntry) -> bytes:
    """An event as AgentCore's SSE frame: its JSON as the data, nothing else (the JSON is one line)."""
    return b"data: " + entry.data + b"\n\n"


def _ended(run: ServerRun) -> bool:
    """Whether `run` logged its last event (paused or finished)."""
    return run.status == "paused" or run.finished


def _status(run: ServerRun) -> int:
    return {"failed": 500, "cancelled": 503}.get(run.status, 200)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise Refused(400, "Invalid encoding", str(exc)) from None
    except ValueError as exc:
        raise Refused(400, "Invalid JSON", str(exc)) from None


def _session_id(raw: str | None) -> str | None:
    try:
        return session_id_of(raw)
    except BadSessionId as exc:
        raise Refused(400, "Invalid session id", str(exc)) from None


def _ask(payload: Any, input_from: Any) -> Any:
    try:
        return read_payload(payload, input_from)
    except PayloadError as exc:
        raise Refused(400, "Invalid payload", str(exc)) from None


async def _disconnected(request: Request) -> None:
    """Returns when the client of `request` (whose body was read) disconnects."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


__all__ = ["Invocations", "outcome"]
