"""Side-by-side agent-loop overhead benchmark: helikon vs. peer agent frameworks.

Every framework runs the same tiny agent: one tool ``get_weather(city) -> str`` and a
fake model (built with the framework's OWN fake/test-model facility) that first requests
``get_weather({"city": "Paris"})`` and then answers ``"It is sunny in Paris."``. No
network, no tracing/telemetry. What is measured is therefore pure framework overhead:

1. median wall time of one complete run, sequential;
2. the same with streaming, consuming every event;
3. throughput (runs/s) with 10, 200 and 1000 concurrent runs, and the 1000/10 ratio;
4. RSS after warm-up and peak RSS (``getrusage`` maxrss) of a process running only it;
5. wall time of the framework's import in a fresh interpreter (median of 3).

Each framework is measured in its own subprocess (the script re-invokes itself with
``--only NAME``), one at a time; the parent gathers their JSON and prints the tables.

Run: ``bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/loop_overhead.py``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

EXPECTED = "It is sunny in Paris."
PROMPT = "Weather in Paris?"
INSTRUCTIONS = "You answer weather questions."
TOOL_ARGS: dict[str, Any] = {"city": "Paris"}
CONCURRENCY = (10, 200, 1000)

# Tracing/telemetry off for every framework, set before any framework is imported.
QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_SDK_DISABLED": "true",
}
_DROP_ENV_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OTEL_", "LOGFIRE_")
# Bytecode caching must be on, or every fresh import recompiles every module from source.
_DROP_ENV = {"PYTHONDONTWRITEBYTECODE"}

RunFn = Callable[[], Awaitable[str]]
"""One complete agent run; returns the final text (streamed runs return what they saw)."""

TOOL_CALLS = 0
"""Incremented by every framework's ``get_weather``: proves the tool really ran."""


def _count_tool_call() -> str:
    global TOOL_CALLS
    TOOL_CALLS += 1
    return "sunny"


@dataclass(frozen=True)
class Bench:
    run_once: RunFn
    run_once_streamed: RunFn
    notes: dict[str, float] = field(default_factory=lambda: {})
    """Extra figures a framework reports (merged into its result)."""
    switch: Callable[[bool], None] | None = None
    """Turns a feature (tracing) off/on: runs are then timed both ways in alternating blocks."""
    floors: dict[str, Callable[[], None]] = field(default_factory=lambda: {})
    """Reference work timed in the same process (µs per call), reported under its key."""
    after: Callable[[], None] | None = None
    """Called once the paired runs and the floors are timed, before the row's own figures."""
    against: Callable[[], Bench] | None = None
    """A reference run timed in this process too, blocks alternating (the hand-written floor)."""


@dataclass(frozen=True)
class Framework:
    name: str
    dists: tuple[str, ...]  # distributions whose versions are reported
    import_stmt: str  # what a user imports to build this agent (timed in a fresh process)
    build: Callable[[], Bench]


# --------------------------------------------------------------------------- frameworks


def build_bare() -> Bench:
    """Reference: a hand-written loop with plain function calls, no framework."""

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["type"] == "tool_result":
            return {"type": "text", "text": EXPECTED}
        return {"type": "tool_call", "name": "get_weather", "args": TOOL_ARGS, "id": "call_1"}

    async def get_weather(city: str) -> str:
        return _count_tool_call()

    tools = {"get_weather": get_weather}

    def start() -> list[dict[str, Any]]:
        return [{"type": "system", "text": INSTRUCTIONS}, {"type": "user", "text": PROMPT}]

    async def run_once() -> str:
        messages = start()
        while True:
            out = await model(messages)
            messages.append(out)
            if out["type"] == "text":
                return str(out["text"])
            result = await tools[out["name"]](**out["args"])
            messages.append({"type": "tool_result", "id": out["id"], "output": result})

    async def events() -> AsyncIterator[dict[str, Any]]:
        messages = start()
        while True:
            out = await model(messages)
            messages.append(out)
            yield out
            if out["type"] == "text":
                return
            result = await tools[out["name"]](**out["args"])
            messages.append({"type": "tool_result", "id": out["id"], "output": result})
            yield messages[-1]

    async def run_once_streamed() -> str:
        text = ""
        async for event in events():
            if event["type"] == "text":
                text = event["text"]
        return text

    return Bench(run_once, run_once_streamed)


