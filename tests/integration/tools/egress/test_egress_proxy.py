"""EgressProxy with real clients (urllib, curl, raw sockets) against real servers on 127.0.0.1.

Test host names resolve to 127.0.0.1 through the proxy's resolver seam, so "allowed.test"
and "denied.test" are the same real upstream server: a refusal is the policy's doing, and
each refusal test also shows the same request getting through when the policy allows it.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from helikon.core.exceptions import UserError
from helikon.tools import EgressDecision, EgressPolicy, EgressProxy

pytestmark = pytest.mark.integration

TEST_HOSTS = {"allowed.test", "denied.test", "echo.test", "www.allowed.test"}


async def resolve_test_hosts(host: str, port: int) -> Sequence[str]:
    if host in TEST_HOSTS:
        return ["127.0.0.1"]
    if host.startswith(("127.", "[")) or host[0].isdigit():
        return [host.strip("[]")]
    raise socket.gaierror(socket.EAI_NONAME, f"{host} is not a test host")


@dataclass
class Upstream:
    """A plain HTTP server that answers with what it was sent: the request line and its headers."""

    port: int = 0
    heads: list[str] = field(default_factory=list[str])

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("ascii")
        self.heads.append(head)
        body = head.encode("ascii")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


@dataclass
class Rig:
    proxy: EgressProxy
    upstream: Upstream
    echo_port: int
    decisions: list[EgressDecision]


@pytest.fixture
async def rig(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    for name in (
        "no_proxy",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    upstream = Upstream()
    up_server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    echo_server = await asyncio.start_server(echo, "127.0.0.1", 0)
    upstream.port = up_server.sockets[0].getsockname()[1]
    echo_port = echo_server.sockets[0].getsockname()[1]
    policy = (
        EgressPolicy.deny_all()
        .allow_domains(["allowed.test", "echo.test"])
        .allow_ports([upstream.port, echo_port])
    )
    decisions: list[EgressDecision] = []
    async with EgressProxy(policy, resolver=resolve_test_hosts, on_decision=decisions.append) as proxy:
        yield Rig(proxy, upstream, echo_port, decisions)
    up_server.close()
    echo_server.close()


def urllib_get(proxy_url: str, url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy_url}))
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def raw(port: int, data: bytes) -> bytes:
    """Send `data` to the proxy and read until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


# -- plain HTTP (absolute form) ---------------------------------------------------------------


async def test_urllib_reaches_an_allowed_host(rig: Rig) -> None:
    url = f"http://allowed.test:{rig.upstream.port}/path?q=1"
    status, body = await asyncio.to_thread(urllib_get, rig.proxy.url, url)
    assert status == 200
    assert body.startswith("GET /path?q=1 HTTP/1.1\r\n")
    assert f"Host: allowed.test:{rig.upstream.port}\r\n" in body
    assert "Connection: close" in body
    assert [(d.allowed, d.host, d.port, d.method) for d in rig.decisions] == [
        (True, "allowed.test", rig.upstream.port, "GET")
    ]


async def test_a_denied_host_gets_403_and_the_upstream_sees_nothing(rig: Rig) -> None:
    url = f"http://denied.test:{rig.upstream.port}/"
    status, body = await asyncio.to_thread(urllib_get, rig.proxy.url, url)
    assert status == 403
    assert "denied.test is not on the egress allow list" in body
    assert "allowed.test" in body  # the refusal says what is allowed
    assert rig.upstream.heads == []
    assert [(d.allowed, d.host) for d in rig.decisions] == [(False, "denied.test")]

    # The same request through a proxy whose policy allows the name does reach the upstream.
    wider = rig.proxy.policy.allow_domains(["denied.test"])
    async with EgressProxy(wider, resolver=resolve_test_hosts) as open_proxy:
        status, _ = await asyncio.to_thread(urllib_get, open_proxy.url, url)
    assert status == 200
    assert len(rig.upstream.heads) == 1


async def test_subdomains_of_an_exact_rule_are_refused(rig: Rig) -> None:
    url = f"http://www.allowed.test:{rig.upstream.port}/"
    status, _ = await asyncio.to_thread(urllib_get, rig.proxy.url, url)
    assert status == 403


@pytest.mark.parametrize("host", ["127.0.0.1", "2130706433", "0x7f.1", "127.1", "[::1]"])
async def test_ip_literal_targets_are_refused(rig: Rig, host: str) -> None:
    answer = await raw(rig.proxy.port, f"GET http://{host}:{rig.upstream.port}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert b"IP address" in answer or b"allow list" in answer
    assert rig.upstream.heads == []
    # The upstream really is at 127.0.0.1: only the policy stood in the way.
    direct_reader, direct_writer = await asyncio.open_connection("127.0.0.1", rig.upstream.port)
    direct_writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await direct_reader.read()).startswith(b"HTTP/1.1 200 ")
    direct_writer.close()


