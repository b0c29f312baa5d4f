"""`WebFetchTool.builder()` and `WebSearchTool.builder(backend)`, as the book writes them.

A built tool is the tool the keyword constructor makes with the same options, fetching and
searching against real HTTP servers on 127.0.0.1; each option is checked when it is set, and
a bad one is a `UserError` naming the builder call to fix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from web_servers import Server, serve, site

from helikon.core.exceptions import Denied, UserError
from helikon.tools import SearchResult, WebFetchTool, WebFetchToolBuilder, WebSearchTool, WebSearchToolBuilder

pytestmark = pytest.mark.integration

NO_CONTEXT: Any = None  # the web tools do not read their ToolContext


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(site) as s:
        yield s


async def intranet(host: str, port: int) -> Sequence[str]:
    """A resolver that knows one name: the test server's."""
    return ["127.0.0.1"] if host == "wiki.intranet.test" else []


def configured() -> WebFetchToolBuilder:
    return (
        WebFetchTool.builder()
        .allow_hosts(["Intranet.TEST."])
        .deny_hosts(["secret.intranet.test"])
        .max_bytes(1000)
        .timeout(timedelta(seconds=5))
        .max_redirects(0)
        .allow_private_ips(["127.0.0.1/32"])
        .allow_private_hosts(["wiki.intranet.test:8443"])
        .resolver(intranet)
        .user_agent("research-bot/2")
    )


def facts(tool: WebFetchTool) -> tuple[object, ...]:
    return (tool.allow_hosts, tool.deny_hosts, tool.max_bytes, tool.timeout, tool.max_redirects, tool.guard)


def test_the_builder_makes_the_tool_the_constructor_makes() -> None:
    built = configured().build()
    made = WebFetchTool(
        allow_hosts=["Intranet.TEST."],
        deny_hosts=["secret.intranet.test"],
        max_bytes=1000,
        timeout=5,
        max_redirects=0,
        allow_private_ips=["127.0.0.1/32"],
        allow_private_hosts=["wiki.intranet.test:8443"],
        resolver=intranet,
        user_agent="research-bot/2",
    )
    assert facts(built) == facts(made)
    assert built.allow_hosts == ("intranet.test",) and built.timeout == 5.0
    assert built.description == made.description
    # What no method set keeps the constructor's default.
    assert facts(WebFetchTool.builder().build()) == facts(WebFetchTool())


async def test_a_built_tool_fetches_with_every_option_it_was_given(server: Server) -> None:
    tool = configured().build()
    base = f"http://wiki.intranet.test:{server.port}"
    out = await tool.fetch(f"{base}/big")  # resolved by its resolver, let through by its allowance
    assert out.metadata is not None and (out.metadata["bytes"], out.metadata["truncated"]) == (1000, True)
    _, path, headers, _ = server.hits[-1]
    assert (path, headers["User-Agent"]) == ("/big", "research-bot/2")
    with pytest.raises(Denied, match="redirected more than 0 times"):
        await tool.fetch(f"{base}/redirect?to=/text")
    with pytest.raises(Denied, match=r"the host secret\.intranet\.test is denied"):
        await tool.fetch(f"http://secret.intranet.test:{server.port}/secret")
    with pytest.raises(Denied, match=r"the host example\.com is not allowed"):
        await tool.fetch("http://example.com/")
    # The guard is on: without the allowance the same address is refused.
    guarded = WebFetchTool.builder().resolver(intranet).build()
    with pytest.raises(Denied, match="loopback"):
        await guarded.fetch(f"{base}/text")
    open_ = WebFetchTool.builder().resolver(intranet).ssrf_guard(False).build()
    assert "plain text, not HTML" in str((await open_.fetch(f"{base}/text")).value)


