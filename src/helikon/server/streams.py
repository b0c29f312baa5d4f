"""A run's events to a client: Server-Sent Events (resumable) and WebSocket (replay, then tail).

SSE: each event is `id: <seq>`, `event: <type>`, `data: <the event's JSON>`; a client that
reconnects with `Last-Event-ID: <seq>` gets the events after it, with no gap and no
repeat (browsers' `EventSource` does this by itself). Comments every `ping` seconds keep
proxies from closing a quiet stream. `SseResponse` writes them, the events that are ready
together in one write.

WebSocket: text messages `{"seq", "type", "event"}`, replaying the events after
`?after=<seq>` and then following the run; the server closes the socket (1000) after the
terminal event. A client sends nothing on this socket: a message from it is misuse, and
closes it (1008) with an error frame first.

Every stream ends with a terminal frame: the run's own (`run_completed`, `run_failed`,
`run_paused`), or `stream_dropped` for a client that fell too far behind (it may reconnect
from its last seq), or `stream_idle` after `idle_timeout` seconds with no event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from starlette.websockets import WebSocket, WebSocketDisconnect

from .run_log import LogEntry, Subscription
from .runs import ServerRun
from .sse import PING, SseResponse


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How the server protects itself and its runs from slow or idle clients."""

    ping: float = 15.0
    """Seconds between keep-alive comments on a quiet SSE stream."""
    idle_timeout: float = 600.0
    """Seconds with no event after which a stream ends (`stream_idle`); the client may reconnect."""
    backlog: int = 1024
    """Events a subscriber may fall behind before it is dropped (`stream_dropped`)."""
    per_run: int = 64
    """Subscribers one run may have at once."""
    total: int = 4096
    """Subscribers the server may have at once."""


def end_frame(kind: str, run: ServerRun, last_seq: int, message: str) -> str:
    """The JSON of a `stream_dropped` or `stream_idle` frame."""
    return json.dumps({"type": kind, "run_id": run.id, "last_seq": last_seq, "message": message})


async def _entries(subscription: Subscription, run: ServerRun) -> AsyncIterator[LogEntry | str]:
    """The subscription's entries, then the end frame due (a string) when the run's own did not end it."""
    last = -1
    try:
        async for entry in subscription:
            last = entry.seq
            yield entry
    except TimeoutError:  # the subscription waited its `idle` seconds for an event
        idle = subscription.idle
        yield end_frame("stream_idle", run, last, f"no event for {idle:g} s: reconnect after seq {last}")
        return
    if subscription.dropped:
        yield end_frame(
            "stream_dropped", run, last, f"this client fell too far behind: reconnect after seq {last}"
        )


def event_frame(entry: LogEntry) -> bytes:
    """One logged event as an SSE frame with its seq and type (the event's JSON is one line)."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (entry.seq, entry.type.encode(), entry.data)


async def sse_chunks(
    subscription: Subscription,
    run: ServerRun,
    frame: Callable[[LogEntry], bytes],
    *,
    ping: float,
    idle: float | None,
) -> AsyncIterator[bytes]:
    """The subscription's events as SSE chunks: what is ready, one chunk; a `PING` when quiet.

    Ends after the run's terminal event, or with a `stream_dropped` frame (the client fell
    behind) or a `stream_idle` one (`idle` seconds without an event; None: never).
    """
    loop = asyncio.get_running_loop()
    last = -1
    quiet_since = loop.time()
    try:
        while True:
            entries = subscription.take()
            if entries:
                last = entries[-1].seq
                quiet_since = loop.time()
                yield b"".join(frame(entry) for entry in entries)
                continue
            if subscription.ended:
                if subscription.dropped:
                    why = f"this client fell too far behind: reconnect after seq {last}"
                    yield _end("stream_dropped", end_frame("stream_dropped", run, last, why))
                return
            wait = ping if idle is None else max(min(ping, quiet_since + idle - loop.time()), 0.0)
            if await subscription.wait(wait):
                continue
            if idle is not None and loop.time() - quiet_since >= idle:
                why = f"no event for {idle:g} s: reconnect after seq {last}"
                yield _end("stream_idle", end_frame("stream_idle", run, last, why))
                return
            yield PING
    finally:
        subscription.cancel()


def _end(kind: str, data: str) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (kind.encode(), data.encode())


def sse_response(
    run: ServerRun,
    subscription: Subscription,
    limits: StreamLimits,
    on_disconnect: Callable[[], None] | None,
    headers: dict[str, str],
) -> SseResponse:
    """The run's events as an SSE response; `on_disconnect` runs if the client leaves first."""
    chunks = sse_chunks(subscription, run, event_frame, ping=limits.ping, idle=limits.idle_timeout)
    return SseResponse(chunks, headers=headers, on_disconnect=on_disconnect)


async def websocket_stream(
    websocket: WebSocket, run: ServerRun, subscription: Subscription, limits: StreamLimits
) -> None:
    """Send the run's events on an accepted socket to its end; close on misuse or when the client leaves."""

    async def send() -> None:
        async for item in _entries(subscription, run):
            if isinstance(item, str):
                await websocket.send_text(item)
            else:
                await websocket.send_text(
                    f'{{"seq":{item.seq},"type":{json.dumps(item.type)},"event":{item.data.decode()}}}'
                )

    async def listen() -> str:
        message = await websocket.receive()
        return "gone" if message["type"] == "websocket.disconnect" else "misuse"

    sender = asyncio.create_task(send())
    listener = asyncio.create_task(listen())
    try:
        done, _ = await asyncio.wait({sender, listener}, return_when=asyncio.FIRST_COMPLETED)
        if listener in done and listener.result() == "misuse":
            error = {
                "type": "error",
                "code": "websocket_misuse",
                "message": "this socket only sends: do not write to it",
            }
            with contextlib.suppress(Exception):
                await websocket.send_text(json.dumps(error))
                await websocket.close(code=1008)
            return
        if sender in done:
            sender.result()
            with contextlib.suppress(Exception):
                await websocket.close(code=1000)
    except WebSocketDisconnect:
        pass
    finally:
        subscription.cancel()
        for task in (sender, listener):
            task.cancel()
        await asyncio.gather(sender, listener, return_exceptions=True)


__all__ = ["StreamLimits", "end_frame", "event_frame", "sse_chunks", "sse_response", "websocket_stream"]
