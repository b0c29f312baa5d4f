"""Provider-adapter streaming throughput: helikon's adapters vs. the raw official SDKs.

For each adapter, a LONG stream in the provider's real wire format is built from a real
recorded SSE stream (``shared/fixtures/cassettes``): its head (e.g. ``message_start``) and
tail (``message_delta``, ``[DONE]``, ...) are kept verbatim and its delta events are
repeated, with their real framing, until the stream holds ``--deltas`` deltas (default
5,000). Two variants per adapter: ``text`` (text deltas) and ``tool`` (tool-call argument
deltas). The same bytes are then consumed

* through helikon: ``model.invoke(request, cancel)``, counting the ``ModelEvent``s;
* through the raw official SDK: ``client.chat.completions.create(..., stream=True)`` /
  ``client.responses.create(..., stream=True)`` / ``client.messages.create(..., stream=True)``,
  counting the chunks/events it yields;

both fed by the same in-process ``httpx2`` transport that returns the prebuilt body in
``--chunk``-byte pieces (no network). Bedrock is the exception: aiobotocore talks ``aiohttp``,
so its ConverseStream body (binary AWS event-stream frames from a recorded stream, delta
frames repeated) is served by a minimal HTTP server on 127.0.0.1 started in the benchmark
process, and both ``BedrockModel.converse(id, client=...)`` and the raw
``client.converse_stream(...)["stream"]`` use a client whose ``endpoint_url`` points there
(dummy static credentials). Reported: the median time per stream over ``--rounds``
x ``--repeats`` streams (the process's CPU time by default: the work is CPU-bound and
in-process, and CPU time is not inflated by other load on the machine; ``--clock wall``
for wall time), events/s of each side, and helikon/SDK (the ratio of the two rates on the
same wire deltas, i.e. SDK time / helikon time). Target: helikon keeps >= 90% of the SDK's
rate.

Each contender (adapter x side) runs in its own subprocess (the script re-invokes itself),
one at a time, once per round, the two sides alternating; the parent gathers their JSON
and prints the table.

Run: ``uv run python benchmarks/providers.py`` (the SDKs are the project's extras).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "providers"))  # the cassette loader of the provider tests

PROMPT = "Tell me a long story."
MODEL_IDS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
SIDES = ("sdk", "helikon")
VARIANTS = ("text", "tool")
QUIET_ENV = {"OTEL_SDK_DISABLED": "true"}
_DROP_ENV_PREFIXES = ("OTEL_", "LOGFIRE_", "OPENAI_", "ANTHROPIC_")
_DROP_ENV = {"PYTHONDONTWRITEBYTECODE"}


class NotAvailable(Exception):
    """The adapter (or its SDK) is not there: reported as n/a."""


# --------------------------------------------------------------------------- wire streams


@dataclass(frozen=True)
class Wire:
    """A prebuilt response body in the provider's wire format."""

    body: bytes
    headers: dict[str, str]
    deltas: int  # delta events on the wire (the repeated ones)
    wire_events: int  # all events on the wire (excluding a ``[DONE]`` sentinel)


def _data(block: str) -> dict[str, Any] | None:
    for line in block.split("\n"):
        if line.startswith("data:"):
            raw = line[5:].strip()
            return None if raw == "[DONE]" else json.loads(raw)
    return None


def _with_data(block: str, data: dict[str, Any]) -> str:
    encoded = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return "\n".join(f"data: {encoded}" if ln.startswith("data:") else ln for ln in block.split("\n"))


def build_wire(
    body: bytes,
    headers: dict[str, str],
    is_delta: Callable[[dict[str, Any]], bool],
    n: int,
    rewrite: Callable[[dict[str, Any], int], dict[str, Any]] | None = None,
) -> Wire:
    """``body`` with the section from its first to its last delta event repeated to ``n`` deltas.

    Head and tail events are kept byte for byte; repeated delta events keep their framing
    (``event:`` line, ``data:`` line); ``rewrite(data, i)`` may change the i-th delta's data.
    """
    blocks = [b for b in body.decode().replace("\r\n", "\n").split("\n\n") if b.strip()]
    flags = [(d := _data(b)) is not None and is_delta(d) for b in blocks]
    first, last = flags.index(True), len(flags) - 1 - flags[::-1].index(True)
    section = list(zip(blocks[first : last + 1], flags[first : last + 1], strict=True))
    middle: list[str] = []
    count = 0
    while count < n:
        for block, delta in section:
            if delta:
                if count == n:
                    break
                if rewrite is not None:
                    block = _with_data(block, rewrite(_data(block) or {}, count))
                count += 1
            middle.append(block)
    out = [*blocks[:first], *middle, *blocks[last + 1 :]]
    events = sum(1 for b in out if _data(b) is not None)
    return Wire(("\n\n".join(out) + "\n\n").encode(), headers, count, events)


