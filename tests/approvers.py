"""An approval handler for tests: answers every question the same way and records what it was asked."""

from __future__ import annotations

from typing import Any

from helikon import ApprovalOutcome

REFUSAL = "the operator said no"
"""The reason a refusing `Approver` gives."""


class Approver:
    """Approves (or refuses, with `REFUSAL`) every call; `asked` holds each (tool, prompt)."""

    def __init__(self, approve: bool) -> None:
        self.approve = approve
        self.asked: list[tuple[str, str]] = []

    async def decide(self, tool: str, prompt: str, args: Any) -> ApprovalOutcome:
        self.asked.append((tool, prompt))
        return ApprovalOutcome.allow() if self.approve else ApprovalOutcome.deny(REFUSAL)
