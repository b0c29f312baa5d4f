"""WebSearch over Brave and Tavily, against a local server answering in each provider's documented format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from web_servers import Handler, Server, serve

from helikon.core.exceptions import InvalidArgs, ToolError, UserError
from helikon.core.tools import ToolEffect
from helikon.tools import BraveBackend, SearchBackend, SearchResult, TavilyBackend, WebSearchTool

pytestmark = pytest.mark.integration

NO_CONTEXT: Any = None  # the web tools do not read their ToolContext

# The shape of Brave's `GET /res/v1/web/search` answer (trimmed: Brave sends more fields and sections).
BRAVE_ANSWER = {
    "type": "search",
    "query": {"original": "python 3.13 release", "more_results_available": True},
    "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "What's New In Python 3.13",
                "url": "https://docs.python.org/3/whatsnew/3.13.html",
                "is_source_local": False,
                "description": "This article explains the new features in <strong>Python 3.13</strong>.",
                "profile": {"name": "Python documentation", "url": "https://docs.python.org"},
                "language": "en",
                "family_friendly": True,
                "type": "search_result",
            },
            {
                "title": "Python Release Python 3.13.0",
                "url": "https://www.python.org/downloads/release/python-3130/",
                "description": "Python 3.13.0 is the newest major release.",
                "type": "search_result",
            },
        ],
        "family_friendly": True,
    },
}

# The shape of Tavily's `POST /search` answer.
TAVILY_ANSWER = {
    "query": "python 3.13 release",
    "answer": None,
    "images": [],
    "results": [
        {
            "title": "What's New In Python 3.13",
            "url": "https://docs.python.org/3/whatsnew/3.13.html",
            "content": "This article explains the new features in Python 3.13.",
            "score": 0.91,
            "raw_content": None,
        },
        {
            "title": "Python Release Python 3.13.0",
            "url": "https://www.python.org/downloads/release/python-3130/",
            "content": "Python 3.13.0 is the newest major release.",
            "score": 0.87,
            "raw_content": None,
        },
    ],
    "response_time": 1.09,
}


def provider(h: Handler) -> None:
    path = urlsplit(h.path).path
    if path == "/res/v1/web/search":
        if h.headers.get("X-Subscription-Token") != "brave-key":
            h.send(
                401,
                b'{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID"}}',
                "application/json",
            )
            return
        h.send(200, json.dumps(BRAVE_ANSWER).encode(), "application/json")
    elif path == "/search" and h.command == "POST":
        if h.headers.get("Authorization") != "Bearer tvly-key":
            h.send(
                401, b'{"detail":{"error":"Unauthorized: missing or invalid API key."}}', "application/json"
            )
            return
        h.send(200, json.dumps(TAVILY_ANSWER).encode(), "application/json")
    elif path == "/broken/search":
        h.send(200, b"<html>not json</html>")
    else:
        h.send(404, b"{}", "application/json")


@pytest.fixture(scope="module")
def api() -> Iterator[Server]:
    with serve(provider) as s:
        yield s


EXPECTED = [
    SearchResult(
        title="What's New In Python 3.13",
        url="https://docs.python.org/3/whatsnew/3.13.html",
        snippet="This article explains the new features in <strong>Python 3.13</strong>.",
    ),
    SearchResult(
        title="Python Release Python 3.13.0",
        url="https://www.python.org/downloads/release/python-3130/",
        snippet="Python 3.13.0 is the newest major release.",
    ),
]


async def test_brave(api: Server) -> None:
    backend = BraveBackend(api_key="brave-key", base_url=f"http://127.0.0.1:{api.port}")
    assert isinstance(backend, SearchBackend)
    assert await backend.search("python 3.13 release", 5) == EXPECTED
    method, path, headers, _ = api.hits[-1]
    assert method == "GET"
    assert parse_qs(urlsplit(path).query) == {"q": ["python 3.13 release"], "count": ["5"]}
    assert headers["Accept"] == "application/json"
    assert await backend.search("python 3.13 release", 1) == EXPECTED[:1]


async def test_tavily(api: Server) -> None:
    backend = TavilyBackend(api_key="tvly-key", base_url=f"http://127.0.0.1:{api.port}/")
    results = await backend.search("python 3.13 release", 5)
    assert [r.snippet for r in results] == [
        "This article explains the new features in Python 3.13.",
        "Python 3.13.0 is the newest major release.",
    ]
    assert [r.url for r in results] == [r.url for r in EXPECTED]
    method, path, _, body = api.hits[-1]
    assert (method, path) == ("POST", "/search")
    assert json.loads(body) == {"query": "python 3.13 release", "max_results": 5, "search_depth": "basic"}


async def test_the_tool_lists_the_hits_for_the_model_and_the_ui(api: Server) -> None:
    tool = WebSearchTool(TavilyBackend(api_key="tvly-key", base_url=f"http://127.0.0.1:{api.port}"))
    assert (tool.name, tool.effect) == ("WebSearch", ToolEffect.SIDE_EFFECT)
    out = await tool.invoke(NO_CONTEXT, {"query": "python 3.13 release", "max_results": 2})
    assert out.value == (
        "Results for 'python 3.13 release':\n\n"
        "1. [What's New In Python 3.13](https://docs.python.org/3/whatsnew/3.13.html)\n"
        "   This article explains the new features in Python 3.13.\n"
        "2. [Python Release Python 3.13.0](https://www.python.org/downloads/release/python-3130/)\n"
        "   Python 3.13.0 is the newest major release."
    )
    assert out.metadata is not None and out.metadata["count"] == 2
    assert out.metadata["bytes"] == len(str(out.value).encode()) and out.metadata["truncated"] is False
    assert out.metadata["results"] == [
        {"title": r["title"], "url": r["url"], "snippet": r["content"]} for r in TAVILY_ANSWER["results"][:2]
    ]
    with pytest.raises(InvalidArgs, match=r"'query' is required"):
        await tool.invoke(NO_CONTEXT, {"max_results": 2})
    with pytest.raises(InvalidArgs, match=r"from 1 to 20"):
        await tool.invoke(NO_CONTEXT, {"query": "x", "max_results": 50})


async def test_api_failures_are_tool_errors_without_the_key(api: Server) -> None:
    bad = BraveBackend(api_key="wrong-key", base_url=f"http://127.0.0.1:{api.port}")
    with pytest.raises(ToolError, match=r"HTTP 401") as info:
        await bad.search("x", 3)
    assert "wrong-key" not in str(info.value)
    with pytest.raises(ToolError, match=r"not JSON"):
        await TavilyBackend(api_key="tvly-key", base_url=f"http://127.0.0.1:{api.port}/broken").search("x", 3)


def test_a_missing_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(UserError, match=r"set the BRAVE_API_KEY environment variable"):
        BraveBackend()
    with pytest.raises(UserError, match=r"set the TAVILY_API_KEY environment variable"):
        TavilyBackend()
    monkeypatch.setenv("TAVILY_API_KEY", "from-env")
    assert TavilyBackend()._api_key == "from-env"
    with pytest.raises(UserError, match=r"'basic' or 'advanced'"):
        TavilyBackend(search_depth="deep")
    not_a_backend: Any = "brave"
    with pytest.raises(UserError, match=r"give a SearchBackend"):
        WebSearchTool(not_a_backend)
    with pytest.raises(UserError, match=r"from 1 to 20"):
        WebSearchTool(TavilyBackend(), max_results=0)