def _recorded(cassette: str, index: int = 0) -> tuple[bytes, dict[str, str]]:
    from cassettes import load  # tests/providers/cassettes.py

    interaction = load(cassette)[index]
    headers = {
        k: v for k, v in interaction.headers.items() if k in ("content-type", "request-id", "x-request-id")
    }
    return interaction.body, headers


def _fragments(cassette: str, index: int, pick: Callable[[dict[str, Any]], str | None]) -> list[str]:
    body, _ = _recorded(cassette, index)
    out = [p for b in body.decode().split("\n\n") if (d := _data(b)) is not None and (p := pick(d))]
    if not out:
        raise AssertionError(f"no fragments in {cassette}[{index}]")
    return out


def openai_chat_wire(variant: str, n: int) -> Wire:
    cassette = "openai_chat/test_run_stream_sync_streams_real_model.yaml"  # [0] tool call, [1] text

    def delta(d: dict[str, Any]) -> dict[str, Any]:
        return (d.get("choices") or [{}])[0].get("delta") or {}

    if variant == "text":
        return build_wire(*_recorded(cassette, 1), lambda d: bool(delta(d).get("content")), n)

    def is_args(d: dict[str, Any]) -> bool:
        calls = delta(d).get("tool_calls") or []
        return bool(calls) and "id" not in calls[0] and bool(calls[0]["function"].get("arguments"))

    return build_wire(*_recorded(cassette, 0), is_args, n)


def openai_responses_wire(variant: str, n: int) -> Wire:
    cassette = "openai_responses/test_openai_responses_stream.yaml"  # [0] function call, [1] text
    kind = "response.output_text.delta" if variant == "text" else "response.function_call_arguments.delta"
    return build_wire(*_recorded(cassette, 1 if variant == "text" else 0), lambda d: d["type"] == kind, n)


def anthropic_wire(variant: str, n: int) -> Wire:
    """Anthropic's short recordings have one delta per block: the repeated delta's payload
    cycles through the real fragments of a longer recording (text) or of a recorded
    ``input_json_delta`` stream (tool arguments)."""
    if variant == "text":
        texts = _fragments(
            "anthropic/test_anthropic_model_thinking_part_stream.yaml",
            0,
            lambda d: d.get("delta", {}).get("text") if d["type"] == "content_block_delta" else None,
        )
        body = _recorded("anthropic/test_stream_events_text.yaml")

        def text(d: dict[str, Any], i: int) -> dict[str, Any]:
            return d | {"delta": d["delta"] | {"text": texts[i % len(texts)]}}

        return build_wire(*body, lambda d: d["type"] == "content_block_delta", n, text)
    parts = _fragments(
        "anthropic/test_anthropic_mcp_servers_stream.yaml",
        0,
        lambda d: d.get("delta", {}).get("partial_json") if d["type"] == "content_block_delta" else None,
    )

    def part(d: dict[str, Any], i: int) -> dict[str, Any]:
        return d | {"delta": d["delta"] | {"partial_json": parts[i % len(parts)]}}

    def first_call(d: dict[str, Any]) -> bool:
        return d["type"] == "content_block_delta" and d["index"] == 0

    # two tool_use blocks; the first one's argument deltas are repeated
    return build_wire(*_recorded("anthropic/test_tools.yaml"), first_call, n, part)


def gemini_wire(variant: str, n: int) -> Wire:
    if variant == "tool":
        raise NotAvailable("Gemini streams whole function calls, no argument deltas")

    def is_text(d: dict[str, Any]) -> bool:
        candidate = (d.get("candidates") or [{}])[0]
        parts = candidate.get("content", {}).get("parts") or [{}]
        return "finishReason" not in candidate and bool(parts[0].get("text"))

    return build_wire(*_recorded("gemini/test_google_model_stream.yaml"), is_text, n)  # ?alt=sse


