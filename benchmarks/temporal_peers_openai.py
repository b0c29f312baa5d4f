"""The openai-agents anchor of benchmarks/temporal.py, on `temporalio.openai_agents` (`OpenAIAgentsPlugin`).

The agent loop runs in the workflow; each model call is the plugin's model activity (the whole
conversation in its input); the tool is `workflow.activity_as_tool(page)`.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner
    from temporal_peers import MODEL_CALLS, SETTINGS, page_text
    from temporalio.openai_agents import workflow as agents_workflow


@activity.defn(name="page")
async def page(n: int) -> str:
    """Return page `n` of the document."""
    return page_text(n)


def scripted_openai_model() -> Any:
    """A stateless scripted `agents.Model`: its answer follows from how many results the input has."""
    from agents.items import ModelResponse as OaResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *a: Any, **kw: Any) -> Any:
            MODEL_CALLS.append(time.perf_counter())
            done = sum(
                1 for item in input if isinstance(item, dict) and item.get("type") == "function_call_output"
            )
            if done >= SETTINGS["turns"]:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                item: Any = ResponseOutputMessage(
                    id="msg_1", type="message", role="assistant", status="completed", content=[text]
                )
            else:
                item = ResponseFunctionToolCall(
                    id=f"fc_{done}", call_id=f"call_{done}", type="function_call", name="page",
                    arguments=json.dumps({"n": done}),
                )  # fmt: skip
            return OaResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **kw: Any) -> Any:
            raise RuntimeError("the benchmark runs the model unstreamed")

    return Scripted()


@workflow.defn(name="OaReader")
class OaReader:
    """The openai-agents run: the agent reads `TURNS` pages, then answers."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        tool = agents_workflow.activity_as_tool(page, start_to_close_timeout=timedelta(seconds=60))
        agent = Agent(name="reader", instructions="Read the document.", model="scripted", tools=[tool])
        result = await Runner.run(agent, prompt, max_turns=1000)
        return str(result.final_output)
