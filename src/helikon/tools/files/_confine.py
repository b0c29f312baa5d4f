"""Opening paths beneath a sandbox's root descriptor, with the kernel's confinement.

The rules (every refusal is a `ToolError.Denied` naming the rule):

- A path is relative to the root: absolute paths, NUL bytes and paths over `PATH_MAX` are refused.
- A glob pattern (Glob's `pattern`, Grep's `include`) names files beneath the directory searched:
  an absolute pattern, and one with a `..` part, are refused as those paths are (to search
  elsewhere, the tool's `path` names the directory, under the rules above); `.` parts are dropped.
- Reads resolve with `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel refuses
  any step out of the root (`..`, an absolute symlink, a symlink pointing out) and every
  `/proc/<pid>/fd`-style magic link, in the same call that opens the file, so there is no check
  to race. Symlinks that stay beneath the root are followed.
- Writes never follow a symlink: their directories are walked one component at a time from the
  root descriptor with `O_NOFOLLOW` (`walk`), and the file itself is named relative to its
  directory's descriptor.
- Where `openat2` is missing (`ENOSYS`: kernels before 5.6, some container filters), reads use
  the same walk, so they refuse every symlink rather than follow one without the kernel's check.
- Only regular files with a single link are read or written: files are opened with
  `O_NONBLOCK | O_NOCTTY` (a FIFO does not block, a terminal is not taken) and anything else
  (device, FIFO, socket, directory) is refused, as is a file with more than one hard link,
  whose other names may be outside the root.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat

from helikon.core.exceptions import Denied, ToolError

PATH_MAX = 4096

# openat2 has the same number on every architecture that has it (the unified syscall table).
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437}.get(platform.machine())
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_READ_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def sys_openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
    """The raw `openat2` call: a descriptor, or `OSError` (`ENOSYS` where the kernel lacks it)."""
    if _SYS_OPENAT2 is None:
        raise OSError(errno.ENOSYS, "openat2 is not known on this architecture")
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    fd = _syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dirfd),
        ctypes.c_char_p(path),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


def checked(path: str) -> bytes:
    """`path` as bytes, when the rules allow its form at all."""
    if not isinstance(path, str) or not path:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolError("the path is empty: give a file path relative to the sandbox root")
    if "\0" in path:
        raise Denied(f"{path!r} contains a NUL byte; paths are plain names relative to the sandbox root")
    raw = os.fsencode(path)
    if len(raw) >= PATH_MAX:
        raise Denied(f"the path is {len(raw)} bytes long; paths must be under {PATH_MAX} bytes")
    if path.startswith("/"):
        raise Denied(f"{path!r} is absolute; give a path relative to the sandbox root")
    return raw


def checked_pattern(pattern: str) -> str:
    """`pattern` without its `.` parts, when the rules allow it: relative, and never going up."""
    if pattern.startswith("/"):
        raise Denied(
            f"{pattern!r} is absolute; give a pattern relative to the directory searched "
            "(path, the sandbox root by default), e.g. 'src/**/*.py'"
        )
    parts = pattern.split("/")
    if ".." in parts:
        raise Denied(
            f"{pattern!r} has a '..' part; a pattern names files beneath the directory searched: "
            "to search another directory, give it as path (relative to the sandbox root)"
        )
    return "/".join(part for part in parts if part != ".")


def open_read(root_fd: int, path: str, flags: int) -> int:
    """Open `path` beneath the root for reading (symlinks inside the root are followed)."""
    raw = checked(path)
    try:
        return sys_openat2(root_fd, raw, flags | os.O_NONBLOCK | os.O_NOCTTY, _READ_RESOLVE)
    except OSError as exc:
        if exc.errno != errno.ENOSYS:
            raise refusal(path, exc) from None
    parent, name = walk(root_fd, path, create=False)
    try:
        return open_at(parent, name, path, flags)
    finally:
        os.close(parent)


def open_dir(root_fd: int, path: str) -> int:
    """Open the directory `path` beneath the root for listing (`.` is the root itself)."""
    if path in ("", "."):
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=root_fd)
    return open_read(root_fd, path, os.O_RDONLY | os.O_DIRECTORY)


def open_at(dir_fd: int, name: str, path: str, flags: int, mode: int = 0o666) -> int:
    """Open the single name `name` in `dir_fd`, never following a symlink; `path` is for messages."""
    try:
        flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        return os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise refusal(path, exc, dir_fd=dir_fd, name=name) from None


def walk(root_fd: int, path: str, *, create: bool) -> tuple[int, str]:
    """The directory holding `path`'s last component (an `O_PATH` descriptor) and that name.

    Walks from the root one component at a time with `O_NOFOLLOW`, so no symlink is followed;
    `..` goes back up the descriptors taken, and past the root it is refused. With `create`,
    missing directories are made on the way (a name swapped for a symlink meanwhile is refused).
    """
    parts = [p for p in os.fsdecode(checked(path)).split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        raise ToolError(f"{path!r} names a directory; give a file path")
    *dirs, name = parts
    stack = [os.dup(root_fd)]
    try:
        for i, part in enumerate(dirs):
            if part == "..":
                if len(stack) == 1:
                    raise Denied(f"{path!r} leads out of the sandbox root with '..'")
                os.close(stack.pop())
                continue
            where = "/".join(dirs[: i + 1])
            flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(part, flags, dir_fd=stack[-1])
            except FileNotFoundError:
                if not create:
                    raise ToolError(f"{where!r}: no such directory in the sandbox") from None
                try:
                    os.mkdir(part, 0o777, dir_fd=stack[-1])
                except FileExistsError:
                    pass  # made meanwhile: the open below decides what it is
                except OSError as exc:
                    raise refusal(where, exc) from None
                try:
                    fd = os.open(part, flags, dir_fd=stack[-1])
                except OSError as exc:
                    raise refusal(where, exc, dir_fd=stack[-1], name=part) from None
            except OSError as exc:
                raise refusal(where, exc, dir_fd=stack[-1], name=part) from None
            stack.append(fd)
        top = stack.pop()
    finally:
        for fd in stack:
            os.close(fd)
    return top, name


def regular(fd: int, path: str, verb: str) -> os.stat_result:
    """`fd`'s status when it is a regular file with one link; else the descriptor is closed and refused."""
    st = os.fstat(fd)
    reason = None
    if stat.S_ISDIR(st.st_mode):
        reason = f"{path!r} is a directory; {verb} works on files (list a directory with Glob)"
    elif not stat.S_ISREG(st.st_mode):
        reason = (
            f"{path!r} is not a regular file (a device, FIFO or socket); {verb} only works on regular files"
        )
    elif st.st_nlink > 1:
        reason = (
            f"{path!r} has {st.st_nlink} hard links, and the other names may be outside the sandbox; "
            f"{verb} only works on files with a single link (copy the file to use it)"
        )
    if reason is not None:
        os.close(fd)
        raise Denied(reason)
    return st


