"""A conversation recorded on a durable session becomes an eval case and a replayable model."""

from __future__ import annotations

from pathlib import Path

from helikon import LlmAgent, tool
from helikon.evals import EvalCase, EvalDataset, EvalRun, ExactMatch, ExpectedTool, ToolUseTrajectory
from helikon.sessions.sqlite import open_session
from helikon.testing import MockModel, scripts_from_session, text_turn, tool_call_turn

refunded: list[int] = []


@tool
def refund(order: int) -> str:
    """Refund an order."""
    refunded.append(order)
    return f"refunded {order}"


async def test_a_sqlite_session_becomes_a_regression_test(tmp_path: Path) -> None:
    path = tmp_path / "prod.db"
    live = MockModel.with_scripts([tool_call_turn("refund", {"order": 7}), text_turn("Refunded order 7.")])
    async with await open_session("ticket-7", path=path) as session:
        await LlmAgent(name="clerk", model=live, tools=[refund]).run("refund order 7", session=session)
    async with await open_session("ticket-7", path=path) as session:  # later, elsewhere
        case = await EvalCase.from_session(session, id="ticket-7")
        scripts = await scripts_from_session(session)
    assert case.expected == "Refunded order 7." and case.expected_tools == (
        ExpectedTool("refund", {"order": 7}),
    )

    def replay(case: EvalCase) -> LlmAgent[None, str]:
        return LlmAgent(name="clerk", model=MockModel.with_scripts(scripts), tools=[refund])

    report = await (
        EvalRun.builder()
        .dataset(EvalDataset((case,)))
        .agent_factory(replay)
        .evaluator(ExactMatch())
        .evaluator(ToolUseTrajectory.exact(match="name_and_args"))
        .run()
    )
    assert report.passed() and refunded == [7, 7]  # live, then replayed
