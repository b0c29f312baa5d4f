"""The web tools: `WebFetchTool` (`fetch.py`) and `WebSearchTool` over a `SearchBackend` (`search.py`).

The seam is `SearchBackend`: a query in, `SearchResult`s out (`BraveBackend`,
`TavilyBackend`, or your own). WebFetch connects only through the SSRF guard: `_ssrf.py`
holds its rules (blocked networks as a table, one decision), `_guarded_net.py` the httpx2
transport that connects to the very address it checked. Needs the `tools-web` extra; the
tools load httpx2 and trafilatura on first access, not when this package is imported.
"""

from typing import TYPE_CHECKING, Any

from helikon._lazy_exports import lazy_attribute

if TYPE_CHECKING:
    from .fetch import WebFetchTool, WebFetchToolBuilder
    from .search import (
        BraveBackend,
        SearchBackend,
        SearchResult,
        TavilyBackend,
        WebSearchTool,
        WebSearchToolBuilder,
    )

# Names -> their module, imported on first access: they need httpx2 (and WebFetch
# trafilatura), which importing this package must not load.
_LAZY = {
    "BraveBackend": "search",
    "SearchBackend": "search",
    "SearchResult": "search",
    "TavilyBackend": "search",
    "WebFetchTool": "fetch",
    "WebFetchToolBuilder": "fetch",
    "WebSearchTool": "search",
    "WebSearchToolBuilder": "search",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


__all__ = [
    "BraveBackend",
    "SearchBackend",
    "SearchResult",
    "TavilyBackend",
    "WebFetchTool",
    "WebFetchToolBuilder",
    "WebSearchTool",
    "WebSearchToolBuilder",
]
