"""Where the real MCP peers are: the npm packages `scripts/test-deps.sh` installs in tests/npm_peers.

`peer("mcp-server-everything")` is the path of an installed peer's executable; a missing one
is an error that says how to install it (the suite never skips a peer it was meant to drive).
"""

from __future__ import annotations

from pathlib import Path

PEERS = Path(__file__).resolve().parent.parent / "npm_peers"
FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "mcp"


def peer(name: str) -> Path:
    """The executable `name` from tests/npm_peers/node_modules/.bin (e.g. "mcp-server-everything")."""
    path = PEERS / "node_modules" / ".bin" / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make test-deps` (npm ci in tests/npm_peers)")
    return path
