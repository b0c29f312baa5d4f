"""The pydantic-ai anchor of benchmarks/temporal.py: `TemporalDurability`.

The agent runs in the workflow; its model requests and tool calls are activities (the message
history in every model request's input).
"""

from __future__ import annotations

import time

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from temporal_peers import MODEL_CALLS, SETTINGS, page_text


async def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    MODEL_CALLS.append(time.perf_counter())
    done = sum(1 for m in messages for p in m.parts if isinstance(p, ToolReturnPart))
    if done >= SETTINGS["turns"]:
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("read_page", {"n": done}, tool_call_id=f"call_{done}")])


pai_agent = Agent(
    FunctionModel(_answer),
    name="reader",
    instructions="Read the document.",
    capabilities=[TemporalDurability()],
)


@pai_agent.tool_plain
async def read_page(n: int) -> str:
    """Return page `n` of the document."""
    return page_text(n)


@workflow.defn(name="PaiReader")
class PaiReader(PydanticAIWorkflow):
    """The pydantic-ai run: the agent reads `TURNS` pages, then answers."""

    __pydantic_ai_agents__ = (pai_agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await pai_agent.run(prompt)
        return result.output
