"""`WebSearchTool` ("WebSearch") over a swappable `SearchBackend`; `BraveBackend`, `TavilyBackend`.

A backend turns a query into `SearchResult`s (title, url, snippet); the tool lists them for
the model as Markdown and gives them to the application as metadata. Needs the `tools-web`
extra.

Example:
    ```python
    from helikon.tools import BraveBackend, WebSearchTool

    search = WebSearchTool(BraveBackend(api_key="..."), max_results=5)
    assert search.name == "WebSearch"
    same = WebSearchTool.builder(BraveBackend(api_key="...")).max_results(5).build()
    assert same.max_results == search.max_results
    ```
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from helikon.core._internal.extras import missing_extra
from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.context import ToolContext
from helikon.core.exceptions import InvalidArgs, ToolError, UserError
from helikon.core.run.tool_args import args_object
from helikon.core.tools import ToolEffect, ToolOutput

try:
    import httpx2
except ImportError as exc:  # pragma: no cover - the extra is installed in the suite
    raise missing_extra("WebSearch needs httpx2", "tools-web") from exc


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit: the page's title, its URL, and the provider's snippet of it."""

    title: str
    url: str
    snippet: str


@runtime_checkable
class SearchBackend(Protocol):
    """A web search provider."""

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to `max_results` hits for `query`."""
        ...


def _api_key(backend: str, given: str | None, env_var: str) -> str:
    key = given if given is not None else os.environ.get(env_var)
    if not key:
        raise UserError(f"{backend}: no API key; pass api_key=... or set the {env_var} environment variable")
    return key


async def _request(backend: str, method: str, url: str, **kwargs: Any) -> JsonValue:
    """One API call; a failure becomes a `ToolError` the model reads (without the key)."""
    try:
        async with httpx2.AsyncClient(trust_env=False, timeout=kwargs.pop("timeout")) as client:
            response = await client.request(method, url, **kwargs)
    except httpx2.HTTPError as exc:
        raise ToolError(f"{backend}: the search request failed: {exc or type(exc).__name__}") from None
    if response.status_code >= 400:
        raise ToolError(
            f"{backend}: the search API answered HTTP {response.status_code}: {response.text[:300]}"
        )
    try:
        return response.json()
    except ValueError:
        raise ToolError(f"{backend}: the search API answered something that is not JSON") from None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


class BraveBackend:
    """Brave Search's web search API (`GET /res/v1/web/search`, `X-Subscription-Token`).

    The key comes from `api_key` or the `BRAVE_API_KEY` environment variable.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.search.brave.com",
        timeout: float = 20.0,
    ) -> None:
        self._api_key = _api_key("BraveBackend", api_key, "BRAVE_API_KEY")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"BraveBackend(base_url={self.base_url!r})"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to `max_results` (Brave allows 20) of Brave's web results."""
        data = await _request(
            "BraveBackend",
            "GET",
            f"{self.base_url}/res/v1/web/search",
            params={"q": query, "count": min(max_results, 20)},
            headers={"Accept": "application/json", "X-Subscription-Token": self._api_key},
            timeout=self.timeout,
        )
        web = data.get("web") if isinstance(data, dict) else None
        hits = web.get("results") if isinstance(web, dict) else None
        if not isinstance(hits, list):
            return []
        return [
            SearchResult(
                title=_str(h.get("title")), url=_str(h.get("url")), snippet=_str(h.get("description"))
            )
            for h in hits[:max_results]
            if isinstance(h, dict) and h.get("url")
        ]


class TavilyBackend:
    """Tavily's search API (`POST /search`, `Authorization: Bearer`).

    The key comes from `api_key` or the `TAVILY_API_KEY` environment variable.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.tavily.com",
        search_depth: str = "basic",
        timeout: float = 30.0,
    ) -> None:
        self._api_key = _api_key("TavilyBackend", api_key, "TAVILY_API_KEY")
        if search_depth not in ("basic", "advanced"):
            raise UserError(f"TavilyBackend(search_depth={search_depth!r}): use 'basic' or 'advanced'")
        self.base_url = base_url.rstrip("/")
        self.search_depth = search_depth
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"TavilyBackend(base_url={self.base_url!r})"

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        """Up to `max_results` (Tavily allows 20) of Tavily's results."""
        data = await _request(
            "TavilyBackend",
            "POST",
            f"{self.base_url}/search",
            json={"query": query, "max_results": min(max_results, 20), "search_depth": self.search_depth},
            headers={"Authorization": f"Bearer {self._api_key}"},
            timeout=self.timeout,
        )
        hits = data.get("results") if isinstance(data, dict) else None
        if not isinstance(hits, list):
            return []
        return [
            SearchResult(title=_str(h.get("title")), url=_str(h.get("url")), snippet=_str(h.get("content")))
            for h in hits[:max_results]
            if isinstance(h, dict) and h.get("url")
        ]


