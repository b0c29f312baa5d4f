"""Brace lists and globs, as the guards judge them: what a pattern in a target may match.

`brace_expand` makes every word a brace list may (a bounded superset); `glob_matches` and
`component_may_be` match Bash glob patterns (`*`, `?`, brackets, extglobs) against a name
without `fnmatch`'s leading-dot and separator rules; `dotdot_variants` tries a component
that could match `..` as `..`. Used by `_guards` and `_guard_find`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.-?\d+)?")  # `{a..b[..step]}`
BRACE_MAX = 256  # brace expansions checked per word; a word with more trips every guard it meets
DOTDOT_MAX = 3  # glob components that may match `..` in one path; more trips


def brace_expand(text: str) -> list[str] | None:
    """Every word Bash's brace expansion makes of `text` (a superset), or None past `BRACE_MAX`.

    `{a,b}` lists (nested too) and `{a..z}` sequences; a numeric sequence stands as its
    two ends, as every number in it is digits alike. `${…}` is not a brace list. Quoted
    braces cannot be told apart here and are expanded too (a superset again).
    """
    pending = [text]
    done: list[str] = []
    while pending:
        current = pending.pop()
        span = brace_span(current)
        if span is None:
            done.append(current)
        else:
            start, end, alternatives = span
            pending.extend(current[:start] + alt + current[end + 1 :] for alt in alternatives)
        if len(done) + len(pending) > BRACE_MAX:
            return None
    return done


def brace_span(text: str) -> tuple[int, int, list[str]] | None:
    """The first brace list or sequence in `text`: (index of `{`, index of `}`, alternatives)."""
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return None
        if i > 0 and text[i - 1] == "$":
            close = text.find("}", i)
            if close < 0:
                return None
            i = close + 1
            continue
        depth = 0
        commas: list[int] = []
        end = -1
        for j in range(i, len(text)):
            char = text[j]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    end = j
                    break
            elif char == "," and depth == 1:
                commas.append(j)
        if end >= 0:
            if commas:
                bounds = [i, *commas, end]
                return i, end, [text[bounds[k] + 1 : bounds[k + 1]] for k in range(len(bounds) - 1)]
            sequence = brace_sequence(text[i + 1 : end])
            if sequence is not None:
                return i, end, sequence
        i += 1


def brace_sequence(body: str) -> list[str] | None:
    match = SEQUENCE.fullmatch(body)
    if match is None:
        return None
    first, last = match.group(1), match.group(2)
    if first[-1].isdigit() and last[-1].isdigit():
        return [first, last]
    if first.isalpha() and last.isalpha():
        low, high = sorted((ord(first), ord(last)))
        return [chr(c) for c in range(low, high + 1)]
    return None


def has_glob(text: str) -> bool:
    return "*" in text or "?" in text or "[" in text


def glob_tokens(pattern: str, escapes: bool = False) -> tuple[str, ...]:
    """A glob (one component) as tokens: `*` any run, `?` any character, `=c` the character c.

    Lowered, for matching without case. A bracket expression is any character; an
    extglob (`@(…)`) or a class such as `[[:alpha:]]` makes the whole pattern `*`.
    With `escapes` (find's patterns), a backslash quotes the next character.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char in "?*+@!" and pattern[i + 1 : i + 2] == "(":
            return ("*",)
        if char == "*":
            if not out or out[-1] != "*":
                out.append("*")
        elif char == "?":
            out.append("?")
        elif char == "[":
            j = i + 1
            if pattern[j : j + 1] in ("!", "^"):
                j += 1
            end = pattern.find("]", j + 1)
            if end < 0:
                out.append("=[")
            elif "[" in pattern[i + 1 : end]:
                return ("*",)
            else:
                out.append("?")
                i = end
        elif char == "\\" and escapes and i + 1 < n:
            i += 1
            out.append("=" + pattern[i].lower())
        else:
            out.append("=" + char.lower())
        i += 1
    return tuple(out)


def glob_run(tokens: tuple[str, ...], states: Iterable[int], text: str) -> set[int]:
    """The token positions the glob may be at after reading `text` from `states` (empty: no match)."""
    current = closure(tokens, states)
    for char in text:
        following: set[int] = set()
        for state in current:
            if state < len(tokens):
                token = tokens[state]
                if token == "*":
                    following.add(state)
                elif token == "?" or token[1] == char:
                    following.add(state + 1)
        if not following:
            return following
        current = closure(tokens, following)
    return current


def closure(tokens: tuple[str, ...], states: Iterable[int]) -> set[int]:
    out = set(states)
    stack = list(out)
    while stack:
        state = stack.pop()
        if state < len(tokens) and tokens[state] == "*" and state + 1 not in out:
            out.add(state + 1)
            stack.append(state + 1)
    return out


def glob_matches(pattern: str, name: str, escapes: bool = False) -> bool:
    """Whether the glob may match `name` (given lowered)."""
    required = literals(pattern)
    if required is not None and not required.issubset(name):
        return False
    tokens = glob_tokens(pattern, escapes)
    return len(tokens) in glob_run(tokens, (0,), name)


def literals(pattern: str) -> set[str] | None:
    """The characters a name must hold for the glob to match it (lowered), or None when not known.

    A test before the NFA, for the usual patterns (`*.pyc`, `__pycache__`). Only
    for an ASCII pattern without brackets or extglobs, where every character other than
    `*`, `?` and a backslash is a token that must match a character of the name (an
    escaped `*` or `?` is left out, which only lets more names through). Lowered whole,
    as `glob_tokens` lowers each character (the same for ASCII).
    """
    if not pattern.isascii() or "[" in pattern or "(" in pattern:
        return None
    return set(pattern.lower()).difference(_GLOB_OPERATORS)


_GLOB_OPERATORS = "*?\\"


def component_may_be(part: str, name: str) -> bool:
    """Whether a shell glob component may match `name` (lowered).

    As Bash by default, only a pattern with a leading `.` matches a dot name (the
    `dotglob` option and `GLOBIGNORE` are not followed).
    """
    if not has_glob(part):
        return part.lower() == name
    if name[0] == "." and part[0] != ".":
        return False
    return glob_matches(part, name)


def dotdot_variants(path: str) -> list[str] | None:
    """`path` with each glob component that may match `..` taken as itself and as `..`.

    None when more than `DOTDOT_MAX` components may (the path then counts as protected).
    """
    parts = path.split("/")
    may = [
        i for i, part in enumerate(parts)
        if part[:1] == "." and part != ".." and has_glob(part) and glob_matches(part, "..")
    ]  # fmt: skip
    if not may:
        return [path]
    if len(may) > DOTDOT_MAX:
        return None
    variants: list[str] = []
    for mask in range(1 << len(may)):
        chosen = list(parts)
        for bit, index in enumerate(may):
            if mask >> bit & 1:
                chosen[index] = ".."
        variants.append("/".join(chosen))
    return variants
