"""Runs of each kind (guardrails, hooks, validators, a handoff, max turns), for the durable runner's tests.

Each case makes a fresh agent (its scripted model is used up by one run) and gives the
input: the tests run it in process and durably, and compare the session logs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from helikon import (
    GuardrailVerdict,
    Handoff,
    LlmAgent,
    ModelRetry,
    RunConfig,
    RunContext,
    input_guardrail,
    output_guardrail,
    tool,
)
from helikon.core.governance import Hook, HookDecision, HookEvent
from helikon.core.session import SessionEntry
from helikon.testing import MockModel, text_turn, tool_call_turn, tool_calls_turn

ran: list[str] = []
"""The calls `add` ran (a test clears it, runs, and checks what really ran)."""


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(f"add {a} {b}")
    return a + b


@input_guardrail
def no_secrets(text: str) -> GuardrailVerdict:
    return GuardrailVerdict.tripwire("input_policy") if "secret" in text else GuardrailVerdict.pass_()


@output_guardrail
def no_apologies(text: str) -> GuardrailVerdict:
    return GuardrailVerdict.tripwire("output_policy") if "sorry" in text.lower() else GuardrailVerdict.pass_()


class DenyStart(Hook[Any]):
    async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
        return HookDecision.deny("closed today") if event.type == "on_run_start" else HookDecision.allow()


def guarded(*scripts: Any) -> LlmAgent[None, str]:
    model = MockModel.with_scripts(list(scripts))
    return LlmAgent(
        name="guarded",
        model=model,
        tools=[add],
        input_guardrails=[no_secrets],
        output_guardrails=[no_apologies],
    )


def validated() -> LlmAgent[None, str]:
    model = MockModel.with_scripts([text_turn("draft"), text_turn("final answer")])
    agent = LlmAgent(name="checked", model=model)

    @agent.output_validator
    def not_a_draft(output: str) -> str:
        if output == "draft":
            raise ModelRetry("that is a draft")
        return output.upper()

    return agent


def triage() -> LlmAgent[None, str]:
    specialist = LlmAgent(
        name="specialist",
        model=MockModel.with_scripts([tool_call_turn("add", {"a": 2, "b": 2}), text_turn("it is 4")]),
        tools=[add],
    )
    return LlmAgent(
        name="triage",
        model=MockModel.with_scripts([tool_call_turn("transfer_to_specialist", {})]),
        handoffs=[Handoff.to(specialist)],
    )


CASES: dict[str, tuple[Callable[[], LlmAgent[None, str]], str]] = {
    "input guardrail": (lambda: guarded(text_turn("never")), "my secret is 42"),
    "output guardrail": (
        lambda: guarded(tool_call_turn("add", {"a": 1, "b": 1}), text_turn("Sorry.")),
        "add",
    ),
    "start hook": (
        lambda: LlmAgent(name="hooked", model=MockModel.with_scripts([text_turn("x")]), hooks=[DenyStart()]),
        "hi",
    ),
    "output validator": (validated, "answer"),
    "handoff": (triage, "what is 2 + 2?"),
    "max turns": (
        lambda: LlmAgent(
            name="looping",
            model=MockModel.with_scripts([tool_call_turn("add", {"a": n, "b": n}) for n in range(3)]),
            tools=[add],
        ),
        "loop",
    ),
}


def config_of(case: str) -> RunConfig | None:
    """The run's config in `case` (the max-turns case runs with two)."""
    return RunConfig(max_turns=2) if case == "max turns" else None


def calculator() -> LlmAgent[None, str]:
    """Two tool turns (two calls, then one), then the answer."""
    model = MockModel.with_scripts(
        [
            tool_calls_turn([("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})]),
            tool_call_turn("add", {"a": 5, "b": 6}),
            text_turn("3, 7 and 11"),
        ]
    )
    return LlmAgent(name="calc", model=model, tools=[add], instructions="Be exact.")


def normalized(entries: Sequence[SessionEntry], *left_out: str) -> list[dict[str, Any]]:
    """A log's events as comparable values: no timestamps, nor the fields `left_out` (run ids, ...)."""
    dropped = {"ts", *left_out}
    return [
        {f.name: getattr(e.event, f.name) for f in dataclasses.fields(e.event) if f.name not in dropped}
        for e in entries
    ]
