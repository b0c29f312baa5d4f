"""The options every local backend's builder shares: timeout, environment, output cap, rlimits.

`HostBackendBuilder` and `OsSandboxBackendBuilder` both run commands as child processes of
this machine, so they take the same limits, checked the same way; each adds its own
containment options.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Self

from helikon.core.exceptions import UserError

from .backend import (
    DEFAULT_ENV_ALLOWLIST,
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    ResourceLimits,
    check_env,
    check_positive,
)

_CPU_MARGIN = 5  # CPU seconds granted over the wall timeout by the default RLIMIT_CPU backstop
_DEFAULT_FILE_SIZE = 1 << 30


class LocalOptions:
    """Builder options shared by the local backends; `_name` is the backend's name in messages."""

    __slots__ = ("_allow", "_limits", "_max_output", "_set", "_timeout")
    _name = "Backend"

    def __init__(self) -> None:
        self._timeout = DEFAULT_TIMEOUT
        self._allow: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST
        self._set: dict[str, str] = {}
        self._max_output = DEFAULT_MAX_OUTPUT
        self._limits: ResourceLimits | None = None

    def timeout(self, seconds: float | timedelta) -> Self:
        """Wall-clock seconds before the command's whole process group is killed (default 30)."""
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        check_positive(seconds, f"{self._name}.builder(...).timeout()")
        self._timeout = float(seconds)
        return self

    def env_allowlist(self, names: Iterable[str]) -> Self:
        """The parent's variables the child receives; replaces `DEFAULT_ENV_ALLOWLIST`.

        A name absent from this process's environment is left out.
        """
        if isinstance(names, str):
            raise UserError(f"env_allowlist({names!r}): give a list of names, e.g. ['PATH', 'HOME']")
        listed = tuple(names)
        check_env(dict.fromkeys(listed, ""), f"{self._name}.builder(...).env_allowlist()")
        self._allow = listed
        return self

    def env_set(self, values: Mapping[str, str]) -> Self:
        """Variables set for every command (over the allowlisted ones)."""
        check_env(values, f"{self._name}.builder(...).env_set()")
        self._set.update(values)
        return self

    def max_output_bytes(self, limit: int) -> Self:
        """Bytes kept of each of stdout and stderr (default 1 MiB); past it the command is killed."""
        check_positive(limit, f"{self._name}.builder(...).max_output_bytes()", integer=True)
        self._max_output = limit
        return self

    def rlimits(self, limits: ResourceLimits) -> Self:
        """Replace the default caps (CPU = timeout + 5 s, file size 1 GiB, address space unset).

        `ResourceLimits()` sets none.
        """
        if not isinstance(limits, ResourceLimits):
            raise UserError(f"rlimits({limits!r}): give a ResourceLimits(cpu_seconds=..., ...)")
        self._limits = limits
        return self

    def _resource_limits(self) -> ResourceLimits:
        if self._limits is not None:
            return self._limits
        return ResourceLimits(
            cpu_seconds=int(self._timeout) + _CPU_MARGIN, file_size_bytes=_DEFAULT_FILE_SIZE
        )

    def _environment(self, defaults: Mapping[str, str]) -> dict[str, str]:
        """The allowlisted variables read from this process now, over `defaults`, under `env_set`."""
        env = dict(defaults)
        env.update({name: os.environ[name] for name in self._allow if name in os.environ})
        env.update(self._set)
        env.setdefault("PATH", os.defpath)
        return env
