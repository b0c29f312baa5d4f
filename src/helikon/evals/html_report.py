"""The HTML report: one self-contained file with the table, each case's trajectory and the diff.

`EvalReport.to_html(baseline)` fills `report.html` (beside this module: its styles and
script, no CDN, nothing fetched) with the run's data in two parts:

- the table's rows, plain JSON: what the virtualised table draws (only the rows in view are
  in the page, so 10,000 cases scroll as 10 do);
- each case's details (every turn's input, answer, tool calls with their arguments and
  results, scores with reasons, and the baseline's answer and calls beside them), as gzip
  compressed JSON in chunks of `CHUNK` cases: the page decompresses a chunk
  (`DecompressionStream`) when one of its cases is opened.

Everything from a run is data the page writes with `textContent`, never markup; the embedded
JSON escapes `<`, `>` and `&`, so an answer holding `</script>` stays text.

Example:
    ```python
    from helikon.evals import EvalReport

    page = EvalReport.empty("smoke").to_html()
    assert page.startswith("<!doctype html>") and "<script src" not in page and "<link" not in page
    ```
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compare import Change
    from .report import CaseResult, EvalReport, TurnResult

CHUNK = 64
"""Cases per compressed details chunk: a chunk is decompressed when one of its cases is opened."""

_TEMPLATE = Path(__file__).with_name("report.html")
_SLOTS = re.compile(r"/\*(?:TITLE|META|ROWS)\*/|<!--CHUNKS-->")


def render_html(report: EvalReport, baseline: EvalReport | None = None) -> str:
    """The report as one HTML page (see the module); with `baseline`, its diff against it."""
    changes: dict[str, list[Change]] = {}
    if baseline is not None:
        for change in report.compare(baseline).changes:
            changes.setdefault(change.case_id, []).append(change)
    before = {} if baseline is None else {c.case_id: c for c in baseline.cases}
    meta = _meta(report, baseline, changes)
    rows = [_row(case, report.evaluators, changes.get(case.case_id, [])) for case in report.cases]
    details = [
        _details(case, before.get(case.case_id), changes.get(case.case_id, [])) for case in report.cases
    ]
    chunks = "".join(
        f'<script type="text/plain" class="chunk">{_packed(details[start : start + CHUNK])}</script>\n'
        for start in range(0, len(details), CHUNK)
    )
    values = {
        "/*TITLE*/": _text(f"{report.dataset} · {report.run_id}"),
        "/*META*/": _json(meta),
        "/*ROWS*/": _json(rows),
        "<!--CHUNKS-->": chunks,
    }
    # One pass over the template: a run's data that happens to hold a placeholder stays data.
    return _SLOTS.sub(lambda slot: values[slot.group(0)], _TEMPLATE.read_text(encoding="utf-8"))


def _meta(
    report: EvalReport, baseline: EvalReport | None, changes: dict[str, list[Change]]
) -> dict[str, Any]:
    kinds = [c.kind for case_changes in changes.values() for c in case_changes]
    return {
        "run_id": report.run_id,
        "dataset": report.dataset,
        "created": report.created,
        "evaluators": list(report.evaluators),
        "repeat": report.repeat,
        "passed": report.passed(),
        "chunk": CHUNK,
        "summary": {
            name: {"mean": s.mean, "passed": s.passed, "failed": s.failed, "skipped": s.skipped}
            for name, s in report.summary().items()
        },
        "baseline": None if baseline is None else {"run_id": baseline.run_id, "dataset": baseline.dataset},
        "changes": {
            kind: kinds.count(kind) for kind in ("regressed", "improved", "changed", "added", "removed")
        },
        "removed": [c.case_id for cs in changes.values() for c in cs if c.kind == "removed"],
    }


def _row(case: CaseResult, evaluators: tuple[str, ...], changes: list[Change]) -> list[Any]:
    """A table row: id, outcome, each evaluator's [value, outcome], tokens, seconds, why, change."""
    from .score import ScoreOutcome

    scores = [
        [round(r.value, 4), r.outcome.value] if (r := case.scores.get(name)) is not None else None
        for name in evaluators
    ]
    why = case.error or next(
        (s.reason for s in case.scores.values() if s.outcome is not ScoreOutcome.PASSED and s.reason), ""
    )
    kinds = {c.kind for c in changes}
    change = next((k for k in ("regressed", "improved", "added", "changed") if k in kinds), "")
    return [
        case.case_id,
        case.outcome.value,
        scores,
        case.usage.total_tokens,
        round(case.latency_s, 3),
        why[:200],
        change,
    ]


def _details(case: CaseResult, before: CaseResult | None, changes: list[Change]) -> dict[str, Any]:
    return {
        "case": case.case,
        "metadata": case.metadata,
        "error": case.error,
        "scores": {
            name: {
                "value": r.value,
                "outcome": r.outcome.value,
                "reason": r.reason,
                "stddev": r.stddev,
                "passes": r.passes,
                "runs": r.runs,
            }
            for name, r in case.scores.items()
        },
        "attempts": [[_turn(t) for t in attempt] for attempt in case.attempts],
        "changes": [[c.evaluator, c.kind, c.before, c.after] for c in changes],
        "baseline": None
        if before is None
        else {
            "outcome": before.outcome.value,
            "turns": [_turn(t) for t in before.attempts[0]] if before.attempts else [],
        },
    }


def _turn(turn: TurnResult) -> dict[str, Any]:
    return {
        "input": turn.input,
        "output": turn.output,
        "error": turn.error,
        "tokens": turn.usage.total_tokens,
        "seconds": round(turn.latency_s, 3),
        "calls": [[c.name, c.args, c.result, c.is_error] for c in turn.tool_calls],
        "scores": {name: [s.value, s.outcome.value, s.reason] for name, s in turn.scores.items()},
    }


def _packed(details: list[dict[str, Any]]) -> str:
    """A chunk of details as base64 of gzip of JSON (mtime 0: the same report gives the same page)."""
    raw = json.dumps(details, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def _json(value: Any) -> str:
    """JSON safe inside a `<script>`: no `<`, `>` or `&` that could end it or open a comment."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _text(value: str) -> str:
    """`value` as HTML text."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


__all__ = ["CHUNK", "render_html"]
