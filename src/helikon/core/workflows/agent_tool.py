r"""`AgentAsTool`: call another agent like a tool and get its answer back.

Unlike a handoff, control returns: the calling model gets the sub-agent's final output as
the tool's result and keeps reasoning. The sub-run is isolated (a fresh in-memory session,
no hooks, its own `RunConfig`), while the user context, tracer, cancel token, nesting depth,
the caller's permission configuration and its usage count cross over
(`RunContext.isolated_child`): the sub-run's requests, tokens and tool calls count against the
caller's `RunConfig.usage_limits`, and a cap it passes fails the caller's run too. What the
sub-run spent is in the caller's `RunResult.usage` (`ToolContext.add_usage`), failed or not.

Example:
    ```python
    from helikon import AgentAsTool, LlmAgent
    from helikon.testing import MockModel, text_turn, tool_call_turn

    summarizer = LlmAgent(
        name="summarizer",
        description="Condenses text to three bullet points.",
        model=MockModel.with_scripts([text_turn("- a\n- b\n- c")]),
    )
    writer = LlmAgent(
        name="writer",
        model=MockModel.with_scripts([
            tool_call_turn("summarizer", {"input": "a long report"}),
            text_turn("Here is the digest."),
        ]),
        tools=[AgentAsTool(summarizer)],
    )
    assert writer.run_sync("Draft a reply").final_output == "Here is the digest."
    ```
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._internal.json_value import JsonObject, JsonValue
from ..approvals import AgentToolPaused
from ..context import RunConfig
from ..events import (
    AgentEvent,
    MessageOutput,
    RepairStarted,
    RunCompleted,
    RunFailed,
    RunPaused,
    SubRun,
    ToolCallItem,
    ToolOutputItem,
)
from ..exceptions import InvalidArgs, ToolError, UserError
from ..input import check_run_signature
from ..items import Item, UserMessage
from ..result import RunStream
from ..tools import ToolEffect, ToolOutput

if TYPE_CHECKING:
    from ..agent import Agent
    from ..context import RunContext, ToolContext
    from ..run.resume_point import SubResume

Ctx = TypeVar("Ctx")

_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "What to ask the agent."}},
    "required": ["input"],
    "additionalProperties": False,
}


class AgentAsTool(Generic[Ctx]):
    """A `Tool` that runs `agent` on its single string argument, `input`.

    Args:
        agent: Any agent (an `LlmAgent`, a workflow agent, ...).
        name: The tool's name; the agent's name by default.
        description: What the model is told the tool does; the agent's description by default.
        config: The sub-run's `RunConfig`; by default the agent's own (an `LlmAgent`'s
            `run_config`), with the caller's `max_agent_depth`.
        effect: What calling it does to the world, for the permission modes. `READ_ONLY`
            by default: the call itself changes nothing, and the sub-agent's own tool calls
            pass the same permission pipeline as the caller's.
    """

    __slots__ = ("_config", "agent", "description", "effect", "name")

    def __init__(
        self,
        agent: Agent[Ctx],
        *,
        name: str | None = None,
        description: str | None = None,
        config: RunConfig | None = None,
        effect: ToolEffect = ToolEffect.READ_ONLY,
    ) -> None:
        if not callable(getattr(agent, "run", None)) or not isinstance(getattr(agent, "name", None), str):
            raise UserError(f"AgentAsTool({agent!r}): expected an agent (an object with a name and run())")
        check_run_signature(f"AgentAsTool({agent.name!r})", agent)
        if config is not None and not isinstance(config, RunConfig):
            raise UserError(f"AgentAsTool(config={config!r}): expected a RunConfig")
        self.agent = agent
        self.name = name if name is not None else agent.name
        self.description = (
            description if description is not None else agent.description or f"Ask {agent.name}."
        )
        self.effect = effect
        self._config = config

    @property
    def schema(self) -> JsonObject:
        """One string argument, `input`."""
        return _SCHEMA

    @property
    def output_schema(self) -> JsonObject | None:
        """Unknown: whatever the sub-agent answers."""
        return None

    @property
    def strict(self) -> bool:
        """The schema is strict-mode ready."""
        return True

    def with_name(self, name: str) -> AgentAsTool[Ctx]:
        """A copy exposed under `name`."""
        return AgentAsTool(
            self.agent, name=name, description=self.description, config=self._config, effect=self.effect
        )

    def with_description(self, description: str) -> AgentAsTool[Ctx]:
        """A copy described as `description`."""
        return AgentAsTool(
            self.agent, name=self.name, description=description, config=self._config, effect=self.effect
        )

    async def invoke(self, ctx: ToolContext[Ctx], args: JsonValue) -> ToolOutput:
        """Run the agent on `args["input"]`; its final text is the result."""
        text = args.get("input") if isinstance(args, dict) else None
        if not isinstance(text, str):
            raise InvalidArgs([f"{self.name} takes one string argument, 'input'; got {args!r}"])
        # A sub-run that paused for approval goes on when the caller's run is resumed
        # (`ctx.resuming`); one that pauses makes the caller's run pause on this call.
        if ctx.agent_depth + 1 > ctx.max_agent_depth:
            raise ToolError(
                f"cannot run {self.agent.name!r}: it would nest agents deeper than "
                f"RunConfig.max_agent_depth ({ctx.max_agent_depth})"
            )
        config = self._config or getattr(self.agent, "run_config", None) or RunConfig()
        if config.max_agent_depth != ctx.max_agent_depth:
            config = config.with_max_agent_depth(ctx.max_agent_depth)
        answer: Any = None
        failure: RunFailed | None = None
        paused: RunPaused | None = None
        sub_ctx = ctx.subagent_context()
        resuming = ctx.resuming
        stream = (
            self.agent.run(text, context=sub_ctx, config=config)
            if resuming is None
            else self._resumed(resuming, sub_ctx, config)
        )
        said: list[Item] = [] if resuming is not None else [UserMessage.from_text(text)]
        try:
            async for event in stream:
                if isinstance(event, MessageOutput):
                    answer = event.item.text
                elif isinstance(event, RunCompleted):
                    ctx.add_usage(event.usage)  # the caller's usage includes the sub-run's
                    if event.output is not None:
                        answer = event.output  # an output validator rewrote the answer
                elif isinstance(event, RunFailed):
                    ctx.add_usage(event.usage)
                    failure = event
                elif isinstance(event, RunPaused):
                    paused = event
                _said(event, said)
        finally:
            await ctx.subagent_stopped(self.agent.name)
        if failure is not None:
            raise ToolError(f"{self.agent.name} failed: {failure.error}")
        if paused is not None:  # its calls wait for people: the caller's run pauses on this call
            raise self._paused(paused, said, resuming)
        return ToolOutput(answer if answer is not None else "")

    def _resumed(self, resuming: SubResume, ctx: RunContext[Ctx], config: RunConfig) -> RunStream[Any]:
        """The sub-agent's paused run, going on from where it paused (see `ToolContext.resuming`)."""
        from ..agent import LlmAgent
        from ..run.driver import resume

        agent = self.agent
        if resuming.agent != agent.name or not isinstance(agent, LlmAgent):
            raise ToolError(
                f"cannot resume the paused run of {resuming.agent!r} with {agent.name!r}: "
                "only an LlmAgent's paused run goes on, with the same agent"
            )
        drive = functools.partial(resume, agent, ctx, resuming.point, config)
        return RunStream(drive=drive, agent=agent)

    def _paused(self, paused: RunPaused, said: list[Item], resuming: SubResume | None) -> AgentToolPaused:
        """What the caller's run pauses on: the sub-agent's requests, and its conversation to go on with."""
        if resuming is not None:  # what it said before the pause, the turn's results in
            point = resuming.point
            said = [*point.conversation, *(o.to_result() for o in point.done.values()), *said]
        run = SubRun(via=(), agent=self.agent.name, messages=tuple(said), usage=paused.usage)
        return AgentToolPaused(paused.pending, (run, *paused.sub_runs), paused.usage)

    def __repr__(self) -> str:
        return f"AgentAsTool({self.agent.name!r}, name={self.name!r})"


def _said(event: AgentEvent, said: list[Item]) -> None:
    """Add what `event` adds to the sub-agent's conversation (as a session would record it)."""
    item = (
        event.item
        if isinstance(event, MessageOutput | ToolCallItem | ToolOutputItem | RepairStarted)
        else None
    )
    if item is not None:  # a RepairStarted's: the message an output is sent back with
        said.append(item)


__all__ = ["AgentAsTool"]
