"""helikon.evals: datasets, the built-in evaluators, EvalRun and its report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from eval_agents import add, adder, sums

from helikon import JsonValue, LlmAgent, MemorySession, RunContext, UserError
from helikon.evals import (
    CaseOutcome,
    DatasetError,
    EvalCase,
    EvalDataset,
    EvalReport,
    EvalRun,
    ExactMatch,
    ExpectedTool,
    JsonSchemaEvaluator,
    LlmJudge,
    Score,
    ScoreOutcome,
    ToolCallRecord,
    ToolUseTrajectory,
)
from helikon.testing import MockModel, scripts_from_session, text_turn, tool_calls_turn

# --- datasets -------------------------------------------------------------------------------------


def test_a_dataset_reads_one_case_a_line() -> None:
    text = "\n".join(
        [
            '{"input": "2+2?", "expected": "4",'
            ' "expected_tools": ["add", {"name": "check", "args": {"n": 4}}]}',
            "",
            '{"id": "memory", "turns": [{"input": "I am Ada."}, {"input": "Who am I?", "expected": "Ada."}],'
            ' "metadata": {"tag": "recall"}}',
            '{"input": "json", "expected": {"total": 4}}',
        ]
    )
    data = EvalDataset.from_jsonl_str(text, name="smoke")
    assert [c.id for c in data] == ["case-1", "memory", "case-4"] and data.name == "smoke"
    first, memory, structured = data.cases
    assert first.expected_tools == (ExpectedTool("add"), ExpectedTool("check", {"n": 4}))
    assert memory.multi_turn and memory.expected == "Ada." and memory.metadata == {"tag": "recall"}
    assert memory.turn_case(0).input == "I am Ada." and memory.turn_case(0).expected is None
    assert structured.expected == {"total": 4} and structured.expected_tools is None
    assert EvalDataset.from_jsonl_str("\n".join(json.dumps(c.to_json()) for c in data)).cases == data.cases


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ("[1, 2]", "line 2: a case is a JSON object, not list"),
        ('{"input": "x", "expect": "y"}', "line 2: unknown field 'expect'"),
        ('{"input": 7}', "line 2: field 'input' must be a string"),
        ('{"input": "x", "id": ""}', "line 2: field 'id' must be a non-empty string"),
        ('{"input": "x", "metadata": []}', "line 2: field 'metadata' must be an object"),
        ('{"input": "x", "expected_tools": "add"}', "line 2: field 'expected_tools' must be a list"),
        ('{"input": "x", "expected_tools": [{"nom": "add"}]}', "line 2, expected_tools: .* is no tool call"),
        ('{"turns": []}', "line 2: field 'turns' must be a non-empty list"),
        ('{"turns": [{"input": "a"}], "input": "b"}', "line 2: a case has 'turns' or 'input', not both"),
        ('{"turns": [{"input": "a", "why": 1}]}', r"line 2, turns\[0\]: unknown field 'why'"),
        ('{"id": "case-1", "input": "x"}', "line 2: id 'case-1' is already the id of line 1"),
    ],
)
def test_a_bad_line_is_named(line: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        EvalDataset.from_jsonl_str('{"input": "fine"}\n' + line)


def test_a_dataset_file_and_its_schema(tmp_path: Path) -> None:
    import jsonschema

    path = tmp_path / "triage.jsonl"
    path.write_text('{"input": "hi", "expected": "hello"}\n', encoding="utf-8")
    data = EvalDataset.from_jsonl_path(path)
    assert data.name == "triage" and len(data) == 1
    schema = EvalDataset.json_schema()
    jsonschema.validate(data.cases[0].to_json(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"input": "x", "turns": [{"input": "y"}]}, schema)
    with pytest.raises(DatasetError, match="cannot read the dataset"):
        EvalDataset.from_jsonl_path(tmp_path / "missing.jsonl")


# --- the evaluators -------------------------------------------------------------------------------


def score(evaluator: Any, case: EvalCase, outcome: CaseOutcome) -> Score:
    return asyncio.run(evaluator.evaluate(case, outcome))


def test_exact_match_passes_fails_and_skips() -> None:
    assert score(ExactMatch(), EvalCase.of("q", expected="4"), CaseOutcome(output=" 4\n")).outcome == "passed"
    failed = score(ExactMatch(), EvalCase.of("q", expected="4"), CaseOutcome(output="5"))
    assert failed.outcome == "failed" and failed.reason == "expected '4', got '5'"
    assert (
        score(
            ExactMatch(case_sensitive=False), EvalCase.of("q", expected="Ada"), CaseOutcome(output="ada")
        ).value
        == 1
    )
    skipped = score(ExactMatch(), EvalCase.of("q"), CaseOutcome(output="x"))
    assert skipped.outcome == "skipped" and skipped.reason == "the case has no expected answer"
    structured = EvalCase.of("q", expected={"a": [1, 2]})
    assert score(ExactMatch(), structured, CaseOutcome(output='{"a": [1, 2]}')).outcome == "passed"
    assert "got text" in score(ExactMatch(), structured, CaseOutcome(output="nope")).reason


def test_json_schema_evaluator() -> None:
    evaluator = JsonSchemaEvaluator(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    )
    case = EvalCase.of("q")
    assert score(evaluator, case, CaseOutcome(output='{"n": 3}')).outcome == "passed"
    wrong = score(evaluator, case, CaseOutcome(output='{"n": "three"}'))
    assert wrong.outcome == "failed" and wrong.reason.startswith("n: 'three' is not of type 'integer'")
    assert score(evaluator, case, CaseOutcome(output="three")).reason.startswith("the answer is not JSON")
    with pytest.raises(UserError, match="not a valid JSON Schema"):
        JsonSchemaEvaluator({"type": "no-such-type"})


def test_score_values_are_checked() -> None:
    with pytest.raises(UserError, match="between 0 and 1"):
        Score.passed(1.5)
    with pytest.raises(UserError, match="must say why"):
        Score(0.0, ScoreOutcome.SKIPPED)


def calls(*names: str, **args: JsonValue) -> CaseOutcome:
    return CaseOutcome(tool_calls=tuple(ToolCallRecord(n, args.get(n, {})) for n in names))


@pytest.mark.parametrize(
    ("evaluator", "expected", "made", "passed", "value"),
    [
        (ToolUseTrajectory.exact(), ["a", "b"], calls("a", "b"), True, 1.0),
        (ToolUseTrajectory.exact(), ["a", "b"], calls("a", "b", "c"), False, 0.8),
        (ToolUseTrajectory.exact(), ["a", "b"], calls("b", "a"), False, 0.5),
        (ToolUseTrajectory.in_order(), ["a", "b"], calls("a", "x", "b"), True, 0.8),
        (ToolUseTrajectory.in_order(), ["a", "b"], calls("b", "a"), False, 0.5),
        (ToolUseTrajectory.any_order(), ["a", "b"], calls("b", "x", "a"), True, 0.8),
        (ToolUseTrajectory.any_order(), ["a", "a"], calls("a"), False, 2 / 3),
        (ToolUseTrajectory.any_order(), ["a"], calls(), False, 0.0),
        (ToolUseTrajectory.exact(), [], calls(), True, 1.0),
    ],
)
def test_trajectory_orders_and_their_f1(
    evaluator: ToolUseTrajectory, expected: list[str], made: CaseOutcome, passed: bool, value: float
) -> None:
    result = score(evaluator, EvalCase.of("q", expected_tools=expected), made)
    assert (result.outcome == "passed") == passed and result.value == pytest.approx(value)


def test_trajectory_match_modes() -> None:
    wanted = [ExpectedTool("pay", {"amount": 5})]
    case = EvalCase.of("q", expected_tools=wanted)
    made = CaseOutcome(tool_calls=(ToolCallRecord("pay", {"amount": 5, "note": "x"}),))
    assert score(ToolUseTrajectory.exact(), case, made).outcome == "passed"  # names only
    assert score(ToolUseTrajectory.exact(match="name_and_required_args"), case, made).outcome == "passed"
    assert score(ToolUseTrajectory.exact(match="name_and_args"), case, made).outcome == "failed"
    other = CaseOutcome(tool_calls=(ToolCallRecord("pay", {"amount": 6}),))
    assert score(ToolUseTrajectory.exact(match="name_and_required_args"), case, other).outcome == "failed"
    near = ToolUseTrajectory.exact(match="predicate", predicate=lambda e, m: abs(m.args["amount"] - 5) <= 1)  # type: ignore[index]
    assert score(near, case, other).outcome == "passed"
    assert score(ToolUseTrajectory.exact(), EvalCase.of("q"), made).outcome == "skipped"
    with pytest.raises(UserError, match="match='nearly'"):
        ToolUseTrajectory.exact(match="nearly")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="takes a predicate"):
        ToolUseTrajectory.in_order(match="predicate")


# --- running an eval ------------------------------------------------------------------------------


adder_calls: list[str] = []


def counted_adder(case: EvalCase) -> LlmAgent[None, str]:
    adder_calls.append(case.id)
    return adder(case)


def test_two_hundred_cases_at_once_come_back_in_dataset_order() -> None:
    report = (
        EvalRun.builder()
        .dataset(sums(200))
        .agent_factory(adder)
        .evaluator(ExactMatch())
        .evaluator(ToolUseTrajectory.exact())
        .concurrency(16)
        .progress(False)
        .build()
        .run_sync()
    )
    assert [c.case_id for c in report.cases] == [f"s{i}" for i in range(200)]
    assert report.passed() and all(c.outcome == "passed" for c in report.cases)
    assert report.cases[7].attempts[0][0].tool_calls == (
        ToolCallRecord("add", {"a": 7, "b": 7}, "14", False, "call_1_add"),
    )
    summary = report.summary()
    assert summary["exact_match"].mean == 1.0 and summary["exact_match"].passed == 200


def test_a_failed_run_and_a_broken_evaluator_fail_their_case_not_the_eval() -> None:
    class Broken:
        name = "broken"

        async def evaluate(self, case: EvalCase, outcome: CaseOutcome) -> Score:
            raise RuntimeError("bug")

    def agent_for(case: EvalCase) -> LlmAgent[None, str]:
        scripts = [] if case.id == "dead" else [text_turn("ok")]  # no script: the model errs
        return LlmAgent(name="a", model=MockModel.with_scripts(scripts))

    data = EvalDataset(
        (EvalCase.of("x", id="dead", expected="ok"), EvalCase.of("y", id="fine", expected="ok"))
    )
    report = (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(agent_for)
        .evaluator(ExactMatch())
        .evaluator(Broken())
        .build()
        .run_sync()
    )
    dead, fine = report.cases
    assert dead.outcome == "failed" and dead.error is not None and "model_error" in dead.error
    assert dead.scores["exact_match"].reason.startswith("the run failed")
    assert fine.scores["exact_match"].outcome == "passed"
    assert fine.scores["broken"].reason == "the evaluator raised RuntimeError: bug"
    assert not report.passed()


def test_repeat_gives_mean_spread_and_pass_at_k() -> None:
    answers = iter(["4", "5", "4"])  # a flaky agent: right, wrong, right

    def flaky(case: EvalCase) -> LlmAgent[None, str]:
        return LlmAgent(name="f", model=MockModel.with_scripts([text_turn(next(answers))]))

    report = (
        EvalRun.builder()
        .dataset(EvalDataset((EvalCase.of("2+2?", expected="4"),)))
        .agent_factory(flaky)
        .evaluator(ExactMatch())
        .repeat(3)
        .build()
        .run_sync()
    )
    [case] = report.cases
    result = case.scores["exact_match"]
    assert len(case.attempts) == 3 and (result.passes, result.runs) == (2, 3)
    assert result.value == pytest.approx(2 / 3) and result.stddev == pytest.approx(0.4714, abs=1e-3)
    assert result.pass_at_k == 1.0 and result.outcome == "failed"
    assert "(2/3)" in report.render_table()


def test_a_multi_turn_case_runs_on_one_session_and_is_scored_per_turn() -> None:
    def memory(case: EvalCase) -> LlmAgent[None, str]:
        return LlmAgent(name="m", model=MockModel.with_scripts([text_turn("Hi Ada."), text_turn("Ada.")]))

    data = EvalDataset.from_jsonl_str(
        '{"id": "recall", "turns": [{"input": "I am Ada.", "expected": "Hi Ada."},'
        ' {"input": "Who?", "expected": "Ada."}]}'
    )
    report = EvalRun.builder().dataset(data).agent_factory(memory).evaluator(ExactMatch()).build().run_sync()
    [attempt] = report.cases[0].attempts
    assert [t.output for t in attempt] == ["Hi Ada.", "Ada."]
    assert [t.scores["exact_match"].outcome for t in attempt] == ["passed", "passed"]


def test_the_report_round_trips_and_renders(tmp_path: Path) -> None:
    report = (
        EvalRun.builder().dataset(sums(3)).agent_factory(adder).evaluator(ExactMatch()).build().run_sync()
    )
    again = EvalReport.load(report.save(tmp_path / "report.json"))
    assert again == report
    table = report.render_table()
    for needle in ("s0", "s2", "exact_match", "PASSED", "mean 1.00, 3 passed, 0 failed, 0 skipped"):
        assert needle in table
    assert "metadata" not in table  # no case has any: no column for it
    tagged = EvalDataset.from_jsonl_str(
        '{"id": "t", "input": "1+1", "expected": "2", "metadata": {"tier": "gold", "n": 2}}'
    )
    wide = EvalRun.builder().dataset(tagged).agent_factory(adder).evaluator(ExactMatch()).build().run_sync()
    assert "tier=gold n=2" in wide.render_table(width=200)


def test_the_builder_refuses_what_cannot_run() -> None:
    with pytest.raises(UserError, match=r"call \.dataset"):
        EvalRun.builder().agent_factory(adder).build()
    with pytest.raises(UserError, match=r"call \.agent"):
        EvalRun.builder().dataset(sums(1)).build()
    with pytest.raises(UserError, match="concurrency=0"):
        EvalRun.builder().dataset(sums(1)).agent_factory(adder).concurrency(0).build()
    with pytest.raises(UserError, match="two evaluators are named 'exact_match'"):
        EvalRun.builder().dataset(sums(1)).agent_factory(adder).evaluator(ExactMatch()).evaluator(
            ExactMatch()
        ).build()
    with pytest.raises(UserError, match="is no evaluator"):
        EvalRun.builder().dataset(sums(1)).agent_factory(adder).evaluator("exact").build()  # type: ignore[arg-type]


def test_a_context_factory_gives_each_case_its_context() -> None:
    seen: list[str] = []

    def ctx_for(case: EvalCase) -> RunContext[dict[str, str]]:
        seen.append(case.id)
        return RunContext.ephemeral({"case": case.id})

    EvalRun.builder().dataset(sums(2)).agent_factory(adder).ctx_factory(ctx_for).build().run_sync()
    assert seen == ["s0", "s1"]


# --- the judge ------------------------------------------------------------------------------------


def judge_with(*answers: str, threshold: float = 0.7) -> LlmJudge:
    return LlmJudge(
        MockModel.with_scripts([text_turn(a) for a in answers]), rubric="Polite.", threshold=threshold
    )


def test_the_judge_passes_at_its_threshold_and_fails_below() -> None:
    case, outcome = EvalCase.of("total?", expected="4"), CaseOutcome(output="It is 4.")
    high = score(judge_with('{"score": 0.8, "reason": "kind"}'), case, outcome)
    assert (high.outcome, high.value, high.reason) == ("passed", 0.8, "kind")
    low = score(judge_with('{"score": 0.2, "reason": "rude"}'), case, outcome)
    assert (low.outcome, low.value, low.reason) == ("failed", 0.2, "rude")


def test_the_judge_sees_the_question_the_expectation_and_the_answer() -> None:
    model = MockModel.with_scripts([text_turn('{"score": 1, "reason": "ok"}')])
    asyncio.run(LlmJudge(model, "Exact.").evaluate(EvalCase.of("Q?", expected="E"), CaseOutcome(output="A")))
    [system, user] = model.requests[0].messages
    assert "Rubric:\nExact." in getattr(system, "text", "")
    assert getattr(user, "text", "") == "Question:\nQ?\n\nExpected answer:\nE\n\nThe assistant's answer:\nA"


def test_a_judge_that_answers_garbage_fails_the_turn_saying_so() -> None:
    garbage = score(
        judge_with("I think it's fine", "still no JSON"), EvalCase.of("q"), CaseOutcome(output="a")
    )
    assert garbage.outcome == "failed" and garbage.reason.startswith("the judge gave no verdict")
    out_of_range = score(
        judge_with('{"score": 7, "reason": "x"}', '{"score": 9}'), EvalCase.of("q"), CaseOutcome()
    )
    assert out_of_range.outcome == "failed" and "no verdict" in out_of_range.reason


def test_the_judge_checks_its_options() -> None:
    with pytest.raises(UserError, match="rubric"):
        LlmJudge(MockModel.with_scripts([]), rubric=" ")
    with pytest.raises(UserError, match=r"threshold=1\.5"):
        LlmJudge(MockModel.with_scripts([]), rubric="x", threshold=1.5)


# --- a recorded session becomes a test ------------------------------------------------------------


async def test_a_recorded_conversation_becomes_a_case_and_its_model_a_replay() -> None:
    session = MemorySession()
    live = MockModel.with_scripts(
        [
            tool_calls_turn([("add", {"a": 1, "b": 2})], call_ids=["c1"]),
            text_turn("3"),
            text_turn("Bye."),
        ]
    )
    agent = LlmAgent(name="adder", model=live, tools=[add])
    await agent.run("1+2", session=session)
    await agent.run("thanks", session=session)
    case = await EvalCase.from_session(session, id="prod-17")
    assert case.id == "prod-17" and [t.input for t in case.turns] == ["1+2", "thanks"]
    assert case.turns[0].expected == "3" and case.turns[0].expected_tools == (
        ExpectedTool("add", {"a": 1, "b": 2}),
    )
    assert case.turns[1].expected == "Bye." and case.turns[1].expected_tools == ()
    scripts = await scripts_from_session(session)
    report = await (
        EvalRun.builder()
        .dataset(EvalDataset((case,)))
        .agent_factory(lambda c: LlmAgent(name="adder", model=MockModel.with_scripts(scripts), tools=[add]))
        .evaluator(ExactMatch())
        .evaluator(ToolUseTrajectory.exact(match="name_and_args"))
        .run()
    )
    assert report.passed() and report.cases[0].attempts[0][0].tool_calls[0].result == "3"
    first = await EvalCase.from_session(session, upto_seq=3)
    assert [t.input for t in first.turns] == ["1+2"]
    with pytest.raises(UserError, match="no user message"):
        await EvalCase.from_session(MemorySession())


# --- rescore and compare --------------------------------------------------------------------------


def test_rescoring_gives_what_a_fresh_run_gives_without_running_anything() -> None:
    calls_before = len(adder_calls)
    first = (
        EvalRun.builder()
        .dataset(sums(5))
        .agent_factory(counted_adder)
        .evaluator(ExactMatch())
        .build()
        .run_sync()
    )
    ran = len(adder_calls) - calls_before
    both = [ExactMatch(), ToolUseTrajectory.exact(match="name_and_args")]
    fresh = (
        EvalRun.builder()
        .dataset(sums(5))
        .agent_factory(adder)
        .evaluator(both[0])
        .evaluator(both[1])
        .build()
        .run_sync()
    )
    again = asyncio.run(first.rescore([ToolUseTrajectory.exact(match="name_and_args")]))
    assert len(adder_calls) - calls_before == ran  # nothing ran again
    assert again.evaluators == fresh.evaluators
    assert [c.scores for c in again.cases] == [c.scores for c in fresh.cases]
    strict = asyncio.run(
        first.rescore([ToolUseTrajectory.exact(match="name_and_args"), ExactMatch(strip=False)])
    )
    assert strict.evaluators == ("tool_trajectory[exact,name_and_args]", "exact_match")


def test_compare_names_what_regressed_improved_and_changed() -> None:
    def answers(texts: dict[str, str]) -> EvalReport:
        def agent_for(case: EvalCase) -> LlmAgent[None, str]:
            return LlmAgent(name="a", model=MockModel.with_scripts([text_turn(texts[case.id])]))

        data = EvalDataset(tuple(EvalCase.of("q", id=i, expected="yes") for i in texts))
        return (
            EvalRun.builder()
            .dataset(data)
            .agent_factory(agent_for)
            .evaluator(ExactMatch())
            .build()
            .run_sync()
        )

    baseline = answers({"a": "yes", "b": "no", "c": "yes", "gone": "yes"})
    current = answers({"a": "no", "b": "yes", "c": "yes", "new": "yes"})
    comparison = current.compare(baseline)
    kinds = [(c.case_id, c.evaluator, c.kind) for c in comparison.changes]
    assert kinds == [
        ("a", "exact_match", "regressed"),
        ("b", "exact_match", "improved"),
        ("new", "", "added"),
        ("gone", "", "removed"),
    ]
    assert comparison.exit_code() == 1 and current.compare(current).exit_code() == 0
    assert "1 regressed, 1 improved, 0 changed, 1 added, 1 removed" in comparison.render()
