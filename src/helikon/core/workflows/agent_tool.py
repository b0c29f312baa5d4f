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

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._internal.json_value import JsonObject, JsonValue
from ..context import RunConfig
from ..events import MessageOutput, RunCompleted, RunFailed
from ..exceptions import InvalidArgs, ToolError, UserError
from ..input import check_run_signature
from ..tools import ToolEffect, ToolOutput

if TYPE_CHECKING:
    from ..agent import Agent
    from ..context import ToolContext

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
        try:
            async for event in self.agent.run(text, context=ctx.subagent_context(), config=config):
                if isinstance(event, MessageOutput):
                    answer = event.item.text
                elif isinstance(event, RunCompleted):
                    ctx.add_usage(event.usage)  # the caller's usage includes the sub-run's
                    if event.output is not None:
                        answer = event.output  # an output validator rewrote the answer
                elif isinstance(event, RunFailed):
                    ctx.add_usage(event.usage)
                    failure = event
        finally:
            await ctx.subagent_stopped(self.agent.name)
        if failure is not None:
            raise ToolError(f"{self.agent.name} failed: {failure.error}")
        return ToolOutput(answer if answer is not None else "")

    def __repr__(self) -> str:
        return f"AgentAsTool({self.agent.name!r}, name={self.name!r})"


__all__ = ["AgentAsTool"]