def build_floor() -> Bench:  # noqa: C901 (one hand-written loop, read in one piece)
    """The hand-written floor: the work any agent loop must do for this run, written by hand.

    What ``bare-asyncio`` skips and a real loop cannot: typed messages and events, the model's
    answer streamed as deltas and joined, tool arguments arriving as a JSON string validated
    against the tool's schema (pydantic, as every framework here does), a permission check,
    the tool's output scrubbed of secrets (one regex), usage summed, the events handed to the
    caller (collected, or yielded one by one when streamed). No hooks, tracing, sessions,
    limits or cancellation: a framework's overhead is measured against this (issue 28: a
    helikon run within 6x of it).
    """
    import re

    from pydantic import BaseModel

    @dataclass(frozen=True, slots=True)
    class Msg:
        role: str
        text: str = ""
        call: tuple[str, str, str] | None = None  # (id, name, JSON args)

    @dataclass(frozen=True, slots=True)
    class Event:
        kind: str
        data: Any = None

    class WeatherArgs(BaseModel):
        city: str

    secret = re.compile(r"sk-[A-Za-z0-9]{20,}")
    allowed = frozenset({"get_weather"})

    async def get_weather(city: str) -> str:
        return _count_tool_call()

    async def run_tool(call: tuple[str, str, str]) -> Msg:
        call_id, name, raw = call
        if name not in allowed:
            return Msg("tool", f"Error: {name} is not allowed", (call_id, name, ""))
        args = WeatherArgs.model_validate_json(raw)
        return Msg("tool", secret.sub("[redacted]", await get_weather(args.city)), (call_id, name, ""))

    async def model(messages: list[Msg]) -> AsyncIterator[Event]:
        if messages[-1].role == "tool":
            yield Event("delta", EXPECTED)
            yield Event("done", (Msg("assistant", EXPECTED), 12))
        else:
            call = ("call_1", "get_weather", json.dumps(TOOL_ARGS))
            yield Event("call_delta", call)
            yield Event("done", (Msg("assistant", call=call), 10))

    async def events() -> AsyncIterator[Event]:
        messages = [Msg("system", INSTRUCTIONS), Msg("user", PROMPT)]
        usage = 0
        yield Event("run_started")
        while True:
            yield Event("turn_started")
            answer: Msg | None = None
            async for event in model(messages):
                if event.kind == "done":
                    answer, tokens = event.data
                    usage += tokens
                else:
                    yield event
            assert answer is not None
            messages.append(answer)
            yield Event("message", answer)
            if answer.call is None:
                yield Event("run_completed", usage)
                return
            result = await run_tool(answer.call)
            messages.append(result)
            yield Event("tool_output", result)

    async def run_once() -> str:
        text = ""
        collected = [event async for event in events()]
        for event in collected:
            if event.kind == "message" and event.data.call is None:
                text = event.data.text
        return text

    async def run_once_streamed() -> str:
        text = ""
        async for event in events():
            if event.kind == "message" and event.data.call is None:
                text = event.data.text
        return text

    return Bench(run_once, run_once_streamed)


# ============================== HELIKON ==============================
def build_helikon() -> Bench:
    """helikon, via its public API and its own ``helikon.testing.FunctionModel``."""
    from helikon import LlmAgent, MessageOutput, RunContext, tool
    from helikon.testing import FunctionModel, text_turn, tool_call_turn

    @tool
    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return _count_tool_call()

    def script(request: Any) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn(EXPECTED)
        # "call_1" every time, as the peers' fake models here (and local OpenAI-compatible
        # servers) number calls per response: a persisted conversation (the sessions
        # benchmark runs this agent 200 times on one) reuses it every run.
        return tool_call_turn("get_weather", TOOL_ARGS, call_id="call_1")

    agent = LlmAgent(
        name="bench", model=FunctionModel(script), instructions=INSTRUCTIONS, tools=[get_weather]
    )

    async def run_once() -> str:
        result = await agent.run(PROMPT, context=RunContext.ephemeral(None))
        return str(result.final_output)

    async def run_once_streamed() -> str:
        text = ""
        async for event in agent.run(PROMPT, context=RunContext.ephemeral(None)):
            if event.__class__ is MessageOutput:
                text = event.item.text  # type: ignore[attr-defined]
        return text

    return Bench(run_once, run_once_streamed, against=build_floor)


OTEL_SETUP = (
    "TracerProvider() (default sampler: ParentBased(ALWAYS_ON)) + "
    "BatchSpanProcessor(InMemorySpanExporter(), max_queue_size=65536), exporter cleared every 2,000 runs"
)
"""The ``helikon+otel`` row's SDK setup: what the docs tell users to run in production (a
batch processor, so export happens off the hot path) with the in-memory exporter the issue
names. The queue is large enough that no span is ever dropped (a drop would be cheaper)."""

SPANS_PER_RUN = 6  # invoke_agent -> 2 x agent.turn -> 2 x chat + execute_tool


