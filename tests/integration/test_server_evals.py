"""The server's evals endpoints: a session saved as an eval case (appended only), reports shown."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from server_helpers import answering_agent, serving

from helikon import UserError
from helikon.evals import EvalDataset, EvalRun, ExactMatch
from helikon.server import AgentServer


def build(tmp_path: Path) -> AgentServer:
    (tmp_path / "reports").mkdir()
    return (
        AgentServer.builder()
        .with_default_context()
        .agent(answering_agent())
        .evals(dataset=tmp_path / "cases.jsonl", reports=tmp_path / "reports")
        .build()
    )


async def test_a_session_is_appended_to_the_dataset_as_a_case(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "kept", "input": "old"}', encoding="utf-8"
    )  # no last newline
    async with serving(build(tmp_path)) as base, httpx2.AsyncClient(base_url=base) as client:
        empty = await client.post("/sessions/nothing/eval-case", json={})
        assert empty.status_code == 409 and empty.json()["error"]["code"] == "nothing_to_save"
        await client.post("/agents/echo/runs", json={"input": "hi"}, headers={"X-Session-Id": "s-1"})
        saved = await client.post("/sessions/s-1/eval-case", json={"id": "greeting"})
        assert saved.status_code == 201 and saved.json()["line"] == 2
        assert saved.json()["case"]["expected"] == "you said: hi"
    data = EvalDataset.from_jsonl_path(tmp_path / "cases.jsonl")
    assert [c.id for c in data] == ["kept", "greeting"]  # what the file held stays
    assert data.cases[1].metadata == {"session_id": "s-1"}


async def test_reports_are_listed_and_shown_as_their_page(tmp_path: Path) -> None:
    server = build(tmp_path)
    report = (
        EvalRun.builder()
        .dataset(
            EvalDataset.from_jsonl_str('{"id": "c", "input": "x", "expected": "you said: x"}', name="smoke")
        )
        .agent(answering_agent())
        .evaluator(ExactMatch())
        .build()
    )
    (await report.run()).save(tmp_path / "reports" / "smoke.json")
    (tmp_path / "reports" / "broken.json").write_text("{}", encoding="utf-8")
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        listed = (await client.get("/evals")).json()["reports"]
        assert {r["name"]: r.get("passed", r.get("error")) for r in listed} == {
            "smoke.json": True,
            "broken.json": "not an eval report",
        }
        page = await client.get("/evals/smoke.json", params={"baseline": "smoke.json"})
        assert page.status_code == 200 and page.text.startswith("<!doctype html>")
        assert "script-src 'unsafe-inline'" in page.headers["content-security-policy"]
        for bad in ("../cases.jsonl", "..%2Fcases.jsonl", "nope.json", "smoke"):
            assert (await client.get(f"/evals/{bad}")).status_code == 404


async def test_without_evals_configured_the_endpoints_say_how(tmp_path: Path) -> None:
    server = AgentServer.builder().with_default_context().agent(answering_agent()).build()
    async with serving(server) as base, httpx2.AsyncClient(base_url=base) as client:
        saved = await client.post("/sessions/s/eval-case", json={})
        assert saved.status_code == 404 and ".evals(dataset=" in saved.json()["error"]["message"]
        assert (await client.get("/evals")).json()["error"]["code"] == "no_reports"
    with pytest.raises(UserError, match="is not a folder"):
        AgentServer.builder().evals(reports=tmp_path / "missing")
