"""`helikon eval run | compare | rescore`: a dataset against a sidecar agent, and recorded runs.

Exit codes: 0 when every case passed (and each evaluator's mean is at least
`--fail-under`); 1 when a case failed, a mean fell short, or (`compare`) something
regressed; 2 for bad input (a sidecar, dataset or trace that cannot be read).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ..core.exceptions import UserError
from .registry import Registry
from .sidecar import EvalSpec


def run_eval(
    dataset: Path,
    agent: str,
    agents: Path,
    *,
    as_json: bool = False,
    fail_under: float | None = None,
    trace: str | None = None,
    html: Path | None = None,
    concurrency: int = 1,
) -> int:
    """Run the dataset against `agent`, print the report; the exit code (see the module)."""
    from ..evals import EvalDataset, EvalRun

    registry = Registry.load(agents)
    registry.agent(agent)  # unknown or disabled: say so before any case runs
    data = EvalDataset.from_jsonl_path(dataset)
    builder = (
        EvalRun.builder()
        .dataset(data)
        .agent_factory(lambda case: registry.agent(agent, case_id=case.id))  # a fresh mock per case
        .concurrency(concurrency)
        .progress(sys.stderr.isatty() and not as_json)
    )
    for evaluator in evaluators(registry.sidecar.eval):
        builder.evaluator(evaluator)
    if trace is not None:
        builder.sink(_sink(trace))
    report = builder.build().run_sync()
    if html is not None:
        report.save_html(html)
    print(report.to_json() if as_json else report.render_table())
    return _verdict(report, fail_under, quiet=as_json)


def _verdict(report: Any, fail_under: float | None, *, quiet: bool) -> int:
    short = [
        f"{name} mean {summary.mean:.2f} < {fail_under:g}"
        for name, summary in report.summary().items()
        if fail_under is not None and summary.mean < fail_under
    ]
    if not quiet:
        for line in short:
            print(f"helikon eval: {line}", file=sys.stderr)
        if not report.passed():
            failed = sum(case.outcome.value == "failed" for case in report.cases)
            print(f"helikon eval: {failed} of {len(report.cases)} case(s) failed", file=sys.stderr)
    return 0 if report.passed() and not short else 1


def evaluators(spec: EvalSpec) -> list[Any]:
    """The evaluators `[eval]` names, configured by their `[eval.NAME]` tables."""
    from ..evals import ExactMatch, JsonSchemaEvaluator, LlmJudge, ToolUseTrajectory

    out: list[Any] = []
    for name in spec.evaluators:
        settings: dict[str, Any] = dict(spec.settings.get(name, {}))
        if name == "exact_match":
            out.append(ExactMatch(**settings))
        elif name == "tool_trajectory":
            out.append(ToolUseTrajectory(settings.pop("order", "exact"), **settings))
        elif name == "json_schema":
            out.append(JsonSchemaEvaluator(settings["schema"]))
        else:
            out.append(LlmJudge(settings["model"], settings["rubric"], settings.get("threshold", 0.5)))
    return out


def _sink(spec: str) -> Any:
    """`sqlite:PATH` or `parquet:DIR` as a trace sink."""
    kind, colon, where = spec.partition(":")
    if not colon or not where or kind not in ("sqlite", "parquet"):
        raise UserError(f"--trace {spec!r}: write sqlite:PATH or parquet:DIR")
    if kind == "sqlite":
        from ..evals import SqliteTraceSink

        return SqliteTraceSink(where)
    from ..evals import ParquetTraceSink

    return ParquetTraceSink(where)


async def load_run(spec: str) -> Any:
    """A recorded run: a report file, or `sqlite:PATH[#RUN]` / `parquet:DIR[#RUN]` (default: the newest)."""
    from ..evals import EvalReport

    if not spec.startswith(("sqlite:", "parquet:")):
        return EvalReport.load(spec)
    where, _, run_id = spec.partition("#")
    sink = _sink(where)
    if not run_id:
        runs = await sink.runs()
        if not runs:
            raise UserError(f"{where}: no run is recorded there")
        run_id = runs[-1]
    return await sink.load(run_id)


def compare_runs(report: str, baseline: str, *, as_json: bool = False) -> int:
    """Print what changed from `baseline` to `report`; 1 when something regressed."""
    from ..evals.compare import compare

    new, old = asyncio.run(load_run(report)), asyncio.run(load_run(baseline))
    comparison = compare(new, old)
    if as_json:
        changes = [
            {
                "case_id": c.case_id,
                "evaluator": c.evaluator,
                "kind": c.kind,
                "before": c.before,
                "after": c.after,
            }
            for c in comparison.changes
        ]
        print(json.dumps({"changes": changes}))
    else:
        print(comparison.render())
    return comparison.exit_code()


def rescore_run(trace: str, agents: Path, *, as_json: bool = False) -> int:
    """Score a recorded run again with the sidecar's evaluators; the exit code of `eval run`."""
    registry = Registry.load(agents)

    async def rescored() -> Any:
        return await (await load_run(trace)).rescore(evaluators(registry.sidecar.eval))

    report = asyncio.run(rescored())
    print(report.to_json() if as_json else report.render_table())
    return _verdict(report, None, quiet=as_json)


__all__ = ["compare_runs", "evaluators", "load_run", "rescore_run", "run_eval"]
