"""The server's evals endpoints: a session saved as an eval case, and the eval reports of a folder.

Both are off until the builder's `.evals(dataset=..., reports=...)` names where they work:

- `POST /sessions/{session_id}/eval-case` appends the session as one JSONL line
  (`EvalCase.from_session`) to the dataset file, creating it if missing. It only ever
  appends: what the file held stays as it was.
- `GET /evals` lists the reports (`EvalReport.save`'s JSON files) in the reports folder;
  `GET /evals/{name}` is one of them as the evals' self-contained HTML page
  (`?baseline=<name>` adds the diff). Only plain file names of that folder are read.

The page carries its own scripts inline (it is one file by design), so it is served with
its own Content Security Policy: nothing fetched, inline code allowed, no framing.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..core.exceptions import UserError
from .errors import ApiError
from .wire import check_session_id, read_json

_REPORT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.json")
REPORT_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class EvalRoutes:
    """The evals endpoints over a dataset file and a reports folder (either may be None: off)."""

    def __init__(self, server: Any, dataset: Path | None, reports: Path | None) -> None:
        self.server = server
        self.dataset = dataset
        self.reports = reports
        self._appending = asyncio.Lock()

    async def save_case(self, request: Request) -> Response:
        """`POST /sessions/{session_id}/eval-case` `{"id"?}`: the session, appended to the dataset (201)."""
        from ..evals import EvalCase

        if self.dataset is None:
            raise ApiError(
                404, "no_dataset", "this server keeps no eval dataset: build it with .evals(dataset=...)"
            )
        session_id = check_session_id(request.path_params["session_id"])
        body = await read_json(request, self.server.body_limit)
        case_id = cast("dict[str, Any]", body).get("id", session_id) if isinstance(body, dict) else None
        if not isinstance(case_id, str) or not case_id:
            raise ApiError(
                400, "invalid_request", "the body is a JSON object; its `id`, if given, a non-empty string"
            )
        session = await self.server.sessions.session(session_id)
        try:
            case = await EvalCase.from_session(session, id=case_id, metadata={"session_id": session_id})
        except UserError as exc:
            raise ApiError(409, "nothing_to_save", str(exc)) from None
        line = json.dumps(case.to_json(), ensure_ascii=False)
        async with self._appending:
            lines = await asyncio.to_thread(_append_line, self.dataset, line)
        return JSONResponse(
            {"case": case.to_json(), "dataset": self.dataset.name, "line": lines}, status_code=201
        )

    async def list_reports(self, request: Request) -> Response:
        """`GET /evals`: the reports in the reports folder, newest first."""
        from ..evals import EvalReport

        found: list[dict[str, Any]] = []
        for path in sorted(self._folder().glob("*.json")):
            try:
                report = EvalReport.load(path)
            except Exception:  # a file that is not a report: listed, saying so
                found.append({"name": path.name, "error": "not an eval report"})
                continue
            found.append(
                {
                    "name": path.name,
                    "dataset": report.dataset,
                    "created": report.created,
                    "cases": len(report.cases),
                    "passed": report.passed(),
                }
            )
        found.sort(key=lambda r: str(r.get("created", "")), reverse=True)
        return JSONResponse({"reports": found})

    async def show_report(self, request: Request) -> Response:
        """`GET /evals/{name}`: the report as its HTML page (`?baseline=<name>`: with the diff)."""
        from ..evals import EvalReport

        report = EvalReport.load(self._report_path(request.path_params["name"]))
        baseline_name = request.query_params.get("baseline")
        baseline = None if baseline_name is None else EvalReport.load(self._report_path(baseline_name))
        page = await asyncio.to_thread(report.to_html, baseline)
        headers = {"Content-Security-Policy": REPORT_POLICY, "X-Content-Type-Options": "nosniff"}
        return HTMLResponse(page, headers=headers)

    def _folder(self) -> Path:
        if self.reports is None:
            raise ApiError(
                404, "no_reports", "this server shows no eval reports: build it with .evals(reports=...)"
            )
        return self.reports

    def _report_path(self, name: str) -> Path:
        """A report file of the folder, by its plain name: no path, no parent, nothing else."""
        folder = self._folder()
        if not _REPORT_NAME.fullmatch(name) or ".." in name:
            raise ApiError(404, "unknown_report", f"no report {name!r}: GET /evals lists them")
        path = folder / name
        if not path.is_file():
            raise ApiError(404, "unknown_report", f"no report {name!r}: GET /evals lists them")
        return path


def _append_line(path: Path, line: str) -> int:
    """Append `line` to the JSONL file at `path` (on a line of its own); the file's line count after."""
    with path.open("a+", encoding="utf-8") as file:
        file.seek(0)
        text = file.read()
        if text and not text.endswith("\n"):
            file.write("\n")  # a file that did not end its last line: ours goes on a line of its own
        file.write(line + "\n")
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1) + 1


__all__ = ["REPORT_POLICY", "EvalRoutes"]