def build_helikon_traced() -> Bench:
    """helikon with tracing on: the OpenTelemetry SDK as ``OTEL_SETUP`` describes.

    The same agent as ``build_helikon``; every run records its span tree
    (invoke_agent -> agent.turn -> chat / execute_tool, 6 spans for this agent).

    First, in this one process, untraced and traced runs alternate block by block (tracing
    switched with ``use_tracer_provider``): the ratio the issue asks about, free of the load
    drifting between the rows' processes. Then the provider is set globally, as applications
    do, for this row's own figures.
    """
    os.environ.pop("OTEL_SDK_DISABLED", None)  # the children's quiet env turns the SDK off
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from helikon.core.run.tracing import use_tracer_provider

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=65536))
    bench = build_helikon()
    runs = 0
    checked = False
    global_set = False

    def recorded() -> None:
        # Keep memory flat over tens of thousands of runs; prove the spans exist once.
        nonlocal runs, checked
        runs += 1
        if global_set and not checked:
            provider.force_flush()
            names = [s.name for s in exporter.get_finished_spans()]
            if "invoke_agent bench" not in names or "execute_tool get_weather" not in names:
                raise RuntimeError(f"helikon+otel recorded no run spans (got {sorted(names)})")
            if len(names) != SPANS_PER_RUN:
                raise RuntimeError(f"helikon+otel: {len(names)} spans per run, not {SPANS_PER_RUN}")
            checked = True
        if runs % 2000 == 0:
            exporter.clear()

    async def run_once() -> str:
        text = await bench.run_once()
        recorded()
        return text

    async def run_once_streamed() -> str:
        text = await bench.run_once_streamed()
        recorded()
        return text

    def switch(on: bool) -> None:
        use_tracer_provider(provider if on else None)

    def set_globally() -> None:  # the paired runs and the floors are done: their spans go
        nonlocal global_set
        use_tracer_provider(None)
        trace.set_tracer_provider(provider)
        provider.force_flush()
        exporter.clear()
        global_set = True

    return Bench(
        run_once,
        run_once_streamed,
        switch=switch,
        floors=_sdk_floors(provider.get_tracer("floor")),
        after=set_globally,
    )


