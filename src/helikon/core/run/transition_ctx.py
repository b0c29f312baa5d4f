"""The `TransitionCtx` of an agent's run: what every step of the loop reads, made once per agent.

A run of an unchanged agent with the same config, instructions and depth reads the very
context the last run made: it is kept on the agent (`LlmAgent._transition_ctx`) with what
it was made of, and made again when any of that differs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..loop import TransitionCtx

if TYPE_CHECKING:
    from ..agent import LlmAgent
    from ..context import RunConfig
    from ..items import SystemMessage


def transition_ctx(
    agent: LlmAgent[Any, Any], config: RunConfig, system: tuple[SystemMessage, ...], depth: int
) -> TransitionCtx:
    """The context of `agent`'s run under `config`, its rendered instructions `system`, at `depth`."""
    handoffs = agent.handoffs_by_tool
    # What the context is made of: the last one made for the agent serves while all of it is the same.
    made_of = (
        config,
        system,
        depth,
        agent.name,
        agent.tool_defs,
        handoffs,
        agent.model_settings,
        agent.output_spec,
        agent.output_checks,
        agent.output_retries,
    )
    last = agent._transition_ctx  # pyright: ignore[reportPrivateUsage]
    if last is not None and last[0] == made_of:
        return last[1]
    tctx = TransitionCtx(
        agent_name=agent.name,
        tools=(*agent.tool_defs, *agent.handoff_defs) if handoffs else agent.tool_defs,
        model_settings=(
            agent.model_settings
            if config.model_settings is None
            else agent.model_settings.merged(config.model_settings)
        ),
        max_turns=config.max_turns,
        system=system,
        output=agent.output_spec,
        handoffs={name: h.target for name, h in handoffs.items()} if handoffs else {},
        agent_depth=depth,
        max_agent_depth=config.max_agent_depth,
        fail_on_tool_denied=config.fail_on_tool_denied,
        check_output=bool(agent.output_checks),
        output_retries=agent.output_retries,
    )
    agent._transition_ctx = (made_of, tctx)  # pyright: ignore[reportPrivateUsage]
    return tctx


__all__ = ["transition_ctx"]
