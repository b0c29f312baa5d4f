"""The eval HTML report opened in headless Debian Chromium: a big run, a case opened, the diff, no escape."""

from __future__ import annotations

import re
from pathlib import Path

from browser import artifact, browser_page
from helikon import JsonObject, LlmAgent
from helikon.core.events import TokenUsage
from helikon.evals import (
    CaseResult,
    EvalCase,
    EvalDataset,
    EvalReport,
    EvalRun,
    EvaluatorResult,
    ExactMatch,
    Score,
    ToolCallRecord,
    TurnResult,
)
from helikon.testing import MockModel, text_turn

CALLS = 10  # a call and its result each: 20 tool events a case, with its question and answer


def big_report(cases: int, *, failing_every: int, run_id: str) -> EvalReport:
    """`cases` one-turn cases of `CALLS` tool calls each; every `failing_every`-th fails."""
    results: list[CaseResult] = []
    for i in range(cases):
        calls = tuple(
            ToolCallRecord(
                f"lookup_{k}", {"q": f"query {i}.{k}", "page": k}, f"result {i}.{k}", k == 3, f"c{k}"
            )
            for k in range(CALLS)
        )
        score = (
            Score.failed(0.0, f"expected {i}, got {i + 1}") if i % failing_every == 0 else Score.passed(1.0)
        )
        turn = TurnResult(
            input=f"question {i}",
            output=f"answer {i}",
            tool_calls=calls,
            scores={"exact_match": score},
            usage=TokenUsage(input_tokens=100, output_tokens=20, requests=CALLS + 1),
            latency_s=0.01,
        )
        case: JsonObject = {"id": f"case-{i:04}", "input": f"question {i}", "expected": str(i)}
        results.append(
            CaseResult(
                i, f"case-{i:04}", ((turn,),), {"exact_match": EvaluatorResult.of([[score]])}, {}, case
            )
        )
    return EvalReport(run_id, "big", "2026-12-07T10:00:00+00:00", ("exact_match",), 1, tuple(results))


async def test_a_thousand_cases_open_scroll_and_one_expands(tmp_path: Path) -> None:
    current = big_report(1000, failing_every=7, run_id="current")
    baseline = big_report(1000, failing_every=5, run_id="baseline")
    path = current.save_html(tmp_path / "report.html", baseline)
    async with browser_page() as page:
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        await page.goto(path.as_uri())
        await page.wait_for_selector("body[data-ready]")
        assert await page.locator("#count").inner_text() == "1000 of 1000 cases"
        # Virtualised: only the rows in view (and a few around them) are in the page.
        assert await page.locator("#viewport .row").count() < 80
        assert await page.locator("#detail .turn").count() == 0  # no case's details until one is opened
        await page.evaluate("document.getElementById('viewport').scrollTop = 1e9")
        await page.locator("#viewport .row", has_text="case-0999").wait_for()
        assert await page.locator("#viewport .row").count() < 80
        await page.evaluate("document.getElementById('viewport').scrollTop = 0")
        row = page.locator("#viewport .row", has_text="case-0014")
        assert "regressed" in await row.inner_text()  # passed in the baseline (14 % 5), fails now (14 % 7)
        await row.click()
        await page.wait_for_selector("#detail .turn")
        detail = page.locator("#detail")
        assert "case-0014 — failed" in await detail.locator("h2").inner_text()
        text = await detail.inner_text()
        assert "regressed exact_match: passed 1.00 → failed 0.00" in text
        assert '{"q":"query 14.9","page":9}' in text and "result 14.9" in text  # the trajectory
        assert "error:" in text  # call 3 of every case failed
        assert "baseline tool calls" in text
        await page.screenshot(path=artifact("eval-report-case.png"))
        await page.select_option("#show", "changes")
        changed = sum(1 for i in range(1000) if (i % 7 == 0) != (i % 5 == 0))
        assert await page.locator("#count").inner_text() == f"{changed} of 1000 cases"
        await page.select_option("#show", "all")
        await page.fill("#filter", "case-099")
        assert await page.locator("#count").inner_text() == "10 of 1000 cases"
    assert requests == [path.as_uri()]  # one self-contained file: nothing else is fetched


async def test_a_run_made_by_an_agent_reads_back_in_the_page(tmp_path: Path) -> None:
    hostile = '</script><img src=x onerror="document.title=`pwned`"> /*ROWS*/ <!--CHUNKS-->'
    data = EvalDataset((EvalCase.of("<b>hi</b>", id="<i>greet</i>", expected="Hello."),))
    report = await (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(lambda case: LlmAgent(name="a", model=MockModel.with_scripts([text_turn(hostile)])))
        .evaluator(ExactMatch())
        .build()
        .run()
    )
    path = report.save_html(tmp_path / "run.html")
    async with browser_page() as page:
        await page.goto(f"{path.as_uri()}#case=%3Ci%3Egreet%3C%2Fi%3E")  # a link to the case opens it
        await page.wait_for_selector("#detail .turn")
        assert (
            await page.locator("img").count() == 0 and await page.locator("#detail i, #detail b").count() == 0
        )
        assert await page.title() == f"dataset · {report.run_id}"
        turn = page.locator("#detail .turn pre")
        assert await turn.nth(0).inner_text() == "<b>hi</b>" and await turn.nth(1).inner_text() == hostile
        assert (await page.locator("#viewport .row").first.inner_text()).startswith("<i>greet</i>")


def test_the_page_is_one_file_and_the_same_report_gives_the_same_page() -> None:
    report = big_report(130, failing_every=3, run_id="r")
    page = report.to_html()
    assert page == report.to_html()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert page.count('class="chunk"') == 3  # 130 cases in chunks of 64
    assert "default-src 'none'" in page  # and the page's policy forbids fetching anything
