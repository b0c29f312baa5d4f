"""OpenTelemetry spans from runs: the tree, the GenAI attributes, TracerHandle, content capture."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from helikon import AgentAsTool, LlmAgent, RunContext, RunError, TracerHandle, tool
from helikon.core.model import Usage
from helikon.core.run import tracing as _tracing
from helikon.testing import MockModel, text_turn, tool_call_turn


def tree(finished: tuple[ReadableSpan, ...]) -> list[tuple[int, str]]:
    """(depth, name) in start order, from the parent links."""
    by_id = {s.context.span_id: s for s in finished}  # type: ignore[union-attr]

    def depth(span: ReadableSpan) -> int:
        d = 0
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            d += 1
        return d

    ordered = sorted(finished, key=lambda s: s.start_time or 0)
    return [(depth(s), s.name) for s in ordered]


def named(finished: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [span] = [s for s in finished if s.name == name]
    return span


@tool
def get_weather(city: str) -> str:
    """Get the weather."""
    return f"sunny in {city}; WEATHER_API_KEY=abcdef123456"


def weather_agent(model: MockModel) -> LlmAgent[None]:
    return LlmAgent(name="forecaster", model=model, tools=[get_weather], instructions="Be brief.")


def two_turns() -> MockModel:
    return MockModel.with_scripts(
        [
            tool_call_turn(
                "get_weather", {"city": "Paris"}, call_id="c1", usage=Usage(input_tokens=20, output_tokens=5)
            ),
            text_turn("Sunny.", usage=Usage(input_tokens=30, output_tokens=2)),
        ]
    )


async def test_a_two_turn_tool_run(spans: InMemorySpanExporter) -> None:
    model = two_turns()
    handle = TracerHandle(session_id="chat-7", user_id="u-42", tags=("beta", "eu"))
    await weather_agent(model).run("Weather?", context=RunContext.ephemeral(None).with_tracer(handle))
    finished = spans.get_finished_spans()
    assert tree(finished) == [
        (0, "invoke_agent forecaster"),
        (1, "agent.turn"),
        (2, f"chat {model.model_name}"),
        (2, "execute_tool get_weather"),
        (1, "agent.turn"),
        (2, f"chat {model.model_name}"),
    ]
    run = named(finished, "invoke_agent forecaster")
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "forecaster",
        "gen_ai.provider.name": model.provider,
        "gen_ai.request.model": model.model_name,
        "session.id": "chat-7",
        "user.id": "u-42",
        "langfuse.trace.tags": ("beta", "eu"),
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 7,
    }
    turns = [s for s in finished if s.name == "agent.turn"]
    assert [t.attributes["helikon.turn"] for t in turns] == [0, 1]  # type: ignore[index]
    assert all(t.attributes["session.id"] == "chat-7" for t in turns)  # type: ignore[index]
    chats = sorted((s for s in finished if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.response.model"] == model.model_name
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (20, 5)
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert "gen_ai.input.messages" not in first  # content capture is off by default
    tool_span = named(finished, "execute_tool get_weather")
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
    }
    assert all(s.status.status_code is StatusCode.UNSET for s in finished)


async def test_content_capture_is_opt_in_and_records_redacted_tool_output(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = RunContext.ephemeral(None).with_tracer(TracerHandle(capture_content=True))
    await weather_agent(two_turns()).run("Weather?", context=ctx)
    finished = spans.get_finished_spans()
    tool_span = named(finished, "execute_tool get_weather")
    assert tool_span.attributes["gen_ai.tool.call.arguments"] == '{"city": "Paris"}'  # type: ignore[index]
    assert tool_span.attributes["gen_ai.tool.call.result"] == "sunny in Paris; WEATHER_API_KEY=***"  # type: ignore[index]
    chat = sorted((s for s in finished if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)[1]
    inputs = json.loads(chat.attributes["gen_ai.input.messages"])  # type: ignore[index, arg-type]
    assert [m["role"] for m in inputs] == ["user", "assistant", "tool"]
    assert json.loads(chat.attributes["gen_ai.system_instructions"]) == [  # type: ignore[index, arg-type]
        {"type": "text", "content": "Be brief."}
    ]  # type: ignore[index, arg-type]
    assert json.loads(chat.attributes["gen_ai.output.messages"]) == [  # type: ignore[index, arg-type]
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}
    ]
    spans.clear()
    monkeypatch.setenv(_tracing.CAPTURE_ENV, "true")
    await weather_agent(two_turns()).run("Weather?")
    assert (
        "gen_ai.tool.call.result" in named(spans.get_finished_spans(), "execute_tool get_weather").attributes
    )  # type: ignore[operator]


async def test_a_failed_run_marks_its_spans(spans: InMemorySpanExporter) -> None:
    from helikon import RateLimited

    model = MockModel.with_scripts([[RateLimited("slow down", retry_after_ms=100)]])
    with pytest.raises(RunError):
        await weather_agent(model).run("Weather?")
    finished = spans.get_finished_spans()
    run = named(finished, "invoke_agent forecaster")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "model_error"  # type: ignore[index]
    chat = named(finished, f"chat {model.model_name}")
    assert chat.status.status_code is StatusCode.ERROR and chat.attributes["error.type"] == "rate_limited"  # type: ignore[index]


async def test_a_failing_tool_marks_its_span(spans: InMemorySpanExporter) -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = MockModel.with_scripts([tool_call_turn("broken", {}), text_turn("sorry")])
    await LlmAgent(name="a", model=model, tools=[broken]).run("go")
    span = named(spans.get_finished_spans(), "execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "error"  # type: ignore[index]


async def test_a_handoff_nests_the_targets_run_under_the_parents(spans: InMemorySpanExporter) -> None:
    target = LlmAgent(name="specialist", model=MockModel.with_scripts([text_turn("answer")]))
    triage = LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_specialist", {})]),
        handoffs=[target],
    )
    await triage.run("go")
    names = tree(spans.get_finished_spans())
    assert names[0] == (0, "invoke_agent triage")
    assert (1, "invoke_agent specialist") in names
    assert names[-1][1].startswith("chat ") and names[-1][0] == 3  # specialist's turn's chat


async def test_an_agent_as_tool_nests_under_its_tool_span(spans: InMemorySpanExporter) -> None:
    inner = LlmAgent(name="inner", model=MockModel.with_scripts([text_turn("inner says")]))
    outer = LlmAgent(
        name="outer",
        model=MockModel.with_scripts([tool_call_turn("inner", {"input": "q"}), text_turn("done")]),
        tools=[AgentAsTool(inner)],
    )
    await outer.run("go")
    finished = spans.get_finished_spans()
    tool_span = named(finished, "execute_tool inner")
    inner_run = named(finished, "invoke_agent inner")
    assert inner_run.parent is not None and inner_run.parent.span_id == tool_span.context.span_id  # type: ignore[union-attr]


async def test_a_users_own_span_is_the_runs_parent(spans: InMemorySpanExporter) -> None:
    from opentelemetry import trace

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    with provider.get_tracer("app").start_as_current_span("handle_request") as outer:
        await weather_agent(two_turns()).run("Weather?")
    run = named(spans.get_finished_spans(), "invoke_agent forecaster")
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_without_the_sdk_nothing_is_recorded_and_nothing_breaks() -> None:
    code = textwrap.dedent(
        """
        import importlib.abc, sys

        class NoSdk(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, NoSdk())
        from helikon import LlmAgent, tool
        from helikon.core.run import tracing as _tracing
        from helikon.testing import MockModel, text_turn, tool_call_turn

        @tool
        def ping() -> str:
            '''Ping.'''
            return "pong"

        model = MockModel.with_scripts([tool_call_turn("ping", {}), text_turn("done")])
        result = LlmAgent(name="a", model=model, tools=[ping]).run_sync("go")
        assert result.final_output == "done"
        assert not _tracing.tracing_possible()
        assert "opentelemetry.sdk" not in sys.modules
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_global_tracer_provider_records_runs_through_its_own_tracer() -> None:
    # set_tracer_provider works once per process: a fresh interpreter.
    code = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from helikon import LlmAgent, tool
        from helikon.core.run import tracing as _tracing
        from helikon.testing import MockModel, text_turn, tool_call_turn

        @tool
        def ping() -> str:
            '''Ping.'''
            return "pong"

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        for _ in range(2):
            model = MockModel.with_scripts([tool_call_turn("ping", {}), text_turn("done")])
            LlmAgent(name="a", model=model, tools=[ping]).run_sync("go")
        finished = exporter.get_finished_spans()
        assert len(finished) == 12, [s.name for s in finished]
        assert {s.instrumentation_scope.name for s in finished} == {"helikon"}
        # runs call the provider's own tracer, not the proxy that re-dispatches every call
        assert not isinstance(_tracing._current_tracer(), trace.ProxyTracer)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_the_run_span_opens_as_the_stream_starts_and_ends_when_it_is_abandoned(
    spans: InMemorySpanExporter,
) -> None:
    from opentelemetry.sdk.trace import SpanProcessor

    started: list[str] = []

    class Started(SpanProcessor):
        def on_start(self, span: object, parent_context: object = None) -> None:
            started.append(span.name)  # type: ignore[attr-defined]

    provider = TracerProvider()
    provider.add_span_processor(Started())
    provider.add_span_processor(SimpleSpanProcessor(spans))
    _tracing.use_tracer_provider(provider)
    stream = weather_agent(two_turns()).run("Weather?")
    assert started == []  # a stream never iterated opens no span
    events = stream.__aiter__()
    await events.__anext__()
    assert started == ["invoke_agent forecaster"]
    await events.aclose()  # type: ignore[attr-defined]
    assert [s.name for s in spans.get_finished_spans()] == ["invoke_agent forecaster"]


