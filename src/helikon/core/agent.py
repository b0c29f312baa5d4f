"""Agents: the `Agent` protocol and `LlmAgent`, the model-driven agent.

Example:
    ```python
    from helikon import LlmAgent, tool
    from helikon.testing import MockModel, text_turn, tool_call_turn

    @tool
    async def budget_status(category: str) -> dict[str, float]:
        \"\"\"Look up the monthly budget for a category.\"\"\"
        return {"budget": 250.0, "spent": 312.4}

    agent = LlmAgent(
        name="budget-assistant",
        model=MockModel.with_scripts([
            tool_call_turn("budget_status", {"category": "Dining"}),
            text_turn("You are $62.40 over your dining budget."),
        ]),
        instructions="You are a budgeting assistant.",
        tools=[budget_status],
    )
    result = agent.run_sync("How am I doing on dining?")
    assert result.final_output == "You are $62.40 over your dining budget."
    ```
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, Never, Protocol, TypeAlias, overload, runtime_checkable

from ._internal.peer_hints import AGENT_HINTS, PeerHints, no_attribute
from ._internal.sync import run_sync
from .agent_builder import LlmAgentBuilder
from .context import RunConfig, RunContext
from .exceptions import UserError
from .governance import Guardrail, Hook
from .governance.guardrails import checked_guardrails
from .handoff import Handoff
from .input import AgentInput, History, RunInput, continue_from, to_agent_input
from .items import SystemMessage
from .model import Model, ModelSettings, ToolDef
from .model_strings import checked_model
from .output import OutputSpec
from .output_validators import OutputCheck, OutputValidatorFunc, output_checks
from .result import RunResult, RunStream
from .tool_sources import ToolSource, checked_sources
from .tools import PrepareTools, Tool
from .toolsets import Toolset

if TYPE_CHECKING:
    from .approvals import Approver, Decision
    from .run.sink import EventSink
    from .session import Session

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:  # for the PEP 696 defaults below (`LlmAgent[None]` is `LlmAgent[None, str]`)
    from typing_extensions import TypeVar

Ctx = TypeVar("Ctx")
OutT = TypeVar("OutT", default=str)
"""What an `LlmAgent`'s runs produce: its `output_type`, `str` without one."""
AgentOutT = TypeVar("AgentOutT", covariant=True, default=Any)
"""What an `Agent`'s runs produce (`Agent[Ctx]` is any agent)."""
C = TypeVar("C")
V = TypeVar("V")

Instructions: TypeAlias = "str | Callable[[RunContext[Any]], str | Awaitable[str]]"
"""An agent's system prompt: static text, or a function of the run's context (sync or async)."""


_OVERRIDES: ContextVar[dict[object, Model] | None] = ContextVar("helikon.agent_overrides", default=None)
"""The models `LlmAgent.override` put in place in this context, by agent key (None: none)."""


@functools.cache
def _driver() -> ModuleType:
    # The loop and its driver load on the first run, not at `import helikon`.
    from .run import driver as module

    return module


@functools.cache
def _turn() -> ModuleType:
    # So does what puts a run in a turn on its session.
    from .session import turn

    return turn


@runtime_checkable
class Agent(Protocol[Ctx, AgentOutT], metaclass=PeerHints):
    """Anything that runs: an `LlmAgent` or a workflow agent. `run` streams `AgentEvent`s.

    helikon's own agents also have `drive(input, context, config, sink)`: the run itself, its
    events written to a sink, which is what a runner calls (so that it never goes through the
    public `run` again). An agent of yours needs only `run`: a runner forwards its stream.
    """

    @property
    def name(self) -> str:
        """The agent's name."""
        ...

    @property
    def description(self) -> str:
        """What the agent does (shown to models that hand off to it)."""
        ...

    def run(
        self, input: RunInput, *, context: RunContext[Ctx] | None = None, config: RunConfig | None = None
    ) -> RunStream[AgentOutT]:
        """Start a run; the returned stream yields events and can be awaited for the result."""
        ...


