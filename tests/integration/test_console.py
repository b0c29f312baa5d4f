"""The web console in headless Debian Chromium: chat, streaming, stop, approve, text stays text, the token."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
from server_helpers import Gate, clerk, refunds, serving

from browser import artifact, browser_page
from helikon import LlmAgent, tool
from helikon.evals import EvalReport
from helikon.server import AgentServer
from helikon.testing import FunctionModel, text_turn, tool_call_turn

TOKEN = "console-token-for-tests-0123"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> **not bold in a result**'


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny. {HOSTILE}"


def weather() -> LlmAgent[None, str]:
    def reply(request: Any) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn("It is **sunny** in Paris.\n\n- dry\n- warm <b>not markup</b>")
        return tool_call_turn("lookup", {"city": "Paris"})

    return LlmAgent(name="weather", model=FunctionModel(reply), tools=[lookup])


def console_server(*agents: Any) -> AgentServer:
    builder = AgentServer.builder().with_default_context().local_token(TOKEN)
    for agent in agents:
        builder = builder.agent(agent)
    return builder.build()


async def open_console(page: Any, base: str) -> None:
    await page.goto(f"{base}/ui?token={TOKEN}")
    await page.wait_for_selector("body[data-ready]")
    assert "token" not in page.url  # the token left the address bar


async def test_chat_streams_the_answer_and_the_tool_call_and_keeps_text_as_text() -> None:
    async with serving(console_server(weather())) as base, browser_page() as page:
        await open_console(page, base)
        await page.fill("#input", "Weather in Paris?")
        await page.press("#input", "Enter")
        answer = page.locator(".message.assistant").last
        await answer.wait_for()
        await page.wait_for_function("document.getElementById('send').disabled === false")
        assert await answer.locator("strong").inner_text() == "sunny"
        assert await answer.locator("li").count() == 2 and await answer.locator("b").count() == 0
        tool_result = page.locator(".tool .result")
        assert HOSTILE in await tool_result.inner_text()  # a result's markup is shown as text
        assert await page.locator(".messages img, .messages script").count() == 0
        assert await page.evaluate("window.pwned") is None
        events = await page.locator("#events li").all_inner_texts()
        assert any("tool_call_item" in e for e in events) and "run_completed" in events[-1]
        await page.screenshot(path=artifact("console-chat.png"))
        await page.fill("#input", "And tomorrow?")  # the same session goes on
        await page.press("#input", "Enter")
        await page.locator(".message.assistant").nth(1).wait_for()


async def test_escape_stops_a_slow_run() -> None:
    gate = Gate()
    async with serving(console_server(gate.agent())) as base, browser_page() as page:
        await open_console(page, base)
        await page.fill("#input", "go")
        await page.press("#input", "Enter")
        await page.locator(".tool").wait_for()
        await gate.entered.wait()
        await page.keyboard.press("Escape")
        error = page.locator(".message.error")
        await error.wait_for()
        assert (await error.inner_text()).startswith("cancelled:")
        assert await page.locator("#send").is_enabled()


async def test_a_paused_call_is_approved_and_the_run_finishes() -> None:
    refunds.clear()
    async with serving(console_server(clerk("Refund done."))) as base, browser_page() as page:
        await open_console(page, base)
        await page.fill("#input", "refund order 7")
        await page.press("#input", "Enter")
        await page.locator(".approval").wait_for()
        assert '"order": 7' in await page.locator(".approval textarea").input_value()
        assert refunds == []
        await page.screenshot(path=artifact("console-approval.png"))
        await page.get_by_role("button", name="Approve").click()
        await page.locator(".message.assistant", has_text="Refund done.").wait_for()
        assert refunds == [7]


async def test_without_the_token_the_console_is_refused() -> None:
    refused = ("status of 401",)
    async with serving(console_server(weather())) as base, browser_page(allow=refused) as page:
        await page.goto(f"{base}/ui")
        await page.locator("#login").wait_for()
        assert "URL the server printed" in await page.locator("#login-why").inner_text()
        wrong = await page.goto(f"{base}/ui?token=wrong-token")
        assert wrong is not None and wrong.status == 401
        await open_console(page, base)
        assert await page.locator("#agent option").all_inner_texts() == ["weather"]
        async with httpx2.AsyncClient(base_url=base) as client:
            used = await client.get("/ui", params={"token": TOKEN})  # one-time: already exchanged
            assert used.status_code == 401
            assert (await client.get("/agents")).status_code == 401  # no cookie, no token: refused
            bearer = {"Authorization": f"Bearer {TOKEN}"}
            assert (await client.get("/agents", headers=bearer)).status_code == 200  # scripts use the token


async def test_serve_prints_the_console_url_whose_token_opens_it(capsys: Any) -> None:
    server = AgentServer.builder().with_default_context().agent(weather()).build()
    task = asyncio.create_task(server.serve("127.0.0.1", 0))
    try:
        printed = ""
        async with asyncio.timeout(60):  # wait until it listens: it prints the URL then
            while True:
                printed += capsys.readouterr().out
                if "helikon console:" in printed:
                    break
                await asyncio.sleep(0.02)
        url = printed.split("helikon console: ", 1)[1].split()[0]
        async with httpx2.AsyncClient(follow_redirects=True) as client:
            assert (await client.get(url.split("/ui")[0] + "/agents")).status_code == 401
            opened = await client.get(url)  # the token becomes a cookie, then the page
            assert opened.status_code == 200 and "helikon_console" in client.cookies
            assert (await client.get(url.split("/ui")[0] + "/agents")).json()["agents"][0][
                "name"
            ] == "weather"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.aclose()


def echo() -> LlmAgent[None, str]:
    def reply(request: Any) -> Any:
        return text_turn(f"you said: {request.messages[-1].text}")

    return LlmAgent(name="echo", model=FunctionModel(reply))


async def test_the_session_tree_shows_a_branch_after_a_rewind() -> None:
    async with serving(console_server(echo())) as base, browser_page() as page:
        await open_console(page, base)
        for text in ("first", "second"):
            await page.fill("#input", text)
            await page.press("#input", "Enter")
            await page.locator(".message.assistant", has_text=f"you said: {text}").wait_for()
        await page.click("#tab-sessions")
        first_answer = page.locator(".node.assistant_message", has_text="you said: first")
        await first_answer.wait_for()
        await first_answer.get_by_role("button", name="rewind here").click()
        await page.locator(".node:not(.active)", has_text="second").first.wait_for()  # off the active branch
        await page.click("#tab-events")
        await page.fill("#input", "third")
        await page.press("#input", "Enter")
        await page.locator(".message.assistant", has_text="you said: third").wait_for()
        await page.click("#tab-sessions")
        nested = page.locator(".branch.nested")
        await nested.first.wait_for()
        assert "second" in await nested.first.inner_text()  # the old branch, drawn beside the new one
        assert await page.locator(".node.active.user_message", has_text="third").count() == 1
        await page.screenshot(path=artifact("console-session-tree.png"))
        await page.reload()  # the session is in the address: the chat comes back from its log
        await page.wait_for_selector("body[data-ready]")
        users = await page.locator(".message.user").all_inner_texts()
        assert users == ["first", "third"]  # the active branch: "second" was rewound away


async def test_a_session_is_saved_as_an_eval_case_and_reports_are_listed(tmp_path: Any) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "nightly.json").write_text(
        EvalReport.empty("nightly").to_json(), encoding="utf-8"
    )
    server = (
        AgentServer.builder()
        .with_default_context()
        .local_token(TOKEN)
        .agent(echo())
        .evals(dataset=tmp_path / "cases.jsonl", reports=tmp_path / "reports")
        .build()
    )
    async with serving(server) as base, browser_page() as page:
        await open_console(page, base)
        await page.fill("#input", "hello")
        await page.press("#input", "Enter")
        await page.locator(".message.assistant", has_text="you said: hello").wait_for()
        await page.click("#save-case")
        await page.locator("#status", has_text="saved as eval case").wait_for()
        await page.click("#tab-evals")
        link = page.locator("#evals a", has_text="nightly.json")
        await link.wait_for()
        assert (await link.get_attribute("href") or "").endswith("/evals/nightly.json")
    [line] = (tmp_path / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["expected"] == "you said: hello"


async def test_with_an_auth_layer_the_console_asks_for_a_token_and_sends_it() -> None:
    from helikon.server import BearerTokenAuth

    token = "a-bearer-token-for-the-console"
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(echo())
        .auth(BearerTokenAuth({token: "ada"}))
        .build()
    )
    async with serving(server) as base, browser_page(allow=("status of 401",)) as page:
        await page.goto(f"{base}/ui")  # the page itself loads: it holds nothing secret
        await page.locator("#login").wait_for()
        await page.fill("#login-token", token)
        await page.press("#login-token", "Enter")
        await page.locator("#agent option", has_text="echo").wait_for(state="attached")
        assert await page.locator("#login").is_hidden()
        await page.fill("#input", "hi")
        await page.press("#input", "Enter")
        await page.locator(
            ".message.assistant", has_text="you said: hi"
        ).wait_for()  # its calls carry the token


async def test_the_model_calls_tab_shows_each_request_and_its_answer() -> None:
    async with serving(console_server(weather())) as base, browser_page() as page:
        await open_console(page, base)
        await page.fill("#input", "Weather in Paris?")
        await page.press("#input", "Enter")
        await page.locator(".message.assistant").last.wait_for()
        await page.wait_for_function("document.getElementById('send').disabled === false")
        await page.click("#tab-calls")
        calls = page.locator("#calls details.call")
        await calls.nth(1).wait_for()
        assert await calls.count() == 2  # the call that asked for the tool, and the one that answered
        await calls.nth(1).locator("summary").click()
        sent = calls.nth(1).locator(".sent li")
        await sent.first.wait_for()
        texts = await sent.all_inner_texts()
        assert texts[0] == "user Weather in Paris?" and texts[1].startswith(
            'tool_call lookup({"city":"Paris"})'
        )
        assert HOSTILE in texts[2]  # the tool's result as the model read it: text, again
        assert "tools offered: lookup" in await calls.nth(1).inner_text()
        await page.screenshot(path=artifact("console-model-calls.png"))


async def test_a_compaction_marker_is_drawn_in_the_tree() -> None:
    from helikon.core.items import TextPart
    from helikon.core.session import AssistantMessageEvent, Compacted, UserMessageEvent
    from helikon.server import InMemorySessionProvider

    provider = InMemorySessionProvider()
    session = await provider.session("compacted")
    await session.append(
        [
            UserMessageEvent(content=(TextPart(text="long ago"),)),
            AssistantMessageEvent(content=(TextPart(text="noted"),)),
            Compacted(summary="They talked about long ago.", original_count=2),
            UserMessageEvent(content=(TextPart(text="and now"),)),
        ]
    )
    server = (
        AgentServer.builder()
        .with_default_context()
        .local_token(TOKEN)
        .agent(echo())
        .session_provider(provider)
        .build()
    )
    async with serving(server) as base, browser_page() as page:
        await page.goto(f"{base}/ui?token={TOKEN}")
        await page.wait_for_selector("body[data-ready]")
        await page.goto(f"{base}/ui#session=compacted")  # a new hash only: the page stays
        await page.reload()
        await page.wait_for_selector("body[data-ready]")
        await page.click("#tab-sessions")
        marker = page.locator(".node.compacted.active")
        await marker.wait_for()
        assert "earlier events summarized" in await marker.inner_text()
        order = await page.locator(".tree .node b").all_inner_texts()
        assert order == [
            "user_message",
            "assistant_message",
            "compacted",
            "user_message",
        ]  # in the tree, in place
