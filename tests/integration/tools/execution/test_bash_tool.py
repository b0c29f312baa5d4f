"""BashTool on real processes: the deny/allow lists read commands as the permission rules do.

The escape corpus: each command runs `rm` in disguise. With `deny_commands=["rm"]` every one is
refused and the file survives; run without the list, the same command really removes it, so
the corpus tests something.
"""

from __future__ import annotations

import asyncio

import pytest

from helikon import LlmAgent, ToolEffect
from helikon.core.cancel import CancellationToken
from helikon.core.events import ToolOutputItem
from helikon.core.exceptions import Denied, InvalidArgs, UserError
from helikon.testing import MockModel, text_turn, tool_call_turn
from helikon.tools import BashTool, HostBackend, ResourceLimits, Sandbox

pytestmark = pytest.mark.integration


def host(sandbox: Sandbox) -> HostBackend:
    return HostBackend.builder(sandbox).timeout(10).build()


RM_IN_DISGUISE = [
    "rm victim",
    "ls; rm victim",
    "ls && rm -f victim",
    "true || rm victim; rm victim",
    "echo ok | rm victim",
    "/bin/rm victim",
    "/usr/bin/rm victim",
    r"r\m victim",
    "'r'm victim",
    '"rm" victim',
    "echo $(rm victim)",
    "echo `rm victim`",
    "bash -c 'rm victim'",
    'sh -c "rm victim"',
    "eval rm victim",
    "sudo -n rm victim || rm victim",
    "env rm victim",
    "FOO=1 rm victim",
    "command rm victim",
    "timeout 5 rm victim",
    "nohup rm victim",
    "xargs rm <<< victim",
    "find . -name victim -exec rm {} +",
    "if true; then rm victim; fi",
    "for f in victim; do rm $f; done",
    "{ rm victim; }",
    "(rm victim)",
    "f() { rm victim; }; f",
    "ls\nrm victim",
]


@pytest.mark.parametrize("command", RM_IN_DISGUISE)
async def test_a_deny_on_rm_refuses_every_disguise(sandbox: Sandbox, command: str) -> None:
    victim = sandbox.root / "victim"
    victim.write_text("keep me")
    with pytest.raises(Denied, match="rm"):
        await BashTool(host(sandbox), deny_commands=["rm"]).run(command)
    assert victim.read_text() == "keep me"
    # The twin: without the list the same command really removes the file.
    await BashTool(host(sandbox)).run(command)
    assert not victim.exists(), f"{command!r} did not remove the file, so it proves nothing"


UNREADABLE = ["$CMD victim", "'unbalanced", "x=rm; $x victim", "rm$IFS victim", "${CMD:-rm} victim",
              "$(echo rm) victim", "a=(rm); ${a[0]} victim"]  # fmt: skip


@pytest.mark.parametrize("command", UNREADABLE)
async def test_a_command_that_cannot_be_analysed_fails_closed(sandbox: Sandbox, command: str) -> None:
    with pytest.raises(Denied, match="cannot be analysed"):
        await BashTool(host(sandbox), deny_commands=["rm"]).run(command)
    with pytest.raises(Denied, match="cannot be analysed"):
        await BashTool(host(sandbox), allow_commands=["echo"]).run(command)


async def test_the_allow_list_runs_only_the_listed_programs(sandbox: Sandbox) -> None:
    (sandbox.root / "victim").write_text("x")
    bash = BashTool(host(sandbox), allow_commands=["ls", "echo"])
    assert (await bash.run("ls && echo done")).value == "victim\ndone\n"
    for command in ["ls; rm victim", "sudo ls", "env ls", "FOO=1 ls", "./ls", "cat victim"]:
        with pytest.raises(Denied, match="only these programs may run: ls, echo"):
            await bash.run(command)
    assert (sandbox.root / "victim").exists()
    assert "Allowed programs: ls, echo." in bash.description


