"""The option checks the web tools' constructors and builders share: one rule, two spellings.

Each check takes `where`, the option as the caller wrote it (`WebFetchTool(max_bytes=0)` or
`WebFetchTool.builder().max_bytes(0)`), so a `UserError` names what to fix in the caller's
own words, whichever way the tool was made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta

from helikon.core.exceptions import UserError


def check_spelled(tool: str, option: str, shown: str, *, builder: bool) -> str:
    """How the caller set `option` to `shown`: `Tool(option=shown)` or `Tool.builder().option(shown)`."""
    return f"{tool}.builder().{option}({shown})" if builder else f"{tool}({option}={shown})"


def check_domains(where: str, entries: Iterable[str]) -> tuple[str, ...]:
    """Domain names, lower-cased and without dots at the ends (a bare string is one name)."""
    if isinstance(entries, str):
        entries = [entries]
    out: list[str] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip(". ") or "/" in entry or ":" in entry.strip("[]"):
            raise UserError(
                f"{where}: {entry!r} is not a domain; give names like 'example.com' "
                "(which also covers its subdomains)"
            )
        out.append(entry.strip().strip(".").lower())
    return tuple(out)


def check_whole(where: str, value: object, minimum: int = 1) -> int:
    """An int of at least `minimum` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UserError(f"{where}: give an int >= {minimum}")
    return value


def check_seconds(where: str, value: object) -> float:
    """A positive number of seconds, or a `timedelta`."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"{where}: give the seconds a fetch may take (> 0), or a timedelta")
    return float(value)


def check_flag(where: str, value: object) -> bool:
    """True or False, nothing that merely looks like one (`0`, `"false"`)."""
    if not isinstance(value, bool):
        raise UserError(f"{where}: give True or False")
    return value


def check_header_value(where: str, value: object) -> str:
    """A non-empty HTTP header value: no control characters (a CR or LF would start another header)."""
    if not isinstance(value, str) or not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UserError(f"{where}: give a non-empty text without control characters")
    return value


def check_function(where: str, value: object, shape: str) -> Callable[..., object]:
    """A callable (`shape` says what it is called with and returns)."""
    if not callable(value):
        raise UserError(f"{where}: give a function {shape}")
    return value


__all__ = [
    "check_domains",
    "check_flag",
    "check_function",
    "check_header_value",
    "check_seconds",
    "check_spelled",
    "check_whole",
]
