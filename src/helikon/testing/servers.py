"""Throwaway PostgreSQL and Redis servers for tests: real processes on 127.0.0.1.

Each server lives in a fresh temporary directory, listens on a free loopback port and is
gone (process stopped, directory deleted) when its `with` / `async with` block ends. Use
them to test code that talks to a real database, the way helikon tests its own session
backends. They need the server binaries, not a running system service:

- PostgreSQL: `initdb` and `postgres` from `/usr/lib/postgresql/<version>/bin` (the
  highest version wins) or from `PATH` (`apt-get install postgresql`). PostgreSQL refuses to
  run as root, so under root the server runs as the `postgres` user (or a `helikon-test`
  system user, created on first use).
- Redis: `redis-server` on `PATH` (`apt-get install redis-server`), started with no
  persistence and `maxmemory-policy noeviction`.

Example:
    ```python
    import asyncio

    import asyncpg
    import redis.asyncio as redis

    from helikon.testing.servers import PostgresServer, RedisServer


    async def main() -> None:
        async with PostgresServer() as pg, RedisServer() as rd:
            connection = await asyncpg.connect(pg.dsn)
            assert await connection.fetchval("SELECT 1 + 1") == 2
            await connection.close()
            client = redis.Redis.from_url(rd.url)
            assert await client.ping()
            await client.aclose()


    asyncio.run(main())
    ```
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from helikon.core.exceptions import HelikonError

_POSTGRES_HINT = "install PostgreSQL: apt-get install postgresql (or pass bin_dir=... to PostgresServer)"
_REDIS_HINT = "install Redis: apt-get install redis-server (or pass executable=... to RedisServer)"
_UNPRIVILEGED_USER = "helikon-test"


class ServerError(HelikonError):
    """A throwaway test server could not be found, started or stopped."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def find_postgres_bin_dir() -> Path:
    """The directory holding `initdb` and `postgres`: the newest `/usr/lib/postgresql/*/bin`, else `PATH`.

    Raises:
        ServerError: No PostgreSQL installation was found.
    """

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.name)) or (0,)

    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    raise ServerError(f"PostgreSQL binaries (initdb, postgres) not found: {_POSTGRES_HINT}")


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Server(abc.ABC):
    """What both servers share: the temporary directory, the process and the lifecycle."""

    _process: subprocess.Popen[bytes] | None
    _directory: Path | None

    def __init__(self, *, port: int | None, startup_timeout: float) -> None:
        self.host = "127.0.0.1"
        self._requested_port = port
        self.port = port or 0
        self.startup_timeout = startup_timeout
        self._process = None
        self._directory = None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def directory(self) -> Path:
        """The temporary directory the server keeps its files in."""
        if self._directory is None:
            raise ServerError(f"{type(self).__name__} is not started")
        return self._directory

    def start(self) -> Self:
        """Start the server and wait until it answers (after `stop(keep_data=True)`, on the same data)."""
        if self.running:
            return self
        fresh = self._directory is None
        if fresh:
            self._directory = Path(tempfile.mkdtemp(prefix=f"helikon-{self._kind}-"))
        try:
            self._launch(fresh=fresh)
        except BaseException:
            self.stop(keep_data=not fresh)  # a failed restart keeps the data it was given
            raise
        return self

    def stop(self, *, keep_data: bool = False) -> None:
        """Stop the server; unless `keep_data`, delete its directory too. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            self._shutdown(process, keep_data=keep_data)
        if not keep_data and self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def _port_for(self, attempt: int, *, fresh: bool) -> int:
        # A restart keeps its port (clients hold the address); otherwise any free one will do.
        if self._requested_port or (not fresh and attempt == 0 and self.port):
            return self._requested_port or self.port
        return free_port(self.host)

    def kill(self) -> None:
        """SIGKILL the server (a crash); its directory stays, so `start()` recovers from it."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    def __del__(self) -> None:
        # Never leak a server process: a forgotten stop() still ends it with the object.
        process = getattr(self, "_process", None)
        if process is not None and process.poll() is None:
            process.kill()

    # --- per server --------------------------------------------------------------------------

    _kind = "server"

    @abc.abstractmethod
    def _launch(self, *, fresh: bool) -> None:
        """Start the server process (`fresh`: on a new data directory)."""

    @abc.abstractmethod
    def _shutdown(self, process: subprocess.Popen[bytes], *, keep_data: bool) -> None:
        """Stop the server process cleanly."""

    def _wait(self, ready: Callable[[], bool], log: Path) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise ServerError(f"{self._kind} exited while starting:\n{_log_tail(log)}")
            if ready():
                return
            time.sleep(0.02)
        raise ServerError(f"{self._kind} did not start within {self.startup_timeout} s:\n{_log_tail(log)}")

    @staticmethod
    def _terminate(process: subprocess.Popen[bytes], sig: int, timeout: float = 30.0) -> None:
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- PostgreSQL ------------------------------------------------------------------------------


