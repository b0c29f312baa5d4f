"""The peer of `benchmarks/agentcore.py`: AWS's `BedrockAgentCoreApp` serving helikon's example agent.

`python benchmarks/agentcore_official_app.py PORT` (from `.bench-venv-agentcore`) serves
`examples/agentcore/agent.py`'s `assistant` (the very agent `python -m helikon.agentcore
examples.agentcore.agent:assistant` serves) on 127.0.0.1:PORT, the way the SDK's documentation
writes an entrypoint: `await` the agent's run and return its final output as JSON
(`{"output": "<text>"}`), or, when the caller asks for `Accept: text/event-stream`, return an async
generator of the run's events (each as helikon's own event JSON), which the SDK sends as SSE
`data:` frames. `app.run` is the SDK's own uvicorn start (log level warning, no access log).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: `examples.agentcore.agent`

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from examples.agentcore.agent import assistant

from helikon import AGENT_EVENT_ADAPTER

app = BedrockAgentCoreApp()


@app.entrypoint
async def invoke(payload, context):
    prompt = payload.get("prompt", "") if isinstance(payload, dict) else ""
    if "text/event-stream" in context.request.headers.get("accept", ""):
        return _events(prompt)
    result = await assistant.run(prompt)
    return {"output": result.final_output}


async def _events(prompt):
    async for event in assistant.run(prompt):
        yield AGENT_EVENT_ADAPTER.dump_python(event)


if __name__ == "__main__":
    app.run(port=int(sys.argv[1]), host="127.0.0.1")