class PrebuiltTransport:
    """An ``httpx2`` transport answering every request with the same body, in chunks."""

    def __init__(self, wire: Wire, chunk: int) -> None:
        import httpx2

        body, size = wire.body, chunk

        class Body(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                for start in range(0, len(body), size):
                    yield body[start : start + size]

        class Transport(httpx2.AsyncBaseTransport):
            async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
                await request.aread()
                return httpx2.Response(200, headers=wire.headers, stream=Body(), request=request)

        self.transport = Transport()

    def client(self) -> Any:
        import httpx2

        return httpx2.AsyncClient(transport=self.transport)


# --------------------------------------------------------------------------- contenders

RunFn = Callable[[], Awaitable[tuple[int, int]]]
"""Consume one stream; returns (events yielded, delta events among them)."""


def _helikon_run(model: Any, kind: type) -> RunFn:
    from helikon.core.cancel import CancellationToken
    from helikon.core.items import UserMessage
    from helikon.core.model import ModelRequest, TokenDelta, ToolCallDelta

    request = ModelRequest(messages=[UserMessage.from_text(PROMPT)])
    want = TokenDelta if kind is str else ToolCallDelta

    async def run() -> tuple[int, int]:
        events = deltas = 0
        async for event in model.invoke(request, CancellationToken()):
            events += 1
            if event.__class__ is want and (want is TokenDelta or event.args_delta):
                deltas += 1
        return events, deltas

    return run


def _sdk_run(create: Callable[[], Awaitable[Any]], is_delta: Callable[[Any], bool]) -> RunFn:
    async def run() -> tuple[int, int]:
        events = deltas = 0
        async with await create() as stream:
            async for event in stream:
                events += 1
                if is_delta(event):
                    deltas += 1
        return events, deltas

    return run


def openai_client(transport: PrebuiltTransport) -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key="bench", http_client=transport.client(), max_retries=0)


def anthropic_client(transport: PrebuiltTransport) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key="bench", http_client=transport.client(), max_retries=0)


def build_openai_chat(side: str, variant: str, transport: PrebuiltTransport) -> RunFn:
    client = openai_client(transport)
    if side == "helikon":
        from helikon.providers.openai import OpenAIModel

        return _helikon_run(
            OpenAIModel.chat(MODEL_IDS["openai"], client=client), str if variant == "text" else dict
        )

    def create() -> Awaitable[Any]:
        return client.chat.completions.create(
            model=MODEL_IDS["openai"],
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
        )

    def is_delta(chunk: Any) -> bool:
        if not chunk.choices:
            return False
        delta = chunk.choices[0].delta
        if variant == "text":
            return bool(delta.content)
        return bool(
            delta.tool_calls and delta.tool_calls[0].function and delta.tool_calls[0].function.arguments
        )

    return _sdk_run(create, is_delta)


def build_openai_responses(side: str, variant: str, transport: PrebuiltTransport) -> RunFn:
    client = openai_client(transport)
    if side == "helikon":
        from helikon.providers.openai import OpenAIModel

        model = OpenAIModel.responses(MODEL_IDS["openai"], client=client)
        return _helikon_run(model, str if variant == "text" else dict)
    kind = "response.output_text.delta" if variant == "text" else "response.function_call_arguments.delta"

    def create() -> Awaitable[Any]:
        return client.responses.create(model=MODEL_IDS["openai"], input=PROMPT, stream=True)

    return _sdk_run(create, lambda event: event.type == kind)


def build_anthropic(side: str, variant: str, transport: PrebuiltTransport) -> RunFn:
    client = anthropic_client(transport)
    if side == "helikon":
        from helikon.providers.anthropic import AnthropicModel

        model = AnthropicModel.messages(MODEL_IDS["anthropic"], client=client)
        return _helikon_run(model, str if variant == "text" else dict)
    kind = "text_delta" if variant == "text" else "input_json_delta"

    def create() -> Awaitable[Any]:
        return client.messages.create(
            model=MODEL_IDS["anthropic"],
            max_tokens=4096,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
        )

    def is_delta(event: Any) -> bool:
        return (
            event.type == "content_block_delta"
            and event.delta.type == kind
            and (variant == "text" or bool(event.delta.partial_json))
        )

    return _sdk_run(create, is_delta)


