"""An agent for AWS Bedrock AgentCore Runtime, served by `python -m helikon.agentcore`: no API key needed.

    uv run --extra agentcore python -m helikon.agentcore examples.agentcore.agent:assistant --host 127.0.0.1
    curl -s localhost:8080/ping
    curl -s localhost:8080/invocations -H 'X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: demo' \\
        -d '{"prompt": "add 2 and 40"}'

`--protocol mcp` serves it as an MCP tool on port 8000 instead. With `HELIKON_MODEL` set
(a model string such as `bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0`) the agent
uses that model; without it, a scripted one that adds "add A and B" with its tool and
echoes anything else. `Dockerfile` beside this file packs it into AgentCore's arm64 image.
"""

from __future__ import annotations

import os
import re

from helikon import LlmAgent, ModelRequest, ToolEffect, ToolResult, tool
from helikon.testing import FunctionModel, Script, text_turn, tool_call_turn


@tool(effect=ToolEffect.READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted(request: ModelRequest) -> Script:
    """The model without an API key: "add A and B" calls `add`; anything else is echoed."""
    last = request.messages[-1]
    if isinstance(last, ToolResult):
        return text_turn(f"The answer is {last.text}.")
    numbers = re.fullmatch(r"\s*add (-?\d+) and (-?\d+)\s*", last.text)
    if numbers:
        return tool_call_turn("add", {"a": int(numbers[1]), "b": int(numbers[2])})
    return text_turn(f"You said: {last.text}")


assistant = LlmAgent(
    name="assistant",
    description="Adds two numbers ('add 2 and 40'); answers anything else.",
    instructions="You are a concise assistant. Use the add tool for sums.",
    model=os.environ.get("HELIKON_MODEL") or FunctionModel(scripted),
    tools=[add],
)