async def test_the_public_use_tracer_provider_installs_and_removes_a_provider() -> None:
    import helikon

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("one"), text_turn("two")]))
    helikon.use_tracer_provider(provider)
    try:
        await agent.run("hi", context=RunContext.ephemeral(None))
    finally:
        helikon.use_tracer_provider(None)
    await agent.run("again", context=RunContext.ephemeral(None))  # back to the global provider
    provider.shutdown()
    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")] == [
        "invoke_agent a"
    ]
    assert helikon.use_tracer_provider is helikon.core.use_tracer_provider


def test_tracer_handle_builder() -> None:
    built = (
        TracerHandle.builder()
        .with_session_id("s")
        .with_user_id("u")
        .with_tags(["a", "b"])
        .with_metadata({"k": 1})
        .with_capture_content()
        .build()
    )
    assert built == TracerHandle(
        session_id="s", user_id="u", tags=("a", "b"), metadata={"k": 1}, capture_content=True
    )


async def test_a_parallel_workflow_nests_each_branch_under_its_span(spans: InMemorySpanExporter) -> None:
    from helikon import ParallelAgent

    def branch(name: str) -> LlmAgent[None]:
        return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(f"{name} view")]))

    fanout = ParallelAgent("lenses", "Two takes.").add(branch("optimist")).add(branch("pessimist"))
    await fanout.run("Outlook?")
    finished = spans.get_finished_spans()
    root = named(finished, "invoke_agent lenses")
    assert root.parent is None and dict(root.attributes or {})["gen_ai.operation.name"] == "invoke_agent"
    for name in ("optimist", "pessimist"):
        child = named(finished, f"invoke_agent {name}")
        assert child.parent is not None and child.parent.span_id == root.context.span_id  # type: ignore[union-attr]
    assert sorted(depth for depth, _ in tree(finished)) == [0, 1, 1, 2, 2, 3, 3]
