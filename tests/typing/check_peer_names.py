# pyright: reportUnnecessaryTypeIgnoreComment=true, reportUnknownMemberType=false, reportUnknownVariableType=false
"""Static checks: a peer's name that gets a hint at run time is still a type error.

The hints (`helikon.core._internal.peer_hints`) are runtime messages only: each line below must keep
its error, or its `ignore` comment is unnecessary and pyright fails this file. The
protocols keep their structural typing.
"""

from __future__ import annotations

from helikon import Agent, LlmAgent, Runner, RunResult
from helikon.runtime import AsyncioRunner


async def checks(agent: LlmAgent[None], result: RunResult[str]) -> None:
    _ = result.output  # pyright: ignore[reportAttributeAccessIssue]
    _ = result.outptu  # pyright: ignore[reportAttributeAccessIssue]
    _ = agent.run("x").final_output  # pyright: ignore[reportAttributeAccessIssue]
    _ = agent.run_stream  # pyright: ignore[reportAttributeAccessIssue]
    _ = Runner.run_sync  # pyright: ignore[reportAttributeAccessIssue]
    _ = Agent()  # pyright: ignore[reportAbstractUsage]
    as_agent: Agent[None, str] = agent
    as_runner: Runner[None] = AsyncioRunner[None]()
    del as_agent, as_runner
