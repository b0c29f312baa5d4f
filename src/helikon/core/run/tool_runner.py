"""`ToolRunner`: a run's tool calls, each through its layers.

In order: PreToolUse hooks, the permission pipeline, the tool, PostToolUse hooks, then secret
redaction of whatever came out (DESIGN.md §3). A batch of calls runs concurrently (bounded by
`RunConfig.parallel_tool_call_limit`); a recorder (`RunObserver`) hears of each result as
the call returns.

Every failure of the call itself becomes a result the model reads; only user code that raised
(`CallbackRaised`) fails the run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from .._internal.callbacks import CallbackRaised
from .._internal.json_value import JsonValue
from ..approvals import AgentToolPaused, PendingApproval, args_digest, new_request_id, schema_digest
from ..context import ToolContext
from ..events import PermissionDenied, ToolOutputItem
from ..exceptions import Denied, InvalidArgs, ModelRetry, UserError
from ..governance import HookDecision, HookEvent
from ..governance.permissions import ApprovalNeeded, ask_approval, authorize
from ..items import ContentPart, TextPart, ToolCall
from ..loop import TOOL_DENIED_PREFIX, ToolCallOutcome, ToolStatus
from ..tools import TimedOut, ToolOutput
from ..toolsets import own_name
from .tool_args import over_limit_message
from .tracing import attach, detach

logger = logging.getLogger("helikon.run")

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from opentelemetry.trace import Span

    from ..approvals import OnExpire
    from ..context import RunContext
    from ..events import AgentEvent
    from ..governance.redaction import Redactor
    from ..observer import RunObserver
    from ..tools import Tool
    from .resume_point import SubResume
    from .tracing import RunTrace


class ToolRunner:
    """Runs a run's tool calls: built once per run with what every call needs.

    Args:
        tools: The agent's tools by name (a turn that varies its tools passes its own).
        agent_name: For the hooks' events.
        ctx: The run's context (each call gets a `ToolContext` of it).
        max_agent_depth: How deep the runs a tool starts may nest.
        fire: The run's hooks (`None`: it has none); a hook's decision folds into the run.
        governed: Whether the permission pipeline runs (`Governance.needs_pipeline`).
        redactor: Scrubs secrets from what comes out, if the governance redacts.
        trace: The run's spans, when they are recorded.
        observer: Told of each result as its call returns (a runner recording the run).
        parallel_limit: At most this many calls of a batch run at once (None: all).

    A call that needs a person's approval no handler gives pauses (its outcome is
    `pending`; a sub-agent's run pauses its caller's in turn); `expiry` is the
    `RunConfig.approval_expires_after` and `on_approval_expired` of those it pauses.
    `decided` holds the calls a person approved (a paused run resumed): each runs with the
    arguments given there, and is asked nothing again; `resuming`, the calls of agents
    called as tools whose runs paused: each goes on with its run (`ToolContext.resuming`).
    """

    __slots__ = (
        "agent_name",
        "ctx",
        "decided",
        "expiry",
        "fire",
        "governed",
        "max_agent_depth",
        "observer",
        "parallel_limit",
        "redactor",
        "resuming",
        "tools",
        "trace",
    )

    def __init__(
        self,
        *,
        tools: dict[str, Tool[Any]],
        agent_name: str,
        ctx: RunContext[Any],
        max_agent_depth: int,
        fire: Callable[[HookEvent], Awaitable[HookDecision]] | None,
        governed: bool,
        redactor: Redactor | None,
        trace: RunTrace | None,
        observer: RunObserver | None,
        parallel_limit: int | None,
    ) -> None:
        self.tools = tools
        self.agent_name = agent_name
        self.ctx = ctx
        self.max_agent_depth = max_agent_depth
        self.fire = fire
        self.governed = governed
        self.redactor = redactor
        self.trace = trace
        self.observer = observer
        self.parallel_limit = parallel_limit
        self.expiry: tuple[float | None, OnExpire] = (None, "deny")
        self.decided: dict[str, JsonValue] = {}
        self.resuming: dict[str, SubResume] = {}

    async def run_batch(
        self,
        calls: Sequence[ToolCall],
        offered: dict[str, Tool[Any]] | None,
        emit: Callable[[AgentEvent], None],
    ) -> tuple[ToolCallOutcome, ...]:
        """Run `calls` (concurrently when there are several); their outcomes in call order.

        `offered` is this turn's tools when they vary by turn; `emit` takes the permission
        events the calls raise.
        """
        if len(calls) == 1:
            return (await self.run_reported(calls[0], offered, emit),)
        limit = self.parallel_limit
        if limit is not None and limit < len(calls):
            semaphore = asyncio.Semaphore(limit)

            async def bounded(call: ToolCall) -> ToolCallOutcome:
                async with semaphore:
                    return await self.run_reported(call, offered, emit)

            tasks = [asyncio.ensure_future(bounded(c)) for c in calls]
        else:
            tasks = [asyncio.ensure_future(self.run_reported(c, offered, emit)) for c in calls]
        try:
            return tuple(await asyncio.gather(*tasks))
        except CallbackRaised:
            # A hook or policy raised: the run fails, so the other calls stop (and have
            # stopped before it does).
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise

    async def run_reported(
        self, call: ToolCall, offered: dict[str, Tool[Any]] | None, emit: Callable[[AgentEvent], None]
    ) -> ToolCallOutcome:
        """`run_one`, then the observer is told of the result before the batch goes on.

        A durable runner stores the result right then: a crash while a slower sibling still
        runs loses only the calls still running.
        """
        outcome = await self.run_one(call, offered, emit)
        observer = self.observer
        if observer is not None and not outcome.pending:  # a pending call has no result yet
            await observer.tool_returned(ToolOutputItem(item=outcome.to_result(), metadata=outcome.metadata))
        return outcome

    async def run_one(
        self, call: ToolCall, offered: dict[str, Tool[Any]] | None, emit: Callable[[AgentEvent], None]
    ) -> ToolCallOutcome:
        """One call through every layer; what comes out (errors included) is redacted last."""
        trace = self.trace
        span = trace.start_tool(call) if trace is not None else None
        try:
            outcome = await self._layers(call, offered, emit, span)
        except CallbackRaised as exc:
            if trace is not None and span is not None:
                trace.end_tool(span, _outcome(call, f"Error: {exc}", "error"))
            raise
        redactor = self.redactor
        if redactor is not None:
            content = _redact_parts(redactor, outcome.content)
            if content is not outcome.content:
                outcome = replace(outcome, content=content)
            if outcome.metadata is not None:  # a UI shows it, a session stores it: scrubbed the same
                outcome = replace(outcome, metadata=_redact_json(redactor, outcome.metadata))
        if trace is not None and span is not None:
            trace.end_tool(span, outcome)
        return outcome

    async def _layers(
        self,
        call: ToolCall,
        offered: dict[str, Tool[Any]] | None,
        emit: Callable[[AgentEvent], None],
        span: Span | None,
    ) -> ToolCallOutcome:
        """Hooks, permissions, the tool, hooks again. Failures become results the model reads."""
        tools = self.tools if offered is None else offered
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(tools)) or "none"
            if offered is not None and call.name in self.tools:
                message = f"Error: the tool {call.name!r} is not available now (available: {known})."
            else:
                message = f"Error: there is no tool named {call.name!r} (available: {known})."
            return _outcome(call, message, "error")
        args, refused = await self._admitted(call, tool, emit)
        if refused is not None:
            return refused
        tool_ctx = ToolContext(
            self.ctx,
            call_id=call.call_id,
            tool_name=call.name,
            max_agent_depth=self.max_agent_depth,
            span=span,
            resuming=self.resuming.get(call.call_id) if self.resuming else None,
        )
        ran = await self._invoke(call, tool, tool_ctx, args, emit, span)
        used = tool_ctx._usage  # pyright: ignore[reportPrivateUsage]  (what the tool's models spent)
        if isinstance(ran, ToolCallOutcome):
            return ran if used is None else replace(ran, usage=used)
        content = ran.to_parts()
        if self.fire is not None:
            # A hook's replacement is what the model reads; the metadata still tells what the tool did.
            content = await self._post_tool_use(self.fire, call, content)
        return ToolCallOutcome(
            call_id=call.call_id, name=call.name, content=content, metadata=ran.metadata, usage=used
        )

    async def _admitted(
        self, call: ToolCall, tool: Tool[Any], emit: Callable[[AgentEvent], None]
    ) -> tuple[JsonValue, ToolCallOutcome | None]:
        """The arguments the tool runs with, or the outcome of a call refused before it runs.

        Refused: arguments cut at a limit, a PreToolUse hook's deny, the permission pipeline's
        refusal. A hook may rewrite the arguments, which the pipeline then checks. Pending
        (the outcome says `pending`): a question no one in this process can answer.

        A call a person approved (`decided`) runs with the arguments they approved: the
        hooks saw it before it paused, and its questions are answered; the deny rules and
        guards still refuse what they refuse.
        """
        approved = call.call_id in self.decided
        args = self.decided[call.call_id] if approved else call.args
        if type(args) is str:  # not JSON, or cut at a limit (then nothing else sees it)
            too_long = over_limit_message(args)
            if too_long is not None:
                return args, _outcome(call, too_long, "invalid_args")
        if self.fire is not None and not approved:
            event = HookEvent(
                "pre_tool_use", agent=self.agent_name, tool=call.name, call_id=call.call_id, args=args
            )
            decision = await self.fire(event)
            if decision.kind == "deny":
                return args, _outcome(call, f"Error: a hook blocked the call: {decision.reason}", "error")
            if decision.kind == "replace_input":
                args = decision.value
        if self.governed:
            # Rules match what the tool is, under any name it is offered by (toolsets.py says why).
            ask = getattr(tool, "approval_prompt", None)
            try:
                verdict = await authorize(
                    self.ctx,
                    own_name(tool),
                    args,
                    tool.effect,
                    call_id=call.call_id,
                    emit=emit,
                    ask=ask if isinstance(ask, str) else None,
                    approved=approved,
                    can_pause=True,
                )
            except ApprovalNeeded as need:
                return args, self._pending(call, tool, need.call_args, need.prompt)
            if not verdict.allowed:
                self._denied(call, verdict.reason, emit)
                return args, _outcome(call, f"Error: permission denied: {verdict.reason}", "error")
            args = verdict.args
        needs: object = getattr(tool, "needs_approval", False)
        if needs is not False and needs is not None and not approved:
            return args, await self._approval(call, tool, args, needs, emit)
        return args, None

    async def _approval(
        self,
        call: ToolCall,
        tool: Tool[Any],
        args: JsonValue,
        needs: object,
        emit: Callable[[AgentEvent], None],
    ) -> ToolCallOutcome | None:
        """What the tool's own `needs_approval` makes of the call: None (it runs), a refusal, or pending."""
        if not await _needs_approval(needs, self.ctx, args):
            return None
        prompt = f"the tool {call.name!r} needs approval for this call"
        try:
            approved, why = await ask_approval(
                self.ctx,
                own_name(tool),
                args,
                prompt,
                call_id=call.call_id,
                emit=emit,
                can_pause=True,
            )
        except ApprovalNeeded as need:
            return self._pending(call, tool, need.call_args, need.prompt)
        if approved:
            return None
        self._denied(call, why, emit)
        return _outcome(call, f"Error: permission denied: {why}", "error")

    def _pending(self, call: ToolCall, tool: Tool[Any], args: JsonValue, prompt: str) -> ToolCallOutcome:
        """The outcome of a call that waits for a person: the run pauses on it.

        Arguments that are no JSON value (a NaN the model wrote) cannot be bound to a
        decision: the call is refused instead.
        """
        try:
            digest = args_digest(args)
        except UserError as exc:
            return _outcome(call, f"Error: the call cannot be put to a person: {exc}", "error")
        seconds, on_expire = self.expiry
        pending = PendingApproval(
            request_id=new_request_id(),
            call_id=call.call_id,
            tool=call.name,
            agent_path=(self.agent_name,),
            args=args,
            args_digest=digest,
            prompt=prompt,
            expires=None if seconds is None else time.time() + seconds,
            on_expire=on_expire,
            tool_digest=schema_digest(call.name, tool.schema),
        )
        text = f"Waiting for a person to approve the call ({prompt})."
        return ToolCallOutcome(
            call_id=call.call_id,
            name=call.name,
            content=(TextPart(text=text),),
            status="pending",
            pending=(pending,),
        )

    def _sub_run_paused(self, call: ToolCall, paused: AgentToolPaused) -> ToolCallOutcome:
        """The outcome of a call whose sub-agent paused: its requests, reached through this call."""
        pending = tuple(
            replace(p, agent_path=(self.agent_name, *p.agent_path), via=(call.call_id, *p.via))
            for p in paused.pending
        )
        sub_runs = tuple(replace(s, via=(call.call_id, *s.via)) for s in paused.sub_runs)
        text = f"Waiting for people to approve {len(pending)} call(s) of the sub-agent."
        return ToolCallOutcome(
            call_id=call.call_id,
            name=call.name,
            content=(TextPart(text=text),),
            status="pending",
            usage=paused.usage,
            pending=pending,
            sub_runs=sub_runs,
        )

    async def _invoke(
        self,
        call: ToolCall,
        tool: Tool[Any],
        tool_ctx: ToolContext[Any],
        args: JsonValue,
        emit: Callable[[AgentEvent], None],
        span: Span | None,
    ) -> ToolOutput | ToolCallOutcome:
        """What the tool returned, or the outcome of its failure."""
        # The tool's own spans (an HTTP client's, say) nest under execute_tool: the span is
        # current while the tool runs, in this task only.
        token = attach(span) if span is not None else None
        try:
            return await tool.invoke(tool_ctx, args)
        except InvalidArgs as exc:
            message = f"Error: {exc}. Fix the arguments to match the tool's schema and call it again."
            return _retry(call, tool, message, "invalid_args")
        except ModelRetry as exc:
            return _retry(call, tool, f"Error: {exc.message}", "retry")
        except TimedOut as exc:
            timed_out = (
                f"Error: the tool {call.name!r} timed out after {exc.seconds:g}s"  # the name it was called
            )
            if exc.behavior == "fail_run":
                return _outcome(call, f"{timed_out} (timeout_behavior='fail_run')", "fatal")
            return _outcome(call, f"{timed_out}. Try again, or go on without it.", "error")
        except Denied as exc:
            # A refusal (a path outside the sandbox, say) is data for the model, streamed
            # like a permission denial; `RunConfig.fail_on_tool_denied` fails the run instead.
            self._denied(call, exc.reason, emit)
            return _outcome(call, TOOL_DENIED_PREFIX + exc.reason, "denied")
        except AgentToolPaused as paused:  # a sub-agent waits for people: so does this call
            return self._sub_run_paused(call, paused)
        except CallbackRaised:
            raise  # a hook the tool fired (`ToolContext.subagent_stopped`): the run fails
        except Exception as exc:
            return _outcome(call, f"Error: {type(exc).__name__}: {exc}", "error")
        finally:
            if token is not None:
                detach(token)

    async def _post_tool_use(
        self,
        fire: Callable[[HookEvent], Awaitable[HookDecision]],
        call: ToolCall,
        content: tuple[ContentPart, ...],
    ) -> tuple[ContentPart, ...]:
        """The content after the PostToolUse hooks (one may replace it)."""
        decision = await fire(
            HookEvent(
                "post_tool_use",
                agent=self.agent_name,
                tool=call.name,
                call_id=call.call_id,
                output="".join(p.text for p in content if isinstance(p, TextPart)),
            )
        )
        if decision.kind == "replace_output":
            value = decision.value
            text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            return (TextPart(text=text),)
        return content

    def _denied(self, call: ToolCall, reason: str, emit: Callable[[AgentEvent], None]) -> None:
        """Stream `PermissionDenied`: its reason redacted as the result the model reads is."""
        redactor = self.redactor
        if redactor is not None:
            reason = redactor.redact(reason)
        emit(PermissionDenied(tool=call.name, reason=reason, call_id=call.call_id))