def build_gemini(side: str, variant: str, transport: PrebuiltTransport) -> RunFn:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(httpx_async_client=transport.client())
    client = genai.Client(api_key="bench", http_options=options)
    if side == "helikon":
        from helikon.providers.gemini import GeminiModel

        return _helikon_run(GeminiModel("gemini-2.0-flash", client=client), str)

    async def run() -> tuple[int, int]:
        events = deltas = 0
        stream = await client.aio.models.generate_content_stream(model="gemini-2.0-flash", contents=PROMPT)
        async for chunk in stream:
            events += 1
            parts = (
                chunk.candidates[0].content.parts
                if chunk.candidates and chunk.candidates[0].content
                else None
            )
            if parts and parts[0].text:
                deltas += 1
        return events, deltas

    return run


def _frames(body: bytes) -> list[tuple[bytes, dict[str, Any]]]:
    """The AWS event-stream messages of ``body``: each one's raw bytes and its JSON payload."""
    out: list[tuple[bytes, dict[str, Any]]] = []
    pos = 0
    while pos < len(body):
        total = int.from_bytes(body[pos : pos + 4], "big")
        headers_len = int.from_bytes(body[pos + 4 : pos + 8], "big")
        payload = body[pos + 12 + headers_len : pos + total - 4]  # prelude 12 bytes, message CRC 4
        out.append((body[pos : pos + total], json.loads(payload) if payload else {}))
        pos += total
    return out


def bedrock_wire(variant: str, n: int) -> Wire:
    """A ConverseStream body in the binary AWS event-stream framing: the recording's frames
    (each with its own prelude and message CRC) kept byte for byte, its delta frames repeated."""
    if variant == "text":
        cassette = "bedrock/test_bedrock_model_stream.yaml"  # Nova: text deltas

        def is_delta(d: dict[str, Any]) -> bool:
            return bool(d.get("delta", {}).get("text"))
    else:
        cassette = "bedrock/test_anthropic_converse_stream_with_tool_use.yaml"  # text, then toolUse

        def is_delta(d: dict[str, Any]) -> bool:
            return bool(d.get("delta", {}).get("toolUse", {}).get("input"))

    body, headers = _recorded(cassette)
    frames = _frames(body)
    flags = [is_delta(d) for _, d in frames]
    first, last = flags.index(True), len(flags) - 1 - flags[::-1].index(True)
    section = list(zip(frames[first : last + 1], flags[first : last + 1], strict=True))
    middle: list[bytes] = []
    count = 0
    while count < n:
        for (raw, _), delta in section:
            if delta:
                if count == n:
                    break
                count += 1
            middle.append(raw)
    out = [raw for raw, _ in frames[:first]] + middle + [raw for raw, _ in frames[last + 1 :]]
    return Wire(b"".join(out), headers, count, len(out))


