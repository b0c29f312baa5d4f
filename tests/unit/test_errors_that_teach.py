"""Errors that teach (issue 18, item 12): the book's spellings work or say what helikon's are.

Covered: the book's argument order `agent.run(ctx, input)` on every agent and the runner; a
tripped guardrail's `RunError` naming the guardrail, its kind and info, and a raising one
keeping the exception's text; the book's accessor calls (`ctx.state()`, `ctx.actions()`,
`ctx.tracer()`, `ctx.cancel()`) and its builders (`LlmAgent.builder()`,
`SwarmAgent.builder()`, `CompactingSession.builder()`, `TracerHandle.builder().with_tag()`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from helikon import (
    AgentAsTool,
    CompactingSession,
    CompactingSessionBuilder,
    GraphAgent,
    GuardrailInput,
    GuardrailVerdict,
    Handoff,
    LlmAgent,
    LlmAgentBuilder,
    LoopAgent,
    MemorySession,
    ParallelAgent,
    RunContext,
    RunError,
    RunFailed,
    SequentialAgent,
    SwarmAgent,
    SwarmBuilder,
    SwarmBuildError,
    ToolContext,
    TracerHandle,
    UserError,
    tool,
)
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn, tool_call_turn


def answering(text: str = "ok", name: str = "a") -> LlmAgent[None]:
    return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(text)]))


def workflows() -> dict[str, Any]:
    """Every agent type, built so that a right call would run (typed Any: the calls are wrong on purpose)."""
    return {
        "LlmAgent": answering(),
        "SequentialAgent": SequentialAgent[None]("seq").then(answering()),
        "ParallelAgent": ParallelAgent[None]("par").add(answering()),
        "LoopAgent": LoopAgent[None]("loop", max_iterations=1).then(answering()),
        "GraphAgent": GraphAgent.builder().name("graph").node("n", answering()).build(),
        "SwarmAgent": SwarmAgent(name="swarm", members=[answering()]),
    }


# --- the book's argument order ---------------------------------------------------------------


@pytest.mark.parametrize("kind", list(workflows()))
def test_the_books_run_ctx_input_shows_the_right_call(kind: str) -> None:
    agent = workflows()[kind]
    ctx = RunContext.ephemeral(None)
    for method in (agent.run, agent.run_sync):
        with pytest.raises(UserError) as info:
            method(ctx, "How am I doing?")
        message = str(info.value)
        assert "got the RunContext as its input" in message
        assert "write agent.run('How am I doing?', context=ctx)" in message
        assert "the context by keyword (not run(ctx, input))" in message


@pytest.mark.parametrize("kind", list(workflows()))
def test_a_context_given_as_the_input_or_positionally_shows_the_right_call(kind: str) -> None:
    agent = workflows()[kind]
    ctx = RunContext.ephemeral(None)
    with pytest.raises(UserError, match=r"write agent\.run\(input, context=ctx\)$"):
        agent.run(ctx)
    with pytest.raises(UserError) as info:
        agent.run("Hi", ctx)
    assert (
        str(info.value)
        == "agent.run(input, ctx): pass the context by keyword; write agent.run('Hi', context=ctx)"
    )
    with pytest.raises(UserError) as info:
        agent.run("Hi", None, 3)
    assert "takes one positional argument, the input, and 2 more were given (NoneType, int)" in str(
        info.value
    )
    assert "pass the others by keyword (context=, config=, ...)" in str(info.value)


def test_the_right_call_still_runs_and_a_long_input_is_not_quoted() -> None:
    agent = answering("fine")
    ctx = RunContext.ephemeral(None)
    assert agent.run_sync("Hi", context=ctx).final_output == "fine"
    with pytest.raises(UserError, match=r"write agent\.run\(input, context=ctx\)$"):
        agent.run(ctx, "x" * 100)  # pyright: ignore[reportArgumentType, reportCallIssue]


def test_a_tool_context_as_the_input_is_named() -> None:
    tool_ctx = ToolContext(RunContext.ephemeral(None), call_id="c1", tool_name="t", max_agent_depth=8)
    with pytest.raises(UserError, match="got the ToolContext as its input"):
        answering().run(tool_ctx, "Hi")  # pyright: ignore[reportArgumentType, reportCallIssue]


def test_an_input_of_a_wrong_type_keeps_its_message() -> None:
    loose: Any = answering()
    with pytest.raises(UserError) as info:
        loose.run(42)
    assert str(info.value) == "run(input=...): expected a str, an AgentInput or a sequence of items, got int"


async def test_the_runner_in_the_books_order_shows_the_runners_right_call() -> None:
    agent = answering()
    ctx = RunContext.ephemeral(None)
    runner: Any = AsyncioRunner()
    with pytest.raises(UserError) as info:
        await runner.run(agent, ctx, "Hi")
    assert "runner.run() got the RunContext as its input" in str(info.value)
    assert "write runner.run(agent, input, context=ctx)" in str(info.value)
    with pytest.raises(UserError, match=r"write runner\.run\(agent, input, context=ctx\)"):
        runner.run_streamed(agent, ctx, "Hi")  # fails at the call, not on the first event
    result = await AsyncioRunner().run(agent, "Hi", context=ctx)
    assert result.final_output == "ok"


# --- guardrails ------------------------------------------------------------------------------


class BlockSecrets:
    """Trips on a secret in the text."""

    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        if "PRIVATE KEY" in input.text:
            kind = "input_policy" if input.kind == "user_text" else "output_policy"
            return GuardrailVerdict.tripwire(kind, {"matched": "PRIVATE KEY"})
        return GuardrailVerdict.pass_()


class Named(BlockSecrets):
    name = "secret-scanner"
    run_in_parallel = False


class Silent:
    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        return GuardrailVerdict.tripwire("other")


class Broken:
    async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
        raise ValueError("policy service returned 503")


async def run_error(agent: LlmAgent[None], text: str) -> RunError:
    with pytest.raises(RunError) as info:
        await agent.run(text)
    return info.value


async def test_a_tripped_input_guardrail_is_named_with_its_kind_and_info() -> None:
    agent = LlmAgent(
        name="a", model=MockModel.with_scripts([text_turn("x")]), input_guardrails=[BlockSecrets()]
    )
    error = await run_error(agent, "my BEGIN PRIVATE KEY")
    expected = 'the input guardrail BlockSecrets tripped (input_policy): {"matched":"PRIVATE KEY"}'
    assert str(error) == expected and error.error.message == expected
    assert error.kind == "guardrail_tripwire" and error.error.cause == "input_policy"


async def test_a_guardrails_name_attribute_names_it_and_a_verdict_without_info_says_so() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("x")]), input_guardrails=[Named()])
    error = await run_error(agent, "PRIVATE KEY")
    assert str(error).startswith("the input guardrail secret-scanner tripped (input_policy): ")
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("x")]), output_guardrails=[Silent()])
    assert str(await run_error(agent, "hi")) == "the output guardrail Silent tripped (other)"


async def test_a_tripped_output_guardrail_is_named_and_the_event_keeps_the_info() -> None:
    model = MockModel.with_scripts([text_turn("the PRIVATE KEY is 42")])
    agent = LlmAgent(name="a", model=model, output_guardrails=[BlockSecrets()])
    events = [event async for event in agent.run("hi")]
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert failed.error.message == (
        'the output guardrail BlockSecrets tripped (output_policy): {"matched":"PRIVATE KEY"}'
    )


async def test_a_verdict_that_names_its_guardrail_keeps_the_name_and_long_info_is_cut() -> None:
    class Verbose:
        async def check(self, ctx: RunContext[Any], input: GuardrailInput) -> GuardrailVerdict:
            return GuardrailVerdict.tripwire("input_policy", {"text": "y" * 500}, guardrail="pii/email")

    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("x")]), input_guardrails=[Verbose()])
    message = str(await run_error(agent, "hi"))
    assert message.startswith('the input guardrail pii/email tripped (input_policy): {"text":"yyy')
    assert message.endswith("...") and len(message) < 300


async def test_a_raising_guardrail_keeps_the_exception_type_and_text() -> None:
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("x")]), input_guardrails=[Broken()])
    error = await run_error(agent, "hi")
    assert str(error) == "the input guardrail Broken raised ValueError: policy service returned 503"
    assert error.error.cause == "other"


# --- the book's accessor calls ---------------------------------------------------------------


def test_the_books_accessor_calls_work_where_they_are_the_same_thing() -> None:
    ctx = RunContext.ephemeral(None)
    assert ctx.state() is ctx.state and ctx.actions() is ctx.actions and ctx.tracer() is ctx.tracer
    ctx.state().set("k", 1)
    assert ctx.state.get("k") == 1
    ctx.actions().escalate()
    assert ctx.actions.escalated


def test_a_tools_book_style_calls_reach_the_runs_state() -> None:
    @tool
    async def remember(ctx: ToolContext[None], fact: str) -> str:
        """Remember a fact."""
        ctx.state().set("fact", fact)
        return "noted"

    model = MockModel.with_scripts([tool_call_turn("remember", {"fact": "rent is due"}), text_turn("ok")])
    agent = LlmAgent(name="a", model=model, tools=[remember])
    ctx = RunContext.ephemeral(None)
    agent.run_sync("remember", context=ctx)
    assert ctx.state.get("fact") == "rent is due"


def test_ctx_cancel_called_points_at_the_token_and_cancels_nothing() -> None:
    ctx = RunContext.ephemeral(None)
    call: Callable[[], object] = ctx.cancel
    with pytest.raises(UserError) as info:
        call()
    assert str(info.value) == (
        "ctx.cancel is the run's CancellationToken (a property, no parentheses): "
        "ctx.cancel.cancel() cancels the run, ctx.cancel.is_cancelled() checks it"
    )
    assert not ctx.cancel.is_cancelled()


def test_the_tracer_builder_takes_the_books_with_tag() -> None:
    handle = TracerHandle.builder().with_session_id("demo").with_tag("example").with_tag("prod").build()
    assert handle.tags == ("example", "prod") and handle.session_id == "demo"
    assert TracerHandle.builder().with_tags(["a"]).with_tag("b").with_tags(["c"]).build().tags == ("c",)


# --- builders --------------------------------------------------------------------------------


def test_the_llm_agent_builder_is_the_constructor_one_keyword_at_a_time() -> None:
    @tool
    async def balance() -> float:
        """The balance."""
        return 1.0

    helper = answering(name="helper")
    agent = (
        LlmAgent.builder()
        .name("budget")
        .model(MockModel.with_scripts([text_turn("hi")]))
        .instructions("Be brief.")
        .description("Budgets.")
        .tool(balance)
        .handoff(helper)
        .input_guardrail(BlockSecrets())
        .output_guardrail(BlockSecrets())
        .build()
    )
    assert agent.name == "budget" and agent.description == "Budgets." and agent.instructions == "Be brief."
    assert list(agent.tools_by_name) == ["balance"] and list(agent.handoffs_by_tool) == ["transfer_to_helper"]
    assert len(agent.input_guardrails) == len(agent.output_guardrails) == 1
    assert agent.run_sync("hello").final_output == "hi"


def test_the_llm_agent_builder_names_what_is_missing_and_checks_as_the_constructor() -> None:
    with pytest.raises(
        UserError, match=r"^LlmAgent\.builder\(\): call \.name\(\.\.\.\) and \.model\(\.\.\.\) before"
    ):
        LlmAgent.builder().build()
    with pytest.raises(UserError, match=r"call \.model\(\.\.\.\) before \.build\(\)"):
        LlmAgent.builder().name("a").build()
    with pytest.raises(UserError, match="give the agent a non-empty name"):
        LlmAgent.builder().name(" ").model(MockModel.with_scripts([])).build()
    tool_a = answering(name="x")
    with pytest.raises(UserError, match="both become the tool 'transfer_to_x'"):
        LlmAgent.builder().name("a").model(MockModel.with_scripts([])).handoffs([tool_a]).handoff(
            tool_a
        ).build()


def test_the_swarm_builder_builds_the_books_swarm() -> None:
    triage = LlmAgent(
        name="triage", model=MockModel.with_scripts([tool_call_turn("transfer_to_budgeting", {})])
    )
    budgeting = answering("Cut dining out.", name="budgeting")
    investing = answering(name="investing")
    swarm = (
        SwarmAgent.builder()
        .name("support_swarm")
        .description("Finance support.")
        .member(triage)
        .members([budgeting, investing])
        .entry("triage")
        .max_handoffs(6)
        .build()
    )
    assert swarm.description == "Finance support." and swarm.entry == "triage" and swarm.max_handoffs == 6
    assert swarm.run_sync("I overspend").final_output == "Cut dining out."


def test_the_swarm_builder_raises_the_constructors_errors() -> None:
    with pytest.raises(SwarmBuildError, match=r"call \.name\(\.\.\.\) before \.build\(\)"):
        SwarmAgent.builder().member(answering()).build()
    with pytest.raises(SwarmBuildError, match="has no members"):
        SwarmAgent.builder().name("s").build()
    with pytest.raises(SwarmBuildError, match="entry 'nobody' is not a member"):
        SwarmAgent.builder().name("s").member(answering()).entry("nobody").build()


async def test_the_compacting_session_builder_builds_the_books_session() -> None:
    model = MockModel.with_scripts([text_turn("summary")])
    session = (
        CompactingSession.builder(MemorySession(), model)
        .threshold(4096)
        .prompt("Summarize.")
        .summary_role("user")
        .keep_recent_tokens(100)
        .build()
    )
    assert (session.threshold, session.prompt, session.summary_role) == (4096, "Summarize.", "user")
    assert session.keep_recent_tokens == 100 and session.inner is not None
    with pytest.raises(UserError, match=r"call \.threshold\(tokens\) before \.build\(\)"):
        CompactingSession.builder(MemorySession(), model).build()
    with pytest.raises(
        UserError, match=r"CompactingSession\(threshold=0\): must be a positive number of tokens"
    ):
        CompactingSession.builder(MemorySession(), model).threshold(0).build()


def test_a_tripwire_of_the_books_kind_names_helikons() -> None:
    with pytest.raises(UserError) as info:
        GuardrailVerdict.tripwire("InputPolicy")  # pyright: ignore[reportArgumentType]
    assert str(info.value) == (
        "GuardrailVerdict.tripwire(kind='InputPolicy'): use 'input_policy', 'output_policy' or 'other' "
        "(the kinds are snake_case: InputPolicy is 'input_policy')"
    )


class FromTheBook:
    """A custom agent written from the book: `run(self, ctx, input)`."""

    name = "custom"
    description = "Written from the book."

    def run(self, ctx: object, input: object) -> None: ...


class Flexible:
    """A custom agent that takes any keywords: it can be called as helikon calls agents."""

    name = "flexible"
    description = ""

    def run(self, input: object, **options: object) -> None: ...


def test_a_custom_agent_with_the_books_run_is_refused_where_it_is_composed() -> None:
    expected = (
        "FromTheBook.run(ctx: 'object', input: 'object') -> 'None' takes no context= or config= keyword; "
        "helikon calls agent.run(input, context=ctx, config=config), so write "
        "def run(self, input, *, context=None, config=None) (the input first, the rest by keyword)"
    )
    custom: Any = FromTheBook()
    compose: list[Callable[[], object]] = [
        lambda: SequentialAgent[None]("p").then(custom),
        lambda: ParallelAgent[None]("p").add(custom),
        lambda: GraphAgent.builder().name("g").node("n", custom).build(),
        lambda: Handoff.to(custom),
        lambda: AgentAsTool(custom),
    ]
    for call in compose:
        with pytest.raises(UserError) as info:
            call()
        assert str(info.value).endswith(expected)
    assert SequentialAgent[None]("p").then(Flexible()).steps[0][0] == "flexible"  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("cls", "builder", "given"),
    [
        (LlmAgent, LlmAgentBuilder, set[str]()),
        (SwarmAgent, SwarmBuilder, set[str]()),
        (CompactingSession, CompactingSessionBuilder, {"inner", "model"}),  # the builder's own arguments
    ],
)
def test_every_constructor_keyword_has_a_builder_setter_of_its_name(
    cls: type[object], builder: type[object], given: set[str]
) -> None:
    # A keyword added to the constructor must get its setter, or the two forms drift apart.
    keywords = set(inspect.signature(cls.__init__).parameters) - {"self"} - given
    assert sorted(k for k in keywords if not callable(getattr(builder, k, None))) == []
