"""`CallbackRaised`: code the run calls on the user's behalf raised, so the run fails.

Hooks, guardrails, permission policies, approval handlers, the instructions function,
handoff targets and validators on the output type are user code. What they raise (or a
wrong kind of value they return) is wrapped where they are called, named, and turned
into the run's `RunFailed` (never an exception out of the stream).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

_MAX_REPR = 80  # a returned value is quoted this far: enough to recognise it


def raised(what: str, exc: BaseException) -> str:
    """How a run's error says that `what` raised `exc`."""
    return f"{what} raised {described(exc)}"


def described(exc: BaseException) -> str:
    """`exc` as an error message quotes it: its type, then its text if it has one."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def cancelled_here() -> bool:
    """Whether this task is being cancelled: a `CancelledError` is then a real cancellation.

    Otherwise the user code that raised it raised it by itself (its own bug, or a future
    of its own that was cancelled): a failure of that code like any other, not a reason
    to end the consumer's task.
    """
    import asyncio  # loaded already when code runs in a task; `import helikon` does not load it

    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def returned(what: str, value: object, expected: str) -> str:
    """How a run's error says that `what` returned `value` where `expected` was due."""
    return f"{what} returned {short_repr(value)}, not {expected}"


def short_repr(value: object) -> str:
    """`repr(value)`, cut to a length an error message can quote."""
    text = repr(value)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


class CallbackRaised(Exception):
    """`what` (e.g. "the pre_tool_use hook Audit") raised `exc`; `cause` is its kind, for `AgentError`."""

    def __init__(self, what: str, cause: str, exc: BaseException) -> None:
        super().__init__(raised(what, exc))
        self.cause = cause


class CallbackReturned(CallbackRaised):
    """`what` returned `value` instead of `expected`: as much a bug in it as a raise."""

    def __init__(self, what: str, cause: str, value: object, expected: str) -> None:
        Exception.__init__(self, returned(what, value, expected))
        self.cause = cause


async def call_user(
    what: str, cause: str, call: Callable[[], Awaitable[object]], expected: type[T], expected_text: str
) -> T:
    """Await user code `call()`, which must give an `expected`; anything else is `CallbackRaised`.

    `what` names the code in the run's error ("the permission policy Strict"), `cause` is its
    kind for `AgentError.cause`, `expected_text` what it should have returned ("a PermissionDecision").
    """
    try:
        value = await call()
    except Exception as exc:
        raise CallbackRaised(what, cause, exc) from exc
    except BaseException as exc:
        import asyncio  # loaded already: user code is awaited in a task

        if not isinstance(exc, asyncio.CancelledError) or cancelled_here():
            raise  # KeyboardInterrupt, SystemExit, a real cancellation: as they are
        raise CallbackRaised(what, cause, exc) from exc
    # User code, typed or not: None, say, from a forgotten `return`.
    if not isinstance(value, expected):
        raise CallbackReturned(what, cause, value, expected_text)
    return value
