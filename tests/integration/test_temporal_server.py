"""The agent server on the durable runner: runs are Temporal workflows, approvals their update."""

from __future__ import annotations

from pathlib import Path

import httpx2
from server_helpers import clerk, refunds, serving
from temporal_helpers import connect, runner, worker
from temporalio.client import WorkflowExecutionStatus

from helikon.server import AgentServer, BearerTokenAuth, session_provider

SESSION = {"X-Session-Id": "s1"}


async def test_a_paused_durable_run_is_approved_over_http_and_its_workflow_completes(
    temporal_server: str, tmp_path: Path
) -> None:
    refunds.clear()
    store = f"sqlite:///{tmp_path}/sessions.db"
    client = await connect(temporal_server)
    agent = clerk()
    sessions = session_provider(store)
    tokens = {"token-for-ada-0123456789": "ada"}
    server = (
        AgentServer.builder()
        .agent(agent)
        .with_default_context()
        .session_provider(sessions)
        .runner(runner(client, "server"))
        .auth(BearerTokenAuth(tokens))
        .build()
    )
    auth = {"Authorization": "Bearer token-for-ada-0123456789"}
    async with (
        worker(client, agent, store, "server"),
        serving(server) as base,
        httpx2.AsyncClient(base_url=base, headers=auth) as http,
    ):
        paused = (await http.post("/agents/clerk/runs", json={"input": "refund 7"}, headers=SESSION)).json()
        assert paused["status"] == "paused" and refunds == []
        [pending] = paused["pending"]
        workflow = client.get_workflow_handle("helikon-s1")
        assert (await workflow.describe()).status == WorkflowExecutionStatus.RUNNING  # it waits
        path = f"/agents/clerk/runs/{paused['run_id']}"
        unknown = await http.post(f"{path}/approvals", json={"decisions": {"nope": {"decision": "approve"}}})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_request"
        decision = {pending["request_id"]: {"decision": "approve", "digest": pending["args_digest"]}}
        accepted = await http.post(f"{path}/approvals", json={"decisions": decision})
        assert accepted.status_code == 202
        done = (await http.get(f"{path}/wait")).json()
        assert (done["status"], done["output"]) == ("succeeded", "Refunded.") and refunds == [7]
        assert (await workflow.describe()).status == WorkflowExecutionStatus.COMPLETED
        events = (await http.get("/sessions/s1/events")).json()["events"]
        [decided] = [e["event"] for e in events if e["event"]["type"] == "approval_decided"]
        assert decided["by"] == "ada"  # the auth layer's identity is the approver
        opened = [e["event"] for e in events if e["event"]["type"] == "turn_opened"]
        assert all(o["run_id"].startswith(paused["run_id"]) for o in opened)  # the log names the server's run
    await sessions.aclose()  # pyright: ignore[reportAttributeAccessIssue]
