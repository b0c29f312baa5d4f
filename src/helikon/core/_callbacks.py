"""`CallbackRaised`: code the run calls on the user's behalf raised, so the run fails.

Hooks, permission policies, approval handlers, the instructions function and handoff
targets are user code. What they raise is wrapped where they are called, named, and
turned by the driver into the run's `RunFailed` (never an exception out of the stream).
"""

from __future__ import annotations


class CallbackRaised(Exception):
    """`what` (e.g. "the pre_tool_use hook Audit") raised `exc`; `cause` is its kind, for `AgentError`."""

    def __init__(self, what: str, cause: str, exc: BaseException) -> None:
        super().__init__(f"{what} raised {type(exc).__name__}: {exc}")
        self.cause = cause
