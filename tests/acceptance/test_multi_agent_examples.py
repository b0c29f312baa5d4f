"""The book's triage handoff and finance swarm, run end to end on scripted models and a real session.

Each scripted model answers from what it is sent (like a real model would), not from a
fixed call order: the triage routes on the question's words, the specialists answer from
the conversation they were handed.
"""

from __future__ import annotations

from pathlib import Path

from helikon import (
    AgentUpdated,
    Handoff,
    HandoffItem,
    LlmAgent,
    ModelRequest,
    RunCompleted,
    RunContext,
    SwarmAgent,
)
from helikon.core.model import Usage
from helikon.runtime import AsyncioRunner
from helikon.sessions.sqlite import SqliteDatabase, SqliteSession
from helikon.testing import FunctionModel, Script, text_turn, tool_call_turn


def last_user_text(request: ModelRequest) -> str:
    return next(m.text for m in reversed(request.messages) if m.type == "user")  # type: ignore[union-attr]


def router(request: ModelRequest) -> Script:
    """The triage model: transfers investing questions to investing, the rest to budgeting."""
    question = last_user_text(request).lower()
    target = (
        "investing_specialist" if "invest" in question or "retire" in question else "budgeting_specialist"
    )
    return tool_call_turn(f"transfer_to_{target}", {}, usage=Usage(input_tokens=50, output_tokens=5))


def specialist_answer(prefix: str) -> FunctionModel:
    def answer(request: ModelRequest) -> Script:
        assert request.messages[0].type == "system"  # its own instructions lead
        assert request.messages[-1].type == "tool_result"  # it continues the handed-over transcript
        return text_turn(
            f"{prefix}: {last_user_text(request)}", usage=Usage(input_tokens=80, output_tokens=20)
        )

    return FunctionModel(answer)


def build_triage() -> LlmAgent[None]:
    budgeting = LlmAgent(
        name="budgeting specialist",
        description="Answers questions about monthly budgets and cutting spending.",
        model=specialist_answer("Budget tip"),
        instructions="You are a budgeting specialist. Give concrete, friendly advice.",
    )
    investing = LlmAgent(
        name="investing specialist",
        description="Answers questions about investing, portfolios, and retirement.",
        model=specialist_answer("Investing tip"),
        instructions="You are an investing specialist. Give concrete, prudent advice.",
    )
    return LlmAgent(
        name="triage",
        model=FunctionModel(router),
        instructions="Classify the user's personal-finance question and transfer to the right specialist.",
        handoffs=[Handoff.to(budgeting), Handoff.to(investing)],
    )


async def test_the_triage_handoff_example(tmp_path: Path) -> None:
    triage = build_triage()
    async with await SqliteDatabase.open(tmp_path / "s.db") as db:
        session = await SqliteSession.open(db, "user-1")
        ctx = RunContext.ephemeral(None).with_session(session)
        result = await AsyncioRunner[None]().run(triage, "How should I start investing $5,000?", ctx)
        assert result.final_output == "Investing tip: How should I start investing $5,000?"
        handoff = next(e for e in result.events if isinstance(e, HandoffItem))
        assert (handoff.from_agent, handoff.to_agent) == ("triage", "investing specialist")
        assert next(e for e in result.events if isinstance(e, AgentUpdated)).agent == "investing specialist"
        completed = result.events[-1]
        assert isinstance(completed, RunCompleted) and completed.usage.input_tokens == 130
        # A second question in the same session goes through triage again, with the history.
        result = await AsyncioRunner[None]().run(triage, "How do I cut my grocery spending?", ctx)
        assert result.final_output.startswith("Budget tip")
        stored = [e.type for _, e in await session.events()]
        assert stored.count("handoff_occurred") == 2 and stored.count("tool_returned") == 2


def swarm_member(name: str, description: str, routes: dict[str, str]) -> LlmAgent[None]:
    """A member that hands off when the question is another member's topic, else answers."""

    def decide(request: ModelRequest) -> Script:
        question = last_user_text(request).lower()
        for word, target in routes.items():
            if word in question and request.messages[-1].type != "tool_result":
                return tool_call_turn(f"transfer_to_{target}", {})
        return text_turn(f"{name} answers: {question}")

    return LlmAgent(name=name, description=description, model=FunctionModel(decide))


async def test_the_finance_swarm_example() -> None:
    triage = swarm_member("triage", "Routes questions.", {"budget": "budgeting", "invest": "investing"})
    budgeting = swarm_member("budgeting", "Budgets and spending.", {"invest": "investing"})
    investing = swarm_member("investing", "Investing and retirement.", {})
    swarm = SwarmAgent(
        name="support_swarm",
        description="A personal-finance support swarm covering budgeting and investing.",
        members=[triage, budgeting, investing],
        entry="triage",
        max_handoffs=6,
    )
    result = await swarm.run("Should I invest my budget surplus?")
    handoffs = [(e.from_agent, e.to_agent) for e in result.events if isinstance(e, HandoffItem)]
    assert handoffs == [("triage", "budgeting")] or handoffs == [("triage", "investing")]
    assert result.final_output.endswith("should i invest my budget surplus?")
    assert [e.type for e in result.events].count("run_started") == 1
