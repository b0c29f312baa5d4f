"""AWS Bedrock AgentCore Runtime: the same agent as a managed AgentCore container (`agentcore` extra).

- `AgentCoreServer(agent, sessions=..., contexts=...)`: `.app()` is the HTTP protocol
  (`/ping`, `/invocations` JSON or SSE, `/ws`) for port 8080; `.mcp_app()` the MCP
  protocol (stateless streamable HTTP at `/mcp`) for port 8000.
- `Health` / `PingStatus`: what `/ping` answers; `server.health.busy()` and
  `server.health.spawn(...)` keep the container alive for background work.
- `python -m helikon.agentcore module:agent`: the container's entry point.

See `docs/agentcore.md` for the contract, a Dockerfile and a CDK stack.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.agentcore import AgentCoreServer
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="assistant", model=MockModel.with_scripts([text_turn("Hello!")]))
    server = AgentCoreServer(agent)
    app = server.app()  # serve on 0.0.0.0:8080 in the container
    ```
"""

from helikon.core._internal.extras import missing_extra

try:  # the web stack, checked once here
    import starlette.applications  # noqa: F401  # pyright: ignore[reportUnusedImport]
    import uvicorn  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as exc:
    raise missing_extra("helikon.agentcore needs Starlette and uvicorn", "agentcore") from exc

from .headers import CUSTOM_PREFIX, REQUEST_ID_HEADER, SESSION_HEADER, USER_ID_HEADER, custom_headers
from .health import Health, PingStatus
from .payloads import InputFrom, prompt_input
from .server import AgentCoreServer

__all__ = [
    "CUSTOM_PREFIX",
    "REQUEST_ID_HEADER",
    "SESSION_HEADER",
    "USER_ID_HEADER",
    "AgentCoreServer",
    "Health",
    "InputFrom",
    "PingStatus",
    "custom_headers",
    "prompt_input",
]
