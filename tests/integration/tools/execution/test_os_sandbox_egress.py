"""OsSandboxBackend with an egress policy: only the proxy is reachable, and it passes what the policy allows.

A real upstream HTTP server listens on 127.0.0.1 outside the sandbox. Through the proxy,
commands reach it by an allowed name (`localhost`); a denied name and an IP literal are
refused by the proxy; a command that ignores the proxy and connects straight to the
upstream reaches nothing. The twin shows the same direct connect succeeding on the host.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from exec_helpers import nobodys_directory, run_as_nobody, sh

from helikon.tools import EgressPolicy, ExecRequest, HostBackend, Isolation, OsSandboxBackend, Sandbox

pytestmark = pytest.mark.integration


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from upstream\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class Upstream:
    def __init__(self) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    served = Upstream()
    yield served
    served.close()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox.open(tmp_path) as opened:
        yield opened


@pytest.fixture
def backend(sandbox: Sandbox, upstream: Upstream) -> Iterator[OsSandboxBackend]:
    policy = EgressPolicy.deny_all().allow_domains(["localhost"]).allow_ports([upstream.port])
    with OsSandboxBackend.builder(sandbox).timeout(30).egress_policy(policy).build() as built:
        yield built


def curl(url: str, *options: str) -> ExecRequest:
    return sh(f"curl -sS --max-time 10 {' '.join(options)} -w ' %{{http_code}}' {url}")


async def test_the_network_axis_is_proxied(backend: OsSandboxBackend) -> None:
    assert backend.guarantees().network is Isolation.PROXIED
    assert backend.guarantees().filesystem is Isolation.OS_KERNEL


async def test_an_allowed_name_is_reached_through_the_proxy(
    backend: OsSandboxBackend, upstream: Upstream
) -> None:
    out = await backend.run(curl(f"http://localhost:{upstream.port}/"))
    assert out.stdout == "hello from upstream\n 200", out.stderr
    tunnelled = await backend.run(curl(f"http://localhost:{upstream.port}/", "--proxytunnel"))  # CONNECT
    assert tunnelled.stdout == "hello from upstream\n 200", tunnelled.stderr
    source = (
        f"import urllib.request; print(urllib.request.urlopen('http://localhost:{upstream.port}/').read())"
    )
    python = await backend.run(ExecRequest(("python3", "-c", source)))
    assert python.stdout == "b'hello from upstream\\n'\n", python.stderr


async def test_a_denied_name_and_an_ip_literal_are_refused_by_the_proxy(
    backend: OsSandboxBackend, upstream: Upstream
) -> None:
    denied = await backend.run(curl(f"http://denied.invalid:{upstream.port}/"))
    assert denied.stdout.endswith(" 403") and "hello" not in denied.stdout
    literal = await backend.run(curl(f"http://127.0.0.1:{upstream.port}/"))
    assert literal.stdout.endswith(" 403") and "hello" not in literal.stdout


_DIRECT = (
    "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close(); print('reached')"
)


async def test_a_command_that_ignores_the_proxy_reaches_nothing(
    backend: OsSandboxBackend, upstream: Upstream
) -> None:
    direct = await backend.run(ExecRequest(("python3", "-c", _DIRECT.format(port=upstream.port))))
    assert "reached" not in direct.stdout and direct.exit_code != 0
    no_proxy = await backend.run(curl(f"http://localhost:{upstream.port}/", "--noproxy '*'"))
    assert "hello" not in no_proxy.stdout and no_proxy.exit_code != 0


async def test_the_twin_the_same_direct_connect_works_on_the_host(
    sandbox: Sandbox, upstream: Upstream
) -> None:
    host = HostBackend.builder(sandbox).build()
    direct = await host.run(ExecRequest(("python3", "-c", _DIRECT.format(port=upstream.port))))
    assert direct.stdout == "reached\n", direct.stderr


async def test_tcp_fast_open_cannot_connect_around_the_connect_rule(
    backend: OsSandboxBackend, upstream: Upstream
) -> None:
    source = (
        "import socket\n"
        "s = socket.socket()\n"
        f"s.sendto(b'GET / HTTP/1.0\\r\\n\\r\\n', socket.MSG_FASTOPEN, ('127.0.0.1', {upstream.port}))\n"
    )
    out = await backend.run(ExecRequest(("python3", "-c", source)))
    assert "PermissionError: [Errno 1]" in out.stderr, out.stderr


async def test_udp_and_unix_sockets_are_refused(backend: OsSandboxBackend) -> None:
    for family, kind in (("AF_INET", "SOCK_DGRAM"), ("AF_INET6", "SOCK_DGRAM"), ("AF_UNIX", "SOCK_STREAM")):
        source = f"import socket; socket.socket(socket.{family}, socket.{kind})"
        out = await backend.run(ExecRequest(("python3", "-c", source)))
        assert "PermissionError" in out.stderr, (family, kind, out.stderr)
    tcp = await backend.run(ExecRequest(("python3", "-c", "import socket; socket.socket(); print('tcp ok')")))
    assert tcp.stdout == "tcp ok\n"  # TCP sockets may be made; Landlock limits where they connect


_AS_NOBODY = """
import asyncio, os, sys
from helikon.tools import EgressPolicy, ExecRequest, OsSandboxBackend, Sandbox
async def main() -> None:
    with Sandbox.open(sys.argv[1]) as sandbox:
        policy = EgressPolicy.deny_all().allow_domains(["localhost"]).allow_ports([int(sys.argv[2])])
        with OsSandboxBackend.builder(sandbox).egress_policy(policy).build() as backend:
            out = await backend.run(ExecRequest(("bash", "-c", sys.argv[3])))
            print(os.getuid(), out.stdout)
asyncio.run(main())
"""


@pytest.mark.skipif(os.getuid() != 0, reason="switching to an unprivileged user needs root")
def test_an_unprivileged_user_gets_the_namespace_through_a_user_namespace(upstream: Upstream) -> None:
    # As root the launcher makes a plain network namespace; everyone else needs a user
    # namespace around it. Run the same check as `nobody`, with an interpreter it can read.
    command = (
        f"curl -sS -m 10 http://localhost:{upstream.port}/; "
        "curl -sS -m 10 -w '%{http_code}' http://denied.invalid/"
    )
    with nobodys_directory() as root:
        done = run_as_nobody(_AS_NOBODY, str(root), str(upstream.port), command)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("65534 hello from upstream\n"), done.stdout
    assert done.stdout.rstrip().endswith("403")
