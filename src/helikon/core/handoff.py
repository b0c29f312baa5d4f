"""`Handoff`: an agent an `LlmAgent` may transfer the conversation to.

Each handoff becomes one synthetic `transfer_to_<slug>` tool the model can call, described
by the target's description. A call to it ends the current agent's loop: the stream emits
`HandoffItem` then `AgentUpdated`, and the target continues the conversation (one level
deeper, bounded by `RunConfig.max_agent_depth`) until it answers.

Example:
    ```python
    from helikon import Handoff, LlmAgent
    from helikon.testing import MockModel, text_turn, tool_call_turn

    investing = LlmAgent(
        name="investing specialist",
        description="Answers questions about investing and retirement.",
        model=MockModel.with_scripts([text_turn("Start with a broad index fund.")]),
    )
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_investing_specialist", {})]),
        handoffs=[Handoff.to(investing)],
    )
    result = triage.run_sync("How should I invest $5,000?")
    assert result.final_output == "Start with a broad index fund."
    ```
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .exceptions import UserError
from .model import ToolDef

if TYPE_CHECKING:
    from .agent import Agent

Ctx = TypeVar("Ctx")

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_MAX_TOOL_NAME = 64  # the providers' limit on tool names
_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def handoff_slug(name: str) -> str:
    """`name` lowercased, other runs as `_`: "Investing Specialist" -> investing_specialist."""
    return _NON_ALNUM.sub("_", name.lower()).strip("_")


class Handoff(Generic[Ctx]):
    """A candidate agent the conversation may be transferred to.

    Build with `Handoff.to(agent)`; `LlmAgent(handoffs=[...])` also takes agents directly.
    """

    __slots__ = ("agent", "description", "tool_name")

    def __init__(
        self, agent: Agent[Ctx], *, tool_name: str | None = None, description: str | None = None
    ) -> None:
        """Use `Handoff.to`."""
        if not callable(getattr(agent, "run", None)) or not isinstance(getattr(agent, "name", None), str):
            raise UserError(f"Handoff.to({agent!r}): expected an agent (an object with a name and run())")
        name = tool_name if tool_name is not None else f"transfer_to_{handoff_slug(agent.name)}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            raise UserError(
                f"Handoff.to({agent.name!r}): the transfer tool name {name!r} must be 1-{_MAX_TOOL_NAME} "
                "letters, digits, '_' or '-'; pass tool_name=... (or rename the agent)"
            )
        self.agent = agent
        self.tool_name = name
        self.description = (
            description
            if description is not None
            else agent.description or f"Transfer the conversation to {agent.name}."
        )

    @classmethod
    def to(
        cls, agent: Agent[Ctx], *, tool_name: str | None = None, description: str | None = None
    ) -> Handoff[Ctx]:
        """A handoff to `agent`, as the tool `transfer_to_<slug of its name>` (or `tool_name`).

        The tool's description is the agent's `description` unless `description` is given:
        it is what the model routes on, so make it say when to transfer.
        """
        return cls(agent, tool_name=tool_name, description=description)

    @property
    def target(self) -> str:
        """The target agent's name."""
        return self.agent.name

    def tool_def(self) -> ToolDef:
        """The synthetic transfer tool the model sees."""
        return ToolDef(name=self.tool_name, description=self.description, parameters=_PARAMETERS)

    def __repr__(self) -> str:
        return f"Handoff.to({self.agent.name!r}, tool_name={self.tool_name!r})"


__all__ = ["Handoff", "handoff_slug"]
