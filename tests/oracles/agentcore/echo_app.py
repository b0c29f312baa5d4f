"""The contract oracle: AWS's `BedrockAgentCoreApp` serving an echo agent shaped like helikon's.

Run by `tests/integration/test_agentcore_oracle.py` with this folder's own virtual
environment (`python echo_app.py PORT`). The entrypoint answers what helikon's
`AgentCoreServer` answers for an echo agent — the JSON outcome, or the run's events when
the caller asks for SSE — so the two apps can be sent the same requests and compared: what
the official SDK decides itself (ping, bad JSON, routing, framing) must match helikon's.
"""

import sys
import uuid

from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import JSONResponse

app = BedrockAgentCoreApp()
USAGE = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cached_input_tokens": 0,
    "reasoning_tokens": 0,
    "requests": 1,
}


def _events(text):
    item = {"type": "assistant", "content": [{"type": "text", "text": text}], "agent": "echo"}
    return [
        {"type": "run_started", "agent": "echo"},
        {"type": "turn_started", "turn": 0},
        {"type": "token_delta", "text": text},
        {"type": "message_output", "item": item},
        {"type": "run_completed", "usage": USAGE, "output": None},
    ]


@app.entrypoint
async def invoke(payload, context):
    prompt = payload.get("prompt") if isinstance(payload, dict) else None
    if not isinstance(prompt, str):
        return JSONResponse(
            {"error": "Invalid payload", "details": 'send {"prompt": "<text>"}'}, status_code=400
        )
    text = f"You said: {prompt}"
    if "text/event-stream" in context.request.headers.get("accept", ""):
        return _stream(text)
    return {
        "run_id": uuid.uuid4().hex,
        "session_id": context.session_id,
        "status": "succeeded",
        "output": text,
        "usage": USAGE,
    }


async def _stream(text):
    for event in _events(text):
        yield event


@app.websocket
async def conversation(websocket, context):
    await websocket.accept()
    while True:
        payload = await websocket.receive_json()
        for event in _events(f"You said: {payload.get('prompt')}"):
            await websocket.send_json(event)


if __name__ == "__main__":
    app.run(port=int(sys.argv[1]), host="127.0.0.1")