async def _needs_approval(needs: object, ctx: RunContext[Any], args: JsonValue) -> bool:
    """Whether a tool's `needs_approval` (True, or a predicate of ctx and args) asks for a person.

    A predicate that raises, or answers something else than a bool, asks: when in doubt,
    a person decides.
    """
    if needs is True:
        return True
    if not callable(needs):
        return bool(needs)
    try:
        answer = needs(ctx, args)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        logger.warning("needs_approval of a tool raised: the call waits for approval", exc_info=True)
        return True
    return answer is not False


def _redact_parts(redactor: Redactor, parts: tuple[ContentPart, ...]) -> tuple[ContentPart, ...]:
    """`parts` with secrets scrubbed from their text; the same tuple when nothing changed."""
    out: list[ContentPart] = []
    changed = False
    for part in parts:
        if type(part) is TextPart:
            text = redactor.redact(part.text)
            if text != part.text:
                part = TextPart(text=text)
                changed = True
        out.append(part)
    return tuple(out) if changed else parts


def _redact_json(redactor: Redactor, value: JsonValue) -> Any:
    """`value` with secrets scrubbed from every string in it (keys included)."""
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {redactor.redact(k): _redact_json(redactor, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_json(redactor, v) for v in cast("list[JsonValue]", value)]
    return value


def _outcome(call: ToolCall, message: str, status: ToolStatus) -> ToolCallOutcome:
    return ToolCallOutcome(
        call_id=call.call_id, name=call.name, content=(TextPart(text=message),), status=status
    )


def _retry(call: ToolCall, tool: Tool[Any], message: str, status: ToolStatus) -> ToolCallOutcome:
    """An outcome that sends the model back to correct the call, as often as the tool allows."""
    bound = getattr(tool, "max_retries", 1)
    return ToolCallOutcome(
        call_id=call.call_id,
        name=call.name,
        content=(TextPart(text=message),),
        status=status,
        max_retries=bound if isinstance(bound, int) else 1,
    )
