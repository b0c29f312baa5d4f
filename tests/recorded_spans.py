"""The `spans` fixture: an OpenTelemetry SDK that keeps every span a run records, in memory.

helikon's runs use the tracer provider given to `use_tracer_provider` (the global one
otherwise); the fixture installs one for the test and takes it away after.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from helikon.core.run import tracing as _tracing


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The exporter holding the spans the test's runs finished."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracing.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        _tracing.use_tracer_provider(None)
        provider.shutdown()
