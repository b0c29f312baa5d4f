"""`ForkdBackend` (experimental): each command in a Firecracker microVM forked by a forkd controller.

The backend is a REST client (the contract is `docs/tools-forkd.md`); the controller, on a
Linux host with `/dev/kvm`, does the forking. Per command it forks a microVM from a
snapshot, runs the command in it, and destroys it, also when the command times out, the
call is cancelled or the controller fails midway. It takes a controller URL, not a
`Sandbox`: the command's filesystem is the snapshot's. Nothing of this process's
environment is sent; `env_set` and `ExecRequest.env` are the guest's only extra variables.

Guarantees: filesystem and syscalls `VIRTUALIZED` (a guest kernel behind KVM); network
`NONE` unless `enforce_egress(proxy_endpoint)` attests that the deployment forces all guest
egress through an `EgressProxy`, which makes it `PROXIED`. The backend cannot check the
host's network rules; it checks that the proxy answers a TCP connect at `build()` and
fails closed when it does not. Needs the `tools-microvm` extra (httpx2).

A fork whose answer is lost (a timeout after the controller made the VM) leaks a VM with
no id to destroy: `reconcile()` lists the controller's sandboxes and destroys this
snapshot's that are older than `reap_age`.

Example:
    ```python
    from helikon.tools import ForkdBackend, Isolation

    backend = (
        ForkdBackend.builder("https://controller.internal:8889")
        .bearer_token("forkd-token")
        .snapshot("helikon")
        .timeout(60)
        .build()
    )
    assert backend.guarantees().filesystem is Isolation.VIRTUALIZED
    assert backend.guarantees().network is Isolation.NONE
    ```
"""

from __future__ import annotations

import asyncio
import base64
import logging
import math
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from helikon.core.exceptions import UserError
from helikon.tools.egress.policy import EgressPolicy

from ..backend import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    ExecOutput,
    ExecRequest,
    ExecutionBackend,
    check_env,
    check_positive,
)
from ..guarantees import Isolation, SandboxGuarantees
from ._client import ForkdClient, ForkdError, check_controller_url, exec_body_limit, exec_output
from ._egress import join_endpoint, parse_endpoint, policy_json, probe

if TYPE_CHECKING:
    from helikon.core._internal.json_value import JsonObject
    from helikon.core.cancel import CancellationToken

logger = logging.getLogger("helikon.tools.forkd")

