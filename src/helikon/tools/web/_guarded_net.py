"""An httpx2 transport that resolves each host itself and connects only to addresses it checked.

`GuardedBackend.connect_tcp(host, port)` resolves `host` once with the tool's resolver,
refuses the connection if ANY answer is blocked by the `SsrfGuard` (an attacker's DNS may
mix a public answer with a private one), and connects to the checked address itself: there
is no second lookup for a rebinding DNS server to answer differently. TLS still verifies the
certificate against the host name (httpcore passes it as the SNI/server name).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, cast

from helikon.core._internal.extras import missing_extra

try:
    import httpcore2
    import httpx2
except ImportError as exc:  # pragma: no cover - the extra is installed in the suite
    raise missing_extra("WebFetch/WebSearch need httpx2 and trafilatura", "tools-web") from exc

from ._ssrf import SsrfGuard

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""`async (host, port) -> [ip, ...]`: the addresses a host resolves to.

It is asked about every host a URL names, IP literals included (the system's resolver gives
a literal back as it is); whatever it answers is what the guard checks and connects to.
"""


class SsrfBlocked(Exception):
    """A connection the SSRF guard refused; `reason` says which address and why."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.host = host
        self.reason = reason


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """The system's resolver (getaddrinfo), off the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend, resolving and checking every host before connecting."""

    def __init__(self, guard: SsrfGuard, resolver: Resolver) -> None:
        self._guard = guard
        self._resolver = resolver
        self._inner = cast("httpcore2.AsyncNetworkBackend", httpcore2.AnyIOBackend())

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await self.checked_addresses(host, port)
        last: Exception | None = None
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except httpcore2.ConnectError as exc:  # try the next checked address
                last = exc
        raise last if last is not None else httpcore2.ConnectError(f"{host} resolved to no address")

    async def checked_addresses(
        self, host: str, port: int
    ) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        """Resolve `host` once; every answer checked; IPv4-mapped answers as the IPv4 they are.

        `host` and `port` are the connection's as its URL names them (the caller's, or a
        redirect hop's): a host allowance is judged on them.
        """
        try:
            answers = await self._resolver(host, port)
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
        checked: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
        for answer in answers:
            ip = ipaddress.ip_address(answer.split("%", 1)[0])
            why = self._guard.check(ip, host=host, port=port)
            if why is not None:
                raise SsrfBlocked(host, why)
            mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
            checked.append(mapped if mapped is not None else ip)
        return checked

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore2's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise SsrfBlocked(path, "unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _ResponseStream(httpx2.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport over a connection pool whose every connection goes through `GuardedBackend`."""

    def __init__(self, guard: SsrfGuard, resolver: Resolver) -> None:
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(trust_env=False),
            network_backend=GuardedBackend(guard, resolver),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        assert isinstance(request.stream, httpx2.AsyncByteStream)
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = await self._pool.handle_async_request(core_request)
        extensions: dict[str, Any] = dict(response.extensions)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        assert isinstance(response.stream, AsyncIterable)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


__all__ = ["GuardedBackend", "GuardedTransport", "Resolver", "SsrfBlocked", "system_resolver"]
