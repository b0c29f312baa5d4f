"""Approvals that outlive the process: what a paused run waits for, and the decisions that resume it.

A tool call that needs a person's approval (`@tool(needs_approval=True)`, an `ask` rule, a
policy's `AskUser`) when no in-process `ApprovalHandler` answers pauses its run: the run
ends with `RunPaused`, `RunResult.status == "paused"` and `result.pending` lists a
`PendingApproval` per call, each also recorded in the session's log. Later, in any
process, `agent.resume(session, decisions={request_id: Approve() | Deny(reason) |
Edit(args)})` continues the run from the session alone.

A decision is bound to its request: to the request id, and (when it carries one) to the
digest of the arguments the person was shown. Whatever does not match fails closed with an
`ApprovalError` that says what happened, and nothing runs.

Example:
    ```python
    from helikon.core.approvals import Approve, Deny, Edit, args_digest

    digest = args_digest({"amount": 120, "to": "ACME"})
    assert digest == args_digest({"to": "ACME", "amount": 120})  # key order does not matter
    decisions = {"apr_1": Approve(digest=digest), "apr_2": Deny("not now"), "apr_3": Edit({"amount": 100})}
    assert [d.kind for d in decisions.values()] == ["approve", "deny", "edit"]
    ```
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Literal, TypeAlias

from ._internal.carrier import carrier
from ._internal.json_value import JsonObject, JsonValue
from .exceptions import HelikonError, UserError

if TYPE_CHECKING:
    from datetime import datetime

    from .events import SubRun, TokenUsage

OnExpire: TypeAlias = Literal["deny", "keep"]
"""What expiry does to a pending approval: deny it (a decision after it is refused), or keep it open."""

DIGEST_ALGORITHM = "sha256"
"""How `args_digest` hashes: SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8)."""


def canonical_json(value: JsonValue) -> str:
    """`value` as canonical JSON: keys sorted, no whitespace, non-ASCII kept, NaN and infinity refused.

    Raises:
        UserError: `value` is not JSON (a NaN, an infinity, a set, an object).
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(f"tool arguments must be JSON to be approved: {exc}") from None


def args_digest(args: JsonValue) -> str:
    """The digest that binds a decision to a call's arguments: `"sha256:"` + hex of `canonical_json`.

    Equal arguments give equal digests whatever their key order; `1` and `1.0` differ, as
    JSON text does. Arguments that are JSON text (a model's unparsed call) are parsed first,
    so the text's spacing does not matter; text that is not JSON is digested as the string.
    """
    if isinstance(args, str):
        with contextlib.suppress(ValueError):  # not JSON text: digested as the string it is
            args = json.loads(args)
    text = canonical_json(args)
    import hashlib  # here: OpenSSL costs `import helikon` 3 ms, and only a pause digests

    return f"{DIGEST_ALGORITHM}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def schema_digest(name: str, schema: JsonObject) -> str:
    """The digest of a tool's name and argument schema: a resume refuses a tool whose schema changed."""
    return args_digest({"name": name, "schema": schema})


def new_request_id() -> str:
    """A fresh approval request id: unique per pending call, across runs and processes."""
    import uuid  # here: `import helikon` does without it until a run pauses

    return f"apr_{uuid.uuid4().hex}"


@carrier
class PendingApproval:
    """One tool call a paused run waits on a decision for (`RunResult.pending`, `RunPaused.pending`).

    Attributes:
        request_id: What a decision names (`decisions={request_id: Approve()}`); unique.
        call_id: The model's id of the call.
        tool: The tool called (the name the model called it by).
        agent_path: The agents from the one run to the one whose tool this is: the run's
            agent, then each handoff target on the way.
        args: The arguments the call would run with.
        args_digest: `args_digest(args)`: pass it in a decision to bind it to what was shown.
        prompt: Why it needs approval (the tool's or the rule's question).
        expires: When a decision is due, as a POSIX timestamp (`expires_at` as a
            `datetime`), if ever.
        on_expire: What expiry does: `"deny"` (a decision after it is refused, and the run
            resumes with the call denied) or `"keep"` (it stays open).
        tool_digest: The digest of the tool's schema when the run paused.
        via: The calls of agents called as tools (`AgentAsTool`) the request is reached
            through, from the paused run's own call down; empty for a call of the run's
            own agent (or a handoff target's).
    """

    request_id: str
    call_id: str
    tool: str
    agent_path: tuple[str, ...]
    args: JsonValue
    args_digest: str
    prompt: str = ""
    expires: float | None = None
    on_expire: OnExpire = "deny"
    tool_digest: str = ""
    via: tuple[str, ...] = ()

    @property
    def run_call(self) -> str:
        """The call of the paused run's own turn that waits on this request (an agent tool's: nested)."""
        return self.via[0] if self.via else self.call_id

    @property
    def expires_at(self) -> datetime | None:
        """When a decision is due (UTC), if ever."""
        if self.expires is None:
            return None
        from datetime import UTC, datetime  # here: `import helikon` does without it

        return datetime.fromtimestamp(self.expires, UTC)

    def expired(self, now: float | None = None) -> bool:
        """Whether the deadline has passed (at POSIX time `now`, default: the current time)."""
        return self.expires is not None and (time.time() if now is None else now) >= self.expires


