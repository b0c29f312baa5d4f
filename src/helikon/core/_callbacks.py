"""`CallbackRaised`: code the run calls on the user's behalf raised, so the run fails.

Hooks, permission policies, approval handlers, the instructions function, handoff
targets and validators on the output type are user code. What they raise is wrapped
where they are called, named, and turned into the run's `RunFailed` (never an exception
out of the stream).
"""

from __future__ import annotations


def raised(what: str, exc: BaseException) -> str:
    """How a run's error says that `what` raised `exc`."""
    return f"{what} raised {type(exc).__name__}: {exc}"


class CallbackRaised(Exception):
    """`what` (e.g. "the pre_tool_use hook Audit") raised `exc`; `cause` is its kind, for `AgentError`."""

    def __init__(self, what: str, cause: str, exc: BaseException) -> None:
        super().__init__(raised(what, exc))
        self.cause = cause
