"""OpenTelemetry spans for runs, following the GenAI semantic conventions.

Each run is `invoke_agent {agent}` -> `agent.turn` (one per model turn) -> `chat {model}`
and `execute_tool {tool}`. Only the OpenTelemetry *API* is used: without an SDK (or with
sampling off) the run span is not recording, and the run then creates no other span and
builds no attribute at all, so tracing costs nothing when nobody collects it.

Nested runs (a handoff's target, an `AgentAsTool` sub-run, a workflow's children) start
under the span in `RunContext.trace_parent`, so their trees hang under the caller's.

Message content (prompts, completions, tool arguments and results) is recorded only when
switched on: `TracerHandle(capture_content=True)` or the GenAI convention's environment
variable `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Tool results are
recorded as the model saw them, that is after secret redaction.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..events import RunCompleted, RunFailed, RunPaused
from ..items import AssistantMessage, Item, SystemMessage, TextPart, ToolCall, ToolResult, UserMessage

if TYPE_CHECKING:
    from ..context import RunContext, TracerHandle
    from ..events import AgentError, AgentEvent, TokenUsage
    from ..loop import ToolCallOutcome
    from ..model import ModelRequest
    from .sink import EventSink

_DEFAULT_TRACER = trace.get_tracer("helikon")  # a proxy: follows a provider set later
_tracer: trace.Tracer = _DEFAULT_TRACER
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def tracing_possible() -> bool:
    """Whether a run may record spans: a tracer provider is installed (or one was given).

    Without one, runs skip tracing entirely (not even a no-op span per run).
    """
    if _tracer is not _DEFAULT_TRACER:
        return True
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


_global_tracer: tuple[trace.TracerProvider, trace.Tracer] | None = None
"""The global provider's own tracer, and that provider: `_DEFAULT_TRACER` is a proxy that
re-dispatches every call (`*args, **kwargs`), so runs use the tracer behind it."""


def _current_tracer() -> trace.Tracer:
    """The tracer runs use now: the one given, else the global provider's (looked up once)."""
    global _global_tracer
    if _tracer is not _DEFAULT_TRACER:
        return _tracer
    provider = trace.get_tracer_provider()
    cached = _global_tracer
    if cached is None or cached[0] is not provider:
        cached = _global_tracer = (provider, provider.get_tracer("helikon"))
    return cached[1]


def use_tracer_provider(provider: trace.TracerProvider | None) -> None:
    """Trace runs with `provider` instead of the global one (None: back to the global).

    The usual setup is OpenTelemetry's own `opentelemetry.trace.set_tracer_provider(...)`,
    once at startup; that global can be set only once per process. This is for tests that
    collect a run's spans, and for applications that keep helikon's spans on a provider of
    their own. It applies process-wide, to every run from then on.

    Example:
        ```python
        from opentelemetry.sdk.trace import TracerProvider

        from helikon import use_tracer_provider

        use_tracer_provider(TracerProvider())  # runs record to this provider from now on
        use_tracer_provider(None)  # back to the global provider
        ```
    """
    global _tracer
    _tracer = provider.get_tracer("helikon") if provider is not None else _DEFAULT_TRACER


def _capture(tracer: TracerHandle) -> bool:
    if tracer.capture_content:
        return True
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("true", "1", "yes")


def _trace_attributes(tracer: TracerHandle) -> dict[str, Any]:
    """The TracerHandle's tags, under the keys Langfuse (and OpenInference) read."""
    attributes: dict[str, Any] = {}
    if tracer.session_id is not None:
        attributes["session.id"] = tracer.session_id
    if tracer.user_id is not None:
        attributes["user.id"] = tracer.user_id
    if tracer.tags:
        attributes["langfuse.trace.tags"] = list(tracer.tags)
    return attributes


