"""The three ways to reach a server, each checked up front: a stdio child, streamable HTTP, your own."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import IO, Any, cast

from helikon.core.exceptions import UserError

from ._connection import TransportFactory
from ._http import http_transport
from ._options import Options
from ._stdio import stdio_transport

__all__ = ["http_options", "stdio_options", "user_options"]


def _str_dict(value: object) -> dict[str, str] | None:
    """`value` as a dict of str to str, or None when it is not one."""
    if not isinstance(value, Mapping):
        return None
    items = cast("Mapping[object, object]", value).items()
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items):
        return None
    return cast("dict[str, str]", dict(items))


def _path_str(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(cast("os.PathLike[str]", value))
        return path if isinstance(path, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    return None


def stdio_options(
    command: object, args: object, env: object, cwd: object, stderr: IO[Any] | int | None
) -> Options:
    """The options of a stdio server, or a `UserError` naming what to fix."""
    name = _path_str(command)
    if not name:
        raise UserError(
            f"McpServerHandle.stdio({command!r}): give the server's command, e.g. 'npx' or a path"
        )
    if isinstance(args, str) or not isinstance(args, Iterable):
        raise UserError(
            f"McpServerHandle.stdio({name!r}, args={args!r}): give the arguments as a list of strings"
        )
    strings: list[str] = []
    for arg in cast("Iterable[object]", args):
        text = _path_str(arg)
        if text is None:
            raise UserError(f"McpServerHandle.stdio({name!r}): argument {arg!r} is not a string")
        strings.append(text)
    child_env = _str_dict(env)
    if env is not None and child_env is None:
        raise UserError(f"McpServerHandle.stdio({name!r}, env=...): give a dict of str to str")
    where = _path_str(cwd)
    directory = None if where is None else Path(where)
    if cwd is not None and (directory is None or not directory.is_dir()):
        raise UserError(f"McpServerHandle.stdio({name!r}, cwd={cwd!r}): not an existing directory")
    argv = tuple(strings)

    def make(on_spawn: Callable[[int, bool], None]) -> TransportFactory:
        return lambda: stdio_transport(
            name, argv, env=child_env, cwd=directory, stderr=stderr, on_spawn=on_spawn
        )

    return Options(label=f"stdio:{Path(name).name}", make_transport=make)


def http_options(url: object, headers: object, terminate_on_close: bool) -> Options:
    """The options of a streamable-HTTP server, or a `UserError` naming what to fix."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UserError(
            f"McpServerHandle.streamable_http({url!r}): give the endpoint's http(s) URL, e.g. 'http://127.0.0.1:8000/mcp'"
        )
    sent = _str_dict(headers)
    if headers is not None and sent is None:
        raise UserError(f"McpServerHandle.streamable_http({url!r}, headers=...): give a dict of str to str")
    endpoint = url

    def transport() -> AbstractAsyncContextManager[Any]:
        return http_transport(endpoint, sent, terminate_on_close)

    return Options(label=endpoint, make_transport=lambda on_spawn: transport)


def user_options(factory: object) -> Options:
    """The options of a user-built transport, or a `UserError` naming what to fix."""
    if not callable(factory):
        raise UserError(
            f"McpServerHandle.transport({factory!r}): give a callable returning an async context manager "
            "that yields the SDK's (read_stream, write_stream), e.g. lambda: stdio_client(params)"
        )
    made: TransportFactory = factory  # pyright: ignore[reportAssignmentType]
    name = getattr(factory, "__name__", type(factory).__name__)
    return Options(label=f"transport:{name}", make_transport=lambda on_spawn: made)