class LocalServer:
    """A minimal HTTP/1.1 server on 127.0.0.1 (an asyncio server in this process) answering
    every request with the prebuilt body, in ``chunk``-byte writes: aiobotocore talks
    ``aiohttp``, so it gets real sockets instead of an ``httpx2`` transport."""

    def __init__(self, wire: Wire, chunk: int) -> None:
        self.wire, self.chunk = wire, chunk
        self.url = ""
        self.closers: list[Callable[[], Awaitable[Any]]] = []  # e.g. the clients built on it
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        for close in self.closers:
            await close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body, size = self.wire.body, self.chunk
        head = (
            "HTTP/1.1 200 OK\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in self.wire.headers.items() if k != "content-length")
            + f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        try:
            while True:  # keep-alive: one request after another on this connection
                try:
                    request_head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
                    return
                length = 0
                for line in request_head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                writer.write(head)
                for start in range(0, len(body), size):
                    writer.write(body[start : start + size])
                    await writer.drain()
        finally:
            writer.close()

    def client(self) -> Any:
        raise TypeError("LocalServer feeds aiobotocore through `url`, not an httpx2 client")


def build_bedrock(side: str, variant: str, transport: Any) -> RunFn:
    from aiobotocore.config import AioConfig
    from aiobotocore.session import get_session

    session = get_session()
    config = AioConfig(retries={"max_attempts": 1, "mode": "standard"})
    kwargs = {
        "region_name": "us-east-1",
        "endpoint_url": transport.url,
        "aws_access_key_id": "bench",
        "aws_secret_access_key": "bench",  # a dummy static credential
        "config": config,
    }
    model_id = "amazon.nova-micro-v1:0" if variant == "text" else "anthropic.claude-3-sonnet-20240229-v1:0"
    holder: dict[str, Any] = {}

    async def client() -> Any:  # created inside the running loop, kept for every stream
        if "client" not in holder:
            holder["context"] = session.create_client("bedrock-runtime", **kwargs)
            holder["client"] = await holder["context"].__aenter__()
            transport.closers.append(lambda: holder["context"].__aexit__(None, None, None))
        return holder["client"]

    if side == "helikon":
        from helikon.providers.bedrock import BedrockModel

        async def run_helikon() -> tuple[int, int]:
            if "run" not in holder:
                model = BedrockModel.converse(model_id, client=await client())
                holder["run"] = _helikon_run(model, str if variant == "text" else dict)
            return await holder["run"]()

        return run_helikon
    key = "text" if variant == "text" else "toolUse"

    async def run() -> tuple[int, int]:
        events = deltas = 0
        response = await (await client()).converse_stream(
            modelId=model_id, messages=[{"role": "user", "content": [{"text": PROMPT}]}]
        )
        stream = response["stream"]
        try:
            async for event in stream:
                events += 1
                delta = event.get("contentBlockDelta")
                if delta is not None:
                    value = delta["delta"].get(key)
                    if value and (key == "text" or value.get("input")):
                        deltas += 1
        finally:
            stream.close()
        return events, deltas

    return run


@dataclass(frozen=True)
class Adapter:
    name: str
    module: str  # the helikon adapter module (n/a when missing)
    dists: tuple[str, ...]  # the SDK distributions whose versions are reported
    sdk_call: str  # what the raw-SDK side calls (for the report)
    wire: Callable[[str, int], Wire]
    build: Callable[[str, str, Any], RunFn]
    feed: Callable[[Wire, int], Any] = PrebuiltTransport  # what serves the wire bytes


ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        Adapter(
            "openai-chat",
            "helikon.providers.openai",
            ("openai",),
            "chat.completions.create(stream=True)",
            openai_chat_wire,
            build_openai_chat,
        ),
        Adapter(
            "openai-responses",
            "helikon.providers.openai",
            ("openai",),
            "responses.create(stream=True)",
            openai_responses_wire,
            build_openai_responses,
        ),
        Adapter(
            "anthropic",
            "helikon.providers.anthropic",
            ("anthropic",),
            "messages.create(stream=True)",
            anthropic_wire,
            build_anthropic,
        ),
        Adapter(
            "gemini",
            "helikon.providers.gemini",
            ("google-genai",),
            "aio.models.generate_content_stream",
            gemini_wire,
            build_gemini,
        ),
        Adapter(
            "bedrock",
            "helikon.providers.bedrock",
            ("aiobotocore", "botocore", "aiohttp"),
            "converse_stream(...)['stream']",
            bedrock_wire,
            build_bedrock,
            LocalServer,
        ),
    )
}


# --------------------------------------------------------------------------- measuring


async def measure_variant(
    adapter: Adapter, side: str, variant: str, args: argparse.Namespace
) -> dict[str, Any]:
    wire = adapter.wire(variant, args.deltas)
    transport = adapter.feed(wire, args.chunk)
    if isinstance(transport, LocalServer):
        await transport.start()
    run = adapter.build(side, variant, transport)
    events = 0
    for _ in range(args.warmup):
        events, deltas = await run()
        if (
            not wire.deltas <= deltas <= wire.deltas + 1
        ):  # + a closing chunk carrying text  # a broken setup fails loudly instead of being timed
            raise AssertionError(f"{adapter.name}/{side}/{variant}: saw {deltas} deltas, sent {wire.deltas}")
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(args.repeats):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        await run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if isinstance(transport, LocalServer):
        await transport.stop()
    samples = cpu if args.clock == "cpu" else wall
    median = statistics.median(samples)
    return {
        "deltas": wire.deltas,
        "wire_events": wire.wire_events,
        "wire_bytes": len(wire.body),
        "events": events,
        "median_s": median,
        "samples_s": samples,
        "wall_samples_s": wall,
        "cpu_samples_s": cpu,
        "events_per_s": events / median,
        "deltas_per_s": wire.deltas / median,
    }


