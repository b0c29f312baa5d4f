"""What the execution-backend tests share: a command line as an `ExecRequest`."""

from __future__ import annotations

from helikon.tools import ExecRequest


def sh(command: str, **kwargs: object) -> ExecRequest:
    """`bash -c command` as a request; `kwargs` are `ExecRequest`'s (stdin, cwd, timeout, ...)."""
    return ExecRequest(("bash", "-c", command), **kwargs)  # type: ignore[arg-type]