def _unprivileged_user() -> tuple[int, int]:
    """The uid/gid PostgreSQL runs as under root: `postgres`, else `helikon-test` (created if missing)."""
    for name in ("postgres", _UNPRIVILEGED_USER):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    useradd = shutil.which("useradd")
    if useradd is None:
        raise ServerError(
            "PostgreSQL refuses to run as root and there is no `postgres` user to run it as, nor "
            f"`useradd` to create `{_UNPRIVILEGED_USER}`: run the tests as an unprivileged user"
        )
    # A concurrent creator may win the race; the lookup below is what counts.
    subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _UNPRIVILEGED_USER],
        capture_output=True,
        check=False,
    )
    try:
        entry = pwd.getpwnam(_UNPRIVILEGED_USER)
    except KeyError:
        raise ServerError(f"could not create the `{_UNPRIVILEGED_USER}` user to run PostgreSQL as") from None
    return entry.pw_uid, entry.pw_gid


def _identity(user: tuple[int, int] | None) -> tuple[int | None, int | None, list[int] | None]:
    """`user=`, `group=` and `extra_groups=` for subprocess: switch to `user`, or stay as we are."""
    no_groups: list[int] = []
    return (user[0], user[1], no_groups) if user else (None, None, None)


class PostgresServer(_Server):
    """A throwaway PostgreSQL cluster: `initdb` into a temporary directory, `postgres` on 127.0.0.1.

    Trust authentication, superuser `postgres`, UTF-8, `fsync=on`; `dsn` connects to the
    `postgres` database and `dsn_for(name)` to another one. Sync (`start()`/`stop()`, `with`)
    and async (`async with`) lifecycles; `stop(keep_data=True)` then `start()` restarts it on
    the same data (to test an outage).

    Args:
        bin_dir: Where `initdb` and `postgres` are; found automatically when omitted.
        port: The port to listen on; a free one when omitted.
        settings: Extra server settings, passed as `-c name=value`.
        startup_timeout: Seconds to wait for the server to accept connections.

    Example:
        ```python
        from helikon.testing.servers import PostgresServer

        with PostgresServer() as server:
            assert server.dsn == f"postgresql://postgres@127.0.0.1:{server.port}/postgres"
        assert not server.running
        ```
    """

    _kind = "postgres"

    def __init__(
        self,
        *,
        bin_dir: str | Path | None = None,
        port: int | None = None,
        settings: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout)
        self._bin_dir = Path(bin_dir) if bin_dir is not None else None
        self.settings = {"fsync": "on", **(settings or {})}
        self.user = "postgres"

    @property
    def dsn(self) -> str:
        """The connection string of the `postgres` database (superuser `postgres`, no password)."""
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        """The connection string of another database on this server."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def _launch(self, *, fresh: bool) -> None:
        bin_dir = self._bin_dir or find_postgres_bin_dir()
        for name in ("initdb", "postgres"):
            if not (bin_dir / name).is_file():
                raise ServerError(f"{bin_dir / name} not found: {_POSTGRES_HINT}")
        directory = self.directory
        user = _unprivileged_user() if os.geteuid() == 0 else None
        if user is not None:
            os.chown(directory, *user)
        data = directory / "data"
        log = directory / "postgres.log"
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        if fresh:
            initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", self.user, "--auth=trust"]
            initdb += ["-E", "UTF8", "--locale=C", "--no-sync"]
            done = self._run(initdb, user=user, env=env, cwd=directory)
            if done.returncode != 0:
                raise ServerError(
                    f"initdb failed ({done.returncode}):\n{done.stdout.decode(errors='replace')}"
                )
        for attempt in range(3):
            self.port = self._port_for(attempt, fresh=fresh)
            command = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(self.port), "-k", str(directory)]
            command += ["-c", f"listen_addresses={self.host}"]
            for name, value in self.settings.items():
                command += ["-c", f"{name}={value}"]
            self._process = self._popen(command, user=user, env=env, cwd=directory, log=log)
            try:
                self._wait(lambda: self._ready(data), log)
                return
            except ServerError:
                bind_failed = "could not bind" in _log_tail(log) or "in use" in _log_tail(log)
                if self._requested_port or not bind_failed or attempt == 2 or not fresh:
                    raise
                self.kill()

    @staticmethod
    def _ready(data: Path) -> bool:
        try:
            lines = (data / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        return len(lines) >= 8 and lines[7].strip() == "ready"

    def _shutdown(self, process: subprocess.Popen[bytes], *, keep_data: bool) -> None:
        self._terminate(process, signal.SIGINT)  # "fast" shutdown: a clean checkpoint

    @staticmethod
    def _run(
        command: Sequence[str], *, user: tuple[int, int] | None, env: Mapping[str, str], cwd: Path
    ) -> subprocess.CompletedProcess[bytes]:
        uid, gid, groups = _identity(user)
        return subprocess.run(
            command,
            env=env,
            cwd=cwd,
            capture_output=True,
            check=False,
            user=uid,
            group=gid,
            extra_groups=groups,
        )

    @staticmethod
    def _popen(
        command: Sequence[str],
        *,
        user: tuple[int, int] | None,
        env: Mapping[str, str],
        cwd: Path,
        log: Path,
    ) -> subprocess.Popen[bytes]:
        uid, gid, groups = _identity(user)
        with log.open("ab") as out:
            return subprocess.Popen(
                command,
                env=env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=uid,
                group=gid,
                extra_groups=groups,
            )


# --- Redis -----------------------------------------------------------------------------------


class RedisServer(_Server):
    """A throwaway `redis-server` on 127.0.0.1: no persistence, `maxmemory-policy noeviction`.

    `stop(keep_data=True)` saves a snapshot on the way down (`SHUTDOWN SAVE`), so `start()`
    brings the server back with its data (to test an outage).

    Args:
        executable: The `redis-server` binary; found on `PATH` when omitted.
        port: The port to listen on; a free one when omitted.
        args: Extra command-line settings, e.g. `["--maxmemory", "64mb"]`.
        startup_timeout: Seconds to wait for the server to answer `PING`.

    Example:
        ```python
        from helikon.testing.servers import RedisServer

        with RedisServer() as server:
            assert server.url == f"redis://127.0.0.1:{server.port}/0"
        assert not server.running
        ```
    """

    _kind = "redis"

    def __init__(
        self,
        *,
        executable: str | Path | None = None,
        port: int | None = None,
        args: Sequence[str] = (),
        startup_timeout: float = 30.0,
    ) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout)
        self._executable = Path(executable) if executable is not None else None
        self.args = tuple(args)

    @property
    def url(self) -> str:
        """The server's `redis://` URL (database 0)."""
        return f"redis://{self.host}:{self.port}/0"

    def _launch(self, *, fresh: bool) -> None:
        found = self._executable or (Path(p) if (p := shutil.which("redis-server")) else None)
        if found is None or not found.is_file():
            raise ServerError(f"redis-server not found: {_REDIS_HINT}")
        log = self.directory / "redis.log"
        for attempt in range(3):
            self.port = self._port_for(attempt, fresh=fresh)
            settings = {"port": str(self.port), "bind": self.host, "save": "", "appendonly": "no"}
            settings |= {"dir": str(self.directory), "maxmemory-policy": "noeviction", "daemonize": "no"}
            command = [str(found)]
            for name, value in settings.items():
                command += [f"--{name}", value]
            command += self.args
            with log.open("ab") as out:
                self._process = subprocess.Popen(
                    command, cwd=self.directory, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            try:
                self._wait(self._pong, log)
                return
            except ServerError:
                if self._requested_port or "in use" not in _log_tail(log) or attempt == 2 or not fresh:
                    raise
                self.kill()

    def _command(self, command: bytes, timeout: float = 1.0) -> bytes:
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            sock.sendall(command + b"\r\n")
            return sock.recv(64)

    def _pong(self) -> bool:
        try:
            return self._command(b"PING").startswith(b"+PONG")
        except OSError:
            return False

    def _shutdown(self, process: subprocess.Popen[bytes], *, keep_data: bool) -> None:
        if keep_data and process.poll() is None:
            with contextlib.suppress(OSError):
                self._command(b"SHUTDOWN SAVE", timeout=30.0)
        self._terminate(process, signal.SIGTERM)


__all__ = ["PostgresServer", "RedisServer", "ServerError", "find_postgres_bin_dir", "free_port"]
