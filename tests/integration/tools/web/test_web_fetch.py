"""WebFetch on real saved article pages served from a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_servers import WEB_FIXTURES, Handler, Server, serve, site

from helikon import LlmAgent, RunContext
from helikon.core.events import ToolOutputItem
from helikon.core.exceptions import Denied, InvalidArgs, ToolError, UserError
from helikon.core.tools import ToolEffect
from helikon.testing import MockModel, text_turn, tool_call_turn
from helikon.tools import WebFetchTool

pytestmark = pytest.mark.integration

NO_CONTEXT: Any = None  # the web tools do not read their ToolContext

# file -> (a sentence of the article body, the title, boilerplate the page has that the article must not)
ARTICLES = {
    "blog.python.org.html": (
        "Python 3.6.0 is the newest major release",
        "Python 3.6.0 is now available!",
        "Blog Archive",
    ),
    "caktusgroup.com.django.html": (
        "a test failure in a presentation about testing",
        "Testing Client-Side Applications with Django",
        "Subscribe",
    ),
    "en.wikipedia.org.tsne.html": (
        "stochastic neighbor embedding",
        "T-distributed stochastic neighbor embedding",
        "Create account",
    ),
    "github.blog.spiceland.html": (
        "Erin Spiceland is a Software Engineer for SpaceX",
        "Leader spotlight: Erin Spiceland",
        "Search",
    ),
    "lemire.me.json.html": ("simdjson", "JSON parsing: simdjson vs. JSON for Modern C++", "Leave a Reply"),
    "nature.com.telescope.html": (
        "largest single-dish radio observatory",
        "Gigantic Chinese telescope opens to astronomers worldwide",
        "Privacy Policy",
    ),
    "reuters.com.parasite.html": (
        "was the upset winner at the Screen Actors Guild",
        "'Parasite' scores historic upset at SAG awards",
        "All quotes delayed",
    ),
    "theverge.com.ios13.html": (
        "FaceTime calls",
        "iOS 13 will fix the FaceTime eye contact problem",
        "Newsletter",
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(site) as s:
        yield s


def fetcher(**options: Any) -> WebFetchTool:
    return WebFetchTool(allow_private_ips=["127.0.0.1"], **options)


@pytest.mark.parametrize("page", sorted(ARTICLES))
async def test_the_main_article_comes_back_as_markdown(server: Server, page: str) -> None:
    sentence, title, boilerplate = ARTICLES[page]
    raw = (WEB_FIXTURES / page).read_bytes()
    assert sentence.encode() in raw or sentence in raw.decode("utf-8", "replace")
    assert boilerplate.encode() in raw  # the page has it: the extraction must drop it
    url = f"http://127.0.0.1:{server.port}/page/{page}"
    out = await fetcher().fetch(url)
    text = out.value
    assert isinstance(text, str)
    assert text.startswith(f"# {title}")
    assert f"URL: {url}" in text
    assert sentence in text
    assert boilerplate not in text
    assert "<script" not in text and "<div" not in text
    assert out.metadata is not None
    page_title = out.metadata.pop("title")
    assert isinstance(page_title, str) and page_title.startswith(title)  # some add a site name
    assert text.startswith(f"# {page_title}\n")  # the title a UI shows is the heading the model reads
    assert out.metadata == {
        "url": url,
        "final_url": url,
        "status": 200,
        "content_type": "text/html",
        "bytes": len(raw),
        "truncated": False,
    }


async def test_the_model_calls_it_with_a_url(server: Server) -> None:
    tool = fetcher()
    assert (tool.name, tool.effect) == ("WebFetch", ToolEffect.SIDE_EFFECT)
    assert tool.schema["required"] == ["url"]
    out = await tool.invoke(
        NO_CONTEXT, json.dumps({"url": f"http://127.0.0.1:{server.port}/page/lemire.me.json.html"})
    )
    assert "simdjson" in str(out.value)
    with pytest.raises(InvalidArgs, match=r"'url' is required"):
        await tool.invoke(NO_CONTEXT, {})


async def test_redirects_are_followed_and_reported(server: Server) -> None:
    url = f"http://127.0.0.1:{server.port}/redirect?to=/page/blog.python.org.html"
    out = await fetcher().fetch(url)
    assert "Python 3.6.0" in str(out.value)
    assert out.metadata is not None
    assert out.metadata["final_url"] == f"http://127.0.0.1:{server.port}/page/blog.python.org.html"


async def test_a_redirect_loop_stops_at_max_redirects(server: Server) -> None:
    with pytest.raises(Denied, match=r"redirected more than 3 times"):
        await fetcher(max_redirects=3).fetch(f"http://127.0.0.1:{server.port}/loop")
    assert sum(1 for hit in server.hits if hit[1] == "/loop") >= 4


async def test_the_body_is_cut_at_max_bytes(server: Server) -> None:
    out = await fetcher(max_bytes=1000).fetch(f"http://127.0.0.1:{server.port}/big")
    assert out.metadata is not None
    assert (out.metadata["bytes"], out.metadata["truncated"]) == (1000, True)
    assert str(out.value).count("x") == 1000


async def test_text_gzip_and_json_are_read_binary_is_refused(server: Server) -> None:
    base = f"http://127.0.0.1:{server.port}"
    assert "plain text, not HTML: caf\u00e9" in str((await fetcher().fetch(f"{base}/text")).value)
    assert "compressed body" in str((await fetcher().fetch(f"{base}/gzip")).value)
    data = await fetcher().fetch(f"{base}/json")
    assert '{"ok": true}' in str(data.value)
    assert data.metadata is not None and (data.metadata["content_type"], data.metadata["title"]) == (
        "application/json",
        None,  # no HTML, no title
    )
    with pytest.raises(ToolError, match=r"is image/png, not a web page or text"):
        await fetcher().fetch(f"{base}/binary")
    with pytest.raises(ToolError, match=r"answered HTTP 404"):
        await fetcher().fetch(f"{base}/missing")


async def test_a_slow_server_hits_the_time_limit() -> None:
    release = threading.Event()

    def slow(h: Handler) -> None:
        release.wait(10)
        with contextlib.suppress(BrokenPipeError):  # the fetch gave up, as it should
            h.send(200, b"late", "text/plain")

    with serve(slow) as s:
        try:
            with pytest.raises(ToolError, match=r"took longer than 0.2s"):
                await fetcher(timeout=0.2).fetch(f"http://127.0.0.1:{s.port}/")
        finally:
            release.set()


async def test_host_lists_and_schemes(server: Server) -> None:
    page = f"http://127.0.0.1:{server.port}/page/blog.python.org.html"
    with pytest.raises(Denied, match=r"the host 127.0.0.1 is not allowed; allowed: python.org"):
        await fetcher(allow_hosts=["python.org"]).fetch(page)
    with pytest.raises(Denied, match=r"the host docs.python.org is denied"):
        await fetcher(deny_hosts=["python.org"]).fetch("https://docs.python.org/3/")
    with pytest.raises(Denied, match=r"the host evil.example is not allowed"):
        await fetcher(allow_hosts=["example.com"]).fetch("https://evil.example/?x=example.com")
    with pytest.raises(Denied, match=r"http and https URLs only, not ftp"):
        await fetcher().fetch("ftp://example.com/file")
    with pytest.raises(Denied, match=r"http and https URLs only"):
        await fetcher().fetch("file:///etc/passwd")
    with pytest.raises(InvalidArgs, match=r"not a valid URL"):
        await fetcher().fetch("http://[not-an-address]/")
    # A redirect is held to the same lists.
    with pytest.raises(Denied, match=r"the host localhost is not allowed"):
        await fetcher(allow_hosts=["127.0.0.1"]).fetch(
            f"http://127.0.0.1:{server.port}/redirect?to=http://localhost:{server.port}/secret"
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_bytes": 0}, "max_bytes=0"),
        ({"timeout": -1}, "timeout=-1"),
        ({"max_redirects": -1}, "max_redirects=-1"),
        ({"allow_hosts": ["https://example.com/"]}, "not a domain"),
        ({"deny_hosts": [""]}, "not a domain"),
        ({"allow_private_ips": ["intranet"]}, "not an IP address or network"),
    ],
)
def test_bad_options_say_what_to_give(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        WebFetchTool(**options)


def test_importing_helikon_tools_loads_no_http_client() -> None:
    heavy = "('httpx2', 'httpcore2', 'trafilatura')"
    code = f"import sys, helikon.tools; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.cwd()
    )
    assert out.stdout.strip() == "[]"


async def test_an_agent_reads_the_article_and_the_refusal(server: Server) -> None:
    page = f"http://127.0.0.1:{server.port}/page/theverge.com.ios13.html"
    model = MockModel.with_scripts(
        [
            tool_call_turn("WebFetch", {"url": page}),
            tool_call_turn("WebFetch", {"url": "http://169.254.169.254/latest/meta-data/"}),
            text_turn("done"),
        ]
    )
    agent = LlmAgent(name="reader", model=model, tools=[fetcher()])
    events = [e async for e in agent.run("read it", context=RunContext.ephemeral(None))]
    results = [e.item for e in events if isinstance(e, ToolOutputItem)]
    assert [r.is_error for r in results] == [False, True]
    assert "FaceTime calls" in results[0].text
    assert "169.254.169.254 is a link-local address" in results[1].text


@pytest.mark.parametrize("missing", ["httpx2", "trafilatura"])
def test_without_the_extra_the_error_names_it(missing: str) -> None:
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "try:\n    from helikon.tools import WebFetchTool\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'paigasus-helikon[tools-web]'" in out.stdout