@carrier(kw_only=False)
class Approve:
    """Run the call as it is. `digest`, if given, must be the pending call's `args_digest`."""

    digest: str | None = None
    kind: Literal["approve"] = "approve"


@carrier(kw_only=False)
class Deny:
    """Do not run the call: the model reads `reason` as the call's error result."""

    reason: str = ""
    digest: str | None = None
    kind: Literal["deny"] = "deny"


@carrier(kw_only=False)
class Edit:
    """Run the call with `args` instead: checked against the tool's schema, recorded with their digest."""

    args: JsonValue
    digest: str | None = None
    kind: Literal["edit"] = "edit"


Decision: TypeAlias = Approve | Deny | Edit
"""A person's answer to one `PendingApproval`."""

Approver: TypeAlias = str | JsonObject | None
"""Who decided: a name, a small mapping (`{"sub": "u_17", "via": "console"}`), or None."""


class AgentToolPaused(Exception):
    """Internal: a sub-agent called as a tool paused; the calling run pauses on the call in turn.

    Raised by `AgentAsTool`, turned by the tool runner into the call's pending requests
    (`pending`, with paths relative to the sub-agent) and the sub-runs to record
    (`sub_runs`: the sub-agent's own first, then any it nests).
    """

    def __init__(
        self, pending: tuple[PendingApproval, ...], sub_runs: tuple[SubRun, ...], usage: TokenUsage
    ) -> None:
        super().__init__(f"{len(pending)} call(s) of a sub-agent wait for approval")
        self.pending = pending
        self.sub_runs = sub_runs
        self.usage = usage


class ApprovalError(HelikonError):
    """A decision or a resume that cannot be applied: nothing was recorded, and nothing ran.

    `request_id` names the request it is about (empty when it is about the whole run).
    """

    def __init__(self, message: str, request_id: str = "") -> None:
        super().__init__(message)
        self.request_id = request_id


class NothingToResume(ApprovalError):
    """The session has no paused run (never paused, or resumed and finished already)."""


class UnknownApprovalRequest(ApprovalError):
    """A decision names a request id the paused run does not wait on."""


class ApprovalDigestMismatch(ApprovalError):
    """A decision's digest is not the digest of the pending call's arguments (or the log was altered)."""


class ApprovalAlreadyDecided(ApprovalError):
    """The request has a decision already, and this one differs from it."""


class ApprovalExpired(ApprovalError):
    """The request expired (`on_expire="deny"`): it is denied, and no other decision is taken."""


class ApprovalTargetMissing(ApprovalError):
    """The agent or the tool the pending request names no longer exists in the definitions given."""


class ApprovalToolChanged(ApprovalError):
    """The tool's argument schema changed since the run paused: the approval was for another tool."""


class InvalidEditedArgs(ApprovalError):
    """`Edit(args)` gave arguments that do not fit the tool's schema."""


__all__ = [
    "DIGEST_ALGORITHM",
    "ApprovalAlreadyDecided",
    "ApprovalDigestMismatch",
    "ApprovalError",
    "ApprovalExpired",
    "ApprovalTargetMissing",
    "ApprovalToolChanged",
    "Approve",
    "Approver",
    "Decision",
    "Deny",
    "Edit",
    "InvalidEditedArgs",
    "NothingToResume",
    "OnExpire",
    "PendingApproval",
    "UnknownApprovalRequest",
    "args_digest",
    "canonical_json",
    "new_request_id",
    "schema_digest",
]