def test_a_method_called_again_replaces_and_build_can_be_called_again() -> None:
    builder = WebFetchTool.builder().max_bytes(10).allow_hosts(["a.example"])
    first = builder.build()
    second = builder.max_bytes(20).allow_hosts(["b.example"]).build()
    assert (first.max_bytes, first.allow_hosts) == (10, ("a.example",))
    assert (second.max_bytes, second.allow_hosts) == (20, ("b.example",))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda b: b.allow_hosts(["https://example.com/"]),
            r"builder\(\)\.allow_hosts\(\.\.\.\): .* is not a domain",
        ),
        (lambda b: b.deny_hosts([""]), r"builder\(\)\.deny_hosts\(\.\.\.\): '' is not a domain"),
        (lambda b: b.max_bytes(0), r"builder\(\)\.max_bytes\(0\): give an int >= 1"),
        (lambda b: b.max_bytes(True), r"builder\(\)\.max_bytes\(True\): give an int"),
        (lambda b: b.timeout(0), r"builder\(\)\.timeout\(0\): give the seconds"),
        (lambda b: b.timeout(timedelta(0)), r"builder\(\)\.timeout\(datetime\.timedelta\(0\)\)"),
        (lambda b: b.timeout("30"), r"builder\(\)\.timeout\('30'\)"),
        (lambda b: b.max_redirects(-1), r"builder\(\)\.max_redirects\(-1\): give an int >= 0"),
        (lambda b: b.allow_private_ips(["intranet"]), r"'intranet' is not an IP address or network"),
        (lambda b: b.allow_private_hosts(["http://wiki/"]), r"'http://wiki/' is not a host or host:port"),
        (lambda b: b.ssrf_guard(0), r"builder\(\)\.ssrf_guard\(0\): give True or False"),
        (lambda b: b.ssrf_guard("false"), r"builder\(\)\.ssrf_guard\('false'\): give True or False"),
        (lambda b: b.resolver("8.8.8.8"), r"builder\(\)\.resolver\('8\.8\.8\.8'\): give a function async"),
        (lambda b: b.user_agent(""), r"builder\(\)\.user_agent\(''\): give a non-empty text"),
        (lambda b: b.user_agent("bot\r\nX-Evil: 1"), r"without control characters"),
    ],
)
def test_each_bad_option_is_refused_when_it_is_set(call: Any, message: str) -> None:
    builder = WebFetchTool.builder()
    with pytest.raises(UserError, match=message):
        call(builder)
    assert facts(builder.build()) == facts(WebFetchTool())  # the refused value was not kept


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ssrf_guard": 0}, r"WebFetchTool\(ssrf_guard=0\): give True or False"),
        ({"resolver": "8.8.8.8"}, r"WebFetchTool\(resolver='8\.8\.8\.8'\): give a function"),
        ({"user_agent": "bot\nX-Evil: 1"}, r"WebFetchTool\(user_agent=.*without control characters"),
        ({"timeout": timedelta(seconds=-1)}, r"WebFetchTool\(timeout=.*give the seconds"),
    ],
)
def test_the_constructor_checks_the_options_the_same_way(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        WebFetchTool(**options)
    assert WebFetchTool(timeout=timedelta(milliseconds=1500)).timeout == 1.5


class Catalogue:
    """A search backend of this test: as many hits as asked for."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        self.asked.append(max_results)
        return [
            SearchResult(title=f"{query} {i}", url=f"https://example.com/{i}", snippet="")
            for i in range(max_results)
        ]


async def test_the_search_builder_makes_the_tool_the_constructor_makes() -> None:
    backend = Catalogue()
    built = WebSearchTool.builder(backend).max_results(3).build()
    assert isinstance(WebSearchTool.builder(backend), WebSearchToolBuilder)
    assert (built.backend, built.max_results) == (backend, 3)
    out = await built.invoke(NO_CONTEXT, {"query": "tea"})
    assert out.metadata is not None and out.metadata["count"] == 3
    assert backend.asked == [3]
    assert WebSearchTool.builder(backend).build().max_results == WebSearchTool(backend).max_results == 5


def test_the_search_builder_refuses_a_bad_backend_and_count() -> None:
    not_a_backend: Any = "brave"
    with pytest.raises(UserError, match=r"WebSearchTool\.builder\('brave'\): give a SearchBackend"):
        WebSearchTool.builder(not_a_backend)
    builder = WebSearchTool.builder(Catalogue())
    for bad in (0, 21, True, "5"):
        with pytest.raises(
            UserError, match=r"builder\(\.\.\.\)\.max_results\(.*\): give an int from 1 to 20"
        ):
            builder.max_results(bad)  # type: ignore[arg-type]
    assert builder.build().max_results == 5