async def test_without_lists_anything_runs_and_nothing_is_parsed(sandbox: Sandbox) -> None:
    bash = BashTool(host(sandbox))
    assert (await bash.run("CMD=echo; $CMD plain")).value == "plain\n"  # no reader, no refusal


async def test_the_output_is_formatted_for_the_model_with_ui_metadata(sandbox: Sandbox) -> None:
    bash = BashTool(host(sandbox))
    clean = await bash.run("echo hi")
    assert clean.value == "hi\n"
    assert clean.metadata is not None and clean.metadata["exit_code"] == 0
    assert clean.metadata["stdout_bytes"] == 3 and clean.metadata["truncated"] is False
    failed = await bash.run("echo out; echo oops >&2; exit 2")
    assert failed.value == "exit code 2\nstdout:\nout\n\nstderr:\noops\n"
    assert failed.metadata is not None
    assert (failed.metadata["stdout_bytes"], failed.metadata["stderr_bytes"], failed.metadata["bytes"]) == (
        4,
        5,
        9,
    )
    capped = BashTool(HostBackend.builder(sandbox).max_output_bytes(10).build())
    cut = await capped.run("yes")
    assert isinstance(cut.value, str)
    assert cut.value.startswith("killed by signal SIGKILL\nstdout:\ny\ny\n")
    assert cut.value.endswith("[stdout truncated at the output cap; the command was stopped there]")
    assert cut.metadata is not None and cut.metadata["truncated"] is True
    slow = BashTool(HostBackend.builder(sandbox).timeout(0.3).build())
    assert (await slow.run("sleep 5")).value == "timed out; the command and everything it started were killed"
    spin = BashTool(HostBackend.builder(sandbox).timeout(60).rlimits(ResourceLimits(cpu_seconds=1)).build())
    assert (await spin.run("while :; do :; done")).value == "killed by signal SIGXCPU"


async def test_the_description_states_the_backends_tier(sandbox: Sandbox) -> None:
    bash = BashTool(host(sandbox))
    assert bash.name == "Bash" and bash.effect is ToolEffect.SIDE_EFFECT
    assert (
        "Containment tier: host (no containment); filesystem: none, network: none, syscalls: none"
        in bash.description
    )
    assert bash.schema["required"] == ["command"]


async def test_the_cancel_token_kills_the_command(sandbox: Sandbox) -> None:
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.3, token.cancel)
    out = await BashTool(host(sandbox)).run("sleep 30", cancel=token)
    assert out.value == "cancelled; the command and everything it started were killed"


async def test_bad_arguments_and_options_say_what_to_fix(sandbox: Sandbox) -> None:
    bash = BashTool(host(sandbox))
    with pytest.raises(InvalidArgs, match="command"):
        await bash.invoke(None, {"command": ""})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgs, match="command"):
        await bash.invoke(None, {"cmd": "ls"})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="ExecutionBackend"):
        BashTool(sandbox)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="list of program names"):
        BashTool(host(sandbox), deny_commands="rm")
    with pytest.raises(UserError, match="program name"):
        BashTool(host(sandbox), deny_commands=["rm -rf"])


async def test_an_agent_uses_bash_end_to_end(sandbox: Sandbox) -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("Bash", {"command": "echo hello > note.txt && cat note.txt"}),
            tool_call_turn("Bash", {"command": "ls; rm note.txt"}),
            text_turn("done"),
        ]
    )
    bash = BashTool(host(sandbox), deny_commands=["rm"])
    agent = LlmAgent(name="shell", model=model, tools=[bash])
    result = await agent.run("make a note")
    assert result.final_output == "done"
    outputs = [e.item.text for e in result.events if isinstance(e, ToolOutputItem)]
    assert outputs[0] == "hello\n"
    assert "`rm` is on this tool's deny list" in outputs[1]
    assert (sandbox.root / "note.txt").read_text() == "hello\n"