def refusal(path: str, exc: OSError, *, dir_fd: int | None = None, name: str | None = None) -> ToolError:
    """The tool error for an `OSError` met while resolving `path`."""
    code = exc.errno
    if code == errno.EXDEV:
        return Denied(f"{path!r} resolves outside the sandbox root; only paths beneath it are allowed")
    if code == errno.ELOOP or (code == errno.ENOTDIR and _is_symlink(dir_fd, name)):
        return Denied(
            f"{path!r} goes through a symbolic link that may not be followed here "
            "(writes follow no symlinks, reads only ones that stay inside the root, never /proc magic links)"
        )
    if code in (errno.ENXIO, errno.ENODEV):  # a socket, or a device without a driver
        return Denied(
            f"{path!r} is not a regular file (a device, FIFO or socket); only regular files are used"
        )
    if code == errno.ENAMETOOLONG:
        return Denied(f"{path!r}: a name in the path is too long (at most 255 bytes each)")
    if code == errno.ENOENT:
        return ToolError(f"{path!r}: no such file in the sandbox")
    if code == errno.ENOTDIR:
        return ToolError(f"{path!r}: a part of the path is not a directory")
    if code in (errno.EACCES, errno.EPERM):
        return ToolError(f"{path!r}: the operating system refused access ({exc.strerror})")
    return ToolError(f"{path!r}: {exc.strerror}")


def _is_symlink(dir_fd: int | None, name: str | None) -> bool:
    # Only for the message: the decision was the kernel's (O_NOFOLLOW | O_DIRECTORY failed).
    if dir_fd is None or name is None:
        return False
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


__all__ = [
    "PATH_MAX",
    "checked",
    "checked_pattern",
    "open_at",
    "open_dir",
    "open_read",
    "refusal",
    "regular",
    "sys_openat2",
    "walk",
]
