"""The web console on a big session: how long until a 2,000-event session is drawn, in headless Chromium.

The server: `AgentServer` with its in-memory provider, one session of N events (default
2,000: user messages, assistant answers, tool calls and their results, as a session logs
them) written before it starts. The console is opened on that session (`/ui#session=big`,
the token already exchanged for the cookie) in Debian's Chromium, driven by Playwright
(`executable_path`, never a downloaded browser), and timed:

- ready: from navigation start until the page has drawn the session's conversation (the
  console stamps `document.body.dataset.ready` with `performance.now()` then); the figure
  the issue names, target under 1.5 s;
- first contentful paint, as Chromium reports it;
- the sessions tab: a click until the session's tree is drawn.

ADK's dev UI (`adk web`) is not measured beside it yet: loading a 2,000-event session into it
needs its own session store filled the same way, which this script does not do.

Run: `uv run python benchmarks/ui.py [--events 2000] [--rounds 5]` (needs Debian's chromium:
`make test-deps`).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from typing import Any

TARGET_S = 1.5
TOKEN = "benchmark-console-token-0123456789"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


async def big_session(provider: Any, events: int) -> int:
    """Fill session `big` with about `events` events: a question, a call, its result, an answer, again."""
    from helikon.core.items import TextPart
    from helikon.core.session import AssistantMessageEvent, ToolCalled, ToolReturned, UserMessageEvent

    session = await provider.session("big")
    batch: list[Any] = []
    for i in range(events // 4):
        batch += [
            UserMessageEvent(content=(TextPart(text=f"question {i}: what is the weather in city {i}?"),)),
            ToolCalled(call_id=f"c{i}", name="weather", args={"city": f"city {i}"}),
            ToolReturned(
                call_id=f"c{i}", content=(TextPart(text=f"city {i}: sunny, 21 degrees"),), name="weather"
            ),
            AssistantMessageEvent(content=(TextPart(text=f"It is **sunny** in city {i}: 21 degrees."),)),
        ]
    await session.append(batch)
    return len(await session.events())


async def measure(events: int, rounds: int) -> tuple[int, dict[str, list[float]]]:
    import uvicorn
    from playwright.async_api import async_playwright

    from helikon import LlmAgent
    from helikon.server import AgentServer, InMemorySessionProvider
    from helikon.testing import MockModel

    provider = InMemorySessionProvider()
    logged = await big_session(provider, events)
    agent = LlmAgent(name="bench", model=MockModel.with_scripts([]))
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(agent)
        .session_provider(provider)
        .local_token(TOKEN)
        .build()
    )
    runner = uvicorn.Server(uvicorn.Config(server.app(), host="127.0.0.1", port=0, log_level="warning"))
    serving = asyncio.create_task(runner.serve())
    while not runner.started:
        if serving.done():
            serving.result()
        await asyncio.sleep(0.01)
    base = f"http://127.0.0.1:{runner.servers[0].sockets[0].getsockname()[1]}"
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("Debian's chromium is needed: run `make test-deps`")
    times: dict[str, list[float]] = {"ready": [], "first paint": [], "tree": []}
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium, args=FLAGS)
            context = await browser.new_context(viewport={"width": 1400, "height": 900})
            page = await context.new_page()
            await page.goto(f"{base}/ui?token={TOKEN}")  # the cookie, once
            await page.wait_for_selector("body[data-ready]")
            for _ in range(rounds):
                page = await context.new_page()
                await page.goto(f"{base}/ui#session=big")
                await page.wait_for_selector("body[data-ready]")
                shown = await page.locator(".message.user").count()
                assert shown == events // 4, f"the console drew {shown} questions of {events // 4}"
                times["ready"].append(float(await page.evaluate("document.body.dataset.ready")) / 1000)
                paint = await page.evaluate(
                    "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN})"
                    ".startTime"
                )
                times["first paint"].append(float(paint) / 1000)
                start = time.perf_counter()
                await page.click("#tab-sessions")
                await page.locator(".node", has_text=f"question {events // 4 - 1}").first.wait_for()
                times["tree"].append(time.perf_counter() - start)
                await page.close()
            await browser.close()
    finally:
        runner.should_exit = True
        await serving
    return logged, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logged, times = asyncio.run(measure(args.events, args.rounds))
    print(f"a session of {logged} events, {args.rounds} rounds")
    print(f"{'':12} {'median':>9} {'worst':>9}")
    for name, values in times.items():
        print(f"{name:12} {statistics.median(values) * 1000:8.0f}ms {max(values) * 1000:8.0f}ms")
    ready = statistics.median(times["ready"])
    print(f"drawn in {ready:.2f} s, target {TARGET_S} s ({ready / TARGET_S:.2f}x the target)")


if __name__ == "__main__":
    main()
