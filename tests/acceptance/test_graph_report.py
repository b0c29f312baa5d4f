"""The book's GraphAgent example: spending and income analysed in parallel, fanned into a summary.

The three agents are the book's (names, descriptions, instructions); their models are
scripted. The spending and income models each wait until the other has started, so the
run only completes if the two nodes really overlap; the summary's model composes its
report from the labelled messages the graph hands it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from helikon import (
    AgentInput,
    GraphAgent,
    LlmAgent,
    MessageOutput,
    ModelRequest,
    RunContext,
    SystemMessage,
    UserMessage,
)
from helikon.core.model import Usage
from helikon.testing import FunctionModel, text_turn

QUESTION = "I earn $6,000/month and spend $4,500/month, mostly on rent and groceries."
SPENDING = "You spend $4,500 a month, mostly on rent and groceries."
INCOME = "You earn $6,000 a month."


def build_graph(requests: dict[str, ModelRequest]) -> GraphAgent[Any]:
    started: set[str] = set()
    both_started = asyncio.Event()

    def analyst(name: str, answer: str) -> FunctionModel:
        async def reply(request: ModelRequest) -> Any:
            requests[name] = request
            started.add(name)
            if len(started) == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), 5)  # the sibling node runs meanwhile
            return text_turn(answer, usage=Usage(input_tokens=40, output_tokens=12))

        return FunctionModel(reply)

    def summarize(request: ModelRequest) -> Any:
        requests["summary"] = request
        labelled = {
            m.text.split("\n", 1)[0]: m.text.split("\n", 1)[1]
            for m in request.messages
            if isinstance(m, UserMessage) and m.text.startswith("[")
        }
        spending, income = labelled["[spending output]"], labelled["[income output]"]
        return text_turn(
            f"Report: {income} {spending} That leaves $1,500 to save.", usage=Usage(input_tokens=90)
        )

    spending = LlmAgent(
        name="spending",
        description="Summarizes the household's monthly spending.",
        model=analyst("spending", SPENDING),
        instructions="Summarize the spending side of the user's finances in one or two sentences.",
    )
    income = LlmAgent(
        name="income",
        description="Summarizes the household's monthly income.",
        model=analyst("income", INCOME),
        instructions="Summarize the income side of the user's finances in one or two sentences.",
    )
    summary = LlmAgent(
        name="summary",
        description="Combines the spending and income summaries into one report.",
        model=FunctionModel(summarize),
        instructions=(
            "Combine the spending and income summaries you were given into one concise financial report."
        ),
    )
    return (
        GraphAgent.builder()
        .name("finance_report")
        .description("Fans spending and income analysis into a combined summary.")
        .node("spending", spending)
        .node("income", income)
        .node("summary", summary)
        .edge("spending", "summary")
        .edge("income", "summary")
        .build()
    )


async def test_the_graph_report_fans_spending_and_income_into_one_summary() -> None:
    requests: dict[str, ModelRequest] = {}
    ctx = RunContext.ephemeral(None)
    graph = build_graph(requests)
    result = await asyncio.wait_for(graph.run(AgentInput.from_user_text(QUESTION), context=ctx), 10)

    # A single sink: the graph's final output is the summary's text, verbatim.
    expected = f"Report: {INCOME} {SPENDING} That leaves $1,500 to save."
    assert result.final_output == expected
    final = result.events[-2]
    assert isinstance(final, MessageOutput) and final.item.agent == "finance_report"

    # Each analyst saw the book's instructions and the question, nothing else.
    for name in ("spending", "income"):
        messages = requests[name].messages
        assert isinstance(messages[0], SystemMessage) and name in messages[0].text
        assert [m.text for m in messages[1:]] == [QUESTION]  # type: ignore[union-attr]

    # The summary got the question plus one labelled message per predecessor, in edge order.
    assert [m.text for m in requests["summary"].messages[1:]] == [  # type: ignore[union-attr]
        QUESTION,
        f"[spending output]\n{SPENDING}",
        f"[income output]\n{INCOME}",
    ]

    # Shared state holds every node's output; the usage covers all three model calls.
    assert ctx.state.to_dict() == {"spending": SPENDING, "income": INCOME, "summary": expected}
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (170, 24, 3)

    # One outer start and completion; the summary starts only after both analysts finished.
    kinds = [e.type for e in result.events]
    assert kinds[0] == "run_started" and kinds.count("run_started") == 1
    assert kinds[-1] == "run_completed" and kinds.count("run_completed") == 1
    order = [
        (e.type, getattr(e, "agent", None) or getattr(getattr(e, "item", None), "agent", None))
        for e in result.events
        if e.type in ("agent_updated", "message_output")
    ]
    assert order[:2] == [("agent_updated", "spending"), ("agent_updated", "income")]
    assert order.index(("agent_updated", "summary")) == 4
    assert set(order[2:4]) == {("message_output", "spending"), ("message_output", "income")}
