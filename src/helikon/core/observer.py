"""`RunObserver`: what a runner is told of a run besides its events.

A runner that records a run needs three things the caller's stream does not show (yet): what
each model call was sent besides the conversation (for the session's request headers), the
moment a batch of tool calls is about to run (a durable run stores the calls, and a marker,
first) and the moment each call of the batch returns (a durable run stores its result then,
not once its slowest sibling is done). It gives the run a context carrying its observer
(`RunContext.with_observer`); the driver calls it at those points, and the caller's stream and
`RunConfig` stay untouched.

Nested runs whose events flow into the same stream (a handoff target, a workflow's
children) report to the same observer; a sub-agent run as a tool (`RunContext.isolated_child`)
does not: its turns are not this run's.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .events import RequestSent, ToolOutputItem


@runtime_checkable
class RunObserver(Protocol):
    """Told of each model call, tool batch and tool result of a run (and of its nested runs).

    `request_sent` and `tools_starting` are called from the run's own task, in stream
    order: every event streamed before has been handed to the caller already;
    `tool_returned` from the task of the call that returned.

    Example:
        ```python
        import asyncio

        from helikon import LlmAgent, RunContext
        from helikon.core.events import RequestSent, ToolOutputItem
        from helikon.testing import MockModel, text_turn


        class Requests:
            def __init__(self) -> None:
                self.sent: list[RequestSent] = []

            def request_sent(self, sent: RequestSent) -> None:
                self.sent.append(sent)

            async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
                pass

            async def tool_returned(self, output: ToolOutputItem) -> None:
                pass


        observer = Requests()
        agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]))
        ctx = RunContext.ephemeral(None).with_observer(observer)
        events = asyncio.run(agent.run("hello", context=ctx).collect()).events
        assert [s.provider for s in observer.sent] == ["mock"]
        assert not any(isinstance(e, RequestSent) for e in events)  # the stream is unchanged
        ```
    """

    def request_sent(self, sent: RequestSent) -> None:
        """A model call returned (or failed): what it was sent besides the conversation, its usage.

        Called after the call's deltas and before the events of its answer.
        """
        ...

    async def tools_starting(self, call_ids: tuple[str, ...]) -> None:
        """The tool calls `call_ids` are about to go through the permission pipeline and run.

        The calls wait for this to return (a durable runner stores them first); a cancel
        that comes meanwhile is seen right after, and the calls do not run.
        """
        ...

    async def tool_returned(self, output: ToolOutputItem) -> None:
        """One call of the batch returned: its result, as the stream will show it once the batch is done.

        Called from the call's own task, as soon as it returns (in the order the calls finish,
        which for a parallel batch need not be the order they were made); the batch waits
        for it. The stream still shows the batch's `ToolOutputItem`s together, in call
        order, after the last call returned.
        """
        ...


__all__ = ["RunObserver"]