DEFAULT_REAP_AGE = 300.0
"""Seconds a sandbox of this snapshot must have lived before `reconcile()` reaps it."""
DEFAULT_CONTROL_TIMEOUT = 30.0
"""Seconds a fork, destroy or list call may take, and the controller's grace to answer an exec."""
_LABEL = "forkd (firecracker microvm — experimental)"
_DIRECT = SandboxGuarantees(Isolation.VIRTUALIZED, Isolation.NONE, Isolation.VIRTUALIZED, _LABEL)
_PROXIED = SandboxGuarantees(Isolation.VIRTUALIZED, Isolation.PROXIED, Isolation.VIRTUALIZED, _LABEL)


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What one `reconcile()` did.

    - `scanned`: this snapshot's sandboxes the controller listed (other snapshots are not counted).
    - `reaped`: those older than `reap_age`, destroyed.
    - `failed`: those older than `reap_age` whose destroy failed (the next run tries again).
    - `skipped_unageable`: those without a usable `created_at` (or a list without `now`), kept.
    """

    scanned: int
    reaped: int
    failed: int
    skipped_unageable: int


class ForkdBackendBuilder:
    """Options of a `ForkdBackend`; start with `ForkdBackend.builder(controller_url)`."""

    __slots__ = (
        "_control_timeout",
        "_env",
        "_max_output",
        "_policy",
        "_proxy",
        "_reap_age",
        "_snapshot",
        "_timeout",
        "_token",
        "_url",
    )

    def __init__(self, controller_url: str) -> None:
        self._url = check_controller_url(controller_url)
        self._token: str | None = None
        self._snapshot: str | None = None
        self._timeout = DEFAULT_TIMEOUT
        self._max_output = DEFAULT_MAX_OUTPUT
        self._env: dict[str, str] = {}
        self._policy: EgressPolicy | None = None
        self._proxy: tuple[str, int] | None = None
        self._reap_age = DEFAULT_REAP_AGE
        self._control_timeout = DEFAULT_CONTROL_TIMEOUT

    def bearer_token(self, token: str) -> ForkdBackendBuilder:
        """The controller's API token, sent as `Authorization: Bearer <token>` on every call."""
        if not isinstance(token, str) or not token.strip() or any(c in token for c in "\r\n\0 "):
            raise UserError(
                "ForkdBackend.builder(...).bearer_token(): give the controller's token (no spaces)"
            )
        self._token = token
        return self

    def snapshot(self, tag: str) -> ForkdBackendBuilder:
        """The snapshot every command's microVM is forked from (also what `reconcile()` reaps)."""
        if (
            not isinstance(tag, str)
            or not tag
            or len(tag) > 128
            or not all(c.isalnum() or c in "._-" for c in tag)
        ):
            raise UserError(
                f"ForkdBackend.builder(...).snapshot({tag!r}): give the snapshot's tag "
                "(letters, digits, '.', '_', '-'; at most 128), e.g. 'helikon'"
            )
        self._snapshot = tag
        return self

    def timeout(self, seconds: float | timedelta) -> ForkdBackendBuilder:
        """Seconds a command may run before the controller kills it (default 30)."""
        self._timeout = _seconds(seconds, "timeout")
        return self

    def max_output_bytes(self, limit: int) -> ForkdBackendBuilder:
        """Bytes kept of each of stdout and stderr (default 1 MiB); past it the command is killed."""
        check_positive(limit, "ForkdBackend.builder(...).max_output_bytes()", integer=True)
        self._max_output = limit
        return self

    def env_set(self, values: Mapping[str, str]) -> ForkdBackendBuilder:
        """Variables set for every command in the guest (nothing of this process's environment is sent)."""
        check_env(values, "ForkdBackend.builder(...).env_set()")
        self._env.update(values)
        return self

    def egress_policy(self, policy: EgressPolicy) -> ForkdBackendBuilder:
        """The domains the guests may reach, sent with every fork for the controller's proxy to apply.

        Needs `enforce_egress`: a policy nothing enforces would only look like containment.
        """
        if not isinstance(policy, EgressPolicy):
            raise UserError(
                f"egress_policy({policy!r}): give an EgressPolicy, "
                "e.g. EgressPolicy.deny_all().allow_domains(['example.com'])"
            )
        self._policy = policy
        return self

    def enforce_egress(self, proxy_endpoint: str) -> ForkdBackendBuilder:
        """Attest that every guest's egress is forced through the `EgressProxy` at `host:port`.

        This is an operator attestation (see `docs/tools-forkd.md`): the backend cannot see the
        host's per-VM network rules. `build()` checks that the proxy accepts a TCP connection
        and fails closed when it does not; the network guarantee becomes `PROXIED`.
        """
        self._proxy = parse_endpoint(proxy_endpoint)
        return self

    def reap_age(self, seconds: float | timedelta) -> ForkdBackendBuilder:
        """How old (on the controller's clock) a sandbox must be for `reconcile()` to reap it (default 300 s).

        Set it above your longest command plus clock skew, or a running command is reaped.
        """
        self._reap_age = _seconds(seconds, "reap_age")
        return self

    def control_timeout(self, seconds: float | timedelta) -> ForkdBackendBuilder:
        """Seconds a fork, destroy or list may take (default 30).

        It is also the grace an exec answer gets past the command's own timeout.
        """
        self._control_timeout = _seconds(seconds, "control_timeout")
        return self

    def build(self) -> ExecutionBackend:
        """The backend, as an `ExecutionBackend` for `BashTool` (`build_backend()` for `reconcile()`).

        With `enforce_egress`, this makes a blocking TCP connect to the proxy (at most 3 s);
        from async code on a slow network, call it in a thread.
        """
        return self.build_backend()

    def build_backend(self) -> ForkdBackend:
        """The concrete `ForkdBackend`, with `reconcile()`; see `build()`."""
        if self._token is None:
            raise UserError("ForkdBackend.builder(...): call .bearer_token(token) before build()")
        if self._snapshot is None:
            raise UserError("ForkdBackend.builder(...): call .snapshot(tag) before build()")
        egress: JsonObject | None = None
        if self._proxy is None:
            if self._policy is not None:
                raise UserError(
                    "ForkdBackend.builder(...).egress_policy(...) needs .enforce_egress(proxy_endpoint): "
                    "without the proxy the policy would not be enforced"
                )
        else:
            probe(*self._proxy)
            egress = {"proxy": join_endpoint(*self._proxy)}
            if self._policy is not None:
                egress["policy"] = policy_json(self._policy)
        return ForkdBackend(
            url=self._url,
            token=self._token,
            snapshot=self._snapshot,
            timeout=self._timeout,
            max_output_bytes=self._max_output,
            env=dict(self._env),
            egress=egress,
            reap_age=self._reap_age,
            control_timeout=self._control_timeout,
        )


