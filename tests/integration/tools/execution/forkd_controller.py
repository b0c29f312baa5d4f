"""A forkd controller on 127.0.0.1 that implements the REST contract of `docs/tools-forkd.md`.

There is no KVM here, so a "microVM" is a temp directory and its commands are local process
groups (`run_process`): what this stands for is the controller's HTTP behaviour (auth,
status codes, error bodies, timestamps, kill on destroy), which is what `ForkdBackend`
talks to. Faults are switched on per call for the error-path tests.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from helikon.core.cancel import CancellationToken
from helikon.tools.execution._process import run_process

TOKEN = "test-forkd-token"
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized"}


@dataclass
class Fault:
    """What one call answers instead of doing its work: a status and raw body, or a hang.

    `status=None` answers normally (after `delay`): a slow controller.
    """

    status: int | None = 500
    body: bytes = b'{"error": {"code": "internal", "message": "the hypervisor is on fire"}}'
    hang: bool = False
    then_work: bool = False
    """Do the work (e.g. really fork) before answering with the fault: a lost answer."""
    delay: float = 0.0
    abandon_if_gone: bool = False
    """After `delay`, do nothing when the client has hung up (as a controller that checks may)."""


@dataclass
class VM:
    id: str
    snapshot: str
    created_at: str | None
    root: str
    egress: Any = None
    kill: CancellationToken = field(default_factory=CancellationToken)


class ForkdController:
    """`async with ForkdController() as c:` then `ForkdBackend.builder(c.url).bearer_token(TOKEN)...`."""

    def __init__(self, snapshots: tuple[str, ...] = ("helikon", "other")) -> None:
        self.snapshots = snapshots
        self.vms: dict[str, VM] = {}
        self.destroyed: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self.faults: dict[str, Fault] = {}
        """Keyed by call: `fork`, `exec`, `destroy`, `list`."""
        self.failing_destroys: set[str] = set()
        self.list_now: str | bool | None = True
        """`now` in the list answer: True for the real time, or a raw value (None: left out)."""
        self.seen_auth: list[str] = []
        self.fork_bodies: list[dict[str, Any]] = []
        self.abandoned: list[str] = []
        self.filter_list = True
        """Whether `GET /v1/sandboxes?snapshot=` filters (False: a controller that ignores it)."""
        self._base = tempfile.mkdtemp(prefix="forkd-test-")
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._execs: set[str] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def executing(self) -> set[str]:
        """The ids whose exec is running right now."""
        return set(self._execs)

    def add_vm(self, snapshot: str, *, age: float | None = None, created_at: str | None = None) -> str:
        """A sandbox as if forked `age` seconds ago (or with a raw `created_at`): what reconcile finds."""
        if age is not None:
            created_at = (datetime.now(UTC) - timedelta(seconds=age)).isoformat().replace("+00:00", "Z")
        vm = self._new_vm(snapshot, created_at)
        return vm.id

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for vm in self.vms.values():
            vm.kill.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        shutil.rmtree(self._base, ignore_errors=True)

    # --- HTTP -------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            status, body = await self._handle(reader)
            head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nConnection: close\r\n"
            if status != 204:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            writer.write(head.encode() + b"\r\n" + (b"" if status == 204 else body))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        line = (await reader.readuntil(b"\r\n")).decode().strip()
        method, target, _ = line.split(" ", 2)
        headers: dict[str, str] = {}
        while (raw := await reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = raw.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        url = urlsplit(target)
        self.calls.append((method, url.path))
        self.seen_auth.append(headers.get("authorization", ""))
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return _error(401, "unauthorized", "the bearer token is missing or wrong")
        parts = url.path.strip("/").split("/")
        if parts[:2] != ["v1", "sandboxes"]:
            return _error(404, "not_found", f"no route {url.path}")
        call = _call_name(method, parts)
        fault = self.faults.get(call)
        if fault is None:
            return await self._route(call, parts, url.query, body)
        await asyncio.sleep(fault.delay)
        if fault.abandon_if_gone and reader.at_eof():
            self.abandoned.append(call)
            raise ConnectionResetError
        answer = await self._route(call, parts, url.query, body) if fault.then_work else None
        if fault.hang:
            await asyncio.Event().wait()
        if fault.status is None:
            return answer or await self._route(call, parts, url.query, body)
        return fault.status, fault.body

    async def _route(self, call: str, parts: list[str], query: str, body: bytes) -> tuple[int, bytes]:
        if call == "fork":
            return self._fork(json.loads(body))
        if call == "list":
            return self._list(parse_qs(query).get("snapshot", [None])[0])
        vm = self.vms.get(parts[2]) if len(parts) > 2 else None
        if vm is None:
            return _error(404, "not_found", "no such sandbox")
        if call == "destroy":
            return self._destroy(vm)
        if call == "exec":
            return await self._exec(vm, json.loads(body))
        return _error(404, "not_found", "no such route")

    # --- the calls --------------------------------------------------------------------------

    def _fork(self, request: dict[str, Any]) -> tuple[int, bytes]:
        self.fork_bodies.append(request)
        snapshot = request.get("snapshot")
        if snapshot not in self.snapshots:
            return _error(404, "snapshot_not_found", f"no snapshot {snapshot!r}")
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        vm = self._new_vm(snapshot, now, request.get("egress"))
        return 201, json.dumps({"id": vm.id, "snapshot": snapshot, "created_at": now}).encode()

    def _new_vm(self, snapshot: str, created_at: str | None, egress: Any = None) -> VM:
        vm_id = f"sbx-{uuid.uuid4().hex[:12]}"
        root = os.path.join(self._base, vm_id)
        os.mkdir(root)
        vm = VM(id=vm_id, snapshot=snapshot, created_at=created_at, root=root, egress=egress)
        self.vms[vm_id] = vm
        return vm

    async def _exec(self, vm: VM, request: dict[str, Any]) -> tuple[int, bytes]:
        env = {"PATH": os.environ.get("PATH", os.defpath), **request.get("env", {})}
        if vm.egress is not None:
            env["https_proxy"] = env["http_proxy"] = f"http://{vm.egress['proxy']}"
        stdin = request.get("stdin_b64")
        cwd = request.get("cwd")
        self._execs.add(vm.id)
        try:
            out = await run_process(
                request["argv"],
                cwd=vm.root if cwd is None else os.path.join(vm.root, cwd),
                env=env,
                stdin=None if stdin is None else base64.b64decode(stdin),
                time_limit=request["timeout_ms"] / 1000,
                max_output_bytes=request["max_output_bytes"],
                cancel=vm.kill,
            )
        finally:
            self._execs.discard(vm.id)
        return 200, json.dumps(
            {
                "exit_code": out.exit_code,
                "signal": out.signal,
                "timed_out": out.timed_out,
                "stdout_b64": base64.b64encode(out.stdout.encode()).decode(),
                "stderr_b64": base64.b64encode(out.stderr.encode()).decode(),
                "stdout_truncated": out.stdout_truncated,
                "stderr_truncated": out.stderr_truncated,
            }
        ).encode()

    def _destroy(self, vm: VM) -> tuple[int, bytes]:
        if vm.id in self.failing_destroys:
            return _error(503, "busy", "the VM could not be stopped")
        vm.kill.cancel()
        del self.vms[vm.id]
        shutil.rmtree(vm.root, ignore_errors=True)
        self.destroyed.append(vm.id)
        return 204, b""

    def _list(self, snapshot: str | None) -> tuple[int, bytes]:
        entries = [
            {"id": vm.id, "snapshot": vm.snapshot, "created_at": vm.created_at}
            for vm in self.vms.values()
            if snapshot is None or not self.filter_list or vm.snapshot == snapshot
        ]
        answer: dict[str, Any] = {"sandboxes": entries}
        if self.list_now is True:
            answer["now"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        elif self.list_now is not None:
            answer["now"] = self.list_now
        return 200, json.dumps(answer).encode()


def _call_name(method: str, parts: list[str]) -> str:
    if method == "POST" and len(parts) == 2:
        return "fork"
    if method == "GET" and len(parts) == 2:
        return "list"
    if method == "POST" and len(parts) == 4 and parts[3] == "exec":
        return "exec"
    if method == "DELETE" and len(parts) == 3:
        return "destroy"
    return "unknown"


def _error(status: int, code: str, message: str) -> tuple[int, bytes]:
    return status, json.dumps({"error": {"code": code, "message": message}}).encode()
