"""The eval HTML report in headless Chromium: how long a big run's page takes to open, scroll, expand.

The run: N cases (default 1,000) made by a real `EvalRun`, each a scripted agent that calls
a lookup tool ten times (ten calls and ten results: 20 tool events a case) and answers; one
evaluator in two runs, the second compared against the first (`to_html(baseline)`), so the
page carries the diff too. The page is opened from disk in Debian's Chromium, driven by
Playwright (`executable_path`, never a downloaded browser), and timed:

- open: from navigation start to the table drawn (`performance.now()` when the page's
  script is done; the figure the issue names, target under 2 s);
- scroll: through the whole table in 40 jumps, each waited until drawn (two frames);
- expand: a click on a case until its turns and tool calls are shown (its chunk
  decompressed).

No peer writes a comparable self-contained report (pydantic-evals reports to a terminal or
Logfire; Inspect's viewer is a server app), so the figure is set against its target.

Run: `uv run python benchmarks/eval_report_html.py [--cases 1000] [--rounds 5]`
(needs Debian's chromium: `make test-deps`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from headless_chromium import FLAGS, chromium_path

TARGET_S = 2.0
CALLS = 10


def make_report(cases: int, wrong_every: int) -> Any:
    from helikon import LlmAgent, tool
    from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch
    from helikon.testing import MockModel, text_turn, tool_calls_turn

    @tool
    def lookup(q: str, page: int) -> str:
        """Look something up."""
        return f"{q}: page {page} of the results, with a few lines of text to carry"

    data = EvalDataset(
        tuple(EvalCase.of(f"question {i}", id=f"case-{i:04}", expected=f"answer {i}") for i in range(cases))
    )

    def agent_for(case: EvalCase) -> LlmAgent[None, str]:
        i = int(case.id.removeprefix("case-"))
        calls = [("lookup", {"q": f"query {i}", "page": k}) for k in range(CALLS)]
        answer = f"answer {i + 1}" if i % wrong_every == 0 else f"answer {i}"
        model = MockModel.with_scripts([tool_calls_turn(calls), text_turn(answer)])
        return LlmAgent(name="researcher", model=model, tools=[lookup])

    return (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(agent_for)
        .evaluator(ExactMatch())
        .concurrency(8)
        .build()
        .run_sync()
    )


def measure(path: Path, rounds: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    chromium = chromium_path()
    times: dict[str, list[float]] = {"open": [], "scroll": [], "expand": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=list(FLAGS))
        for _ in range(rounds):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready]")
            times["open"].append(float(page.evaluate("document.body.dataset.ready")) / 1000)
            start = time.perf_counter()
            page.evaluate(
                """async () => {
                    const vp = document.getElementById("viewport");
                    const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r)));
                    for (let k = 1; k <= 40; k++) { vp.scrollTop = vp.scrollHeight * k / 40; await frame(); }
                }"""
            )
            times["scroll"].append(time.perf_counter() - start)
            page.evaluate("document.getElementById('viewport').scrollTop = 0")
            start = time.perf_counter()
            page.locator("#viewport .row", has_text="case-0010").click()
            page.wait_for_selector("#detail .turn")
            times["expand"].append(time.perf_counter() - start)
            page.close()
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    baseline, current = make_report(args.cases, 5), make_report(args.cases, 7)
    made = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = current.save_html(Path(tmp) / "report.html", baseline)
        written = time.perf_counter() - start
        size = path.stat().st_size
        times = measure(path, args.rounds)
    events = sum(2 * len(t.tool_calls) + 2 for c in current.cases for a in c.attempts for t in a)
    print(f"{args.cases} cases, {events / args.cases:.0f} events a case; two eval runs took {made:.1f} s")
    print(f"page: {size / 1e6:.2f} MB, written in {written * 1000:.0f} ms")
    print(f"{'':8} {'median':>9} {'worst':>9}")
    for name, values in times.items():
        print(f"{name:8} {statistics.median(values) * 1000:8.0f}ms {max(values) * 1000:8.0f}ms")
    total = statistics.median(times["open"]) + statistics.median(times["scroll"])
    print(f"open + scroll: {total:.2f} s, target {TARGET_S:.0f} s ({total / TARGET_S:.2f}x the target)")


if __name__ == "__main__":
    main()
