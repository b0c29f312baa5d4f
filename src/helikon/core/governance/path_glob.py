r"""Gitignore-style path globs for path rules (`DenyRule.read(".env")`, `AllowRule.edit("src/**")`).

Matching is lexical (core has no filesystem root), so a path rule is advisory, not a
sandbox: `clean_path` collapses `.` and `..`, turns `\\` into `/` and drops a leading
`/`; a `..` that escapes the start stays, so it never matches an anchored pattern.

Pattern syntax:

- no `/` (other than a trailing one): matches the final component at any depth
  (`.env`, `*.pem`);
- a `/` inside: anchored to the root (`src/**`, `docs/*.md`);
- a trailing `/`: the directory and everything under it (`dist/`);
- `*` and `?` stay inside one component, `**` spans directories, `[abc]`/`[!abc]` as usual;
- case-insensitive.

```python
from helikon.core.governance.path_glob import PathGlob

assert PathGlob.compile(".env").matches("config/.ENV")
assert PathGlob.compile("src/**").matches("./src/../src/app/main.py")
assert not PathGlob.compile("src/**").matches("src/../.git/config")
```
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..exceptions import UserError

__all__ = ["PathGlob", "clean_path", "is_protected_dotpath"]


def clean_path(path: str) -> str:
    """Lexically normalize a path: `/` separators, no `.`, `..` collapsed, no leading `/`."""
    out: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not out and path.startswith(("/", "\\")):
                continue  # `/..` is `/`
            else:
                out.append("..")
        else:
            out.append(part)
    return "/".join(out)


def is_protected_dotpath(path: str) -> bool:
    """Whether a write to `path` trips the `.git`/`.ssh`/`.env` breaker.

    Any component equal to `.git` or `.ssh`, or a final component `.env` or `.env.*`;
    component-exact and case-insensitive, so `repo.git/x`, `.gitignore` and
    `environment.env` do not trip while `.SSH/id_rsa` and `.ENV` do.
    """
    parts = clean_path(path).lower().split("/")
    if ".git" in parts or ".ssh" in parts:
        return True
    last = parts[-1]
    return last == ".env" or last.startswith(".env.")


class PathGlob:
    """A compiled, case-insensitive, gitignore-style path pattern; equal by its normalized source.

    Build with `PathGlob.compile(pattern)` (cached); match with `matches(path)` or, on
    a path already passed through `clean_path`, `matches_clean(cleaned)`.
    """

    __slots__ = ("_regex", "pattern")

    pattern: str
    _regex: re.Pattern[str]

    def __init__(self, pattern: str, regex: re.Pattern[str]) -> None:
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "_regex", regex)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"PathGlob is immutable (tried to set {name!r})")

    @staticmethod
    def compile(pattern: str) -> PathGlob:
        """Compile `pattern`; raises `UserError` when it is not a usable glob."""
        if not isinstance(pattern, str):
            raise UserError(f"a path pattern must be a str, got {type(pattern).__name__}")
        return _compile(pattern)

    def matches(self, path: str) -> bool:
        """Whether `path` (normalized with `clean_path` first) matches."""
        return self._regex.fullmatch(clean_path(path)) is not None

    def matches_clean(self, cleaned: str) -> bool:
        """Whether an already-cleaned path matches."""
        return self._regex.fullmatch(cleaned) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathGlob) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(("PathGlob", self.pattern))

    def __repr__(self) -> str:
        return f"PathGlob({self.pattern!r})"


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> PathGlob:
    source = pattern.replace("\\", "/")
    if not source.strip() or "\0" in source:
        raise UserError(f"the path pattern {pattern!r} is empty; use a glob such as '*.pem' or 'src/**'")
    while source.startswith("./"):
        source = source[2:]
    directory = source.endswith("/")
    source = source.strip("/")
    if not source:
        raise UserError(f"the path pattern {pattern!r} names no path; use a glob such as 'src/**'")
    anchored = "/" in source
    parts = source.split("/")
    if any(part in (".", "..") for part in parts):
        raise UserError(f"the path pattern {pattern!r} has a '.' or '..' component; write the path it means")
    body = _translate(parts, pattern)
    if directory:
        body += "(?:/.*)?"
    if not anchored:
        body = "(?:.*/)?" + body
    return PathGlob(source + ("/" if directory else ""), re.compile(body, re.IGNORECASE | re.DOTALL))


def _translate(parts: list[str], pattern: str) -> str:
    out: list[str] = []
    last = len(parts) - 1
    for index, part in enumerate(parts):
        if part == "**":
            # `a/**/b` also matches `a/b`; a trailing `**` needs at least one component.
            out.append(".*" if index == last else "(?:.*/)?")
            continue
        if "**" in part:
            raise UserError(f"in the path pattern {pattern!r}, '**' must be a whole component")
        out.append(_component(part, pattern))
        if index != last:
            out.append("/")
    return "".join(out)


def _component(part: str, pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(part)
    while i < n:
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = part.find("]", i + 2 if part.startswith(("[!", "[^"), i) else i + 1)
            if end < 0:
                raise UserError(f"the path pattern {pattern!r} has an unclosed '['")
            inner = part[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            inner = inner[1:] if negate else inner
            escaped = "".join("\\" + ch if ch in "\\^[]" else ch for ch in inner)
            out.append(f"[{'^/' if negate else ''}{escaped}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