async def test_an_explicitly_allowed_ip_is_reached(rig: Rig) -> None:
    policy = rig.proxy.policy.allow_domains(["127.0.0.1"])
    async with EgressProxy(policy, resolver=resolve_test_hosts) as proxy:
        answer = await raw(proxy.port, f"GET http://127.0.0.1:{rig.upstream.port}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    "head",
    [
        "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: denied.test\r\n\r\n",
        "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: denied.test:{port}\r\n\r\n",
        "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:1\r\n\r\n",
        "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test@denied.test\r\n\r\n",
        "CONNECT allowed.test:{port} HTTP/1.1\r\nHost: denied.test:{port}\r\n\r\n",
    ],
)
async def test_a_smuggled_host_header_is_refused(rig: Rig, head: str) -> None:
    answer = await raw(rig.proxy.port, head.format(port=rig.upstream.port).encode())
    assert answer.startswith(b"HTTP/1.1 403 "), answer
    assert b"Host header" in answer
    assert rig.upstream.heads == []


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("GARBAGE\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/2.0\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test\r\nHost: denied.test\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/1.1\r\nBad Name: a\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/1.1\nHost: x\r\n\r\n", 400),
        ("GET http://user@allowed.test:{port}/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://denied.test@allowed.test:{port}/ HTTP/1.1\r\n\r\n", 400),
        ("GET https://allowed.test:{port}/ HTTP/1.1\r\n\r\n", 400),
        ("GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400),
        ("GET http://allowed.test:99999/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/#frag HTTP/1.1\r\n\r\n", 400),
        ("CONNECT allowed.test HTTP/1.1\r\n\r\n", 400),
        ("CONNECT [::1 HTTP/1.1\r\n\r\n", 400),
        ("GET http://allowed.test\u00e9:{port}/ HTTP/1.1\r\n\r\n", 400),
        ("GET http://allowed.test:{port}/ HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400),
    ],
)
async def test_malformed_requests_are_refused(rig: Rig, head: str, status: int) -> None:
    answer = await raw(rig.proxy.port, head.format(port=rig.upstream.port).encode("utf-8"))
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer
    assert rig.upstream.heads == []


async def test_an_oversized_head_is_refused(rig: Rig) -> None:
    head = f"GET http://allowed.test:{rig.upstream.port}/ HTTP/1.1\r\nX-Big: {'a' * 20000}\r\n\r\n"
    answer = await raw(rig.proxy.port, head.encode())
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert rig.upstream.heads == []


async def test_an_unresolvable_allowed_name_is_a_502(rig: Rig) -> None:
    policy = rig.proxy.policy.allow_domains(["nowhere.test"])
    async with EgressProxy(policy, resolver=resolve_test_hosts) as proxy:
        answer = await raw(
            proxy.port, f"GET http://nowhere.test:{rig.upstream.port}/ HTTP/1.1\r\n\r\n".encode()
        )
    assert answer.startswith(b"HTTP/1.1 502 ")
    assert b"could not resolve nowhere.test" in answer


# -- CONNECT tunnels ---------------------------------------------------------------------------


async def test_a_connect_tunnel_carries_bytes_both_ways(rig: Rig) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", rig.proxy.port)
    writer.write(
        f"CONNECT echo.test:{rig.echo_port} HTTP/1.1\r\nHost: echo.test:{rig.echo_port}\r\n\r\n".encode()
    )
    assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection Established\r\n\r\n"
    for message in (b"hello", b"\x00\xff binary \r\n\r\n", b"x" * 200_000):
        writer.write(message)
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(len(message)), 10) == message
    writer.write_eof()  # half-close: the echo server closes back, and so does the tunnel
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    assert [(d.allowed, d.method) for d in rig.decisions] == [(True, "CONNECT")]


