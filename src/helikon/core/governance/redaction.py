"""Secret redaction of tool output, before it reaches the model context or the session.

Two passes, both replacing with `***`:

1. Key names: the value after a key ending in `_API_KEY`, `_TOKEN`, `_SECRET`,
   `_PASSWORD`, `_CREDENTIAL` (and `-`/`.` spellings, `_CREDENTIALS`, `_SECRET_KEY`,
   `_ACCESS_KEY`, `_PRIVATE_KEY`), case-insensitive, in `KEY=v`, `KEY: v`,
   `export KEY=v` and JSON/Python `"key": "v"` forms; every occurrence on a line.
2. Known values: literal occurrences (case-insensitive) of secrets, by default the
   values of this process's secret-named environment variables plus any extras;
   values shorter than 8 characters or common words are never scanned for.

```python
from helikon.core.governance.redaction import Redactor

redactor = Redactor(["sk-live-0123456789"])
text = 'GITHUB_TOKEN=ghp_abc export DB_PASSWORD=hunter22 {"openai_api_key": "x1"} sk-LIVE-0123456789'
assert redactor.redact(text) == 'GITHUB_TOKEN=*** export DB_PASSWORD=*** {"openai_api_key": "***"} ***'
```
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from .._internal.json_value import JsonValue
from ..exceptions import UserError

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "env_secrets", "is_secret_name"]

REDACTED = "***"
"""What a secret is replaced with."""
MIN_SECRET_LENGTH = 8
"""Shorter values are never scanned for: they would corrupt ordinary output."""

_SUFFIX = (
    r"(?:API[_.-]?KEY|SECRET[_.-]?KEY|ACCESS[_.-]?KEY|PRIVATE[_.-]?KEY"
    r"|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)"
)
_NAME = re.compile(rf"[A-Za-z0-9_.-]*[_.-]{_SUFFIX}", re.IGNORECASE)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# The suffix of a key (anchoring the search keeps it linear on long runs of word characters),
# an optional closing quote, `=` or `:`, then a quoted or bare value. The key's start is
# found by walking back in `_replace_value`.
_KEY_VALUE = re.compile(
    rf"""(?<=[A-Za-z0-9_.-])[_.-]{_SUFFIX}(?P<kq>["']?)(?![A-Za-z0-9_])
    [ \t]*[:=][ \t]*
    (?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s"',;}}\]]+))""",
    re.IGNORECASE | re.VERBOSE,
)
# Cheap pre-check: no suffix word, no key-value pass.
_HINTS = ("key", "token", "secret", "passw", "credential")

_COMMON_WORDS = frozenset({
    "password", "passw0rd", "changeme", "changeit", "example", "default", "localhost", "development",
    "production", "staging", "disabled", "enabled", "undefined", "username", "administrator", "admin123",
    "qwertyuiop", "12345678", "123456789", "1234567890", "00000000", "abcdefgh", "letmein1", "welcome1",
    "true", "false", "none", "null", "secret", "token", "redacted", "placeholder", "your-api-key",
})  # fmt: skip


def is_secret_name(name: str) -> bool:
    """Whether an environment variable or key named `name` holds a secret (`GITHUB_TOKEN`, `db.password`)."""
    return _NAME.fullmatch(name) is not None


def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the secret-named variables in `environ` (default: `os.environ`)."""
    source = os.environ if environ is None else environ
    return [value for name, value in source.items() if value and is_secret_name(name)]


def _usable(value: str) -> bool:
    return len(value) >= MIN_SECRET_LENGTH and value.strip() == value and value.lower() not in _COMMON_WORDS


def _replace_value(match: re.Match[str]) -> str:
    start = match.start()
    text = match.group(0)
    quote = match.group("kq")
    if quote:
        source = match.string
        begin = start
        while begin > 0 and source[begin - 1] in _NAME_CHARS:
            begin -= 1
        if begin == 0 or source[begin - 1] != quote:
            return text  # `abc_token": …` without its opening quote is not a key
    for group in ("dq", "sq", "bare"):
        if match.group(group) is not None:
            begin, end = match.span(group)
            return text[: begin - start] + REDACTED + text[end - start :]
    return text  # pragma: no cover - the pattern always captures a value


class Redactor:
    """Scrubs secrets from text; build once per run, then call `redact` per tool output.

    ```python
    from helikon.core.governance.redaction import Redactor

    redactor = Redactor.from_environ({"STRIPE_API_KEY": "rk_live_abcdef123"}, extra=["my-app-secret-1"])
    assert redactor.redact("key rk_live_abcdef123 / my-app-secret-1") == "key *** / ***"
    assert redactor.redact("nothing here") == "nothing here"
    ```
    """

    __slots__ = ("_lowered", "_pattern", "_secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        if isinstance(secrets, str):
            raise UserError("Redactor() takes an iterable of secrets, not one str: wrap it in a list")
        kept: set[str] = set()
        for value in secrets:
            if not isinstance(value, str):
                raise UserError(f"a secret must be a str, got {type(value).__name__}")
            if _usable(value):
                kept.add(value)
        # Longest first, so a secret containing another is replaced whole.
        ordered = sorted(kept, key=lambda v: (-len(v), v))
        self._secrets: tuple[str, ...] = tuple(ordered)
        self._lowered: tuple[str, ...] = tuple(v.lower() for v in ordered)
        self._pattern: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(v) for v in ordered), re.IGNORECASE) if ordered else None
        )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, *, extra: Iterable[str] = ()) -> Redactor:
        """A redactor for the secret-named variables of `environ` (default `os.environ`) plus `extra`."""
        if isinstance(extra, str):
            raise UserError("extra= takes an iterable of secrets, not one str: wrap it in a list")
        return cls([*env_secrets(environ), *extra])

    @property
    def secret_count(self) -> int:
        """How many values the known-value scan looks for."""
        return len(self._secrets)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by `***`."""
        if not text:
            return text
        lower = text.lower()
        if any(hint in lower for hint in _HINTS):
            text = _KEY_VALUE.sub(_replace_value, text)
            lower = text.lower()
        pattern = self._pattern
        if pattern is not None and any(value in lower for value in self._lowered):
            text = pattern.sub(REDACTED, text)
        return text

    def redact_json(self, value: JsonValue) -> JsonValue:
        """A copy of a JSON value with its strings redacted and secret-named keys' string values hidden."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_json(item) for item in value]
        if isinstance(value, dict):
            return {
                key: REDACTED
                if isinstance(item, str) and item and is_secret_name(key)
                else self.redact_json(item)
                for key, item in value.items()
            }
        return value

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._secrets)} secrets>)"
