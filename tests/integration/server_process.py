"""An agent server in a process of its own, for the crash tests: `python server_process.py <sqlite path>`.

Serves `worker` on a `SqliteSessionProvider` and prints its port once it listens. `worker`
answers "hello" at once; any other input calls `hang`, which never returns, so the run is
mid-call when the test kills the process. With `--serve` the server runs as
`AgentServer.serve()` runs it (it prints `helikon server: <url>` instead of the port).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import uvicorn

from helikon import LlmAgent, tool
from helikon.server import AgentServer, SqliteSessionProvider
from helikon.testing import FunctionModel, text_turn, tool_call_turn


@tool
async def hang() -> str:
    """Wait for ever."""
    await asyncio.Event().wait()
    return "never"


def reply(request: Any) -> Any:
    last = request.messages[-1]
    if last.type == "tool_result" or getattr(last, "text", "") == "hello":
        return text_turn("hi")
    return tool_call_turn("hang", {})


async def main(path: str, serve: bool) -> None:
    agent = LlmAgent(name="worker", model=FunctionModel(reply), tools=[hang])
    server = (
        AgentServer.builder()
        .with_default_context()
        .agent(agent)
        .session_provider(SqliteSessionProvider(path))
        .build()
    )
    if serve:
        await server.serve("127.0.0.1", 0, console_token=False)
        return
    runner = uvicorn.Server(uvicorn.Config(server.app(), host="127.0.0.1", port=0, log_level="warning"))
    serving = asyncio.create_task(runner.serve())
    while not runner.started:
        if serving.done():
            serving.result()  # it could not start: say why
        await asyncio.sleep(0.01)
    print(runner.servers[0].sockets[0].getsockname()[1], flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], "--serve" in sys.argv[2:]))
