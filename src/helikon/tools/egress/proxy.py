"""`EgressProxy`: an HTTP forward proxy on 127.0.0.1 that lets through only what an `EgressPolicy` allows.

It speaks the two forms clients use through a proxy: `CONNECT host:port` (the client tunnels
TLS, or any TCP, through it; `https_proxy`) and absolute-form plain HTTP (`GET http://host/path`;
`http_proxy`). The policy judges the target's host *name*; the proxy then resolves that name
itself and connects, so the client never chooses the address. Refusals answer `403` with a
one-line reason; malformed requests `400`; oversized heads `431`; a full proxy `503`.

What it does not do: look inside tunnels (the host a TLS client names in its handshake is not
checked against the CONNECT target), nor judge the addresses an allowed name resolves to (an
allowed name that resolves to a private address is reached; allow names you trust).

Example:
    ```python
    import asyncio
    import urllib.request

    from helikon.tools import EgressPolicy, EgressProxy


    async def main() -> None:
        policy = EgressPolicy.deny_all().allow_domains(["example.com"])
        async with EgressProxy(policy) as proxy:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
            try:
                await asyncio.to_thread(opener.open, "http://denied.invalid/", timeout=10)
            except urllib.error.HTTPError as error:
                assert error.code == 403


    asyncio.run(main())
    ```
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Self

from helikon.core.exceptions import UserError

from ._request import BadRequest, ProxyRequest, parse_request
from .policy import EgressDecision, EgressPolicy

__all__ = ["EgressProxy", "Resolver"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves `(host, port)` to the IP addresses to try, in order (a seam for tests and custom DNS)."""

logger = logging.getLogger("helikon.tools.egress")