def _sdk_floors(tracer: Any) -> dict[str, Callable[[], None]]:
    """What the SDK alone charges per run: one run's spans, made without helikon.

    ``sdk_floor_us``: 6 bare spans (start + end under one parent, no attributes).
    ``sdk_floor_full_us``: the very spans a helikon run of this agent records, made
    straight with the SDK: the same names, kinds, parents and GenAI attributes (at start and
    at end, as helikon sets them), the same span contexts, and the tool's span made current
    while the tool would run. No integration that records this tree can cost less.
    """
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    def bare() -> None:
        parent = tracer.start_span("root")
        ctx = trace.set_span_in_context(parent)
        for _ in range(SPANS_PER_RUN - 1):
            tracer.start_span("s", context=ctx).end()
        parent.end()

    model, provider, agent = "function-model", "function", "bench"
    chat_start = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider}
    chat_start["gen_ai.request.model"] = model

    def full() -> None:
        run = tracer.start_span(
            f"invoke_agent {agent}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
            },
        )
        run_ctx = trace.set_span_in_context(run)
        for turn, finish in ((0, "tool_calls"), (1, "stop")):
            turn_span = tracer.start_span(
                "agent.turn", context=run_ctx, attributes={"gen_ai.agent.name": agent, "helikon.turn": turn}
            )
            turn_ctx = trace.set_span_in_context(turn_span, run_ctx)
            chat = tracer.start_span(
                f"chat {model}", context=turn_ctx, kind=SpanKind.CLIENT, attributes=chat_start
            )
            chat.set_attributes(
                {
                    "gen_ai.response.model": model,
                    "gen_ai.usage.input_tokens": 0,
                    "gen_ai.usage.output_tokens": 0,
                    "gen_ai.response.finish_reasons": (finish,),
                }
            )
            chat.end()
            if turn == 0:
                tool_span = tracer.start_span(
                    "execute_tool get_weather",
                    context=turn_ctx,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "get_weather",
                        "gen_ai.tool.call.id": "call_1",
                        "gen_ai.tool.type": "function",
                    },
                )
                otel_context.detach(otel_context.attach(trace.set_span_in_context(tool_span)))
                tool_span.end()
            turn_span.end()
        run.set_attributes({"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0})
        run.end()

    return {"sdk_floor_us": bare, "sdk_floor_full_us": full}


# ============================ END HELIKON ============================


def build_openai_agents() -> Bench:
    """openai-agents with a stateless fake ``Model`` modelled on the SDK's tests/fake_model.py."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types import responses as oa
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    args_json = json.dumps(TOOL_ARGS)

    def output_for(input: Any) -> Any:
        last = input[-1] if isinstance(input, list) else {}
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            part = ResponseOutputText(type="output_text", text=EXPECTED, annotations=[])
            return ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[part]
            )
        return ResponseFunctionToolCall(
            id="fc_1", call_id="call_1", type="function_call", name="get_weather", arguments=args_json
        )

    class FakeModel(Model):
        async def get_response(self, system_instructions: Any, input: Any, *a: Any, **kw: Any) -> Any:
            return ModelResponse(output=[output_for(input)], usage=Usage(), response_id="resp_1")

        async def stream_response(  # type: ignore[override]
            self, system_instructions: Any, input: Any, *a: Any, **kw: Any
        ) -> AsyncIterator[Any]:
            item = output_for(input)
            response = oa.Response(
                id="resp_1", created_at=0, model="fake", object="response", output=[item],
                tool_choice="auto", tools=[], parallel_tool_calls=False,
            )  # fmt: skip
            at: dict[str, Any] = {"output_index": 0}
            events: list[tuple[Any, str, dict[str, Any]]] = [
                (oa.ResponseCreatedEvent, "created", {"response": response}),
                (oa.ResponseOutputItemAddedEvent, "output_item.added", {"item": item, **at}),
            ]
            if isinstance(item, ResponseFunctionToolCall):
                at |= {"item_id": item.call_id}
                events += [
                    (oa.ResponseFunctionCallArgumentsDeltaEvent, "function_call_arguments.delta",
                     {"delta": item.arguments, **at}),
                    (oa.ResponseFunctionCallArgumentsDoneEvent, "function_call_arguments.done",
                     {"arguments": item.arguments, "name": item.name, **at}),
                ]  # fmt: skip
            else:
                part, at = item.content[0], at | {"item_id": item.id, "content_index": 0}
                events += [
                    (oa.ResponseContentPartAddedEvent, "content_part.added", {"part": part, **at}),
                    (
                        oa.ResponseTextDeltaEvent,
                        "output_text.delta",
                        {"delta": EXPECTED, "logprobs": [], **at},
                    ),
                    (oa.ResponseTextDoneEvent, "output_text.done", {"text": EXPECTED, "logprobs": [], **at}),
                    (oa.ResponseContentPartDoneEvent, "content_part.done", {"part": part, **at}),
                ]
            events += [
                (oa.ResponseOutputItemDoneEvent, "output_item.done", {"item": item, "output_index": 0}),
                (oa.ResponseCompletedEvent, "completed", {"response": response}),
            ]
            for seq, (cls, kind, fields) in enumerate(events):
                yield cls(type=f"response.{kind}", sequence_number=seq, **fields)

    @function_tool
    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return _count_tool_call()

    agent = Agent(name="bench", instructions=INSTRUCTIONS, model=FakeModel(), tools=[get_weather])

    async def run_once() -> str:
        result = await Runner.run(agent, PROMPT)
        return str(result.final_output)

    async def run_once_streamed() -> str:
        result = Runner.run_streamed(agent, PROMPT)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return Bench(run_once, run_once_streamed)


def build_pydantic_ai() -> Bench:
    """pydantic-ai with ``FunctionModel`` (async function + async stream function)."""
    from pydantic_ai import Agent, AgentRunResultEvent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

    def tool_done(messages: list[ModelMessage]) -> bool:
        return any(isinstance(p, ToolReturnPart) for p in messages[-1].parts)

    async def function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if tool_done(messages):
            return ModelResponse(parts=[TextPart(EXPECTED)])
        return ModelResponse(parts=[ToolCallPart("get_weather", TOOL_ARGS, tool_call_id="call_1")])

    async def stream_function(
        messages: list[ModelMessage], _: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        if tool_done(messages):
            yield EXPECTED
        else:
            yield {0: DeltaToolCall("get_weather", json.dumps(TOOL_ARGS), tool_call_id="call_1")}

    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return _count_tool_call()

    model = FunctionModel(function, stream_function=stream_function)
    agent = Agent(model, instructions=INSTRUCTIONS, tools=[get_weather])

    async def run_once() -> str:
        return (await agent.run(PROMPT)).output

    async def run_once_streamed() -> str:
        text = ""
        async with agent.run_stream_events(PROMPT) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    text = event.result.output
        return text

    return Bench(run_once, run_once_streamed)


def _langchain_fake_model() -> Any:
    """langchain-core's ``GenericFakeChatModel``, made stateless (safe under concurrency),
    natively async (the base class would push sync calls onto a thread pool) and
    tool-capable (no-op ``bind_tools``; streamed tool calls as ``tool_call_chunks``)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

    class FakeToolChatModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _reply(self, messages: list[Any]) -> AIMessage:
            if isinstance(messages[-1], ToolMessage):
                return AIMessage(content=EXPECTED)
            call = {"name": "get_weather", "args": TOOL_ARGS, "id": "call_1", "type": "tool_call"}
            return AIMessage(content="", tool_calls=[call])

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

        async def _agenerate(
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            return self._generate(messages)

        async def _astream(  # type: ignore[override]
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> AsyncIterator[Any]:
            reply = self._reply(messages)
            chunks = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(reply.tool_calls)
            ]
            # One chunk per turn, like the other fakes (BaseChatModel emits on_llm_new_token).
            msg = AIMessageChunk(content=reply.content, tool_call_chunks=chunks, chunk_position="last")
            yield ChatGenerationChunk(message=msg)

    return FakeToolChatModel(messages=iter(()))


def _langchain_bench(graph: Any) -> Bench:
    inputs = {"messages": [{"role": "user", "content": PROMPT}]}

    async def run_once() -> str:
        state = await graph.ainvoke(inputs)
        return str(state["messages"][-1].content)

    async def run_once_streamed() -> str:
        text = ""
        async for message, _meta in graph.astream(inputs, stream_mode="messages"):
            if message.type in ("ai", "AIMessageChunk") and message.content:
                text = str(message.content)
        return text

    return Bench(run_once, run_once_streamed)


def _langchain_tool() -> Any:
    from langchain_core.tools import tool

    @tool
    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return _count_tool_call()

    return get_weather


def build_langgraph() -> Bench:
    """langgraph's prebuilt ``create_react_agent`` (deprecated in v1, still widely used)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(_langchain_fake_model(), [_langchain_tool()], prompt=INSTRUCTIONS)
    return _langchain_bench(graph)


def build_langchain() -> Bench:
    """langchain v1 ``create_agent`` (runs on langgraph)."""
    from langchain.agents import create_agent

    graph = create_agent(_langchain_fake_model(), [_langchain_tool()], system_prompt=INSTRUCTIONS)
    return _langchain_bench(graph)


def build_google_adk() -> Bench:
    """google-adk with a custom ``BaseLlm``; ``Runner`` + ``InMemorySessionService``."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models import BaseLlm, LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=0, candidates_token_count=0, total_token_count=0
    )  # real models report usage; without it ADK logs a warning on every call

    def reply(part: types.Part, partial: bool | None = None) -> LlmResponse:
        content = types.Content(role="model", parts=[part])
        return LlmResponse(content=content, partial=partial, usage_metadata=usage)

    class FakeLlm(BaseLlm):
        async def generate_content_async(  # type: ignore[override]
            self, llm_request: Any, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            if any(p.function_response for p in llm_request.contents[-1].parts or ()):
                if stream:  # SSE mode: one partial chunk, then the aggregated turn
                    yield reply(types.Part(text=EXPECTED), partial=True)
                yield reply(types.Part(text=EXPECTED))
            else:
                call = types.FunctionCall(name="get_weather", args=TOOL_ARGS, id="call_1")
                yield reply(types.Part(function_call=call))

    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return _count_tool_call()

    model = FakeLlm(model="fake-llm")
    agent = LlmAgent(name="bench", model=model, instruction=INSTRUCTIONS, tools=[get_weather])
    sessions = InMemorySessionService()
    runner = Runner(app_name="bench", agent=agent, session_service=sessions)
    sse = RunConfig(streaming_mode=StreamingMode.SSE)

    async def run(run_config: RunConfig | None) -> str:
        # A fresh session per run (the equivalent of a fresh context); deleted afterwards so
        # the in-memory store does not grow across thousands of runs.
        session = await sessions.create_session(app_name="bench", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
        text = ""
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message, run_config=run_config
        ):
            if event.is_final_response() and event.content and event.content.parts:
                text = "".join(p.text or "" for p in event.content.parts)
        await sessions.delete_session(app_name="bench", user_id="u", session_id=session.id)
        return text

    async def run_once() -> str:
        return await run(None)

    async def run_once_streamed() -> str:
        return await run(sse)

    return Bench(run_once, run_once_streamed)


FRAMEWORKS: dict[str, Framework] = {
    f.name: f
    for f in (
        Framework("bare-asyncio", (), "import asyncio", build_bare),
        Framework("floor", ("pydantic",), "import asyncio, re, pydantic", build_floor),
        Framework("helikon", ("paigasus-helikon",), "import helikon; import helikon.testing", build_helikon),
        Framework(
            "helikon+otel",
            ("paigasus-helikon", "opentelemetry-sdk"),
            "import helikon; import helikon.testing; import opentelemetry.sdk.trace",
            build_helikon_traced,
        ),
        Framework("openai-agents", ("openai-agents",), "import agents", build_openai_agents),
        Framework("pydantic-ai", ("pydantic-ai-slim",), "import pydantic_ai", build_pydantic_ai),
        Framework(
            "langgraph",
            ("langgraph", "langchain-core"),
            "from langgraph.prebuilt import create_react_agent",
            build_langgraph,
        ),
        Framework("langchain", ("langchain",), "from langchain.agents import create_agent", build_langchain),
        Framework(
            "google-adk",
            ("google-adk",),
            "from google.adk.agents import LlmAgent; from google.adk.runners import Runner",
            build_google_adk,
        ),
    )
}


# --------------------------------------------------------------------------- measuring


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV_PREFIXES) and k not in _DROP_ENV}
    env.update(QUIET_ENV)
    return env


def measure_import_ms(stmt: str, repeats: int = 3) -> float:
    """Median wall time of ``stmt`` in fresh interpreters (one discarded warm-up for .pyc)."""
    code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
    samples = []
    for i in range(repeats + 1):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_clean_env()
        )
        if i:
            samples.append(float(out.stdout.strip().splitlines()[-1]) * 1000)
    return statistics.median(samples)


