"""What the OS sandbox lets a command touch: the Landlock rules and the seccomp network mode.

The rules, in full:

- **The sandbox root and the backend's private temp directory** (also `HOME` and `TMPDIR`):
  read, write, create, delete, rename, execute (`_landlock.READ_WRITE`: everything but
  making device nodes and device ioctls). Plus any `writable_paths` the builder was given.
- **The system a shell needs**, read and execute only: `/usr` (and `/bin`, `/sbin`, `/lib*`,
  which point into it on merged-`/usr` systems), and the `/etc` entries programs read to
  start (the loader cache, users and groups, name service, locale, time zone, CA
  certificates, `alternatives`). Not `/etc` as a whole: it holds `shadow`, keys and
  credentials. Plus any `read_only_paths` the builder was given.
- **A few devices**: `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`.
- **Nothing else**: not `/proc` (other processes' environments and memory maps), not `/sys`,
  not `/home`, `/root`, `/tmp` or `/var`.
- **Network** (`NetworkMode`): closed by default (no sockets at all, no TCP by Landlock
  either); open with `allow_network(True)` (IPv4, IPv6, netlink; never UNIX sockets); with an
  egress policy, TCP to the proxy port only, in a network namespace of the sandbox's own
  where the proxy listens.
- **Other processes**: no signals to processes outside the sandbox, nor connections to their
  abstract UNIX sockets (Landlock scopes).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass

from ..guarantees import Isolation
from ._landlock import (
    DEVICES,
    FS_ALL,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    READ_ONLY,
    READ_WRITE,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    Ruleset,
)
from ._seccomp import NETWORK_NONE, NETWORK_OPEN, NETWORK_TCP_ONLY

MIN_ABI = 6
"""Landlock ABI 6 (Linux 6.12) is the least the sandbox accepts. Before it, a command could
signal any process of the user (kill the agent, or with root every process); before ABI 3,
`truncate` was not confined either. ABI 4 (6.7) added the TCP rules the egress mode uses."""
PROXY_PORT = 3128
"""Where the egress proxy listens inside the sandbox's network namespace (the namespace is
new and empty, so the port is always free there)."""

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_PATHS = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/inputrc",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/terminfo",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/gitconfig",
)
ETC_GLOBS = ("/etc/python3*",)  # Debian's Python reads its sitecustomize through here
DEVICE_PATHS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


@dataclass(frozen=True, slots=True)
class NetworkMode:
    """How the network axis is enforced: the seccomp socket rule and the Landlock TCP rule."""

    seccomp: str
    tcp_connect_ports: tuple[int, ...] | None
    """Ports TCP may connect to (`None`: TCP not handled by Landlock)."""
    isolation: Isolation
    """What the backend reports on its network axis."""

    @staticmethod
    def closed() -> NetworkMode:
        return NetworkMode(NETWORK_NONE, (), Isolation.OS_KERNEL)

    @staticmethod
    def open() -> NetworkMode:
        return NetworkMode(NETWORK_OPEN, None, Isolation.NONE)

    @staticmethod
    def proxied() -> NetworkMode:
        return NetworkMode(NETWORK_TCP_ONLY, (PROXY_PORT,), Isolation.PROXIED)


def build_ruleset(
    *,
    abi: int,
    writable: Sequence[str],
    read_only: Sequence[str],
    network: NetworkMode,
) -> Ruleset:
    """The ruleset for `writable` (the root, the temp dir, extras) and extra `read_only` paths."""
    handled_net = 0
    if network.tcp_connect_ports is not None:
        handled_net = NET_CONNECT_TCP | NET_BIND_TCP
        if network.tcp_connect_ports:
            handled_net = NET_CONNECT_TCP  # a command may still serve inside its namespace
    scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
    ruleset = Ruleset(abi=abi, handled_fs=FS_ALL, handled_net=handled_net, scoped=scoped)
    try:
        system = [
            *SYSTEM_PATHS,
            *ETC_PATHS,
            *(p for pattern in ETC_GLOBS for p in sorted(glob.glob(pattern))),
        ]
        for path in (*system, *read_only):
            ruleset.allow_path(path, READ_ONLY)
        for path in DEVICE_PATHS:
            ruleset.allow_path(path, DEVICES)
        for path in writable:
            ruleset.allow_path(path, READ_WRITE)
        if handled_net & NET_CONNECT_TCP:
            for port in network.tcp_connect_ports or ():
                ruleset.allow_tcp_connect(port)
    except BaseException:
        ruleset.close()
        raise
    return ruleset
