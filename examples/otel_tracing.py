"""The budget assistant, traced: OpenTelemetry GenAI spans exported over OTLP/HTTP.

Needs the `otel` extra (`pip install 'paigasus-helikon[otel]'`). The exporter reads the
standard environment variables, so point it at any OTLP/HTTP endpoint (a collector,
Jaeger, Langfuse, Honeycomb, ...):

    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 uv run python examples/otel_tracing.py

(`OTEL_EXPORTER_OTLP_HEADERS` carries an API key where the backend needs one.) Each run
becomes one trace: `invoke_agent budget-assistant` -> `agent.turn` -> `chat <model>` and
`execute_tool <tool>`, tagged with the session and user below. Prompts and answers are
recorded only because this example opts in (`capture_content=True`).
"""

from __future__ import annotations

import asyncio
import os
import sys

from helikon import RunContext, TracerHandle

try:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
except ImportError as exc:  # pragma: no cover - the message is the point
    raise SystemExit(f"{exc}: install the 'otel' extra: pip install 'paigasus-helikon[otel]'") from exc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from budget_assistant import QUESTION, build_agent, pick_model


def setup_tracing() -> TracerProvider:
    """An SDK provider that batches spans to the OTLP/HTTP endpoint from the environment."""
    provider = TracerProvider(resource=Resource.create({"service.name": "budget-assistant"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


async def main() -> int:
    provider = setup_tracing()
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318 (the default)")
    print(f"Exporting spans to {endpoint}")
    agent = build_agent(pick_model())
    tracer = TracerHandle.builder().with_session_id("demo-session").with_user_id("demo-user")
    ctx = RunContext.ephemeral(None).with_tracer(tracer.with_tags(["example"]).with_capture_content().build())
    result = await agent.run(QUESTION, context=ctx)
    print(result.final_output)
    provider.shutdown()  # flush the batch before the process exits
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
