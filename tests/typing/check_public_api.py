"""Static checks of the public API's types: pyright (strict) checks this file; it is never run.

Each `assert_type` fails the type check if a public signature drifts.
"""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from helikon import (
    AgentEvent,
    AgentInput,
    FunctionTool,
    LazyModel,
    LlmAgent,
    MemorySession,
    Model,
    ModelRequest,
    ModelRetry,
    RunConfig,
    RunContext,
    RunResult,
    RunStream,
    Session,
    TokenUsage,
    ToolContext,
    model_prefixes,
    register_model_prefix,
    resolve_model,
    tool,
)
from helikon.runtime import AsyncioRunner, RetryingModel, RetryPolicy
from helikon.testing import FunctionModel, MockModel, Script, text_turn


class Answer(BaseModel):
    text: str


class Refusal(BaseModel):
    why: str


@tool
async def lookup(ctx: ToolContext[int], query: str) -> str:
    """Look something up."""
    return f"{ctx.user_ctx}:{query}"


def script(request: ModelRequest) -> Script:
    return text_turn("hi")


async def checks() -> None:
    assert_type(lookup, FunctionTool[Any])
    ctx = RunContext.ephemeral(3)
    assert_type(ctx, RunContext[int])
    assert_type(ctx.user_ctx, int)
    assert_type(ctx.with_session(MemorySession()), RunContext[int])
    session: Session = MemorySession()
    del session

    agent = LlmAgent[int](name="a", model=MockModel.with_scripts([text_turn("x")]), tools=[lookup])
    stream = agent.run("hello", context=ctx)
    assert_type(stream, RunStream)
    assert_type(await stream, RunResult[str])
    typed = await agent.run(AgentInput.from_user_text("x"), context=ctx).collect(output_type=Answer)
    assert_type(typed, RunResult[Answer])
    assert_type(typed.final_output, Answer)
    assert_type(typed.usage, TokenUsage)
    assert_type(typed.events, list[AgentEvent])
    async for event in agent.run("x", context=ctx, config=RunConfig(max_turns=3)):
        assert_type(event, AgentEvent)

    runner = AsyncioRunner[int]()
    assert_type(await runner.run(agent, "x", ctx), RunResult[str])
    assert_type(runner.run_streamed(agent, "x", ctx), RunStream)
    retrying = RetryingModel(FunctionModel(script), RetryPolicy(max_attempts=2))
    assert_type(retrying.policy, RetryPolicy)

    by_string = LlmAgent[int](name="b", model="openai:gpt-5-mini")
    assert_type(by_string.model, Model)
    assert_type(resolve_model("anthropic:claude-sonnet-4-6"), Model)
    assert_type(LazyModel("gemini:gemini-2.5-flash").build(), Model)
    assert_type(model_prefixes(), tuple[str, ...])
    register_model_prefix("typed", lambda rest: MockModel.with_scripts([]), provider="typed")


def handoff_control(target: LlmAgent[int], dynamic: type[Any] | None) -> None:
    from helikon import Handoff, HandoffInputData, remove_tool_calls

    class Escalation(BaseModel):
        reason: str

    def escalated(ctx: RunContext[int], args: Escalation) -> None: ...

    async def handed(ctx: RunContext[int]) -> None: ...

    def trim(data: HandoffInputData) -> HandoffInputData:
        return data

    typed = Handoff[int].to(target, input_type=Escalation, on_handoff=escalated, input_filter=trim)
    assert_type(typed, Handoff[int])
    assert_type(Handoff[int].to(target, on_handoff=handed, input_filter=remove_tool_calls), Handoff[int])
    assert_type(Handoff[int].to(target, input_type=dynamic), Handoff[int])
    Handoff[int].to(target, input_type=Escalation, on_handoff=lambda ctx, args: print(args.reason))


async def typed_runs(ctx: RunContext[int]) -> None:
    # The output type is inferred from `output_type`: `final_output` is an `Answer`, a `str` without one.
    # (An agent whose context type nothing names has an unknown `Ctx`, which strict mode reports.)
    model = MockModel.with_scripts([text_turn('{"text": "hi"}')])
    unnamed = LlmAgent(name="t", model=model, output_type=Answer)  # pyright: ignore[reportUnknownVariableType]
    assert_type(unnamed.run_sync("q"), RunResult[Answer])  # pyright: ignore[reportUnknownMemberType]
    assert_type(LlmAgent(name="t", model=model).run_sync("q"), RunResult[str])  # pyright: ignore[reportUnknownMemberType]
    typed = LlmAgent[int, Answer](name="t", model=model, output_type=Answer)
    assert_type(typed.run("q", context=ctx), RunStream[Answer])
    assert_type(await typed.run("q", context=ctx), RunResult[Answer])
    assert_type((await typed.run("q", context=ctx)).final_output, Answer)
    assert_type(await typed.run("q", context=ctx).collect(output_type=Refusal), RunResult[Refusal])
    assert_type(await AsyncioRunner[int]().run(typed, "q", ctx), RunResult[Answer])
    plain: LlmAgent[None] = LlmAgent[None](name="p", model=model)
    assert_type(plain.run_sync("q").final_output, str)

    # Unions: a list of types, or `A | B`.
    listed = LlmAgent[None, Answer | Refusal](name="u", model=model, output_type=[Answer, Refusal])
    assert_type(listed.run_sync("q"), RunResult[Answer | Refusal])
    piped = LlmAgent(name="u", model=model, tools=[lookup], output_type=Answer | Refusal)
    assert_type(piped.run_sync("q").final_output, Answer | Refusal)

    # Output validators are checked against the output type and the context type.
    def shout(text: str) -> str:
        return text.upper()

    async def checked(ctx: RunContext[int], answer: Answer) -> Answer:
        if not answer.text:
            raise ModelRetry("say something")
        return answer

    validated = LlmAgent(name="v", model=model, output_type=Answer, output_validators=[checked])
    assert_type(validated, LlmAgent[int, Answer])
    assert_type(
        LlmAgent[None](name="v", model=model, output_validators=[shout]).run_sync("q"), RunResult[str]
    )

    @typed.output_validator
    def trimmed(answer: Answer) -> Answer:
        return answer.model_copy(update={"text": answer.text.strip()})


async def forkd_backend_types() -> None:
    from helikon.tools import ExecutionBackend, ForkdBackend, ReconcileReport

    builder = ForkdBackend.builder("https://controller:8889").bearer_token("t").snapshot("helikon")
    assert_type(builder.build(), ExecutionBackend)  # what BashTool takes; no reconcile() on it
    concrete = builder.build_backend()
    assert_type(concrete, ForkdBackend)
    assert_type(await concrete.reconcile(), ReconcileReport)
    assert_type(concrete.reconcile_sync(), ReconcileReport)