async def warm_up(bench: Bench, n: int) -> None:
    """Run both modes; fail loudly if the run did not produce the answer or call the tool."""
    for fn in (bench.run_once, bench.run_once_streamed):
        before = TOOL_CALLS
        for _ in range(n):
            text = await fn()
            if text != EXPECTED:
                raise AssertionError(f"{fn.__qualname__} returned {text!r}, expected {EXPECTED!r}")
        if TOOL_CALLS - before != n:
            raise AssertionError(f"{fn.__qualname__}: tool ran {TOOL_CALLS - before} times in {n} runs")


def _as_async(fn: Callable[[], None]) -> RunFn:
    async def run() -> str:
        fn()
        return ""

    return run


async def sequential_us(fn: RunFn, iters: int, budget_s: float, blocks: int) -> float:
    """µs of one run: median per block of runs, best block (robust to noisy neighbours).

    ``iters`` runs in all, fewer if ``budget_s`` runs out first.
    """
    gc.collect()
    medians: list[float] = []
    deadline = time.perf_counter() + budget_s
    for _ in range(blocks):
        samples: list[float] = []
        for _ in range(max(5, iters // blocks)):
            t0 = time.perf_counter_ns()
            await fn()
            samples.append((time.perf_counter_ns() - t0) / 1000)
        medians.append(statistics.median(samples))
        if time.perf_counter() > deadline:
            break
    return min(medians)


async def throughput(fn: RunFn, concurrency: int, total: int) -> float:
    """Runs/s with ``concurrency`` workers in flight, ``total`` runs in all."""
    per_worker = max(1, total // concurrency)

    async def worker() -> None:
        for _ in range(per_worker):
            await fn()

    gc.collect()
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return concurrency * per_worker / (time.perf_counter() - t0)


def total_runs(concurrency: int, seq_us: float, max_runs: int, budget_s: float) -> int:
    """Scale total runs so a slow framework still finishes in about ``budget_s``."""
    fits = int(budget_s * 1e6 / max(seq_us, 1.0))
    return max(concurrency, math.ceil(min(max_runs, fits) / concurrency) * concurrency)


async def interleaved_us(
    variants: dict[str, tuple[Callable[[], None], RunFn]], iters: int, blocks: int
) -> dict[str, list[float]]:
    """Per variant, the median run (µs) of each of its ``blocks`` blocks.

    The variants' blocks take turns (round robin), each after its own setup, so every round
    measures all of them within a second or so, under the same load.
    """
    out: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(blocks):
        for name, (setup, fn) in variants.items():
            setup()
            samples: list[float] = []
            for _ in range(max(5, iters // blocks)):
                t0 = time.perf_counter_ns()
                await fn()
                samples.append((time.perf_counter_ns() - t0) / 1000)
            out[name].append(statistics.median(samples))
    return out


async def paired(bench: Bench, switch: Callable[[bool], None], args: argparse.Namespace) -> dict[str, float]:
    """Untraced, traced and the SDK floor beside an untraced run, interleaved in this process.

    Figures are medians over rounds; a ratio is the median of each round's ratio to "off".
    """
    off, on = (lambda: switch(False)), (lambda: switch(True))
    for setup in (on, off):
        setup()
        await warm_up(bench, args.warmup)
    full = bench.floors.get("sdk_floor_full_us")
    result: dict[str, float] = {}
    for mode, fn in (("seq", bench.run_once), ("stream", bench.run_once_streamed)):
        variants: dict[str, tuple[Callable[[], None], RunFn]] = {"off": (off, fn), "on": (on, fn)}
        if full is not None:

            async def beside(fn: RunFn = fn, full: Callable[[], None] = full) -> str:
                text = await fn()
                full()
                return text

            variants["floor"] = (off, beside)
        got = await interleaved_us(variants, args.iters * 2, args.repeats * 4)
        for name, blocks in got.items():
            result[f"paired_{mode}_{name}_us"] = statistics.median(blocks)
            if name != "off":
                ratios = (b / a for a, b in zip(got["off"], blocks, strict=True))
                result[f"paired_{mode}_{name}_ratio"] = statistics.median(ratios)
    return result


async def against(bench: Bench, reference: Bench, args: argparse.Namespace) -> dict[str, float]:
    """The row beside a reference (the floor) in this process, blocks alternating: µs and the ratio.

    Free of what separate processes measured at different moments share with the machine's load.
    """
    for one in (reference, bench):
        await warm_up(one, args.warmup)
    result: dict[str, float] = {}
    noop: Callable[[], None] = lambda: None  # noqa: E731
    for mode, fn, ref in (
        ("seq", bench.run_once, reference.run_once),
        ("stream", bench.run_once_streamed, reference.run_once_streamed),
    ):
        got = await interleaved_us({"ref": (noop, ref), "row": (noop, fn)}, args.iters * 2, args.repeats * 4)
        result[f"against_{mode}_ref_us"] = statistics.median(got["ref"])
        result[f"against_{mode}_row_us"] = statistics.median(got["row"])
        ratios = (b / a for a, b in zip(got["ref"], got["row"], strict=True))
        result[f"against_{mode}_ratio"] = statistics.median(ratios)
    return result


async def measure(fw: Framework, args: argparse.Namespace) -> dict[str, Any]:
    bench = fw.build()
    result: dict[str, Any] = {}
    blocks = args.repeats * 2
    if bench.against is not None:
        result |= await against(bench, bench.against(), args)
    if bench.switch is not None:
        result |= await paired(bench, bench.switch, args)
    for key, fn in bench.floors.items():
        for _ in range(args.warmup):
            fn()
        result[key] = await sequential_us(_as_async(fn), args.iters, args.budget, blocks)
    if bench.after is not None:
        bench.after()
    await warm_up(bench, args.warmup)
    result["rss_warm_mb"] = _maxrss_mb()
    result["seq_us"] = await sequential_us(bench.run_once, args.iters, args.budget, blocks)
    result["stream_us"] = await sequential_us(bench.run_once_streamed, args.iters, args.budget, blocks)
    for c in CONCURRENCY:
        n = total_runs(c, result["seq_us"], args.runs, args.budget / args.repeats)
        result[f"thr_{c}"] = max([await throughput(bench.run_once, c, n) for _ in range(args.repeats)])
        result[f"runs_{c}"] = n
    result["rss_peak_mb"] = _maxrss_mb()
    result.update(bench.notes)
    return result


def run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    fw = FRAMEWORKS[name]
    out: dict[str, Any] = {"name": name}
    try:
        out["versions"] = {d: metadata.version(d) for d in fw.dists}
    except metadata.PackageNotFoundError as exc:
        return out | {"skipped": f"not installed: {exc}"}
    try:
        out |= asyncio.run(measure(fw, args))
    except ImportError as exc:
        return out | {"skipped": f"import failed: {exc!r}"}
    out["import_ms"] = measure_import_ms(fw.import_stmt)
    return out


# --------------------------------------------------------------------------- reporting


def _fmt_time(us: float) -> str:
    return f"{us:,.0f} µs" if us < 10_000 else f"{us / 1000:,.1f} ms"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def report(results: list[dict[str, Any]]) -> str:
    done = [r for r in results if "seq_us" in r]
    lines = []
    if done:
        headers = ["framework", "seq/run", "streamed/run"]
        headers += [f"runs/s @{c}" for c in CONCURRENCY] + ["@1000/@10", "RSS warm", "RSS peak", "import"]
        rows = [
            [r["name"], _fmt_time(r["seq_us"]), _fmt_time(r["stream_us"])]
            + [f"{r[f'thr_{c}']:,.0f}" for c in CONCURRENCY]
            + [f"{r['thr_1000'] / r['thr_10']:.2f}", f"{r['rss_warm_mb']:.0f} MB"]
            + [f"{r['rss_peak_mb']:.0f} MB", f"{r['import_ms']:,.0f} ms"]
            for r in done
        ]
        lines += ["Absolute numbers (lower time/RSS/import is better, higher runs/s is better):"]
        lines.append(_table(headers, rows))
    ref = next((r for r in done if r["name"] == "helikon"), None)
    if ref is None:
        lines.append("\n(no helikon result: 'x helikon' ratios not computed)")
    else:
        lower_better = ["seq_us", "stream_us", "rss_peak_mb", "import_ms"]
        headers = ["framework", "seq", "streamed", *(f"@{c}" for c in CONCURRENCY), "RSS peak", "import"]
        rows = []
        for r in done:
            ratios = [r[k] / ref[k] for k in lower_better[:2]]
            ratios += [ref[f"thr_{c}"] / r[f"thr_{c}"] for c in CONCURRENCY]
            ratios += [r[k] / ref[k] for k in lower_better[2:]]
            rows.append([r["name"], *(f"{x:.2f}x" for x in ratios)])
        lines += [
            "\nx helikon: how many times better helikon is than the row (>1 = helikon better;",
            "times/RSS/import: peer / helikon; throughput: helikon / peer):",
            _table(headers, rows),
        ]
    if ref is not None and "against_seq_ratio" in ref:
        seq, stream = ref["against_seq_ratio"], ref["against_stream_ratio"]
        pair = {
            m: f"({ref[f'against_{m}_ref_us']:.1f} -> {ref[f'against_{m}_row_us']:.1f} µs)"
            for m in ("seq", "stream")
        }
        lines.append(
            "\nhelikon / the hand-written floor (the floor row's run, timed in helikon's process, blocks "
            f"alternating): seq {seq:.1f}x {pair['seq']}, streamed {stream:.1f}x {pair['stream']}; "
            f"target <= 6x: {'MET' if max(seq, stream) <= 6 else 'NOT MET'}"
        )
    traced = next((r for r in done if r["name"] == "helikon+otel"), None)
    if traced is not None and "paired_seq_on_ratio" in traced:
        lines += _tracing_report(traced, ref)
    lines += [f"\nskipped {r['name']}: {r['skipped']}" for r in results if "skipped" in r]
    versions = {k: v for r in results for k, v in r.get("versions", {}).items()}
    lines.append("\nversions: " + ", ".join(f"{k}=={v}" for k, v in sorted(versions.items())))
    lines.append(f"python {sys.version.split()[0]}; concurrency runs: " + ", ".join(
        f"{r['name']}={'/'.join(str(r[f'runs_{c}']) for c in CONCURRENCY)}" for r in done
    ))  # fmt: skip
    return "\n".join(lines)


def _tracing_report(traced: dict[str, Any], ref: dict[str, Any] | None) -> list[str]:
    def pair(mode: str, name: str) -> str:
        off, on = traced[f"paired_{mode}_off_us"], traced[f"paired_{mode}_{name}_us"]
        return f"{traced[f'paired_{mode}_{name}_ratio']:.2f}x ({off:.0f} -> {on:.0f} µs)"

    n = SPANS_PER_RUN
    worst = max(traced["paired_seq_on_ratio"], traced["paired_stream_on_ratio"])
    lines = [
        f"\nTracing overhead (traced / untraced helikon, same agent, {n} spans per run), "
        "in one process, blocks alternating:",
        f"  seq {pair('seq', 'on')}, streamed {pair('stream', 'on')}; "
        f"target <= 1.5x: {'MET' if worst <= 1.5 else 'NOT MET'}",
    ]
    if "paired_seq_floor_ratio" in traced:
        added = traced["paired_seq_on_us"] - traced["paired_seq_off_us"]
        floor = traced["paired_seq_floor_us"] - traced["paired_seq_off_us"]
        lines += [
            f"  SDK floor: the same {n} spans, attributes and contexts made straight with the SDK beside an "
            f"untraced run: seq {pair('seq', 'floor')}, streamed {pair('stream', 'floor')}",
            f"  = no integration recording this tree can do better; tracing adds {added:.0f} µs per run "
            f"(seq), the SDK's share {floor:.0f} µs, helikon's own {added - floor:.0f} µs",
        ]
    bare, full = traced.get("sdk_floor_us"), traced.get("sdk_floor_full_us")
    if bare and full:
        lines.append(
            f"  the SDK in a tight loop (warm caches, flatters it): {n} bare spans {bare:.0f} µs "
            f"({bare / n:.1f} µs a span), with their attributes and contexts {full:.0f} µs"
        )
    if ref is not None:
        lines.append(
            f"  across processes (the rows above): seq {traced['seq_us'] / ref['seq_us']:.2f}x, streamed "
            f"{traced['stream_us'] / ref['stream_us']:.2f}x, @200 throughput "
            f"{ref['thr_200'] / traced['thr_200']:.2f}x"
        )
    lines.append(f"  SDK setup: {OTEL_SETUP}")
    return lines


def run_parent(args: argparse.Namespace) -> list[dict[str, Any]]:
    names = args.only or list(FRAMEWORKS)
    passthrough = [f"--{k}={getattr(args, k)}" for k in ("iters", "warmup", "repeats", "runs", "budget")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out_path = Path(tmp) / f"{name}.json"
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--only", name, "--child-out", str(out_path), *passthrough]
            proc = subprocess.run(cmd, env=_clean_env(), check=False)
            if proc.returncode != 0 or not out_path.exists():
                results.append({"name": name, "skipped": f"child process failed (exit {proc.returncode})"})
                continue
            result = json.loads(out_path.read_text())
            if "skipped" in result:
                print(f"  note: skipping {name}: {result['skipped']}", file=sys.stderr)
            results.append(result)
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--only", action="append", choices=list(FRAMEWORKS), help="measure only NAME (repeatable)")
    p.add_argument("--quick", action="store_true", help="few iterations: a smoke run, numbers are rough")
    p.add_argument("--json", type=Path, help="also write all results to this JSON file")
    p.add_argument("--iters", type=int, help="sequential runs per mode (default 500; quick 40)")
    p.add_argument("--warmup", type=int, help="warm-up runs per mode (default 20; quick 3)")
    p.add_argument("--repeats", type=int, help="throughput repeats, best kept (default 3; quick 1)")
    p.add_argument("--runs", type=int, help="max total runs per throughput point (default 2000; quick 1000)")
    p.add_argument(
        "--budget", type=float, help="seconds per measurement, scales runs down (default 6; quick .5)"
    )
    p.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    defaults = {
        "iters": (500, 40),
        "warmup": (20, 3),
        "repeats": (3, 1),
        "runs": (2000, 1000),
        "budget": (6.0, 0.5),
    }
    for key, (full, quick) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_out is not None:  # child: one framework, results to a file
        args.child_out.write_text(json.dumps(run_child(args.only[0], args)))
        return 0
    results = run_parent(args)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
