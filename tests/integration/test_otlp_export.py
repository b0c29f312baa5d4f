"""examples/otel_tracing.py exports its spans over OTLP/HTTP to a real local receiver.

The receiver is a plain HTTP server on 127.0.0.1 that decodes each request with the
`opentelemetry-proto` messages, as a collector would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "otel_tracing.py"


class Receiver(ThreadingHTTPServer):
    requests: list[ExportTraceServiceRequest]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        cast(Receiver, self.server).requests.append(ExportTraceServiceRequest.FromString(body))
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(("127.0.0.1", 0), Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [v.string_value for v in value.array_value.values]
        else:
            out[kv.key] = getattr(value, kind)
    return out


def test_the_example_exports_the_run_over_otlp_http(receiver: Receiver) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "ANTHROPIC_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.server_address[1]}"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "scripted model" in done.stdout
    spans = [
        (resource_spans.resource, span)
        for request in receiver.requests
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
    names = sorted(span.name for _, span in spans)
    assert names == [
        *["agent.turn"] * 3,
        *["chat mock-model"] * 3,  # the scripted model's name
        "execute_tool budget_status",
        "execute_tool lookup_spending",
        "invoke_agent budget-assistant",
    ]
    by_name = {span.name: span for _, span in spans}
    run = by_name["invoke_agent budget-assistant"]
    attrs = attributes(run)
    assert attrs["session.id"] == "demo-session" and attrs["user.id"] == "demo-user"
    assert attrs["langfuse.trace.tags"] == ["example"]
    assert attrs["gen_ai.usage.input_tokens"] >= 0
    tool_attrs = attributes(by_name["execute_tool lookup_spending"])
    assert tool_attrs["gen_ai.tool.name"] == "lookup_spending" and "gen_ai.tool.call.result" in tool_attrs
    [resource] = {r.SerializeToString() for r, _ in spans}
    service = {kv.key: kv.value.string_value for kv in spans[0][0].attributes}
    assert service["service.name"] == "budget-assistant" and resource
    # Every span belongs to the run's one trace.
    assert len({span.trace_id for _, span in spans}) == 1