_CHUNK = 65536
_CLOSE_GRACE = 2.0
_LINGER_BYTES = 1 << 20
_LINGER_SECONDS = 1.0
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class EgressProxy:
    """A policy-enforcing forward proxy; `await start()` (or `async with`), then point clients at `url`.

    `sock`: serve on this listening socket instead of binding `host:port` (the OS sandbox
    passes one it made in the sandbox's network namespace).
    """

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        resolver: Resolver | None = None,
        on_decision: Callable[[EgressDecision], None] | None = None,
        max_header_bytes: int = 16384,
        max_connections: int = 256,
        idle_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        sock: socket.socket | None = None,
    ) -> None:
        if not isinstance(policy, EgressPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                "EgressProxy(policy): pass an EgressPolicy, e.g. EgressPolicy.deny_all().allow_domains([...])"
            )
        for name, value in (("max_header_bytes", max_header_bytes), ("max_connections", max_connections)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"EgressProxy({name}=...): give a positive integer, got {value!r}")
        for name, value in (("idle_timeout", idle_timeout), ("connect_timeout", connect_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"EgressProxy({name}=...): give a positive number of seconds, got {value!r}")
        self.policy = policy
        self._host = host
        self._bind_port = port
        self._resolver: Resolver = resolver or _resolve
        self._on_decision = on_decision
        self._max_header_bytes = max_header_bytes
        self._max_connections = max_connections
        self._idle = float(idle_timeout)
        self._connect_timeout = float(connect_timeout)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._port = 0
        self._sock = sock

    @property
    def port(self) -> int:
        """The port the proxy listens on (an ephemeral one unless `port=` was given)."""
        if not self._port:
            raise UserError("EgressProxy.port: the proxy is not started; await proxy.start() first")
        return self._port

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`: the value for `http_proxy` and `https_proxy`."""
        return f"http://{self._host}:{self.port}"

    async def start(self) -> Self:
        """Listen on `host:port`; returns the proxy so `proxy = await EgressProxy(p).start()` reads well."""
        if self._server is not None:
            raise UserError("EgressProxy.start(): already started")
        # The reader's limit bounds the head: readuntil raises instead of buffering more.
        if self._sock is not None:
            self._server = await asyncio.start_server(
                self._accept, sock=self._sock, limit=self._max_header_bytes
            )
        else:
            self._server = await asyncio.start_server(
                self._accept, self._host, self._bind_port, limit=self._max_header_bytes
            )
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        """Stop listening and close every open connection and tunnel."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        # Closing the sockets ends every handler on its own (its reads see EOF); cancelling is
        # only for a handler that does not finish promptly.
        for writer in list(self._writers):
            writer.close()
        if self._tasks:
            _, stuck = await asyncio.wait(list(self._tasks), timeout=_CLOSE_GRACE)
            for task in stuck:
                task.cancel()
            await asyncio.gather(*stuck, return_exceptions=True)
        await server.wait_closed()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._tasks) >= self._max_connections:
            await _answer(reader, writer, 503, "the egress proxy is at its connection limit; retry later")
            writer.close()
            return
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._idle)
        except asyncio.LimitOverrunError:
            await _answer(reader, writer, 431, f"the request head is over {self._max_header_bytes} bytes")
            return
        except TimeoutError:
            await _answer(reader, writer, 408, "no complete request head before the idle timeout")
            return
        try:
            request = parse_request(head)
        except BadRequest as error:
            logger.info("egress refused a request: %s", error.reason)
            await _answer(reader, writer, error.status, error.reason)
            return
        decision = self.policy.decide(request.host, request.port, method=request.method)
        self._record(decision)
        if not decision.allowed:
            await _answer(reader, writer, 403, f"egress denied: {decision.reason}")
            return
        upstream = await self._connect(decision, reader, writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        self._writers.add(up_writer)
        try:
            await self._relay(request, reader, writer, up_reader, up_writer)
        finally:
            self._writers.discard(up_writer)
            up_writer.close()

    async def _connect(
        self, decision: EgressDecision, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """Resolve the allowed name and connect to its first reachable address (never one the client gave)."""
        target = f"{decision.host}:{decision.port}"
        try:
            addresses = await asyncio.wait_for(
                self._resolver(decision.host, decision.port), self._connect_timeout
            )
        except (OSError, TimeoutError):
            await _answer(reader, writer, 502, f"could not resolve {decision.host}")
            return None
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, decision.port, limit=_CHUNK), self._connect_timeout
                )
            except (OSError, TimeoutError):
                continue
        await _answer(reader, writer, 502, f"could not connect to {target}")
        return None

    async def _relay(
        self,
        request: ProxyRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        if request.method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(request.upstream_head)
        activity = [asyncio.get_running_loop().time()]
        upload = asyncio.ensure_future(self._pump(reader, up_writer, activity))
        try:
            await self._pump(up_reader, writer, activity)
            if request.method == "CONNECT":
                await upload  # a tunnel is half-closed: the client may still be sending
        finally:
            # Plain HTTP is one request per connection: once the response has ended, so has it.
            upload.cancel()
            await asyncio.gather(upload, return_exceptions=True)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, activity: list[float]
    ) -> None:
        """Copy one direction until EOF, or until neither direction has moved for the idle timeout."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    chunk = await asyncio.wait_for(source.read(_CHUNK), self._idle)
                except TimeoutError:
                    if loop.time() - activity[0] < self._idle:
                        continue  # the other direction is busy: a long download with a quiet client
                    sink.close()
                    return
                if not chunk:
                    if sink.can_write_eof():
                        sink.write_eof()
                    return
                activity[0] = loop.time()
                sink.write(chunk)
                await sink.drain()
        except (ConnectionError, OSError):
            sink.close()

    def _record(self, decision: EgressDecision) -> None:
        verdict = "allowed" if decision.allowed else "denied"
        logger.info(
            "egress %s: %s %s:%d (%s)",
            verdict,
            decision.method,
            decision.host,
            decision.port,
            decision.reason,
        )
        if self._on_decision is not None:
            try:
                self._on_decision(decision)
            except Exception:
                # A display callback must not decide egress: the verdict stands, the failure is logged.
                logger.exception("EgressProxy on_decision callback failed")


async def _resolve(host: str, port: int) -> list[str]:
    bare = host[1:-1] if host.startswith("[") else host
    infos = await asyncio.get_running_loop().getaddrinfo(bare, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def _answer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, reason: str
) -> None:
    """Send a short error response, then close gently so the client reads it before the socket goes."""
    body = (reason + "\n").encode("ascii", "replace")
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        writer.write(head.encode("ascii") + body)
        await writer.drain()
        # Closing with unread request bytes makes the kernel reset the connection, and a reset
        # can discard the response before the client reads it: half-close, and drain a little.
        if writer.can_write_eof():
            writer.write_eof()
        drained = 0
        async with asyncio.timeout(_LINGER_SECONDS):
            while drained < _LINGER_BYTES and (chunk := await reader.read(_CHUNK)):
                drained += len(chunk)
    except (ConnectionError, OSError, TimeoutError):
        pass
