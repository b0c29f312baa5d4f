"""ForkdBackend against a real controller on 127.0.0.1 that implements the documented REST contract.

The controller (`forkd_controller.py`) runs each "microVM" as a local process group, since
there is no KVM here; what is under test is the client: fork -> exec -> destroy, destroy on
every way out, the errors it raises, the egress probe, and leaked-VM reconciliation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator

import pytest
from forkd_controller import TOKEN, Fault, ForkdController

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import ToolError, UserError
from helikon.tools import (
    BashTool,
    EgressPolicy,
    EgressProxy,
    ExecRequest,
    ForkdBackend,
    ForkdBackendBuilder,
    ForkdError,
    Isolation,
    ReconcileReport,
)

pytestmark = pytest.mark.integration


@pytest.fixture
async def controller() -> AsyncIterator[ForkdController]:
    async with ForkdController() as c:
        yield c


def builder(controller: ForkdController, *, token: str = TOKEN) -> ForkdBackendBuilder:
    return ForkdBackend.builder(controller.url).bearer_token(token).snapshot("helikon").control_timeout(5)


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def until(condition: object) -> None:
    for _ in range(500):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


# --- fork -> exec -> destroy ---------------------------------------------------------------------


async def test_a_command_runs_in_a_fresh_vm_that_is_destroyed(controller: ForkdController) -> None:
    backend = builder(controller).env_set({"GREETING": "hello"}).build()
    out = await backend.run(
        ExecRequest(
            ("bash", "-c", 'echo "$GREETING $WHO"; cat; echo err >&2; exit 3'),
            env={"WHO": "vm"},
            stdin=b"in\n",
        )
    )
    assert (out.exit_code, out.stdout, out.stderr) == (3, "hello vm\nin\n", "err\n")
    assert not out.timed_out and not out.cancelled and not out.truncated
    assert [c[0] for c in controller.calls] == ["POST", "POST", "DELETE"]
    assert controller.calls[1][1].endswith("/exec")
    assert controller.vms == {} and len(controller.destroyed) == 1
    assert set(controller.seen_auth) == {f"Bearer {TOKEN}"}


async def test_each_command_gets_its_own_vm(controller: ForkdController) -> None:
    backend = builder(controller).build()
    first = await backend.run(ExecRequest(("bash", "-c", "echo x > left.txt; ls")))
    second = await backend.run(ExecRequest(("bash", "-c", "ls; cat left.txt")))
    assert first.stdout == "left.txt\n"
    assert second.stdout == "" and second.exit_code == 1
    assert len(set(controller.destroyed)) == 2


async def test_this_process_environment_is_not_sent(
    controller: ForkdController, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    backend = builder(controller).build()
    out = await backend.run(ExecRequest(("bash", "-c", "echo ${OPENAI_API_KEY-unset}")))
    assert out.stdout == "unset\n"


async def test_output_is_capped(controller: ForkdController) -> None:
    backend = builder(controller).max_output_bytes(100).build()
    out = await backend.run(ExecRequest(("bash", "-c", "head -c 100000 /dev/zero | tr '\\0' a")))
    assert out.stdout_truncated and out.stdout == "a" * 100
    assert controller.vms == {}


async def test_a_command_past_its_timeout_is_killed_and_its_vm_destroyed(controller: ForkdController) -> None:
    backend = builder(controller).timeout(0.3).build()
    out = await backend.run(ExecRequest(("sleep", "30")))
    assert out.timed_out and out.exit_code is None
    assert controller.vms == {} and len(controller.destroyed) == 1
    per_call = await builder(controller).build().run(ExecRequest(("sleep", "30"), timeout=0.3))
    assert per_call.timed_out


async def test_cancel_stops_the_command_and_destroys_its_vm(controller: ForkdController) -> None:
    backend = builder(controller).build()
    token = CancellationToken()
    call = asyncio.create_task(backend.run(ExecRequest(("sleep", "30")), cancel=token))
    await until(lambda: controller.executing())
    token.cancel("stop")
    out = await call
    assert out.cancelled and out.exit_code is None
    assert controller.vms == {} and len(controller.destroyed) == 1
    await until(lambda: not controller.executing())  # destroy killed the command in the VM


async def test_a_cancelled_task_still_destroys_its_vm(controller: ForkdController) -> None:
    backend = builder(controller).build()
    call = asyncio.create_task(backend.run(ExecRequest(("sleep", "30"))))
    await until(lambda: controller.executing())
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: controller.vms == {})
    assert len(controller.destroyed) == 1


async def test_a_second_cancellation_does_not_stop_the_destroy(controller: ForkdController) -> None:
    # A slow destroy that the controller drops when the client hangs up.
    controller.faults["destroy"] = Fault(status=None, delay=0.3, abandon_if_gone=True)
    backend = builder(controller).build()
    call = asyncio.create_task(backend.run(ExecRequest(("sleep", "30"))))
    await until(lambda: controller.executing())
    call.cancel()
    await until(lambda: [c[0] for c in controller.calls] == ["POST", "POST", "DELETE"])
    call.cancel()  # while the destroy is in flight
    with pytest.raises(asyncio.CancelledError):
        await call
    await until(lambda: controller.vms == {})
    assert controller.abandoned == [] and len(controller.destroyed) == 1


async def test_an_already_cancelled_token_forks_nothing(controller: ForkdController) -> None:
    token = CancellationToken()
    token.cancel()
    out = await builder(controller).build().run(ExecRequest(("true",)), cancel=token)
    assert out.cancelled and controller.calls == []


async def test_bash_tool_states_the_microvm_tier(controller: ForkdController) -> None:
    bash = BashTool(builder(controller).build())
    assert "forkd (firecracker microvm — experimental)" in bash.description
    assert "filesystem: virtualized" in bash.description
    assert (await bash.run("echo hi")).value == "hi\n"


# --- errors --------------------------------------------------------------------------------------


async def test_a_wrong_token_is_a_clear_401(controller: ForkdController) -> None:
    backend = builder(controller, token="wrong-token").build()
    with pytest.raises(ForkdError) as caught:
        await backend.run(ExecRequest(("true",)))
    error = caught.value
    assert (error.status_code, error.code) == (401, "unauthorized")
    assert "refused the bearer token" in str(error) and ".bearer_token(" in str(error)
    assert "wrong-token" not in str(error)
    assert isinstance(error, ToolError)  # BashTool's model reads it as a failed call


async def test_a_controller_error_on_fork_names_the_call_and_the_body(controller: ForkdController) -> None:
    controller.faults["fork"] = Fault(500)
    with pytest.raises(ForkdError) as caught:
        await builder(controller).build().run(ExecRequest(("true",)))
    assert caught.value.status_code == 500 and caught.value.code == "internal"
    assert (
        str(caught.value)
        == "forkd fork: the controller answered HTTP 500 (internal: the hypervisor is on fire)"
    )


async def test_an_unknown_snapshot_is_the_controllers_404(controller: ForkdController) -> None:
    backend = ForkdBackend.builder(controller.url).bearer_token(TOKEN).snapshot("missing").build()
    with pytest.raises(ForkdError) as caught:
        await backend.run(ExecRequest(("true",)))
    assert caught.value.code == "snapshot_not_found" and "no snapshot 'missing'" in str(caught.value)


@pytest.mark.parametrize(
    "fault",
    [
        Fault(502, b"<html>bad gateway</html>"),
        Fault(200, b"this is not json"),
        Fault(200, b'["a", "list"]'),
        Fault(200, b'{"exit_code": "0", "stdout_b64": ""}'),
        Fault(200, b'{"exit_code": 0, "stdout_b64": "***"}'),
        Fault(200, b'{"exit_code": 0, "timed_out": "no"}'),
    ],
    ids=["html-502", "not-json", "not-object", "string-exit-code", "bad-base64", "bad-flag"],
)
async def test_a_broken_exec_answer_is_an_error_and_the_vm_is_destroyed(
    controller: ForkdController, fault: Fault
) -> None:
    controller.faults["exec"] = fault
    with pytest.raises(ForkdError) as caught:
        await builder(controller).build().run(ExecRequest(("true",)))
    assert str(caught.value).startswith("forkd exec: ")
    assert controller.vms == {} and len(controller.destroyed) == 1


async def test_a_controller_that_ignores_the_cap_is_cut_and_one_that_floods_is_refused(
    controller: ForkdController,
) -> None:
    backend = builder(controller).max_output_bytes(100).build()
    controller.faults["exec"] = Fault(200, json.dumps({"exit_code": 0, "stdout_b64": "YWFh" * 50}).encode())
    out = await backend.run(ExecRequest(("true",)))
    assert out.stdout == "a" * 100 and out.stdout_truncated and out.exit_code == 0
    controller.faults["exec"] = Fault(200, b'{"pad": "' + b"x" * 100_000 + b'"}')
    with pytest.raises(ForkdError, match="an answer over"):
        await backend.run(ExecRequest(("true",)))
    assert controller.vms == {}


async def test_a_fork_answer_without_a_usable_id_is_refused(controller: ForkdController) -> None:
    controller.faults["fork"] = Fault(201, json.dumps({"id": "../../etc"}).encode())
    with pytest.raises(ForkdError) as caught:
        await builder(controller).build().run(ExecRequest(("true",)))
    assert caught.value.code == "bad_response" and "docs/tools-forkd.md" in str(caught.value)
    assert [c[0] for c in controller.calls] == ["POST"]


async def test_an_unreachable_controller_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    backend = ForkdBackend.builder(url).bearer_token(TOKEN).snapshot("helikon").build()
    with pytest.raises(ForkdError) as caught:
        await backend.run(ExecRequest(("true",)))
    assert caught.value.code == "unreachable"
    assert f"cannot reach the controller at {url}" in str(caught.value)


async def test_a_controller_that_does_not_answer_a_fork_times_out(controller: ForkdController) -> None:
    controller.faults["fork"] = Fault(hang=True)
    backend = builder(controller).control_timeout(0.3).build()
    with pytest.raises(ForkdError) as caught:
        await backend.run(ExecRequest(("true",)))
    assert caught.value.code == "timeout" and "did not answer within 0.3 s" in str(caught.value)


async def test_an_exec_answer_that_never_comes_times_out_and_the_vm_is_destroyed(
    controller: ForkdController,
) -> None:
    controller.faults["exec"] = Fault(hang=True)
    backend = builder(controller).timeout(0.2).control_timeout(0.3).build()
    with pytest.raises(ForkdError) as caught:
        await backend.run(ExecRequest(("true",)))
    assert str(caught.value) == "forkd exec: the controller did not answer within 0.5 s"
    assert controller.vms == {} and len(controller.destroyed) == 1


async def test_a_failed_destroy_keeps_the_result_and_reconcile_reaps_the_vm(
    controller: ForkdController, caplog: pytest.LogCaptureFixture
) -> None:
    controller.faults["destroy"] = Fault(503)
    backend = builder(controller).reap_age(0.01).build_backend()
    with caplog.at_level(logging.WARNING, logger="helikon.tools.forkd"):
        out = await backend.run(ExecRequest(("echo", "done")))
    assert out.stdout == "done\n"
    assert "reconcile() reaps it later" in caplog.text
    assert len(controller.vms) == 1
    del controller.faults["destroy"]
    await asyncio.sleep(0.05)
    assert await backend.reconcile() == ReconcileReport(scanned=1, reaped=1, failed=0, skipped_unageable=0)
    assert controller.vms == {}


async def test_a_lost_fork_answer_leaks_a_vm_that_reconcile_reaps(controller: ForkdController) -> None:
    controller.faults["fork"] = Fault(hang=True, then_work=True)  # the VM is made, the answer never comes
    backend = builder(controller).control_timeout(0.3).reap_age(0.2).build_backend()
    with pytest.raises(ForkdError, match="did not answer"):
        await backend.run(ExecRequest(("true",)))
    assert len(controller.vms) == 1  # leaked: the client never learned its id
    del controller.faults["fork"]
    await asyncio.sleep(0.25)
    report = await backend.reconcile()
    assert report == ReconcileReport(scanned=1, reaped=1, failed=0, skipped_unageable=0)
    assert controller.vms == {}


# --- reconcile -----------------------------------------------------------------------------------


@pytest.mark.parametrize("filtered", [True, False], ids=["controller-filters", "client-filters"])
async def test_reconcile_reaps_only_this_snapshots_old_vms(
    controller: ForkdController, filtered: bool
) -> None:
    controller.filter_list = filtered
    old = controller.add_vm("helikon", age=1000)
    young = controller.add_vm("helikon", age=10)
    other = controller.add_vm("other", age=1000)
    unageable = [
        controller.add_vm("helikon", created_at=None),
        controller.add_vm("helikon", created_at="yesterday"),
        controller.add_vm("helikon", created_at="2020-01-01T00:00:00"),  # no offset: whose clock?
    ]
    stuck = controller.add_vm("helikon", age=2000)
    controller.failing_destroys.add(stuck)
    backend = builder(controller).reap_age(300).build_backend()
    report = await backend.reconcile()
    assert report == ReconcileReport(scanned=6, reaped=1, failed=1, skipped_unageable=3)
    assert controller.destroyed == [old]
    assert set(controller.vms) == {young, other, stuck, *unageable}


async def test_age_is_measured_on_the_controllers_clock(controller: ForkdController) -> None:
    controller.list_now = "2020-01-01T00:00:10Z"  # a controller clock years behind this machine's
    young = controller.add_vm("helikon", created_at="2020-01-01T00:00:00Z")
    old = controller.add_vm("helikon", created_at="2019-12-31T23:50:00+00:00")
    report = await builder(controller).reap_age(300).build_backend().reconcile()
    assert report == ReconcileReport(scanned=2, reaped=1, failed=0, skipped_unageable=0)
    assert controller.destroyed == [old] and set(controller.vms) == {young}


async def test_without_the_controllers_clock_nothing_is_aged(controller: ForkdController) -> None:
    controller.list_now = None
    controller.add_vm("helikon", age=1000)
    report = await builder(controller).build_backend().reconcile()
    assert report == ReconcileReport(scanned=1, reaped=0, failed=0, skipped_unageable=1)
    assert controller.destroyed == []


async def test_a_failing_list_is_raised(controller: ForkdController) -> None:
    controller.faults["list"] = Fault(200, b'{"items": []}')
    with pytest.raises(ForkdError, match="no 'sandboxes' list"):
        await builder(controller).build_backend().reconcile()


async def test_reconcile_sync_runs_from_a_thread_and_refuses_a_running_loop(
    controller: ForkdController,
) -> None:
    controller.add_vm("helikon", age=1000)
    backend = builder(controller).build_backend()
    with pytest.raises(UserError, match="use `await reconcile\\(\\)`"):
        backend.reconcile_sync()
    report = await asyncio.to_thread(backend.reconcile_sync)
    assert report.reaped == 1 and controller.vms == {}


# --- egress --------------------------------------------------------------------------------------


async def test_enforce_egress_fails_closed_when_the_proxy_is_unreachable(controller: ForkdController) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    with pytest.raises(ForkdError) as caught:
        builder(controller).enforce_egress(endpoint).build()
    assert caught.value.code == "egress_unreachable"
    assert f"egress proxy at {endpoint} is unreachable" in str(caught.value)
    assert "fails closed" in str(caught.value)
    assert controller.calls == []


async def test_enforce_egress_with_a_live_proxy_is_proxied_and_sent_with_each_fork(
    controller: ForkdController,
) -> None:
    policy = (
        EgressPolicy.deny_all()
        .allow_domains(["example.com", "*.github.com"])
        .deny_domains(["gist.github.com"])
    )
    async with EgressProxy(policy) as proxy:
        endpoint = f"127.0.0.1:{proxy.port}"
        backend = builder(controller).egress_policy(policy).enforce_egress(endpoint).build()
        assert backend.guarantees().network is Isolation.PROXIED
        assert backend.guarantees().filesystem is Isolation.VIRTUALIZED
        # The controller routes the guest through the proxy; a denied name is refused there.
        script = (
            "import urllib.request, urllib.error\n"
            "try:\n    urllib.request.urlopen('http://denied.invalid/', timeout=10)\n"
            "except urllib.error.HTTPError as e:\n    print(e.code)\n"
        )
        out = await backend.run(ExecRequest(("python3", "-c", script)))
    assert out.stdout == "403\n"
    assert controller_egress(controller) == [
        {
            "proxy": endpoint,
            "policy": {
                "allow": ["example.com", "*.github.com"],
                "deny": ["gist.github.com"],
                "ports": [80, 443],
            },
        }
    ]


def controller_egress(controller: ForkdController) -> list[object]:
    return [body.get("egress") for body in controller.fork_bodies]


async def test_without_enforce_egress_the_network_is_not_contained(controller: ForkdController) -> None:
    backend = builder(controller).build()
    assert backend.guarantees().network is Isolation.NONE
    await backend.run(ExecRequest(("true",)))
    assert controller_egress(controller) == [None]
