"""The process's default `Redactor`, rebuilt only when the secrets it scans for change.

Scanning `os.environ` and compiling the value pattern costs ~50 µs, more than a whole
agent run, so runs share one redactor per set of extra secrets, checked before reuse
against a cheap fingerprint: how many environment variables there are, and the current
values of the secret-named ones it was built from. Adding or removing a variable, or
changing a secret-named one, rebuilds it. The one case it misses: between two checks, a
secret-named variable added while another variable is removed (the count unchanged); the
new value is then scanned for from the next rebuild on.
"""

from __future__ import annotations

import os

from .redaction import Redactor, is_secret_name

_Fingerprint = tuple[int, tuple[str | None, ...]]
_names: tuple[str, ...] = ()  # the secret-named variables at the last scan
_cache: dict[tuple[str, ...], tuple[_Fingerprint, Redactor]] = {}
_MAX_ENTRIES = 64


def _fingerprint() -> _Fingerprint:
    environ = os.environ
    return len(environ), tuple(map(environ.get, _names))


def default_redactor(extra: tuple[str, ...]) -> Redactor:
    """The redactor for this process's secret-named variables plus `extra`."""
    global _names
    hit = _cache.get(extra)
    if hit is not None and hit[0] == _fingerprint():
        return hit[1]
    _names = tuple(name for name in os.environ if is_secret_name(name))
    redactor = Redactor.from_environ(extra=extra)
    if len(_cache) >= _MAX_ENTRIES:
        _cache.clear()
    _cache[extra] = (_fingerprint(), redactor)
    return redactor