class RunTrace:
    """The spans of one run; built only when the run span records.

    Everything that is the same for every span of the run (the chat spans' name and
    opening attributes, the TracerHandle's stamp) is built once here, not per span.
    """

    __slots__ = (
        "agent",
        "capture",
        "chat_attributes",
        "chat_name",
        "context",
        "model",
        "provider",
        "run_span",
        "stamp",
        "tracer",
        "turn_context",
        "turn_span",
    )

    def __init__(
        self,
        run_span: Span,
        agent: str,
        provider: str,
        model: str,
        tracer: TracerHandle,
        stamp: dict[str, Any] | None = None,
        otel_tracer: trace.Tracer | None = None,
    ) -> None:
        self.tracer = _current_tracer() if otel_tracer is None else otel_tracer
        self.run_span = run_span
        self.agent = agent
        self.provider = provider
        self.model = model
        self.capture = _capture(tracer)
        self.stamp = _trace_attributes(tracer) if stamp is None else stamp
        self.chat_name = f"chat {model}"
        # Shared by every chat span of the run: the SDK copies attributes, never keeps this dict.
        self.chat_attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        self.turn_span: Span | None = None
        self.context = trace.set_span_in_context(run_span)
        self.turn_context = self.context  # where chat and tool spans start: the current turn

    @staticmethod
    def start(
        ctx: RunContext[Any], agent: str, provider: str | None = None, model: str | None = None
    ) -> RunTrace | None:
        """Open the run span; None when nothing records it (no SDK, or sampled out).

        A workflow agent has no model: it gives neither `provider` nor `model`.
        """
        parent: Any = ctx.trace_parent
        parent_context = trace.set_span_in_context(parent) if parent is not None else None
        tracer = ctx.tracer
        stamp = _trace_attributes(tracer)
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
        if provider is not None:
            attributes["gen_ai.provider.name"] = provider
        if model is not None:
            attributes["gen_ai.request.model"] = model
        if stamp:
            attributes.update(stamp)
        otel_tracer = _current_tracer()
        span = otel_tracer.start_span(
            f"invoke_agent {agent}", context=parent_context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        if not span.is_recording():
            return None
        return RunTrace(span, agent, provider or "", model or "", tracer, stamp, otel_tracer)

    # --- turns -------------------------------------------------------------------------------

    def start_turn(self, turn: int) -> None:
        """A new model turn: close the previous turn's span, open this one's."""
        self.end_turn()
        span = self.tracer.start_span(
            "agent.turn",
            context=self.context,
            attributes={"gen_ai.agent.name": self.agent, "helikon.turn": turn, **self.stamp},
        )
        self.turn_span = span
        self.turn_context = trace.set_span_in_context(span, self.context)

    def end_turn(self) -> None:
        """Close the current turn's span, if any."""
        if self.turn_span is not None:
            self.turn_span.end()
            self.turn_span = None
            self.turn_context = self.context

    # --- model calls -------------------------------------------------------------------------

    def start_chat(self, request: ModelRequest) -> Span:
        """The span of one model call."""
        attributes = self.chat_attributes
        if self.capture:
            attributes = dict(attributes)
            system = [m.text for m in request.messages if isinstance(m, SystemMessage)]
            if system:
                attributes["gen_ai.system_instructions"] = json.dumps(
                    [{"type": "text", "content": t} for t in system], ensure_ascii=False
                )
            attributes["gen_ai.input.messages"] = json.dumps(_messages(request.messages), ensure_ascii=False)
        return self.tracer.start_span(
            self.chat_name, context=self.turn_context, kind=SpanKind.CLIENT, attributes=attributes
        )

    def end_chat(
        self,
        span: Span,
        *,
        usage: TokenUsage | None,
        finish: str | None,
        items: Sequence[Item] = (),
        error: str | None = None,
    ) -> None:
        """Close a model call's span with what came back (or how it failed)."""
        attributes: dict[str, Any] = {"gen_ai.response.model": self.model}
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
        if finish is not None:
            attributes["gen_ai.response.finish_reasons"] = (finish,)
        if self.capture and items:
            attributes["gen_ai.output.messages"] = json.dumps(_messages(items), ensure_ascii=False)
        if error is not None:
            attributes["error.type"] = error
            span.set_status(Status(StatusCode.ERROR, error))
        span.set_attributes(attributes)
        span.end()

    # --- tools -------------------------------------------------------------------------------

    def start_tool(self, call: ToolCall) -> Span:
        """The span of one tool call (a child of the turn)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(call.args, ensure_ascii=False, default=str)
        return self.tracer.start_span(
            f"execute_tool {call.name}", context=self.turn_context, attributes=attributes
        )

    def end_tool(self, span: Span, outcome: ToolCallOutcome) -> None:
        """Close a tool call's span with its (redacted) result.

        The result's text is built only when it is recorded: captured, or on failure.
        """
        status = outcome.status
        if status == "ok":
            if self.capture:
                span.set_attribute("gen_ai.tool.call.result", outcome.to_result().text)
        else:
            text = outcome.to_result().text
            attributes: dict[str, Any] = {"error.type": status}
            if self.capture:
                attributes["gen_ai.tool.call.result"] = text
            span.set_attributes(attributes)
            span.set_status(Status(StatusCode.ERROR, text[:200]))
        span.end()

    # --- the end -----------------------------------------------------------------------------

    def end(self, *, usage: TokenUsage | None, error: AgentError | None) -> None:
        """Close the turn and run spans with the run's usage, or its error."""
        self.end_turn()
        span = self.run_span
        attributes: dict[str, Any] = {}
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
        if error is not None:
            attributes["error.type"] = error.kind
            span.set_status(Status(StatusCode.ERROR, error.message))
        if attributes:
            span.set_attributes(attributes)
        span.end()


def _messages(items: Sequence[Item]) -> list[dict[str, Any]]:
    """Items in the GenAI conventions' message shape (role + parts)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, SystemMessage):
            continue  # recorded as gen_ai.system_instructions
        if isinstance(item, UserMessage | AssistantMessage):
            role = "user" if isinstance(item, UserMessage) else "assistant"
            parts = [{"type": "text", "content": p.text} for p in item.content if isinstance(p, TextPart)]
            out.append({"role": role, "parts": parts})
        elif isinstance(item, ToolCall):
            part = {"type": "tool_call", "id": item.call_id, "name": item.name, "arguments": item.args}
            if out and out[-1]["role"] == "assistant":
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "assistant", "parts": [part]})
        elif isinstance(item, ToolResult):
            out.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": item.call_id, "response": item.text}],
                }
            )
    return out


class TracedSink:
    """A sink that passes a run's events on and notes its terminal one, for the run span's end."""

    __slots__ = ("final", "sink")

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.final: RunCompleted | RunFailed | RunPaused | None = None

    def put(self, event: AgentEvent) -> Awaitable[None]:
        """Pass `event` on, noting it if it ends the run."""
        if isinstance(event, RunCompleted | RunFailed | RunPaused):
            self.final = event
        return self.sink.put(event)

    def end(self, run: RunTrace) -> None:
        """End `run`'s span with the run's usage or error (neither, when the run was abandoned)."""
        final = self.final
        if final is None:
            run.end(usage=None, error=None)
        elif isinstance(final, RunFailed):
            run.end(usage=final.usage, error=final.error)
        else:
            run.end(usage=final.usage, error=None)


async def traced(
    start: Callable[[], RunTrace | None], events: AsyncIterator[AgentEvent]
) -> AsyncIterator[AgentEvent]:
    """`events`, passed through, inside the run span that `start()` opens as iteration begins.

    The span ends with the run's usage or error, or when the stream is abandoned. A stream
    never iterated opens no span; with `start()` None (sampled out) events just pass.
    (A workflow's stream; an `LlmAgent`'s run writes through a `TracedSink`.)
    """
    run = start()
    final: Any = None
    try:
        async for event in events:
            cls = event.__class__
            if cls is RunCompleted or cls is RunFailed or cls is RunPaused:
                final = event
            yield event
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
        if run is not None:
            if final is None:
                run.end(usage=None, error=None)
            elif final.__class__ is RunFailed:
                run.end(usage=final.usage, error=final.error)
            else:
                run.end(usage=final.usage, error=None)


def within(trace: RunTrace, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """`events`, passed through; `trace`'s run span ends with the run's usage or error (or when abandoned)."""
    return traced(lambda: trace, events)


def attach(span: Span) -> object:
    """Make `span` current while user code runs (a tool), so its own spans nest under it."""
    return otel_context.attach(trace.set_span_in_context(span))


def detach(token: object) -> None:
    """Undo `attach` (in the same task and frame)."""
    otel_context.detach(token)  # pyright: ignore[reportArgumentType]


__all__ = [
    "CAPTURE_ENV",
    "RunTrace",
    "TracedSink",
    "attach",
    "detach",
    "traced",
    "tracing_possible",
    "use_tracer_provider",
    "within",
]
