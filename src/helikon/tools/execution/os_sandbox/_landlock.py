"""Landlock through plain syscalls: the kernel's unprivileged filesystem and TCP confinement.

A ruleset names the access kinds it *handles*; once a process restricts itself with it,
every handled access is denied except where a rule allows it, for that process and
everything it starts, with no way back. The ruleset is built here, in the parent, as a file
descriptor; the OS-sandbox launcher applies it (`landlock_restrict_self`) in each child
before `exec`. Building it does not restrict the builder.

The numbers below are the kernel's UAPI (`include/uapi/linux/landlock.h`); the three
syscalls have the same numbers on every architecture.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445

CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

# Filesystem access kinds, with the ABI version that introduced each.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# What each ABI version can handle; a right the running kernel does not know must not be asked for.
_FS_BY_ABI = (0, (1 << 13) - 1, (1 << 14) - 1, (1 << 15) - 1, (1 << 15) - 1, (1 << 16) - 1)
FS_ALL = (1 << 16) - 1
"""Every filesystem right this module knows (ABI 5 and later)."""

FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The only rights a rule on a regular file (not a directory) may carry."""

READ_ONLY = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
"""Look and run, never change."""

DEVICES = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""For character devices such as `/dev/null`: read, write, `> /dev/null` (O_TRUNC), `isatty`."""

READ_WRITE = FS_ALL & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK | FS_IOCTL_DEV)
"""Everything in the workspace except making device nodes (a block device made inside the
root would be the whole disk) and device ioctls."""


class LandlockError(OSError):
    """The kernel refused a Landlock call; `errno` says why (`ENOSYS`/`EOPNOTSUPP`: not available)."""


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _call(number: int, *args: int | bytes | None) -> int:
    result = int(_syscall(ctypes.c_long(number), *[_arg(a) for a in args]))
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, os.strerror(code))
    return result


def _arg(value: int | bytes | None) -> object:
    if value is None or isinstance(value, bytes):
        return value  # a NULL or a pointer to the bytes
    return ctypes.c_long(value)


def abi_version() -> int:
    """The Landlock ABI this kernel offers (1 = Linux 5.13, 4 = 6.7 TCP rules, 6 = 6.12 scopes), or 0."""
    try:
        return _call(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except LandlockError as error:
        if error.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return 0  # not built in, or not enabled at boot (lsm=)
        raise


def supported_fs_rights(abi: int) -> int:
    """The filesystem rights the kernel of `abi` handles."""
    return _FS_BY_ABI[max(0, min(abi, len(_FS_BY_ABI) - 1))]


class Ruleset:
    """A Landlock ruleset under construction: `allow_path` and `allow_tcp_connect`, then `.fd`.

    `handled_fs` and `handled_net` are the access kinds the ruleset denies by default; `scoped`
    the IPC scopes it closes (signals and abstract UNIX sockets to processes outside it).
    """

    __slots__ = ("_fd", "handled_fs", "handled_net")

    def __init__(self, *, abi: int, handled_fs: int, handled_net: int = 0, scoped: int = 0) -> None:
        self.handled_fs = handled_fs & supported_fs_rights(abi)
        self.handled_net = handled_net
        if abi >= 6:
            attr = struct.pack("=QQQ", self.handled_fs, handled_net, scoped)
        elif abi >= 4:
            attr = struct.pack("=QQ", self.handled_fs, handled_net)
        else:
            attr = struct.pack("=Q", self.handled_fs)
        self._fd = _call(SYS_CREATE_RULESET, attr, len(attr), 0)

    @property
    def fd(self) -> int:
        """The ruleset's file descriptor (close-on-exec), for `landlock_restrict_self`."""
        return self._fd

    def allow_path(self, path: str, rights: int) -> bool:
        """Allow `rights` beneath `path` (on the file itself, for a file); `False` if `path` is missing.

        `path` is opened as the kernel resolves it now: a symlink's target gets the rule.
        """
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(target).st_mode):
                rights &= FILE_RIGHTS
            rights &= self.handled_fs
            if rights:
                _call(SYS_ADD_RULE, self._fd, RULE_PATH_BENEATH, struct.pack("=Qi", rights, target), 0)
        finally:
            os.close(target)
        return True

    def allow_tcp_connect(self, port: int) -> None:
        """Allow TCP `connect` to `port` (on any address; pair it with a network namespace)."""
        _call(SYS_ADD_RULE, self._fd, RULE_NET_PORT, struct.pack("=QQ", NET_CONNECT_TCP, port), 0)

    def close(self) -> None:
        """Release the descriptor (a launcher holding a copy keeps the ruleset alive)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
