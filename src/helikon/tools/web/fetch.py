"""`WebFetchTool` ("WebFetch"): fetch an http(s) page and give the model its main article as Markdown.

Every connection goes through the SSRF guard (`helikon.tools.web._ssrf`), on by default: the
host is resolved once, every resolved address is checked (private, loopback, link-local and
cloud metadata, CGNAT, IPv6 ULA, multicast, reserved, and IPv6 forms carrying any of those),
and the connection goes to the address that was checked, so DNS rebinding cannot slip a
second answer in. Redirects are followed here, hop by hop, each hop checked again (scheme,
host lists, addresses). The body is streamed and cut at `max_bytes`; the whole fetch has a
deadline of `timeout` seconds. Needs the `tools-web` extra.

Example:
    ```python
    from helikon.tools import WebFetchTool

    fetch = WebFetchTool(allow_hosts=["python.org"], max_bytes=1_000_000)
    assert fetch.name == "WebFetch"
    same = WebFetchTool.builder().allow_hosts(["python.org"]).max_bytes(1_000_000).build()
    assert (same.allow_hosts, same.max_bytes) == (fetch.allow_hosts, fetch.max_bytes)
    ```
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from helikon.core._internal.extras import missing_extra
from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.context import ToolContext
from helikon.core.exceptions import Denied, InvalidArgs, ToolError
from helikon.core.run.tool_args import args_object
from helikon.core.tools import ToolEffect, ToolOutput

from ._guarded_net import GuardedTransport, Resolver, SsrfBlocked, system_resolver
from ._options import (
    check_domains,
    check_flag,
    check_function,
    check_header_value,
    check_seconds,
    check_spelled,
    check_whole,
)
from ._ssrf import SsrfGuard, canonical_ipv4

try:
    import httpcore2
    import httpx2
    import trafilatura
except ImportError as exc:  # pragma: no cover - the extra is installed in the suite
    raise missing_extra("WebFetch needs httpx2 and trafilatura", "tools-web") from exc

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")

_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"url": {"type": "string", "description": "The http(s) URL of the page to read."}},
    "required": ["url"],
    "additionalProperties": False,
}


DEFAULT_USER_AGENT = "helikon-webfetch/1 (+https://pypi.org/project/paigasus-helikon/)"
_RESOLVER_SHAPE = "async (host, port) -> [ip, ...]"


class WebFetchTool:
    """Fetch an http(s) URL and return its main article as Markdown, behind the SSRF guard.

    Make one with these keyword arguments, or with `WebFetchTool.builder()` (one method
    per option); both check each option the same way.

    Args:
        allow_hosts: If given, only these domains (and their subdomains) are fetched.
        deny_hosts: Domains (and their subdomains) never fetched; deny wins over allow.
        max_bytes: The most of a body read; the rest is cut off (`truncated` in the metadata).
        timeout: Seconds (or a `timedelta`) the whole fetch, all redirect hops, may take.
        max_redirects: How many redirects are followed.
        allow_private_hosts: Hosts, each with an optional port (`"127.0.0.1:8080"`,
            `"wiki.internal"` for its ports 80 and 443), whose connections the SSRF guard lets
            through to whatever they resolve to: the caller's URL and each redirect hop are
            judged by their own host and port. Nothing by default.
        allow_private_ips: Addresses or networks the SSRF guard lets through on every
            connection, whichever host (a redirect's, a name resolving there) and port led to
            them; nothing by default.
        ssrf_guard: False turns the guard off entirely (only for a trusted network).
        resolver: `async (host, port) -> [ip, ...]`; the system's resolver by default. It is
            asked about IP literals too, and the guard checks what it answers.
        user_agent: The User-Agent header sent.
    """

    name = "WebFetch"
    effect = ToolEffect.SIDE_EFFECT
    schema = _SCHEMA
    output_schema = None

    def __init__(
        self,
        *,
        allow_hosts: Iterable[str] | None = None,
        deny_hosts: Iterable[str] = (),
        max_bytes: int = 2_000_000,
        timeout: float | timedelta = 30.0,
        max_redirects: int = 5,
        allow_private_hosts: Iterable[str] = (),
        allow_private_ips: Iterable[str] = (),
        ssrf_guard: bool = True,
        resolver: Resolver | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        def kw(option: str, value: object = ...) -> str:
            """The option as this call wrote it, for an error message (a list elided)."""
            return check_spelled(
                "WebFetchTool", option, "..." if value is ... else repr(value), builder=False
            )

        self.allow_hosts = None if allow_hosts is None else check_domains(kw("allow_hosts"), allow_hosts)
        self.deny_hosts = check_domains(kw("deny_hosts"), deny_hosts)
        self.max_bytes = check_whole(kw("max_bytes", max_bytes), max_bytes)
        self.max_redirects = check_whole(kw("max_redirects", max_redirects), max_redirects, minimum=0)
        self.timeout = check_seconds(kw("timeout", timeout), timeout)
        enabled = check_flag(kw("ssrf_guard", ssrf_guard), ssrf_guard)
        self.guard = SsrfGuard.build(
            enabled=enabled, allow_private_ips=allow_private_ips, allow_private_hosts=allow_private_hosts
        )
        if resolver is not None:
            check_function(kw("resolver", resolver), resolver, _RESOLVER_SHAPE)
        self._resolver = resolver if resolver is not None else system_resolver
        self._user_agent = check_header_value(kw("user_agent", user_agent), user_agent)
        allowed = "any public host" if self.allow_hosts is None else ", ".join(self.allow_hosts)
        self.description = (
            "Fetch a web page (http or https) and return its main content as Markdown, with its "
            f"title and final URL. Hosts: {allowed}. Private and internal addresses are refused."
        )

    @staticmethod
    def builder() -> WebFetchToolBuilder:
        """Options one method each, as a builder chain: `WebFetchTool.builder().max_bytes(n).build()`."""
        return WebFetchToolBuilder()

    def __repr__(self) -> str:
        return f"WebFetchTool(allow_hosts={self.allow_hosts!r}, deny_hosts={self.deny_hosts!r})"

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """Fetch the `url` argument."""
        args = args_object(args)
        url = args.get("url") if isinstance(args, dict) else None
        if not isinstance(url, str) or not url.strip():
            raise InvalidArgs(["'url' is required: the http(s) URL of the page to read"])
        return await self.fetch(url.strip())

    async def fetch(self, url: str) -> ToolOutput:
        """Fetch `url` (no model needed): Markdown as the value, the UI's facts as metadata.

        Raises:
            Denied: The URL, a redirect or a resolved address is not allowed (the reason says why).
            ToolError: The fetch failed (timeout, connection, HTTP error status, binary content).
        """
        target = self._checked_url(url)
        transport = GuardedTransport(self.guard, self._resolver)
        async with httpx2.AsyncClient(
            transport=transport, trust_env=False, follow_redirects=False, timeout=self.timeout
        ) as client:
            try:
                async with asyncio.timeout(self.timeout):
                    return await self._follow(client, url, target)
            except TimeoutError:
                raise ToolError(f"WebFetch: {url} took longer than {self.timeout:g}s") from None
            except SsrfBlocked as exc:
                raise Denied(
                    f"WebFetch refused {url}: {exc.reason}; only public internet addresses are fetched"
                ) from None
            except httpcore2.TimeoutException:
                raise ToolError(f"WebFetch: {url} took longer than {self.timeout:g}s") from None
            except (
                httpx2.HTTPError,
                httpcore2.NetworkError,
                httpcore2.ProtocolError,
                httpcore2.UnsupportedProtocol,
            ) as exc:
                raise ToolError(f"WebFetch: fetching {url} failed: {exc or type(exc).__name__}") from None

    async def _follow(self, client: httpx2.AsyncClient, url: str, target: httpx2.URL) -> ToolOutput:
        headers = {"User-Agent": self._user_agent, "Accept": "text/html,text/*;q=0.9,*/*;q=0.5"}
        for _ in range(self.max_redirects + 1):
            async with client.stream("GET", target, headers=headers) as response:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    target = self._checked_url(urllib.parse.urljoin(str(response.url), location))
                    continue
                if response.status_code >= 400:
                    raise ToolError(f"WebFetch: {target} answered HTTP {response.status_code}")
                body, truncated = await self._read(response)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                encoding = response.encoding or "utf-8"
            markdown, title = await asyncio.to_thread(_to_markdown, body, content_type, encoding, str(target))
            metadata: JsonObject = {
                "url": url,
                "final_url": str(target),
                "status": response.status_code,
                "content_type": content_type,
                "title": title,
                "bytes": len(body),
                "truncated": truncated,
            }
            return ToolOutput(markdown, metadata=metadata)
        raise Denied(f"WebFetch: {url} redirected more than {self.max_redirects} times; not followed further")

    async def _read(self, response: httpx2.Response) -> tuple[bytes, bool]:
        """The body up to `max_bytes` (decoded from gzip/br), and whether more was cut off."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                return b"".join(chunks)[: self.max_bytes], True
        return b"".join(chunks), False

    def _checked_url(self, raw: str) -> httpx2.URL:
        """Parse `raw` (numeric IPv4 hosts in any notation made dotted-quad) and apply the URL rules."""
        try:
            url = httpx2.URL(_canonical_numeric_host(raw))
        except (httpx2.InvalidURL, ValueError) as exc:
            raise InvalidArgs([f"'url' {raw!r} is not a valid URL: {exc}"]) from None
        if url.scheme not in ("http", "https"):
            raise Denied(
                f"WebFetch fetches http and https URLs only, not {url.scheme or 'a relative'}: {raw}"
            )
        host = url.host.rstrip(".").lower()
        if not host:
            raise InvalidArgs([f"'url' {raw!r} has no host"])
        if _matches(host, self.deny_hosts):
            raise Denied(f"WebFetch: the host {host} is denied")
        if self.allow_hosts is not None and not _matches(host, self.allow_hosts):
            raise Denied(f"WebFetch: the host {host} is not allowed; allowed: {', '.join(self.allow_hosts)}")
        return url


def _canonical_numeric_host(raw: str) -> str:
    """`raw` with a numeric IPv4 host (`2130706433`, `0177.0.0.1`, `0x7f.1`) dotted, as browsers read it."""
    parts = urllib.parse.urlsplit(raw)
    host = parts.hostname
    ipv4 = canonical_ipv4(host) if host else None
    if host is None or ipv4 is None or ipv4 == host:
        return raw
    userinfo, _, _ = parts.netloc.rpartition("@")
    port = f":{parts.port}" if parts.port is not None else ""
    netloc = f"{userinfo}@{ipv4}{port}" if userinfo else f"{ipv4}{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _to_markdown(body: bytes, content_type: str, encoding: str, url: str) -> tuple[str, str | None]:
    """The page as Markdown (trafilatura's main article for HTML, the text itself for text), and its title."""
    if content_type in _HTML_TYPES or (not content_type and body.lstrip()[:1] == b"<"):
        tree = trafilatura.load_html(body)
        if tree is None:  # not parseable as HTML: give the text as it is
            return f"URL: {url}\n\n{body.decode(encoding, errors='replace')}", None
        title = trafilatura.extract_metadata(tree).title  # read first: extraction prunes the tree
        article = trafilatura.extract(tree, output_format="markdown", url=url, include_links=True)
        text = article if article else trafilatura.html2txt(body)
        head = f"# {title}\n\n" if title else ""
        return f"{head}URL: {url}\n\n{text.strip()}\n", title or None
    if content_type.startswith(_TEXT_TYPES) or not content_type:
        return f"URL: {url}\n\n{body.decode(encoding, errors='replace')}", None
    raise ToolError(f"WebFetch: {url} is {content_type}, not a web page or text; it is not read")


def _matches(host: str, domains: tuple[str, ...]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


class WebFetchToolBuilder:
    """The options of a `WebFetchTool`, each checked as it is set; start with `WebFetchTool.builder()`.

    A method called again replaces what it set; what no method set keeps the constructor's
    default. `build()` makes the tool, and may be called again for another.

    Example:
        ```python
        from datetime import timedelta

        from helikon.tools import WebFetchTool

        fetch = WebFetchTool.builder().allow_hosts(["python.org"]).timeout(timedelta(seconds=10)).build()
        assert (fetch.allow_hosts, fetch.timeout) == (("python.org",), 10.0)
        ```
    """

    __slots__ = ("_options",)

    def __init__(self) -> None:
        self._options: dict[str, Any] = {}  # WebFetchTool's keyword arguments, checked

    def _set(self, option: str, value: object) -> WebFetchToolBuilder:
        self._options[option] = value
        return self

    def allow_hosts(self, domains: Iterable[str]) -> WebFetchToolBuilder:
        """Fetch only these domains and their subdomains (default: any public host)."""
        return self._set("allow_hosts", check_domains(_called("allow_hosts", "..."), domains))

    def deny_hosts(self, domains: Iterable[str]) -> WebFetchToolBuilder:
        """Never fetch these domains or their subdomains; deny wins over allow."""
        return self._set("deny_hosts", check_domains(_called("deny_hosts", "..."), domains))

    def max_bytes(self, limit: int) -> WebFetchToolBuilder:
        """The most of a body read (default 2,000,000); the rest is cut off."""
        return self._set("max_bytes", check_whole(_called("max_bytes", repr(limit)), limit))

    def timeout(self, seconds: float | timedelta) -> WebFetchToolBuilder:
        """The deadline of the whole fetch, every redirect hop included (default 30 s)."""
        return self._set("timeout", check_seconds(_called("timeout", repr(seconds)), seconds))

    def max_redirects(self, count: int) -> WebFetchToolBuilder:
        """How many redirects are followed, each hop checked again (default 5; 0: none)."""
        return self._set(
            "max_redirects", check_whole(_called("max_redirects", repr(count)), count, minimum=0)
        )

    def allow_private_hosts(self, hosts: Iterable[str]) -> WebFetchToolBuilder:
        """Hosts (`"127.0.0.1:8080"`, `"wiki.internal"`: ports 80 and 443) the SSRF guard lets through."""
        listed = [hosts] if isinstance(hosts, str) else list(hosts)
        SsrfGuard.build(enabled=True, allow_private_hosts=listed)  # a bad entry is a UserError now
        return self._set("allow_private_hosts", tuple(listed))

    def allow_private_ips(self, networks: Iterable[str]) -> WebFetchToolBuilder:
        """Addresses or CIDR networks the SSRF guard lets through on every connection, whatever its host."""
        listed = [networks] if isinstance(networks, str) else list(networks)
        SsrfGuard.build(enabled=True, allow_private_ips=listed)  # a bad entry is a UserError now
        return self._set("allow_private_ips", tuple(listed))

    def ssrf_guard(self, enabled: bool) -> WebFetchToolBuilder:
        """False turns the SSRF guard off entirely (default on; only for a fully trusted network)."""
        return self._set("ssrf_guard", check_flag(_called("ssrf_guard", repr(enabled)), enabled))

    def resolver(self, resolver: Resolver) -> WebFetchToolBuilder:
        """The resolver the SSRF guard asks (about IP literals too), `async (host, port) -> [ip, ...]`."""
        check_function(_called("resolver", repr(resolver)), resolver, _RESOLVER_SHAPE)
        return self._set("resolver", resolver)

    def user_agent(self, value: str) -> WebFetchToolBuilder:
        """The User-Agent header sent."""
        return self._set("user_agent", check_header_value(_called("user_agent", repr(value)), value))

    def build(self) -> WebFetchTool:
        """The tool, with the options set so far."""
        return WebFetchTool(**self._options)


def _called(option: str, shown: str) -> str:
    return check_spelled("WebFetchTool", option, shown, builder=True)


__all__ = ["DEFAULT_USER_AGENT", "WebFetchTool", "WebFetchToolBuilder"]