_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search the web for."},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "description": "How many hits (default 5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


class WebSearchTool:
    """Search the web through a `SearchBackend`; the model gets a Markdown list of the hits.

    Make one with `WebSearchTool(backend, max_results=...)`, or with
    `WebSearchTool.builder(backend)` (a builder chain); both check the options the same way.

    Args:
        backend: The provider (`BraveBackend`, `TavilyBackend`, or your own `SearchBackend`).
        max_results: The hits returned when the model does not ask for a number (1-20).
    """

    name = "WebSearch"
    effect = ToolEffect.SIDE_EFFECT
    schema = _SCHEMA
    output_schema = None
    description = (
        "Search the web. Returns the top results as a Markdown list of title, URL and snippet; "
        "read a result in full with WebFetch."
    )

    def __init__(self, backend: SearchBackend, *, max_results: int = 5) -> None:
        self.backend = _backend(f"WebSearchTool({backend!r})", backend)
        self.max_results = _count(f"WebSearchTool(max_results={max_results!r})", max_results)

    @staticmethod
    def builder(backend: SearchBackend) -> WebSearchToolBuilder:
        """Options one method each, as a builder chain: `WebSearchTool.builder(backend).build()`."""
        return WebSearchToolBuilder(backend)

    def __repr__(self) -> str:
        return f"WebSearchTool({self.backend!r})"

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """Run the search the model asked for."""
        args = args_object(args)
        if not isinstance(args, dict):
            raise InvalidArgs(["give an object with 'query'"])
        query = args.get("query")
        count = args.get("max_results", self.max_results)
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgs(["'query' is required: what to search the web for"])
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 20:
            raise InvalidArgs([f"'max_results' must be an integer from 1 to 20, not {count!r}"])
        return await self.search(query.strip(), count)

    async def search(self, query: str, max_results: int | None = None) -> ToolOutput:
        """Search (no model needed): a Markdown list as the value, the results as metadata."""
        results = await self.backend.search(query, max_results or self.max_results)
        if results:
            lines = [
                f"{i}. [{r.title or r.url}]({r.url})\n   {r.snippet}".rstrip()
                for i, r in enumerate(results, 1)
            ]
            text = f"Results for {query!r}:\n\n" + "\n".join(lines)
        else:
            text = f"No results for {query!r}."
        found: list[JsonValue] = [{"title": r.title, "url": r.url, "snippet": r.snippet} for r in results]
        metadata: JsonObject = {
            "query": query,
            "results": found,
            "count": len(results),
            "bytes": len(text.encode()),
            "truncated": False,  # every hit the backend gave is listed
        }
        return ToolOutput(text, metadata=metadata)


class WebSearchToolBuilder:
    """The options of a `WebSearchTool`, each checked when set; start with `WebSearchTool.builder(backend)`.

    Example:
        ```python
        from helikon.tools import TavilyBackend, WebSearchTool

        search = WebSearchTool.builder(TavilyBackend(api_key="tvly-...")).max_results(8).build()
        assert search.max_results == 8
        ```
    """

    __slots__ = ("_backend", "_max_results")

    def __init__(self, backend: SearchBackend) -> None:
        self._backend = _backend(f"WebSearchTool.builder({backend!r})", backend)
        self._max_results = 5

    def max_results(self, count: int) -> WebSearchToolBuilder:
        """The hits returned when the model does not ask for a number (1-20, default 5)."""
        self._max_results = _count(f"WebSearchTool.builder(...).max_results({count!r})", count)
        return self

    def build(self) -> WebSearchTool:
        """The tool, with the options set so far."""
        return WebSearchTool(self._backend, max_results=self._max_results)


def _backend(where: str, backend: SearchBackend) -> SearchBackend:
    if not callable(getattr(backend, "search", None)):
        raise UserError(
            f"{where}: give a SearchBackend (BraveBackend, TavilyBackend, or an "
            "object with `async search(query, max_results)`)"
        )
    return backend


def _count(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 20:
        raise UserError(f"{where}: give an int from 1 to 20")
    return value


__all__ = [
    "BraveBackend",
    "SearchBackend",
    "SearchResult",
    "TavilyBackend",
    "WebSearchTool",
    "WebSearchToolBuilder",
]
