r"""`BashTool` ("Bash"): run a shell command through an `ExecutionBackend`.

The tool reads the model's arguments, applies its `allow_commands` / `deny_commands` with
the governance rules' operator-aware shell reader (`DenyRule.bash_command`,
`allowed_by`; one shell reader in the house), and hands `bash -c <command>` to the
backend. Containment is the backend's job; the description tells the model which tier it
is under (`guarantees()`). A command the reader cannot analyse is refused whenever a list
is set: the rules fail closed.

Example:
    ```python
    import asyncio
    import tempfile

    from helikon.core.exceptions import Denied
    from helikon.tools import BashTool, HostBackend, Sandbox

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp, Sandbox.open(tmp) as sandbox:
            bash = BashTool(HostBackend.builder(sandbox).build(), deny_commands=["rm"])
            assert "host (no containment)" in bash.description
            assert (await bash.run("echo hi")).value == "hi\n"
            try:
                await bash.run("ls; rm -rf x")
            except Denied as exc:
                assert "rm" in exc.reason

    asyncio.run(main())
    ```
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from helikon.core._internal.json_value import JsonObject, JsonValue
from helikon.core.exceptions import Denied, InvalidArgs, UserError
from helikon.core.governance.rules import AllowRule, DenyRule, ToolSubject, allowed_by
from helikon.core.tools import ToolEffect, ToolOutput

from .backend import ExecOutput, ExecRequest, ExecutionBackend

if TYPE_CHECKING:
    from helikon.core.cancel import CancellationToken
    from helikon.core.context import ToolContext

_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "The shell command line to run with bash."}},
    "required": ["command"],
    "additionalProperties": False,
}


class BashTool:
    """Runs `bash -c <command>` through `backend`; effect `SIDE_EFFECT`.

    `deny_commands` refuses a command when any of its sub-commands (or a wrapper such as
    `sudo`) runs one of the programs; `allow_commands`, when given, runs a command only if
    every sub-command is one of them. Both read the command as the permission rules do:
    `ls; rm -rf x`, `a && /bin/rm`, `$(rm ...)` and `bash -c 'rm ...'` all run `rm`.
    """

    __slots__ = ("_allow", "_backend", "_deny", "_filtered", "description")

    name = "Bash"
    schema = _SCHEMA
    output_schema = None
    effect = ToolEffect.SIDE_EFFECT

    def __init__(
        self,
        backend: ExecutionBackend,
        *,
        allow_commands: Iterable[str] | None = None,
        deny_commands: Iterable[str] = (),
    ) -> None:
        if not isinstance(backend, ExecutionBackend):
            raise UserError(
                f"BashTool(backend={backend!r}): give an ExecutionBackend, "
                "e.g. HostBackend.builder(sandbox).build()"
            )
        self._backend = backend
        self._deny = tuple(DenyRule.bash_command(p) for p in _names(deny_commands, "deny_commands"))
        self._allow = (
            None if allow_commands is None
            else tuple(AllowRule.bash_command(p) for p in _names(allow_commands, "allow_commands"))
        )  # fmt: skip
        self._filtered = bool(self._deny) or self._allow is not None
        self.description = (
            "Run a shell command with bash and get its exit code, stdout and stderr. "
            f"Containment tier: {backend.guarantees().describe()}. "
            "The working directory is the sandbox root; each call starts a fresh shell."
        )
        if self._allow is not None:
            self.description += " Allowed programs: " + ", ".join(r.value for r in self._allow) + "."

    @property
    def backend(self) -> ExecutionBackend:
        """The backend commands run on."""
        return self._backend

    async def invoke(self, ctx: ToolContext[Any], args: JsonValue) -> ToolOutput:
        """Check the command against the lists, run it, format the result for the model."""
        command = args.get("command") if isinstance(args, dict) else None
        if not isinstance(command, str) or not command.strip():
            raise InvalidArgs(["'command' must be a non-empty string"])
        return await self.run(command, cancel=ctx.cancel)

    async def run(self, command: str, *, cancel: CancellationToken | None = None) -> ToolOutput:
        """Run `command` as the tool would (the lists apply); a cancelled `cancel` kills it."""
        if self._filtered:
            self._check(command)
        out = await self._backend.run(ExecRequest(("bash", "-c", command)), cancel=cancel)
        return ToolOutput(_for_model(out), metadata=_metadata(out))

    def _check(self, command: str) -> None:
        subject = ToolSubject("Bash", {"command": command})
        if subject.deny_all:
            raise Denied(f"the command cannot be analysed safely ({_why(subject)}); write it plainly")
        for rule in self._deny:
            if rule.matches(subject):
                raise Denied(f"`{rule.value}` is on this tool's deny list")
        if self._allow is not None and not allowed_by(self._allow, subject):
            allowed = ", ".join(r.value for r in self._allow)
            raise Denied(
                f"only these programs may run: {allowed} (each sub-command must be one, "
                "not run through sudo/env or a NAME=value prefix)"
            )

    def __repr__(self) -> str:
        return f"BashTool({self._backend!r})"


def _names(names: Iterable[str], option: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise UserError(f"BashTool({option}={names!r}): give a list of program names, e.g. ['rm']")
    return tuple(names)


def _why(subject: ToolSubject) -> str:
    return subject.parse.error if subject.parse is not None and subject.parse.error else "unparseable"


def _for_model(out: ExecOutput) -> str:
    """Plain stdout for a clean success; otherwise the status, both streams and what was cut."""
    if out.exit_code == 0 and not out.stderr and not out.truncated:
        return out.stdout
    if out.timed_out:
        status = "timed out; the command and everything it started were killed"
    elif out.cancelled:
        status = "cancelled; the command and everything it started were killed"
    elif out.signal is not None:
        status = f"killed by signal {_signal_name(out.signal)}"
    else:
        status = f"exit code {out.exit_code}"
    parts = [status]
    if out.stdout:
        parts.append("stdout:\n" + out.stdout)
    if out.stderr:
        parts.append("stderr:\n" + out.stderr)
    cut = [
        name for name, flag in (("stdout", out.stdout_truncated), ("stderr", out.stderr_truncated)) if flag
    ]
    if cut:
        parts.append(f"[{' and '.join(cut)} truncated at the output cap; the command was stopped there]")
    return "\n".join(parts)


def _metadata(out: ExecOutput) -> JsonObject:
    stdout, stderr = len(out.stdout.encode()), len(out.stderr.encode())
    return {
        "exit_code": out.exit_code,
        "signal": out.signal,
        "timed_out": out.timed_out,
        "cancelled": out.cancelled,
        "stdout_bytes": stdout,
        "stderr_bytes": stderr,
        "bytes": stdout + stderr,
        "truncated": out.truncated,
        "duration": out.duration,
    }


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


__all__ = ["BashTool"]
