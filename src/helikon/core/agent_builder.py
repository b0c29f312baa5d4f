"""`LlmAgentBuilder`: `LlmAgent.builder()`, the agent's keywords as chained setters.

The keyword constructor `LlmAgent(name=..., model=..., ...)` is the primary form (a type
checker catches a missing `name` or `model`). The builder is the same constructor one
keyword at a time, for code that assembles an agent in steps: each setter is named as the keyword
it sets (`tool`, `handoff`, `input_guardrail`, `output_guardrail` and `hook` add one),
and `build()` calls `LlmAgent(...)`, so both check the same things and raise the same
errors.

Example:
    ```python
    from helikon import LlmAgent, tool
    from helikon.testing import MockModel, text_turn

    @tool
    async def balance() -> float:
        \"\"\"The account's balance.\"\"\"
        return 312.4

    agent = (
        LlmAgent.builder()
        .name("budget-assistant")
        .model(MockModel.with_scripts([text_turn("You have $312.40.")]))
        .instructions("You are a budgeting assistant.")
        .tool(balance)
        .build()
    )
    assert agent.tools_by_name["balance"] is balance
    assert agent.run_sync("Balance?").final_output == "You have $312.40."
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from .exceptions import UserError

if TYPE_CHECKING:
    from .agent import Agent, Instructions, LlmAgent
    from .context import RunConfig
    from .governance import Guardrail, Hook
    from .handoff import Handoff
    from .model import Model, ModelSettings
    from .output_validators import OutputValidatorFunc
    from .tool_sources import ToolSource
    from .tools import PrepareTools, Tool


class LlmAgentBuilder:
    """Collects an `LlmAgent`'s keywords; `build()` makes the agent (`LlmAgent.builder()` starts one)."""

    __slots__ = ("_cls", "_fields")

    def __init__(self, cls: type[LlmAgent[Any, Any]]) -> None:
        self._cls = cls
        self._fields: dict[str, Any] = {}

    def _set(self, key: str, value: object) -> Self:
        self._fields[key] = value
        return self

    def _add(self, key: str, value: object) -> Self:
        self._fields[key] = (*self._fields.get(key, ()), value)
        return self

    def name(self, name: str) -> Self:
        """The agent's name (required)."""
        return self._set("name", name)

    def model(self, model: Model | str) -> Self:
        """The model, or a model string such as `"openai:gpt-5-mini"` (required)."""
        return self._set("model", model)

    def instructions(self, instructions: Instructions) -> Self:
        """The system prompt: text, or a function of the `RunContext`."""
        return self._set("instructions", instructions)

    def description(self, description: str) -> Self:
        """What the agent does, for agents that hand off to it."""
        return self._set("description", description)

    def tools(self, tools: Sequence[Tool[Any]]) -> Self:
        """The tools, replacing any set before."""
        return self._set("tools", tuple(tools))

    def tool(self, tool: Tool[Any]) -> Self:
        """Add one tool."""
        return self._add("tools", tool)

    def tool_sources(self, sources: Sequence[ToolSource[Any]]) -> Self:
        """Where more tools come from at run time (MCP server handles), replacing any set before."""
        return self._set("tool_sources", tuple(sources))

    def tool_source(self, source: ToolSource[Any]) -> Self:
        """Add one tool source."""
        return self._add("tool_sources", source)

    def mcp_servers(self, handles: Sequence[ToolSource[Any]]) -> Self:
        """Another name for `tool_sources`: MCP server handles whose tools the agent offers."""
        return self.tool_sources(handles)

    def handoffs(self, handoffs: Sequence[Handoff[Any] | Agent[Any]]) -> Self:
        """The handoffs, replacing any set before."""
        return self._set("handoffs", tuple(handoffs))

    def handoff(self, handoff: Handoff[Any] | Agent[Any]) -> Self:
        """Add one handoff (an agent or a `Handoff`)."""
        return self._add("handoffs", handoff)

    def output_type(self, output_type: Any) -> Self:
        """Make the run produce this type."""
        return self._set("output_type", output_type)

    def output_validators(self, validators: Sequence[OutputValidatorFunc[Any, Any]]) -> Self:
        """Output validators, replacing any set before."""
        return self._set("output_validators", tuple(validators))

    def output_validator(self, validator: OutputValidatorFunc[Any, Any]) -> Self:
        """Add one output validator, a function of (output) or (ctx, output)."""
        return self._add("output_validators", validator)

    def output_retries(self, retries: int) -> Self:
        """How often the final output may be sent back to the model."""
        return self._set("output_retries", retries)

    def prepare_tools(self, prepare: PrepareTools) -> Self:
        """A function of (ctx, tool definitions) choosing the tools each turn offers."""
        return self._set("prepare_tools", prepare)

    def model_settings(self, settings: ModelSettings) -> Self:
        """Provider knobs for every call."""
        return self._set("model_settings", settings)

    def run_config(self, config: RunConfig) -> Self:
        """The default `RunConfig` of the agent's runs."""
        return self._set("run_config", config)

    def hooks(self, hooks: Sequence[Hook[Any]]) -> Self:
        """Agent-level hooks, replacing any set before."""
        return self._set("hooks", tuple(hooks))

    def hook(self, hook: Hook[Any]) -> Self:
        """Add one agent-level hook."""
        return self._add("hooks", hook)

    def input_guardrails(self, guardrails: Sequence[Guardrail[Any]]) -> Self:
        """Input guardrails, replacing any set before."""
        return self._set("input_guardrails", tuple(guardrails))

    def input_guardrail(self, guardrail: Guardrail[Any]) -> Self:
        """Add one input guardrail."""
        return self._add("input_guardrails", guardrail)

    def output_guardrails(self, guardrails: Sequence[Guardrail[Any]]) -> Self:
        """Output guardrails, replacing any set before."""
        return self._set("output_guardrails", tuple(guardrails))

    def output_guardrail(self, guardrail: Guardrail[Any]) -> Self:
        """Add one output guardrail."""
        return self._add("output_guardrails", guardrail)

    def build(self) -> LlmAgent[Any, Any]:
        """The agent: `LlmAgent(**the keywords set)`, checked as the constructor checks them."""
        missing = [key for key in ("name", "model") if key not in self._fields]
        if missing:
            calls = " and ".join(f".{key}(...)" for key in missing)
            raise UserError(f"LlmAgent.builder(): call {calls} before .build()")
        return self._cls(**self._fields)

    async def build_resolved(self) -> LlmAgent[Any, Any]:
        """`build()`, then ask every tool source for its tools once, so a clash fails here.

        Raises:
            ToolSourceError.DuplicateName: Two tools would share a name.
            Exception: What a source raised listing its tools (an MCP server that cannot be
                reached: `McpError`).
        """
        from .tool_sources import source_tools

        agent = self.build()
        await source_tools(agent, None)
        return agent


__all__ = ["LlmAgentBuilder"]
