"""Scripted agents and datasets the eval tests share."""

from __future__ import annotations

import json

from helikon import LlmAgent, tool
from helikon.evals import EvalCase, EvalDataset
from helikon.testing import MockModel, text_turn, tool_call_turn


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def adder(case: EvalCase) -> LlmAgent[None, str]:
    """A scripted agent that adds the case's two numbers with the tool and answers the sum."""
    a, b = (int(n) for n in case.input.split("+"))
    script = [tool_call_turn("add", {"a": a, "b": b}), text_turn(str(a + b))]
    return LlmAgent(name="adder", model=MockModel.with_scripts(script), tools=[add])


def sums(count: int) -> EvalDataset:
    cases = [
        {"id": f"s{i}", "input": f"{i}+{i}", "expected": str(2 * i), "expected_tools": ["add"]}
        for i in range(count)
    ]
    lines = [json.dumps(case) for case in cases]
    return EvalDataset.from_jsonl_str("\n".join(lines), name="sums")