class ForkdBackend:
    """Runs each command in a fresh microVM: fork, exec, destroy. Start with `ForkdBackend.builder(url)`."""

    __slots__ = (
        "_control_timeout",
        "_egress",
        "_env",
        "_max_output",
        "_reap_age",
        "_snapshot",
        "_timeout",
        "_token",
        "_url",
    )

    def __init__(
        self,
        *,
        url: str,
        token: str,
        snapshot: str,
        timeout: float,
        max_output_bytes: int,
        env: dict[str, str],
        egress: JsonObject | None,
        reap_age: float,
        control_timeout: float,
    ) -> None:
        self._url = url
        self._token = token
        self._snapshot = snapshot
        self._timeout = timeout
        self._max_output = max_output_bytes
        self._env = env
        self._egress = egress
        self._reap_age = reap_age
        self._control_timeout = control_timeout

    @staticmethod
    def builder(controller_url: str) -> ForkdBackendBuilder:
        """Start building a backend that talks to the forkd controller at `controller_url`."""
        return ForkdBackendBuilder(controller_url)

    @property
    def snapshot(self) -> str:
        """The snapshot tag commands are forked from."""
        return self._snapshot

    def guarantees(self) -> SandboxGuarantees:
        """`VIRTUALIZED` filesystem and syscalls; network `PROXIED` with `enforce_egress`, else `NONE`."""
        return _DIRECT if self._egress is None else _PROXIED

    async def run(self, request: ExecRequest, *, cancel: CancellationToken | None = None) -> ExecOutput:
        """Fork a microVM, run `request` in it, destroy it; a cancelled `cancel` stops and destroys it.

        Raises:
            ForkdError: the controller could not be reached, refused the call or broke the
                contract (the model reads the message; the VM is destroyed when it exists).
        """
        started = time.perf_counter()
        if cancel is not None and cancel.is_cancelled():
            return ExecOutput(exit_code=None, stdout="", stderr="", cancelled=True)
        timeout = request.timeout or self._timeout
        cap = request.max_output_bytes or self._max_output
        async with self._client() as client:
            # Fork is not raced with `cancel`: abandoning it could leave a VM whose id we never
            # learn. It is bounded by the control timeout, and the VM is destroyed right after.
            sandbox_id = await client.fork(self._snapshot, self._egress)
            try:
                answer = await _unless_cancelled(
                    client.exec(
                        sandbox_id,
                        self._exec_body(request, timeout, cap),
                        answer_within=timeout + self._control_timeout,
                        max_body=exec_body_limit(cap),
                    ),
                    cancel,
                )
                duration = time.perf_counter() - started  # the command's, not the destroy's
            finally:
                # Shielded: a cancelled task still destroys its VM before the cancellation goes on.
                await asyncio.shield(self._destroy(sandbox_id))
        if answer is None:
            return ExecOutput(exit_code=None, stdout="", stderr="", cancelled=True, duration=duration)
        return exec_output(answer, cap, duration)

    async def reconcile(self) -> ReconcileReport:
        """Destroy this snapshot's sandboxes older than `reap_age`; age-only and stateless.

        Safe with several processes sharing one controller, as long as `reap_age` is above
        the longest command plus clock skew.

        Raises:
            ForkdError: listing the sandboxes failed (a failed destroy is counted, not raised).
        """
        async with self._client() as client:
            listed = [s for s in await client.list(self._snapshot) if s.snapshot == self._snapshot]
            reaped = failed = unageable = 0
            for sandbox in listed:
                if sandbox.age is None:
                    unageable += 1
                elif sandbox.age > self._reap_age:
                    try:
                        await client.destroy(sandbox.id)
                    except ForkdError as exc:
                        logger.warning("forkd reconcile: cannot destroy %s: %s", sandbox.id, exc)
                        failed += 1
                    else:
                        reaped += 1
        return ReconcileReport(scanned=len(listed), reaped=reaped, failed=failed, skipped_unageable=unageable)

    def reconcile_sync(self) -> ReconcileReport:
        """`reconcile()` from synchronous code (a shutdown hook); not inside a running event loop."""
        from helikon.core._internal.sync import run_coroutine

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run_coroutine(self.reconcile())
        raise UserError(
            "ForkdBackend.reconcile_sync() was called inside an event loop; use `await reconcile()`"
        )

    def _client(self) -> ForkdClient:
        # One client (and connection) per call: a pooled client belongs to the event loop it
        # was first used on, and a fork costs far more than a TCP connect.
        return ForkdClient(self._url, self._token, control_timeout=self._control_timeout)

    def _exec_body(self, request: ExecRequest, timeout: float, cap: int) -> JsonObject:
        env = {**self._env, **request.env}
        return {
            "argv": list(request.argv),
            "cwd": request.cwd,
            "env": dict(env),
            "stdin_b64": None if request.stdin is None else base64.b64encode(request.stdin).decode("ascii"),
            "timeout_ms": math.ceil(timeout * 1000),
            "max_output_bytes": cap,
        }

    async def _destroy(self, sandbox_id: str) -> None:
        # A client of its own: a second cancellation of the caller closes the run's client while
        # this (shielded) destroy goes on.
        try:
            async with self._client() as client:
                await client.destroy(sandbox_id)
        except ForkdError as exc:
            # The command's result is still true; the VM is left to reconcile().
            logger.warning("forkd: cannot destroy %s (reconcile() reaps it later): %s", sandbox_id, exc)

    def __repr__(self) -> str:
        return f"ForkdBackend({self._url!r}, snapshot={self._snapshot!r}, timeout={self._timeout:g})"


async def _unless_cancelled(
    call: Coroutine[Any, Any, JsonObject], cancel: CancellationToken | None
) -> JsonObject | None:
    """`call`'s answer, or None when `cancel` fires first (the call is then abandoned)."""
    if cancel is None:
        return await call
    task = asyncio.ensure_future(call)
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
    if not task.done() or task.cancelled():
        await asyncio.gather(task, return_exceptions=True)
        return None
    return task.result()


def _seconds(value: float | timedelta, option: str) -> float:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    check_positive(value, f"ForkdBackend.builder(...).{option}()")
    return float(value)


__all__ = [
    "DEFAULT_CONTROL_TIMEOUT",
    "DEFAULT_REAP_AGE",
    "ForkdBackend",
    "ForkdBackendBuilder",
    "ForkdError",
    "ReconcileReport",
]
