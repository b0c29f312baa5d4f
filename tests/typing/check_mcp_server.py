"""Static checks of the MCP servers' types (the builder steps keep the context type).

pyright (strict) checks this file.
"""

from __future__ import annotations

from typing import assert_type

from starlette.applications import Starlette

from helikon import LlmAgent, RunConfig, RunContext, tool
from helikon.mcp import McpAgentServer, McpToolServer


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def checks(typed_agent: LlmAgent[int], plain_agent: LlmAgent[None]) -> None:
    typed = McpAgentServer(typed_agent, ctx_factory=lambda: RunContext.ephemeral(3))
    assert_type(typed, McpAgentServer[int])
    configured = typed.name("n").version("1").instructions("i").with_run_config(RunConfig())
    assert_type(configured, McpAgentServer[int])
    assert_type(McpAgentServer.with_default_ctx(plain_agent), McpAgentServer[None])
    assert_type(typed.tool_name, str)
    assert_type(typed.streamable_http_app(), Starlette)
    assert_type(McpToolServer([echo]).name("t").tool_names, tuple[str, ...])
