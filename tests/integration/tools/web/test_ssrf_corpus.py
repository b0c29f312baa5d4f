"""The SSRF corpus: every way into a private address, against real servers on loopback.

Each attempt is refused with the guard on and never reaches the server; the same request
with the guard off (or the address allowed) does reach it, so each case tests something.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import pytest
from web_servers import Handler, Server, serve, site

from helikon.core.exceptions import Denied
from helikon.tools import WebFetchTool
from helikon.tools.web._guarded_net import GuardedBackend, SsrfBlocked
from helikon.tools.web._ssrf import SsrfGuard

pytestmark = pytest.mark.integration


def _inner(h: Handler) -> None:
    h.send(200, b"inner secret", "text/plain")


@pytest.fixture
def internal() -> Iterator[Server]:
    """The 'internal service' on 127.0.0.1 an attacker wants to reach."""
    with serve(site) as server:
        yield server


def fixed(answers: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> Sequence[str]:
        return answers[host]

    return resolve


# 127.0.0.1 in every notation a URL may spell it (and the names that resolve to it).
NOTATIONS = [
    "127.0.0.1",
    "2130706433",
    "0177.0.0.1",
    "0x7f.1",
    "0x7f000001",
    "127.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "localhost",
]


@pytest.mark.parametrize("host", NOTATIONS)
async def test_a_private_address_in_any_notation_is_refused(internal: Server, host: str) -> None:
    with pytest.raises(Denied, match=r"loopback"):
        await WebFetchTool().fetch(f"http://{host}:{internal.port}/secret")
    assert internal.hits == []


@pytest.mark.parametrize("host", NOTATIONS)
async def test_the_same_request_reaches_the_server_with_the_guard_off(internal: Server, host: str) -> None:
    out = await WebFetchTool(ssrf_guard=False).fetch(f"http://{host}:{internal.port}/secret")
    assert "the internal secret" in str(out.value)
    assert len(internal.hits) == 1


async def test_an_explicitly_allowed_address_is_reached_and_only_it(internal: Server) -> None:
    out = await WebFetchTool(allow_private_ips=["127.0.0.1"]).fetch(
        f"http://127.0.0.1:{internal.port}/secret"
    )
    assert "the internal secret" in str(out.value)
    with pytest.raises(Denied, match=r"127.0.0.2 is a loopback"):
        await WebFetchTool(allow_private_ips=["127.0.0.1"]).fetch(f"http://127.0.0.2:{internal.port}/secret")


async def test_a_host_name_resolving_to_a_private_address_is_refused(internal: Server) -> None:
    resolver = fixed({"intranet.example": ["127.0.0.1"]})
    url = f"http://intranet.example:{internal.port}/secret"
    with pytest.raises(Denied, match=r"intranet\.example.*127\.0\.0\.1 is a loopback"):
        await WebFetchTool(resolver=resolver).fetch(url)
    assert internal.hits == []
    out = await WebFetchTool(resolver=resolver, ssrf_guard=False).fetch(url)
    assert "the internal secret" in str(out.value)


@pytest.mark.parametrize(
    "answers",
    [["127.0.0.1", "93.184.216.34"], ["93.184.216.34", "127.0.0.1"]],
    ids=["private-first", "public-first"],
)
async def test_one_private_answer_among_public_ones_refuses_the_host(
    internal: Server, answers: list[str]
) -> None:
    resolver = fixed({"mixed.example": answers})
    with pytest.raises(Denied, match=r"127.0.0.1 is a loopback"):
        await WebFetchTool(resolver=resolver).fetch(f"http://mixed.example:{internal.port}/secret")
    assert internal.hits == []


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "100.64.0.1",
        "0.0.0.0",
        "[fd00::1]",
        "[fe80::1]",
        # IPv6 forms that carry a private IPv4 address, each judged by that IPv4 address
        "[::ffff:0:127.0.0.1]",  # IPv4-translated
        "[::ffff:0:a9fe:a9fe]",
        "[::127.0.0.1]",  # IPv4-compatible
        "[64:ff9b::a9fe:a9fe]",  # NAT64
        "[64:ff9b:1:a9fe:a9:fe00:808:808]",  # local-use NAT64, the IPv4 at its /48 place
        "[2002:a9fe:a9fe::1]",  # 6to4
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1
        "[2001:0:a9fe:a9fe::f7f7:f7f7]",  # Teredo, server 169.254.169.254
        "[2001:db9::5efe:7f00:1]",  # ISATAP
        "[2606:4700::200:5efe:a9fe:a9fe]",
        "[3fff::1]",
    ],
)
async def test_other_private_ranges_are_refused_before_any_connect(address: str) -> None:
    # Refused before a socket is opened: the suite's loopback-only guard would fail the test otherwise.
    with pytest.raises(Denied, match=r"only public internet addresses"):
        await WebFetchTool().fetch(f"http://{address}/latest/meta-data/")


@pytest.mark.parametrize(
    "answer",
    ["::ffff:0:127.0.0.1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "2001:db9::5efe:7f00:1", "2002:7f00:1::1"],
)
async def test_a_name_resolving_to_an_ipv6_form_of_a_private_ipv4_is_refused(answer: str) -> None:
    resolver = fixed({"sneaky.example": [answer]})
    with pytest.raises(Denied, match=r"carries 127\.0\.0\.1 .*loopback"):
        await WebFetchTool(resolver=resolver).fetch("http://sneaky.example/secret")


@pytest.fixture
def two_addresses() -> Iterator[tuple[Server, Server]]:
    """An allowed 'public' server on 127.0.0.1 and an internal one on 127.0.0.2, on the same port.

    The port is free on 127.0.0.2 when the system picks it; another process may hold it on
    127.0.0.1: then a new one is picked.
    """
    for _ in range(20):
        with contextlib.ExitStack() as servers:
            inner = servers.enter_context(serve(_inner, host="127.0.0.2"))
            try:
                outer = servers.enter_context(serve(site, port=inner.port))
            except OSError:  # taken on 127.0.0.1 by someone else
                continue
            yield outer, inner
            return
    raise AssertionError("no port was free on both 127.0.0.1 and 127.0.0.2 in 20 tries")


@pytest.mark.parametrize(
    "target", ["http://127.0.0.2:{port}/x", "http://2130706434:{port}/x", "http://db.internal:{port}/x"]
)
async def test_a_redirect_to_a_private_address_is_refused(
    two_addresses: tuple[Server, Server], target: str
) -> None:
    outer, inner = two_addresses
    resolver = fixed({"db.internal": ["127.0.0.2"], "127.0.0.1": ["127.0.0.1"], "127.0.0.2": ["127.0.0.2"]})
    # The decimal 2130706434 is read as 127.0.0.2 before any lookup, as a browser reads it.
    url = f"http://127.0.0.1:{outer.port}/redirect?to=" + target.format(port=inner.port)
    with pytest.raises(Denied, match=r"127.0.0.2 is a loopback"):
        await WebFetchTool(allow_private_ips=["127.0.0.1"], resolver=resolver).fetch(url)
    assert len(outer.hits) == 1
    assert inner.hits == []
    # Allowing the whole loopback range, the same redirect is followed to the internal server.
    out = await WebFetchTool(allow_private_ips=["127.0.0.0/8"], resolver=resolver).fetch(url)
    assert "inner secret" in str(out.value)
    final = target.format(port=inner.port).replace("2130706434", "127.0.0.2")
    assert out.metadata is not None and out.metadata["final_url"] == final


async def test_a_redirect_to_another_scheme_is_refused(internal: Server) -> None:
    with pytest.raises(Denied, match=r"http and https URLs only, not file"):
        await WebFetchTool(allow_private_ips=["127.0.0.1"]).fetch(
            f"http://127.0.0.1:{internal.port}/redirect?to=file:///etc/passwd"
        )


def rebinding(host: str, answers: list[str]):
    """A DNS server that answers `host` with each of `answers` in turn (then the last)."""
    calls: list[str] = []

    async def resolve(name: str, port: int) -> Sequence[str]:
        assert name == host
        calls.append(name)
        return [answers[min(len(calls), len(answers)) - 1]]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


async def test_a_rebinding_name_cannot_switch_to_a_private_address_between_hops(
    two_addresses: tuple[Server, Server],
) -> None:
    outer, inner = two_addresses
    # 127.0.0.1 stands for the public address the name first gives; 127.0.0.2 is the internal one.
    url = f"http://rebind.example:{outer.port}/redirect?to=/secret"
    resolver = rebinding("rebind.example", ["127.0.0.1", "127.0.0.2"])
    with pytest.raises(Denied, match=r"127.0.0.2 is a loopback"):
        await WebFetchTool(allow_private_ips=["127.0.0.1"], resolver=resolver).fetch(url)
    assert len(outer.hits) == 1
    assert inner.hits == []
    # Unguarded, the second answer is where the second hop lands.
    resolver = rebinding("rebind.example", ["127.0.0.1", "127.0.0.2"])
    out = await WebFetchTool(ssrf_guard=False, resolver=resolver).fetch(url)
    assert "inner secret" in str(out.value)


async def test_each_connection_resolves_once_and_connects_to_the_checked_address(
    two_addresses: tuple[Server, Server],
) -> None:
    outer, inner = two_addresses
    # A checker that looked the name up separately would see 127.0.0.1 and then connect by
    # name to 127.0.0.2; the guard connects to the address it checked.
    resolver = rebinding("rebind.example", ["127.0.0.1", "127.0.0.2"])
    out = await WebFetchTool(allow_private_ips=["127.0.0.1"], resolver=resolver).fetch(
        f"http://rebind.example:{outer.port}/secret"
    )
    assert "the internal secret" in str(out.value)
    assert resolver.calls == ["rebind.example"]  # type: ignore[attr-defined]
    assert inner.hits == []


async def test_the_backend_checks_every_connection() -> None:
    backend = GuardedBackend(
        SsrfGuard.build(enabled=True, allow_private_ips=["127.0.0.1"]),
        rebinding("a.example", ["127.0.0.1", "127.0.0.2"]),
    )
    assert [str(ip) for ip in await backend.checked_addresses("a.example", 80)] == ["127.0.0.1"]
    with pytest.raises(SsrfBlocked, match=r"127.0.0.2"):
        await backend.checked_addresses("a.example", 80)
    with pytest.raises(SsrfBlocked, match=r"unix sockets"):
        await backend.connect_unix_socket("/run/docker.sock")


# --- the two allowances: a host (and port), or addresses -------------------------------------


@pytest.fixture
def other(internal: Server) -> Iterator[Server]:
    """A second service on 127.0.0.1, on another port (the Redis or admin page beside the test server)."""
    with serve(_inner) as server:
        yield server


async def test_a_host_allowance_reaches_that_host_and_port_only(internal: Server, other: Server) -> None:
    allowed = f"127.0.0.1:{internal.port}"
    resolver = fixed({"127.0.0.1": ["127.0.0.1"], "evil.example": ["127.0.0.1"]})
    fetch = WebFetchTool(allow_private_hosts=[allowed], resolver=resolver)
    out = await fetch.fetch(f"http://{allowed}/secret")
    assert "the internal secret" in str(out.value)
    # A redirect within the allowed host and port is followed.
    out = await fetch.fetch(f"http://{allowed}/redirect?to=/secret")
    assert out.metadata is not None and out.metadata["final_url"] == f"http://{allowed}/secret"
    # The same address on another port, or under another name, is not the allowed host.
    for url in (
        f"http://127.0.0.1:{other.port}/x",
        f"http://evil.example:{internal.port}/secret",
        f"http://{allowed}/redirect?to=http://127.0.0.1:{other.port}/x",
        f"http://{allowed}/redirect?to=http://evil.example:{internal.port}/secret",
    ):
        with pytest.raises(Denied, match=r"127\.0\.0\.1 is a loopback"):
            await fetch.fetch(url)
    assert other.hits == []
    assert [path for _, path, _, _ in internal.hits] == [
        "/secret",
        "/redirect?to=/secret",
        "/secret",
        f"/redirect?to=http://127.0.0.1:{other.port}/x",
        f"/redirect?to=http://evil.example:{internal.port}/secret",
    ]


async def test_a_host_allowance_names_a_host_not_its_addresses(internal: Server) -> None:
    # A name is allowed as written: whatever it resolves to is reached, on its port.
    resolver = fixed({"wiki.internal.": ["127.0.0.1"], "127.0.0.1": ["127.0.0.1"]})
    fetch = WebFetchTool(allow_private_hosts=[f"wiki.internal:{internal.port}"], resolver=resolver)
    assert "the internal secret" in str(
        (await fetch.fetch(f"http://Wiki.Internal.:{internal.port}/secret")).value
    )
    with pytest.raises(Denied, match=r"127\.0\.0\.1 is a loopback"):
        await fetch.fetch(f"http://127.0.0.1:{internal.port}/secret")


async def test_an_address_allowance_lets_every_name_redirect_and_port_there_through(
    internal: Server, other: Server
) -> None:
    # What allow_private_ips=["127.0.0.1"] lets through, as docs/tools-web.md says: the address,
    # however it was reached. allow_private_hosts is the allowance for one service.
    resolver = fixed({"127.0.0.1": ["127.0.0.1"], "evil.example": ["127.0.0.1"]})
    fetch = WebFetchTool(allow_private_ips=["127.0.0.1"], resolver=resolver)
    for url in (
        f"http://127.0.0.1:{other.port}/x",
        f"http://evil.example:{internal.port}/secret",
        f"http://127.0.0.1:{internal.port}/redirect?to=http://127.0.0.1:{other.port}/x",
    ):
        assert "secret" in str((await fetch.fetch(url)).value)
