"""schemathesis against `/openapi.json`: every documented endpoint, no 5xx, responses as the document says."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from server_helpers import answering_agent, serving_in_thread

from helikon.server import AgentServer
from helikon.server.openapi import openapi_document


def test_every_endpoint_keeps_to_its_document() -> None:
    server = AgentServer.builder().with_default_context().agent(answering_agent()).build()
    with serving_in_thread(server) as base:
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
        checked = []
        for result in schema.get_all_operations():
            operation = result.ok()  # pyright: ignore[reportAttributeAccessIssue]

            @given(case=operation.as_strategy())
            @settings(
                max_examples=30,
                deadline=None,
                suppress_health_check=list(HealthCheck),  # pyright: ignore[reportArgumentType], database=None
            )
            def keeps_to_the_document(case: schemathesis.Case) -> None:
                case.call_and_validate()

            keeps_to_the_document()
            checked.append(operation.label)
    documented = {
        f"{method.upper()} {path}"
        for path, item in openapi_document(server)["paths"].items()
        for method in item
    }
    # schemathesis leaves out the document's own endpoint; every other one is checked
    assert set(checked) == documented - {"GET /openapi.json"} and len(documented) == 18