def run_child(adapter_name: str, side: str, args: argparse.Namespace) -> dict[str, Any]:
    adapter = ADAPTERS[adapter_name]
    out: dict[str, Any] = {"adapter": adapter_name, "side": side}
    if importlib.util.find_spec(adapter.module) is None:
        return out | {"na": "adapter not available"}
    versions = {}
    for dist in (*adapter.dists, "httpx2", "paigasus-helikon"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[dist] = metadata.version(dist)
    out["versions"] = versions
    try:
        for variant in args.variants:
            try:
                out[variant] = asyncio.run(measure_variant(adapter, side, variant, args))
            except NotAvailable as exc:
                if str(exc) == "adapter not available":
                    raise
                out[variant] = {"na": str(exc)}
    except (NotAvailable, ImportError) as exc:
        return out | {"na": f"adapter not available ({exc})" if isinstance(exc, ImportError) else str(exc)}
    return out


# --------------------------------------------------------------------------- reporting


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    by = {(r["adapter"], r["side"]): r for r in results}
    headers = ["adapter", "variant", "deltas", "sdk events", "sdk time", "sdk ev/s"]
    headers += ["helikon events", "helikon time", "helikon ev/s", "helikon/sdk", ">= 0.90", "best/best"]
    rows: list[list[str]] = []
    notes: list[str] = []
    for name in args.only or list(ADAPTERS):
        sdk, hk = by.get((name, "sdk"), {}), by.get((name, "helikon"), {})
        problem = sdk.get("na") or hk.get("na") or sdk.get("error") or hk.get("error")
        if problem:
            rows.append([name, "-", *(["n/a"] * 10)])
            notes.append(f"{name}: n/a ({problem})")
            continue
        for variant in args.variants:
            s, h = sdk[variant], hk[variant]
            if "na" in s or "na" in h:
                rows.append([name, variant, *(["n/a"] * 10)])
                notes.append(f"{name} {variant}: n/a ({s.get('na') or h.get('na')})")
                continue
            # Paired by round: each round's SDK and helikon children ran back to back, so a
            # change in the machine's load between rounds cancels out of that round's ratio.
            pairs = zip(s["round_medians_s"], h["round_medians_s"], strict=True)
            ratio = statistics.median(sdk_t / hk_t for sdk_t, hk_t in pairs)  # helikon rate / SDK rate
            best = min(s["samples_s"]) / min(h["samples_s"])  # each side's fastest stream
            rows.append([
                name, variant, f"{s['deltas']:,}",
                f"{s['events']:,}", _ms(s["median_s"]), f"{s['events_per_s']:,.0f}",
                f"{h['events']:,}", _ms(h["median_s"]), f"{h['events_per_s']:,.0f}",
                f"{ratio:.2f}x", "MET" if ratio >= 0.90 else "NOT MET", f"{best:.2f}x",
            ])  # fmt: skip
    lines = [
        "Streaming throughput on the same prebuilt wire bytes (median of "
        f"{args.rounds} rounds x {args.repeats} streams, {args.clock} time; higher ev/s is better):",
        _table(headers, rows),
        "helikon/sdk = SDK time / helikon time per stream (the ratio of the two rates on the same",
        "wire deltas), the median over the rounds of each round's ratio (the two sides of a round run",
        "back to back); target: >= 0.90x. best/best = the same ratio from each side's fastest stream",
        "(other load only adds time, so the fastest stream is closest to the work's own cost).",
    ]
    lines += notes
    versions = {k: v for r in results for k, v in r.get("versions", {}).items()}
    lines.append("versions: " + ", ".join(f"{k}=={v}" for k, v in sorted(versions.items())))
    sizes = [
        f"{r['adapter']}/{v}={r[v]['wire_bytes']:,}"
        for r in results
        if r["side"] == "sdk"
        for v in args.variants
        if "wire_bytes" in r.get(v, {})
    ]
    lines.append(
        f"python {sys.version.split()[0]}; transport chunk {args.chunk:,} bytes; wire bytes: "
        + ", ".join(sizes)
    )
    return "\n".join(lines)


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV_PREFIXES) and k not in _DROP_ENV}
    return env | QUIET_ENV