async def test_connect_to_a_denied_host_is_refused(rig: Rig) -> None:
    answer = await raw(rig.proxy.port, f"CONNECT denied.test:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert b"denied.test" in answer


async def test_connect_to_an_ip_literal_is_refused(rig: Rig) -> None:
    answer = await raw(rig.proxy.port, f"CONNECT 127.0.0.1:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 ")


async def test_connect_to_a_port_not_allowed_is_refused(rig: Rig) -> None:
    answer = await raw(rig.proxy.port, b"CONNECT echo.test:22 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 403 ")
    assert b"port 22 is not allowed" in answer


# -- curl --------------------------------------------------------------------------------------

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


async def curl(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "curl",
        "-sS",
        "--max-time",
        "10",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@needs_curl
async def test_curl_plain_http_through_the_proxy(rig: Rig) -> None:
    code, out, _ = await curl("-x", rig.proxy.url, f"http://allowed.test:{rig.upstream.port}/curl")
    assert code == 0
    assert out.startswith("GET /curl HTTP/1.1\r\n")
    code, out, _ = await curl(
        "-x", rig.proxy.url, "-w", "%{http_code}", f"http://denied.test:{rig.upstream.port}/"
    )
    assert out.endswith("403")


@needs_curl
async def test_curl_tunnels_with_connect(rig: Rig) -> None:
    code, out, _ = await curl("-p", "-x", rig.proxy.url, f"http://allowed.test:{rig.upstream.port}/tunnelled")
    assert code == 0
    assert out.startswith("GET /tunnelled HTTP/1.1\r\n")
    assert [d.method for d in rig.decisions] == ["CONNECT"]
    code, _, err = await curl("-p", "-x", rig.proxy.url, f"http://denied.test:{rig.upstream.port}/")
    assert code != 0
    assert "403" in err


# -- resources and shutdown --------------------------------------------------------------------


async def test_close_ends_open_tunnels(rig: Rig) -> None:
    proxy = await EgressProxy(rig.proxy.policy, resolver=resolve_test_hosts).start()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(f"CONNECT echo.test:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
    await reader.readuntil(b"\r\n\r\n")
    await proxy.close()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", proxy.port)


async def test_the_connection_cap_answers_503(rig: Rig) -> None:
    async with EgressProxy(rig.proxy.policy, resolver=resolve_test_hosts, max_connections=1) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"CONNECT echo.test:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
        await reader.readuntil(b"\r\n\r\n")
        answer = await raw(proxy.port, b"CONNECT echo.test:1 HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503 ")
        writer.close()


async def test_a_silent_client_is_dropped_after_the_idle_timeout(rig: Rig) -> None:
    async with EgressProxy(rig.proxy.policy, resolver=resolve_test_hosts, idle_timeout=0.2) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"GET http://allowed.test/ HTTP/1.1\r\n")  # never finished
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_a_failing_callback_does_not_change_the_verdict(rig: Rig) -> None:
    def broken(decision: EgressDecision) -> None:
        raise RuntimeError("display is down")

    async with EgressProxy(rig.proxy.policy, resolver=resolve_test_hosts, on_decision=broken) as proxy:
        denied = await raw(proxy.port, f"CONNECT denied.test:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
        allowed = await raw(
            proxy.port, f"GET http://allowed.test:{rig.upstream.port}/ HTTP/1.1\r\n\r\n".encode()
        )
    assert denied.startswith(b"HTTP/1.1 403 ")
    assert allowed.startswith(b"HTTP/1.1 200 ")


async def test_bad_arguments_are_user_errors() -> None:
    policy = EgressPolicy.deny_all()
    with pytest.raises(UserError, match="pass an EgressPolicy"):
        EgressProxy(["example.com"])  # type: ignore[arg-type]
    with pytest.raises(UserError, match="positive integer"):
        EgressProxy(policy, max_connections=0)
    with pytest.raises(UserError, match="positive number of seconds"):
        EgressProxy(policy, idle_timeout=0)
    proxy = EgressProxy(policy)
    with pytest.raises(UserError, match="not started"):
        _ = proxy.port
    async with proxy:
        with pytest.raises(UserError, match="already started"):
            await proxy.start()


async def test_hop_by_hop_headers_are_not_forwarded(rig: Rig) -> None:
    head = (
        f"GET http://allowed.test:{rig.upstream.port}/ HTTP/1.1\r\nHost: allowed.test:{rig.upstream.port}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
        "Connection: keep-alive, X-Private\r\n"
        "X-Private: for the proxy only\r\nX-Kept: yes\r\n\r\n"
    )
    answer = await raw(rig.proxy.port, head.encode())
    assert answer.startswith(b"HTTP/1.1 200 ")
    (sent,) = rig.upstream.heads
    assert "X-Kept: yes\r\n" in sent
    for dropped in ("Proxy-Authorization", "Proxy-Connection", "X-Private", "keep-alive"):
        assert dropped not in sent


async def test_an_idle_tunnel_is_closed(rig: Rig) -> None:
    async with EgressProxy(rig.proxy.policy, resolver=resolve_test_hosts, idle_timeout=0.2) as proxy:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(f"CONNECT echo.test:{rig.echo_port} HTTP/1.1\r\n\r\n".encode())
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        assert await asyncio.wait_for(reader.read(), 10) == b""  # then silence, and the proxy hangs up
        writer.close()
