r"""`SseResponse`: Server-Sent Events written straight to the ASGI server, one write per batch of frames.

The body comes from an async iterator of chunks, each one or more whole frames: a run's
events often come in a burst, and frames that are ready together go out in one write.
Whoever makes the chunks sends the keep-alive comments on a quiet stream (it knows when it
waits). A client that leaves is noticed at once (its `http.disconnect`), also on a quiet
stream, and one that stops reading is let go after `send_timeout` seconds; either way the
iterator is closed and `on_disconnect` runs.

Example:
    ```python
    import asyncio

    import httpx2

    from helikon.server.sse import SseResponse

    async def chunks():
        yield b"event: hello\ndata: {}\n\n"

    async def app(scope, receive, send):
        await SseResponse(chunks())(scope, receive, send)

    async def main() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://sse") as client:
            response = await client.get("/")
        assert response.text == "event: hello\ndata: {}\n\n"
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

logger = logging.getLogger("helikon.server")

PING = b": ping\n\n"
"""The keep-alive comment: proxies see traffic, clients see nothing."""


class SseResponse(Response):
    """An SSE response over `chunks` (see the module)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        headers: Mapping[str, str] | None = None,
        on_disconnect: Callable[[], None] | None = None,
        send_timeout: float = 30.0,
    ) -> None:
        self.chunks = chunks
        self.on_disconnect = on_disconnect
        self.send_timeout = send_timeout
        self.status_code = 200
        self.background = None
        given = (headers or {}).items()
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # nginx: pass each frame on, do not buffer the stream
            *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in given),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the stream to its end, or until the client leaves."""
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        pump = asyncio.ensure_future(self._pump(send))
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait((pump, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)
        failed = None if pump.cancelled() else pump.exception()
        if failed is not None and not isinstance(failed, TimeoutError | OSError):
            logger.error("an SSE stream broke off", exc_info=failed)
        if pump.cancelled() or failed is not None:  # the client left, stopped reading, or the source broke
            if self.on_disconnect is not None:
                self.on_disconnect()
            return
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump(self, send: Send) -> None:
        try:
            async for chunk in self.chunks:
                async with asyncio.timeout(self.send_timeout):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            aclose = getattr(self.chunks, "aclose", None)
            if aclose is not None:
                await aclose()


async def _disconnected(receive: Receive) -> None:
    """Returns when the client disconnects (the request's body, if any, was read before)."""
    while (await receive())["type"] != "http.disconnect":
        pass


__all__ = ["PING", "SseResponse"]