def _child(name: str, side: str, args: argparse.Namespace, out_path: Path) -> dict[str, Any]:
    passthrough = [f"--{k}={getattr(args, k)}" for k in ("deltas", "repeats", "warmup", "chunk", "clock")]
    passthrough += [f"--variant={v}" for v in args.variants]
    cmd = [sys.executable, __file__, "--only", name, "--child-side", side, "--child-out", str(out_path)]
    proc = subprocess.run([*cmd, *passthrough], env=_clean_env(), check=False)
    if proc.returncode != 0 or not out_path.exists():
        return {"adapter": name, "side": side, "error": f"child failed (exit {proc.returncode})"}
    return json.loads(out_path.read_text())


def _merge(rounds: list[dict[str, Any]], variants: list[str]) -> dict[str, Any]:
    """One contender's rounds as one result: the median over all rounds' samples."""
    out = dict(rounds[0])
    for variant in variants:
        parts = [r[variant] for r in rounds if variant in r and "median_s" in r[variant]]
        if not parts:
            continue
        samples = [s for p in parts for s in p["samples_s"]]
        wall = [s for p in parts for s in p["wall_samples_s"]]
        cpu = [s for p in parts for s in p["cpu_samples_s"]]
        median = statistics.median(samples)
        out[variant] = parts[0] | {
            "round_medians_s": [p["median_s"] for p in parts],  # in round order
            "samples_s": samples,
            "wall_samples_s": wall,
            "cpu_samples_s": cpu,
            "median_s": median,
            "events_per_s": parts[0]["events"] / median,
            "deltas_per_s": parts[0]["deltas"] / median,
        }
    return out


def run_parent(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every adapter's two sides, each in its own subprocess, for ``--rounds`` rounds.

    The sides alternate (SDK first in even rounds, helikon first in odd ones) so that a
    change in the machine's load hits both about equally.
    """
    rounds: dict[tuple[str, str], list[dict[str, Any]]] = {}
    skip: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            for name in args.only or list(ADAPTERS):
                if name in skip:
                    continue
                for side in SIDES if round_no % 2 == 0 else SIDES[::-1]:
                    print(
                        f"round {round_no + 1}/{args.rounds}: {name} ({side}) ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    result = _child(name, side, args, Path(tmp) / f"{name}-{side}-{round_no}.json")
                    rounds.setdefault((name, side), []).append(result)
                    if "na" in result or "error" in result:
                        print(f"  {name}: {result.get('na') or result.get('error')}", file=sys.stderr)
                        skip.add(name)  # the same answer for the other side and later rounds
                        break
    results = []
    for name in args.only or list(ADAPTERS):
        for side in SIDES:
            got = rounds.get((name, side))
            if not got:
                got = [{"adapter": name, "side": side, "na": "adapter not available"}]
            bad = next((r for r in got if "na" in r or "error" in r), None)
            results.append(bad or _merge(got, args.variants))
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument(
        "--only", action="append", choices=list(ADAPTERS), help="measure only ADAPTER (repeatable)"
    )
    p.add_argument("--quick", action="store_true", help="shorter streams, fewer repeats: numbers are rough")
    p.add_argument("--json", type=Path, help="also write all results to this JSON file")
    p.add_argument("--deltas", type=int, help="delta events per stream (default 5000; quick 2000)")
    p.add_argument(
        "--repeats", type=int, help="timed streams per child, variant and round (default 2; quick 3)"
    )
    p.add_argument(
        "--rounds", type=int, help="rounds of one child per contender, sides alternating (default 5; quick 1)"
    )
    p.add_argument("--warmup", type=int, help="untimed, checked streams first (default 1)")
    p.add_argument("--chunk", type=int, default=16384, help="bytes per transport chunk (default 16384)")
    p.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="time per stream: the process's CPU time (default; robust to other load) or wall time",
    )
    p.add_argument("--variant", dest="variants", action="append", choices=VARIANTS, help="text and/or tool")
    p.add_argument("--child-side", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for key, (full, quick) in {
        "deltas": (5000, 2000),
        "repeats": (2, 3),
        "warmup": (1, 1),
        "rounds": (5, 1),
    }.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    args.variants = args.variants or list(VARIANTS)
    args.warmup = max(1, args.warmup)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_out is not None:  # child: one adapter, one side, results to a file
        args.child_out.write_text(json.dumps(run_child(args.only[0], args.child_side, args)))
        return 0
    results = run_parent(args)
    print(report(results, args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