class LlmAgent(Generic[Ctx, OutT]):
    """An agent driven by a model: it calls tools until the model answers.

    `LlmAgent[Ctx, OutT]`: `Ctx` is the user context its tools read, `OutT` what its runs
    produce (`result.final_output`): the `output_type`, or `str` without one.

    Args:
        name: The agent's name (non-empty).
        model: Any `Model`, or a model string such as `"openai:gpt-5-mini"` (see
            `resolve_model`: checked now, built on the first model call, so no API key is
            needed to build the agent).
        instructions: The system prompt: text, or a (sync or async) function of the `RunContext`.
        description: What the agent does, for agents that hand off to it.
        tools: The tools the model may call (unique names), and `Toolset`s whose tools join them.
        output_type: Make the run produce this type (a pydantic model or any `TypeAdapter` type;
            a union such as `Weather | Refusal`, or a list of types, gives the member that
            validates). `await agent.run(...)` and `run_sync` give it as `final_output`.
        output_validators: Functions of `(output)` or `(ctx, output)`, sync or async, that
            check the final output and return it (possibly changed); one raising
            `ModelRetry("why")` sends the model back (see `output_retries`). Also
            `@agent.output_validator`.
        output_retries: How often the final output may be sent back to the model: for
            schema errors and for a validator's `ModelRetry` (default 1).
        model_settings: Provider knobs for every call.
        run_config: The default `RunConfig` of this agent's runs.
        hooks: Agent-level hooks (they fire before the run context's hooks).
        input_guardrails: Checks on the user's text (beside the first model call).
        output_guardrails: Checks on the final text before the run completes.
        handoffs: Agents (or `Handoff`s) the model may transfer the conversation to, each
            as a `transfer_to_<slug>` tool.
        prepare_tools: A (sync or async) function of the `RunContext` and the tool
            definitions on offer, called before each model turn, that returns the ones to
            offer: filtered, rewritten, or renamed (see `PrepareTools`).
        tool_sources: Where more tools come from at run time (an MCP server handle, any
            `ToolSource`): each is asked for its tools before every model turn, and they are
            offered beside `tools` (see `helikon.core.tool_sources`).
    """

    __slots__ = (
        "_instructions",
        "_key",
        "_model",
        "_system",
        "_transition_ctx",
        "description",
        "dynamic_tools",
        "handoff_defs",
        "handoffs",
        "handoffs_by_tool",
        "hooks",
        "input_guardrails",
        "model_settings",
        "name",
        "output_checks",
        "output_guardrails",
        "output_retries",
        "output_spec",
        "output_type",
        "prepare_tools",
        "run_config",
        "tool_defs",
        "tool_sources",
        "tools",
        "tools_by_name",
    )

    # One overload per form of `output_type`, so that a type checker infers `OutT`: the
    # type, the union of the listed types, or `str` without one.
    @overload
    def __init__(
        self: LlmAgent[C, V],
        *,
        name: str,
        model: Model | str,
        instructions: Instructions | None = None,
        description: str = "",
        tools: Sequence[Tool[C] | Toolset[C]] = (),
        output_type: type[V],
        output_validators: Sequence[OutputValidatorFunc[C, V]] = (),
        output_retries: int = 1,
        model_settings: ModelSettings | None = None,
        run_config: RunConfig | None = None,
        hooks: Sequence[Hook[C]] = (),
        input_guardrails: Sequence[Guardrail[C]] = (),
        output_guardrails: Sequence[Guardrail[C]] = (),
        handoffs: Sequence[Handoff[C] | Agent[C]] = (),
        prepare_tools: PrepareTools | None = None,
        tool_sources: Sequence[ToolSource[Any]] = (),
    ) -> None: ...

    @overload
    def __init__(
        self: LlmAgent[C, V],
        *,
        name: str,
        model: Model | str,
        instructions: Instructions | None = None,
        description: str = "",
        tools: Sequence[Tool[C] | Toolset[C]] = (),
        output_type: Sequence[type[V]],
        output_validators: Sequence[OutputValidatorFunc[C, V]] = (),
        output_retries: int = 1,
        model_settings: ModelSettings | None = None,
        run_config: RunConfig | None = None,
        hooks: Sequence[Hook[C]] = (),
        input_guardrails: Sequence[Guardrail[C]] = (),
        output_guardrails: Sequence[Guardrail[C]] = (),
        handoffs: Sequence[Handoff[C] | Agent[C]] = (),
        prepare_tools: PrepareTools | None = None,
        tool_sources: Sequence[ToolSource[Any]] = (),
    ) -> None: ...

    @overload
    def __init__(
        self: LlmAgent[C, str],
        *,
        name: str,
        model: Model | str,
        instructions: Instructions | None = None,
        description: str = "",
        tools: Sequence[Tool[C] | Toolset[C]] = (),
        output_type: None = None,
        output_validators: Sequence[OutputValidatorFunc[C, str]] = (),
        output_retries: int = 1,
        model_settings: ModelSettings | None = None,
        run_config: RunConfig | None = None,
        hooks: Sequence[Hook[C]] = (),
        input_guardrails: Sequence[Guardrail[C]] = (),
        output_guardrails: Sequence[Guardrail[C]] = (),
        handoffs: Sequence[Handoff[C] | Agent[C]] = (),
        prepare_tools: PrepareTools | None = None,
        tool_sources: Sequence[ToolSource[Any]] = (),
    ) -> None: ...

    def __init__(
        self,
        *,
        name: str,
        model: Model | str,
        instructions: Instructions | None = None,
        description: str = "",
        tools: Sequence[Tool[Ctx] | Toolset[Ctx]] = (),
        output_type: Any = None,
        output_validators: Sequence[OutputValidatorFunc[Ctx, Any]] = (),
        output_retries: int = 1,
        model_settings: ModelSettings | None = None,
        run_config: RunConfig | None = None,
        hooks: Sequence[Hook[Ctx]] = (),
        input_guardrails: Sequence[Guardrail[Ctx]] = (),
        output_guardrails: Sequence[Guardrail[Ctx]] = (),
        handoffs: Sequence[Handoff[Ctx] | Agent[Ctx]] = (),
        prepare_tools: PrepareTools | None = None,
        tool_sources: Sequence[ToolSource[Any]] = (),
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise UserError(f"LlmAgent(name={name!r}): give the agent a non-empty name")
        model = checked_model(model, "LlmAgent")
        if instructions is not None and not isinstance(instructions, str) and not callable(instructions):
            raise UserError(
                f"LlmAgent(instructions={instructions!r}): give a string or a function of the RunContext"
            )
        if model_settings is not None and not isinstance(model_settings, ModelSettings):
            raise UserError(f"LlmAgent(model_settings={model_settings!r}): expected a ModelSettings")
        if run_config is not None and not isinstance(run_config, RunConfig):
            raise UserError(f"LlmAgent(run_config={run_config!r}): expected a RunConfig")
        self.name = name
        self._model = model
        self._key = object()  # what an override is keyed by; copies (`with_handoffs`) share it
        self.description = description
        self._instructions = instructions
        # The driver's last transition context for this agent, with what it was made of
        # (core/run/driver.py reuses it while all of that is the same).
        self._transition_ctx: tuple[tuple[object, ...], Any] | None = None
        # Static instructions make the same system message every run: made once.
        self._system = (
            (SystemMessage(text=instructions),) if isinstance(instructions, str) and instructions else ()
        )
        self.model_settings = model_settings or ModelSettings()
        self.run_config = run_config or RunConfig()
        self.hooks: tuple[Hook[Ctx], ...] = tuple(hooks)
        self.input_guardrails: tuple[Guardrail[Ctx], ...] = checked_guardrails(
            input_guardrails, "input", "LlmAgent(input_guardrails=[...])"
        )
        self.output_guardrails: tuple[Guardrail[Ctx], ...] = checked_guardrails(
            output_guardrails, "output", "LlmAgent(output_guardrails=[...])"
        )

        self.tools: tuple[Tool[Ctx], ...] = tuple(
            t for item in tools for t in (item.tools if isinstance(item, Toolset) else (item,))
        )
        self.tools_by_name: dict[str, Tool[Ctx]] = {}
        defs: list[ToolDef] = []
        for index, t in enumerate(self.tools):
            if not callable(getattr(t, "invoke", None)) or not isinstance(getattr(t, "name", None), str):
                raise UserError(
                    f"LlmAgent(tools=[...]): item {index} ({t!r}) is not a Tool; "
                    "decorate the function with @tool"
                )
            if t.name in self.tools_by_name:
                raise UserError(
                    f"LlmAgent(tools=[...]): two tools are named {t.name!r}; tool names must be unique"
                )
            self.tools_by_name[t.name] = t
            defs.append(
                ToolDef(
                    name=t.name,
                    description=t.description,
                    parameters=t.schema,
                    strict=getattr(t, "strict", False),
                )
            )
        self.tool_defs: tuple[ToolDef, ...] = tuple(defs)
        if prepare_tools is not None and not callable(prepare_tools):
            raise UserError(
                f"LlmAgent(prepare_tools={prepare_tools!r}): give a function of (ctx, tool definitions)"
            )
        self.prepare_tools = prepare_tools
        self.tool_sources: tuple[ToolSource[Any], ...] = checked_sources(
            tool_sources, "LlmAgent(tool_sources=...)"
        )
        # Only then does a turn work out its tools; otherwise it sends `tool_defs` as they are.
        self.dynamic_tools = (
            prepare_tools is not None
            or bool(self.tool_sources)
            or any(getattr(t, "enabled", None) is not None for t in self.tools)
        )

        self.handoffs: tuple[Handoff[Ctx], ...] = ()
        self.handoffs_by_tool: dict[str, Handoff[Ctx]] = {}
        self.handoff_defs: tuple[ToolDef, ...] = ()
        self._install_handoffs(handoffs)

        self.output_type = output_type
        self.output_spec: OutputSpec | None = None if output_type is None else OutputSpec.of(output_type)
        retries: object = output_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UserError(f"LlmAgent(output_retries={retries!r}): give a whole number >= 0")
        self.output_retries = output_retries
        self.output_checks: tuple[OutputCheck, ...] = output_checks(
            output_validators, "LlmAgent(output_validators=...)"
        )

    builder = classmethod(LlmAgentBuilder)  # the builder form: see agent_builder.py

    def _install_handoffs(self, handoffs: Sequence[Handoff[Ctx] | Agent[Ctx]]) -> None:
        """Check and index the handoffs: one transfer tool each, no name shared with anything."""
        wrapped: list[Handoff[Ctx]] = []
        by_tool: dict[str, Handoff[Ctx]] = {}
        for item in handoffs:
            handoff: Handoff[Ctx] = item if isinstance(item, Handoff) else Handoff[Ctx].to(item)
            clash = by_tool.get(handoff.tool_name)
            if clash is not None:
                raise UserError(
                    f"LlmAgent({self.name!r}): the handoffs to {clash.target!r} and {handoff.target!r} "
                    f"both become the tool {handoff.tool_name!r}; rename an agent or pass "
                    "Handoff.to(agent, tool_name=...)"
                )
            if handoff.tool_name in self.tools_by_name:
                raise UserError(
                    f"LlmAgent({self.name!r}): the handoff to {handoff.target!r} is the tool "
                    f"{handoff.tool_name!r}, which a tool of the agent is already called"
                )
            by_tool[handoff.tool_name] = handoff
            wrapped.append(handoff)
        self.handoffs = tuple(wrapped)
        self.handoffs_by_tool = by_tool
        self.handoff_defs = tuple(h.tool_def() for h in wrapped)

    def output_validator(self, fn: OutputValidatorFunc[Ctx, OutT]) -> OutputValidatorFunc[Ctx, OutT]:
        """Decorator: add `fn` to the agent's output validators (after those given to the constructor).

        See `LlmAgent(output_validators=...)` and `helikon.core.output_validators`.
        """
        self.output_checks = (*self.output_checks, OutputCheck.of(fn, "@LlmAgent.output_validator"))
        return fn

    def with_handoffs(self, handoffs: Sequence[Handoff[Ctx] | Agent[Ctx]]) -> LlmAgent[Ctx, OutT]:
        """A copy of this agent whose handoffs are `handoffs` (everything else shared)."""
        new = copy.copy(self)
        new._install_handoffs(handoffs)
        return new

    def __repr__(self) -> str:
        return f"LlmAgent(name={self.name!r}, model={self.model!r}, tools={[t.name for t in self.tools]})"

    if not TYPE_CHECKING:  # type checkers still see a misspelt attribute

        def __getattr__(self, name: str) -> Never:
            raise no_attribute(self, name, AGENT_HINTS)  # a peer's name says helikon's

    @property
    def model(self) -> Model:
        """The model the agent calls: its own, or the one `override` put in place here."""
        overrides = _OVERRIDES.get()
        if overrides is None:
            return self._model
        return overrides.get(self._key, self._model)

    def model_for(self, run_model: Model | str | None) -> Model:
        """The model a run calls: an `override`'s, else the run's (`RunConfig.model`), else its own."""
        overrides = _OVERRIDES.get()
        if overrides is not None and self._key in overrides:
            return overrides[self._key]
        if run_model is None:
            return self._model
        return checked_model(run_model, "RunConfig")  # a Model already: RunConfig resolved the string

    @model.setter
    def model(self, model: Model | str) -> None:
        self._model = checked_model(model, "LlmAgent.model = ...; LlmAgent")

    @contextmanager
    def override(self, *, model: Model | str) -> Generator[None]:
        """Within the block, the agent (and its copies) calls `model` instead of its own.

        For tests: the agent is built as in production and its model swapped for a double.
        The override belongs to the current context (`contextvars`), not to the agent
        object: it reaches every run made inside the block, in this task and in the tasks
        and `run_sync` loops it starts (nested agents included), and no run of another
        task or thread, so concurrent tests sharing an agent do not see each other's
        model. It is undone on exit, also when the block raises; blocks nest.

        Example:
            ```python
            import asyncio

            from helikon import LlmAgent
            from helikon.testing import MockModel, text_turn

            agent = LlmAgent(name="support", model="openai:gpt-5-mini")
            with agent.override(model=MockModel.with_scripts([text_turn("Hi!")])):
                assert agent.run_sync("Hello").final_output == "Hi!"

            async def main() -> None:
                with agent.override(model=MockModel.with_scripts([text_turn("Hey!")])):
                    assert (await agent.run("Hello")).final_output == "Hey!"

            asyncio.run(main())
            assert agent.model.provider == "openai"  # its own model again
            ```
        """
        replacement = checked_model(model, "LlmAgent.override")
        previous = _OVERRIDES.get()
        token = _OVERRIDES.set({**(previous or {}), self._key: replacement})
        try:
            yield
        finally:
            try:
                _OVERRIDES.reset(token)
            except ValueError:  # exited in another context (a fixture's teardown task)
                _OVERRIDES.set(previous)

    @property
    def instructions(self) -> Instructions | None:
        """The system prompt (text or function)."""
        return self._instructions

    async def render_system(self, ctx: RunContext[Any]) -> tuple[SystemMessage, ...]:
        """The system messages that lead this run's requests."""
        instructions = self._instructions
        if instructions is None:
            return ()
        if isinstance(instructions, str):
            return self._system
        text = instructions(ctx)
        if isinstance(text, Awaitable):
            text = await text
        return (SystemMessage(text=text),) if text else ()

    def run(
        self,
        input: RunInput,
        *misplaced: Never,  # run(ctx, input), context first: an error that shows the right call
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        history: History | None = None,
        session: Session | None = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunStream[OutT]:
        """Start a run: iterate the stream for events, or await it for a `RunResult`.

        Without `context` the run gets `RunContext.ephemeral(None)`.

        `session` keeps the conversation: the run reads it first and writes its events to it
        (in a turn on the session, by this thread's session runner, what
        `helikon.runtime.AsyncioRunner` is with its defaults: crash repair, durable recording,
        one run at a time per session, `RunConfig.timeout`). A context
        whose session is durable (SQLite, PostgreSQL, Redis) goes the same way without
        `session=`; a bare run on a `MemorySession` context neither reads nor writes it.

        `history` continues a conversation without a session: a previous `RunResult` (or
        its `to_input_list()`, or any items) goes in front of `input`. Not with a context
        whose session holds a conversation too (`UserError`).

        `model` and `model_settings` override the agent's for this run (see `RunConfig.model`).

        Example:
            ```python
            from helikon import LlmAgent, MemorySession
            from helikon.testing import MockModel, text_turn

            model = MockModel.with_scripts([text_turn("Hi Ada."), text_turn("Ada.")])
            agent = LlmAgent(name="a", model=model)
            session = MemorySession()
            agent.run_sync("I am Ada.", session=session)
            assert agent.run_sync("Who am I?", session=session).final_output == "Ada."
            assert model.requests[1].messages[0].text == "I am Ada."  # the session's history

            again = MockModel.with_scripts([text_turn("Hi Ada."), text_turn("Ada.")])
            first = agent.run_sync("I am Ada.", model=again)  # no session: history= carries it
            second = agent.run_sync("Who am I?", history=first, model=again)
            assert [item.text for item in second.all_items] == ["I am Ada.", "Hi Ada.", "Who am I?", "Ada."]
            ```
        """
        ctx: RunContext[Any] = context if context is not None else RunContext.ephemeral(None)
        if session is not None:
            ctx = _turn().on_session(ctx, session)
        agent_input = to_agent_input(input, *misplaced)
        if history is not None:
            agent_input = continue_from(agent_input, history, ctx.session, "LlmAgent.run")
        config = config or self.run_config
        if model is not None or model_settings is not None:
            config = _with_model(config, model, model_settings)
        turn = _turn()
        if turn.needs_turn(ctx, session is not None):
            # The input the stream knows is the new turn only (the session holds the rest): no input=.
            return RunStream(drive=turn.in_turn(self, agent_input, ctx, config), agent=self)
        return RunStream(
            drive=functools.partial(self.drive, agent_input, ctx, config), agent=self, input=agent_input
        )

    def resume(
        self,
        session: Session,
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
    ) -> RunStream[OutT]:
        """Decide the requests `session`'s paused run waits on and go on with it: iterate or await.

        Works in any process, from the session alone: the run paused (`RunPaused`,
        `result.status == "paused"`) when a call needed a person's approval that no
        approval handler gave (`@tool(needs_approval=True)`, an `ask` rule, a policy's
        `AskUser`, a default guard). `decisions` maps each `PendingApproval.request_id` to
        `Approve()`, `Deny(reason)` or `Edit(args)`; `by` says who decided (recorded with
        each decision). Decisions may come in parts: while a request still waits the result
        is paused again; `deny_rest=True` denies whatever no decision names.

        The calls of the paused turn that ran are not run again; the decided ones run (an
        approved call is asked nothing again, but deny rules and guards still refuse), and
        the run goes on to its end, recorded in the session like any run. `self` must be the
        agent the run was started with; `context` gives the user context and governance
        (its session is replaced by `session`); what was decided comes from the log only.

        Raises (when the stream is read): an `ApprovalError` subclass when a decision cannot
        apply (unknown or expired request, digest mismatch, decided already, the agent or
        tool gone or changed; see `helikon.core.approvals`): nothing is recorded, nothing runs.

        Example:
            ```python
            from helikon import Approve, LlmAgent, MemorySession, tool
            from helikon.testing import MockModel, text_turn, tool_call_turn

            @tool(needs_approval=True)
            def refund(order: int) -> str:
                \"\"\"Refund an order.\"\"\"
                return f"refunded {order}"

            model = MockModel.with_scripts([tool_call_turn("refund", {"order": 7}), text_turn("Refunded.")])
            agent = LlmAgent(name="clerk", model=model, tools=[refund])
            session = MemorySession()
            paused = agent.run_sync("refund order 7", session=session)
            assert paused.status == "paused"
            [request] = paused.pending
            done = agent.resume_sync(session, {request.request_id: Approve()}, by="ada")
            assert done.final_output == "Refunded."
            ```
        """
        ctx: RunContext[Any] = context if context is not None else RunContext.ephemeral(None)
        ctx = _turn().on_session(ctx, session)
        runner = _turn().default_session_runner()
        drive = functools.partial(
            runner.drive_resumed, self, ctx, dict(decisions or {}), deny_rest, by, config or self.run_config
        )
        return RunStream(drive=drive, agent=self)

    def resume_sync(
        self,
        session: Session,
        decisions: Mapping[str, Decision] | None = None,
        *,
        deny_rest: bool = False,
        by: Approver = None,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
    ) -> RunResult[OutT]:
        """`resume` to its end from synchronous code (on the thread's loop; not inside a running one)."""
        return run_sync(
            lambda: self.resume(
                session, decisions, deny_rest=deny_rest, by=by, context=context, config=config
            )
        )

    def drive(
        self, input: AgentInput, context: RunContext[Ctx], config: RunConfig | None, sink: EventSink
    ) -> Coroutine[Any, Any, None]:
        """The run itself, its events written to `sink`: what a runner (and `run`) calls.

        No session is read or written here (`run` and `helikon.runtime.AsyncioRunner` put
        the run in a turn on its session); `config` None is the agent's `run_config`.
        """
        return _driver().drive(self, context, input, config or self.run_config, sink)

    def run_sync(
        self,
        input: RunInput,
        *misplaced: Never,
        context: RunContext[Ctx] | None = None,
        config: RunConfig | None = None,
        history: History | None = None,
        session: Session | None = None,
        model: Model | str | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunResult[OutT]:
        """`run` to completion from synchronous code (on the thread's loop; not inside a running one)."""
        return run_sync(
            lambda: self.run(
                input,
                *misplaced,
                context=context,
                config=config,
                history=history,
                session=session,
                model=model,
                model_settings=model_settings,
            )
        )


def _with_model(config: RunConfig, model: Model | str | None, settings: ModelSettings | None) -> RunConfig:
    """`config` with a run's `model=` and `model_settings=` (laid over the config's own settings)."""
    if settings is not None and not isinstance(settings, ModelSettings):
        raise UserError(f"LlmAgent.run(model_settings={settings!r}): expected a ModelSettings")
    if settings is not None and config.model_settings is not None:
        settings = config.model_settings.merged(settings)
    return dataclasses.replace(
        config,
        model=config.model if model is None else checked_model(model, "LlmAgent.run"),
        model_settings=config.model_settings if settings is None else settings,
    )


__all__ = ["Agent", "Instructions", "LlmAgent"]
