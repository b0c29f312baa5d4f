"""`GET /openapi.json`: the server's API as an OpenAPI 3.1 document, with this server's agent names.

Written out as data (no framework generates it): each path, its parameters, bodies and
responses, and the schemas they use. The WebSocket endpoint is described in the text of
the stream endpoint (OpenAPI has no WebSocket operations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import AgentServer

_ERROR = {"$ref": "#/components/schemas/Error"}
_RUN = {"$ref": "#/components/schemas/Run"}
# One SSE event: `id` its seq (absent on a stream's own end frame), `event` its type, `data` its JSON.
_SSE_EVENT = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "id": {"type": "string"},
        "event": {"type": "string"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "type": "object",
                "required": ["type"],
                "properties": {"type": {"type": "string"}},
            },
        },
    },
}
_STATUS = ["queued", "running", "paused", "succeeded", "failed", "cancelled"]


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "bad request",
        401: "not authenticated",
        404: "not found",
        409: "conflict",
        413: "body too large",
        429: "too many subscribers",
    }
    return {str(status): _json(_ERROR, text[status]) for status in statuses}


def _run_header() -> dict[str, Any]:
    return {"X-Run-Id": {"description": "The run's id", "schema": {"type": "string"}}}


def _SEQ_BODY(field: str) -> dict[str, Any]:  # a schema, named like the others
    return {
        "type": "object",
        "required": [field],
        "properties": {
            field: {"type": "integer", "minimum": -1, "maximum": 2**62},
            "expected_seq": {"type": "integer", "minimum": -1, "maximum": 2**62},
            "session_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}$"},
        },
    }


def openapi_document(server: AgentServer) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `server`."""
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "enum": sorted(server.agents)},
    }
    run_id = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
    session_id = {
        "name": "session_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}$"},
    }
    session_header = {
        "name": "X-Session-Id",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:@~-]{0,127}$"},
        "description": "Runs with the same id share one session and go one at a time.",
    }
    run_response = {"200": {**_json(_RUN, "the run"), "headers": _run_header()}}
    paths: dict[str, Any] = {
        "/agents": {
            "get": {
                "operationId": "listAgents",
                "summary": "The agents this server runs",
                "responses": {"200": _json({"$ref": "#/components/schemas/AgentList"}, "the agents")},
            }
        },
        "/agents/{name}/runs": {
            "post": {
                "operationId": "startRun",
                "summary": "Start a run: one-shot JSON (default), ?stream=sse, or ?mode=async (202)",
                "parameters": [
                    name,
                    session_header,
                    {
                        "name": "stream",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": ["sse"]},
                    },
                    {
                        "name": "mode",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": ["async"]},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRequest"}}},
                },
                "responses": {
                    "200": {
                        "description": "the finished (or paused) run; with ?stream=sse, its events",
                        "headers": _run_header(),
                        "content": {
                            "application/json": {"schema": _RUN},
                            "text/event-stream": {"schema": _SSE_EVENT},
                        },
                    },
                    "202": {**_json(_RUN, "the run, started in the background"), "headers": _run_header()},
                    **_errors(400, 404, 409, 413),
                },
            }
        },
        "/agents/{name}/runs/{run_id}": {
            "get": {
                "operationId": "getRun",
                "summary": "A run's status and result",
                "parameters": [name, run_id],
                "responses": {**run_response, **_errors(404)},
            }
        },
        "/agents/{name}/runs/{run_id}/wait": {
            "get": {
                "operationId": "waitRun",
                "summary": "Wait until the run is paused or finished",
                "parameters": [name, run_id],
                "responses": {**run_response, **_errors(404)},
            }
        },
        "/agents/{name}/runs/{run_id}/stream": {
            "get": {
                "operationId": "streamRun",
                "summary": "Events as SSE after Last-Event-ID (WebSocket: GET .../events?after=<seq>)",
                "parameters": [
                    name,
                    run_id,
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "after",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": -1},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "id: <seq>, event: <type>, data: <event JSON>",
                        "headers": _run_header(),
                        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
                    },
                    **_errors(400, 404, 429),
                },
            }
        },
        "/agents/{name}/runs/{run_id}/cancel": {
            "post": {
                "operationId": "cancelRun",
                "summary": "Cancel a run (idempotent): interrupt keeps the partial turn, rollback rewinds it",
                "parameters": [
                    name,
                    run_id,
                    {
                        "name": "action",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": ["interrupt", "rollback"]},
                    },
                ],
                "responses": {**run_response, **_errors(400, 404, 409)},
            }
        },
        "/agents/{name}/runs/{run_id}/approvals": {
            "post": {
                "operationId": "decideRun",
                "summary": "Decide a paused run's pending calls; the run goes on",
                "parameters": [name, run_id],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Decisions"}}},
                },
                "responses": {
                    "202": {
                        **_json(_RUN, "the decisions are recorded; the run goes on"),
                        "headers": _run_header(),
                    },
                    **_errors(400, 404, 409, 413),
                },
            }
        },
        "/sessions": {
            "get": {
                "operationId": "listSessions",
                "summary": "The sessions, most recently updated first",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                    },
                    {
                        "name": "offset",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0, "maximum": 10**9},
                    },
                ],
                "responses": {
                    "200": _json({"$ref": "#/components/schemas/SessionList"}, "the sessions"),
                    **_errors(400),
                },
            }
        },
        "/sessions/{session_id}": {
            "get": {
                "operationId": "getSession",
                "summary": "A session's metadata and branches",
                "parameters": [session_id],
                "responses": {
                    "200": _json({"$ref": "#/components/schemas/Session"}, "the session"),
                    **_errors(400),
                },
            }
        },
        "/sessions/{session_id}/events": {
            "get": {
                "operationId": "sessionEvents",
                "summary": "A session's stored events after a seq",
                "parameters": [
                    session_id,
                    {
                        "name": "after_seq",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": -1, "maximum": 2**62},
                    },
                ],
                "responses": {
                    "200": _json({"$ref": "#/components/schemas/SessionEvents"}, "the events"),
                    **_errors(400),
                },
            }
        },
        "/sessions/{session_id}/runs": {
            "get": {
                "operationId": "sessionRuns",
                "summary": "The runs this server keeps for a session",
                "parameters": [session_id],
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["runs"],
                            "properties": {"runs": {"type": "array", "items": _RUN}},
                        },
                        "the runs",
                    ),
                    **_errors(400),
                },
            }
        },
        "/sessions/{session_id}/rewind": {
            "post": {
                "operationId": "rewindSession",
                "summary": "Move the session's head back to a seq (nothing is deleted)",
                "parameters": [session_id],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _SEQ_BODY("to_seq")}},
                },
                "responses": {
                    "200": _json({"$ref": "#/components/schemas/Session"}, "the session"),
                    **_errors(400, 409, 413),
                },
            }
        },
        "/sessions/{session_id}/fork": {
            "post": {
                "operationId": "forkSession",
                "summary": "A new session sharing this one's events up to a seq",
                "parameters": [session_id],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _SEQ_BODY("at_seq")}},
                },
                "responses": {
                    "201": _json(
                        {
                            "type": "object",
                            "required": ["session_id"],
                            "properties": {"session_id": {"type": "string"}},
                        },
                        "the new session",
                    ),
                    **_errors(400, 409, 413),
                },
            }
        },
        "/sessions/{session_id}/requests": {
            "get": {
                "operationId": "sessionModelCalls",
                "summary": "Each model call of the session as sent and answered (?turn=: with its messages)",
                "parameters": [
                    session_id,
                    {
                        "name": "turn",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 0, "maximum": 2**31},
                    },
                ],
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["calls"],
                            "properties": {"calls": {"type": "array", "items": {"type": "object"}}},
                        },
                        "the calls",
                    ),
                    **_errors(400, 409),
                },
            }
        },
        "/sessions/{session_id}/eval-case": {
            "post": {
                "operationId": "saveEvalCase",
                "summary": "Append the session to the server's eval dataset as one case",
                "parameters": [session_id],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"id": {"type": "string", "minLength": 1}},
                            }
                        }
                    },
                },
                "responses": {
                    "201": _json(
                        {
                            "type": "object",
                            "required": ["case", "dataset", "line"],
                            "properties": {
                                "case": {"type": "object"},
                                "dataset": {"type": "string"},
                                "line": {"type": "integer"},
                            },
                        },
                        "the case, and where it went",
                    ),
                    **_errors(400, 404, 409, 413),
                },
            }
        },
        "/evals": {
            "get": {
                "operationId": "listEvalReports",
                "summary": "The eval reports in the server's reports folder",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["reports"],
                            "properties": {"reports": {"type": "array", "items": {"type": "object"}}},
                        },
                        "the reports",
                    ),
                    **_errors(404),
                },
            }
        },
        "/evals/{name}": {
            "get": {
                "operationId": "showEvalReport",
                "summary": "An eval report as its self-contained HTML page (?baseline=<name>: with the diff)",
                "parameters": [
                    {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "baseline", "in": "query", "required": False, "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "the page",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    **_errors(404),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "responses": {"200": _json({"type": "object"}, "the OpenAPI document")},
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "helikon agent server", "version": "1"},
        "paths": paths,
        "components": {"schemas": _schemas()},
    }


def _decision(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["decision"],
        "properties": {"decision": {"const": kind}, "digest": {"type": "string"}, **fields},
    }


def _item_schemas() -> dict[str, Any]:
    """The conversation items (`helikon.core.items`) as components: `Item` and the types it is one of."""
    from ..core.items import ITEM_ADAPTER

    schema = ITEM_ADAPTER.adapter.json_schema(ref_template="#/components/schemas/{model}")
    defs: dict[str, Any] = schema.pop("$defs", {})
    for definition in defs.values():
        tag = definition.get("properties", {}).get("type", {})
        if "const" in tag:  # the tag has a default in Python; on the wire it is required
            definition["required"] = sorted({*definition.get("required", []), "type"})
    return {**defs, "Item": schema}


def _schemas() -> dict[str, Any]:
    item = {"$ref": "#/components/schemas/Item"}
    return {
        **_item_schemas(),
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                }
            },
        },
        "AgentList": {
            "type": "object",
            "required": ["agents"],
            "properties": {
                "agents": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "description": {"type": ["string", "null"]},
                        },
                    },
                }
            },
        },
        "RunRequest": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "input": {"type": "string", "minLength": 1},
                "messages": {"type": "array", "minItems": 1, "items": item},
                "multitask_strategy": {
                    "type": "string",
                    "enum": ["enqueue", "reject", "interrupt", "rollback"],
                },
                "on_disconnect": {"type": "string", "enum": ["cancel", "continue"]},
            },
            "oneOf": [{"required": ["input"]}, {"required": ["messages"]}],
        },
        "Run": {
            "type": "object",
            "required": ["run_id", "agent", "status", "created", "updated", "events"],
            "properties": {
                "run_id": {"type": "string"},
                "agent": {"type": "string"},
                "session_id": {"type": ["string", "null"]},
                "status": {"type": "string", "enum": _STATUS},
                "created": {"type": "number"},
                "updated": {"type": "number"},
                "output": {"type": ["string", "null"]},
                "error": {"type": ["object", "null"]},
                "pending": {"type": "array", "items": {"type": "object"}},
                "usage": {"type": "object"},
                "events": {"type": "integer"},
                "cancel_action": {"type": ["string", "null"], "enum": ["interrupt", "rollback", None]},
            },
        },
        "Decisions": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "decisions": {
                    "type": "object",
                    "additionalProperties": {"$ref": "#/components/schemas/Decision"},
                },
                "deny_rest": {"type": "boolean"},
            },
            "anyOf": [
                {"required": ["decisions"], "properties": {"decisions": {"minProperties": 1}}},
                {"required": ["deny_rest"], "properties": {"deny_rest": {"const": True}}},
            ],
        },
        "Decision": {
            "oneOf": [
                _decision("approve", {}),
                _decision("deny", {"reason": {"type": "string"}}),
                {**_decision("edit", {"args": {}}), "required": ["decision", "args"]},
            ]
        },
        "SessionList": {
            "type": "object",
            "required": ["sessions"],
            "properties": {"sessions": {"type": "array", "items": {"type": "object"}}},
        },
        "Session": {
            "type": "object",
            "required": ["session_id", "event_count", "branches"],
            "properties": {
                "session_id": {"type": "string"},
                "title": {"type": ["string", "null"]},
                "metadata": {"type": "object"},
                "event_count": {"type": "integer"},
                "last_seq": {"type": "integer"},
                "paused": {"type": "boolean"},
                "branches": {"type": "array", "items": {"type": "object"}},
            },
        },
        "SessionEvents": {
            "type": "object",
            "required": ["events"],
            "properties": {
                "events": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["seq", "event", "parent", "active"],
                        "properties": {
                            "seq": {"type": "integer"},
                            "parent": {"type": ["integer", "null"]},
                            "active": {"type": "boolean"},
                            "event": {"type": "object"},
                        },
                    },
                }
            },
        },
    }


__all__ = ["openapi_document"]
