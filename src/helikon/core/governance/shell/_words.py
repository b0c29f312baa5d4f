"""The word reader behind `_parse.Parser`: quoting, escapes and expansions.

Reads one shell word the way Bash removes its quotes (`'…'`, `"…"`, `$'…'`, `$"…"`,
backslashes, line continuations) and records where its expansions are (`$X`, `${…}`,
`$((…))`, brace lists), parsing the commands of `$(…)`, `<(…)`, `>(…)` and backticks
through the parser that owns it (`parse_list`, `_reparse`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from . import MAX_NESTING, Word, _Unparseable
from ._lex import PLAIN, SPECIAL, STOP, literal_tilde, new_word

VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_SAFE_PARAM = re.compile(r"[A-Za-z0-9_#!@*?:\-+=%/.,^~ \[\]]*")
_UNSAFE_ARITH = re.compile(r"\$\(|[`'\"\\]")
_GLOB_CHARS = frozenset("*?[")
_ANSI = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


class _WordBuilder:
    __slots__ = ("first_exp", "last_exp", "parts", "unquoted_special")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.first_exp = -1  # length of the text when the first expansion began
        self.last_exp = -1  # length of the text after the last expansion
        self.unquoted_special = False  # an unquoted glob or brace character

    def length(self) -> int:
        return sum(len(p) for p in self.parts)

    def expansion(self, source: str) -> None:
        if self.first_exp < 0:
            self.first_exp = self.length()
        self.parts.append(source)
        self.last_exp = self.length()

    def build(self) -> Word:
        text = "".join(self.parts)
        if self.first_exp < 0:
            return Word(text, True, text, text)
        return Word(text, False, text[: self.first_exp], text[self.last_exp :])


class WordReader(ABC):
    """The word-level half of the parser; `Parser` supplies the command-level hooks."""

    __slots__ = ()

    s: str
    n: int
    i: int
    nesting: int
    heredocs: list[tuple[str, bool, bool, list[str]]]  # delimiter, strip tabs, quoted, body

    @abstractmethod
    def parse_list(self, terminators: frozenset[str]) -> str:
        """Parse commands up to one of `terminators` (the command-level parser's)."""

    @abstractmethod
    def _reparse(self, source: str) -> None:
        """Parse `source` as a nested command line (the command-level parser's)."""

    def _nest(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise _Unparseable(f"nested deeper than {MAX_NESTING} levels")

    def _arith_end(self, start: int) -> int:
        """The index of the final `)` of `((…))` at `start`, or -1 when it is not arithmetic.

        Like Bash: `((…))` is arithmetic only when its two opening parentheses close
        together; `((rm x) )` is a subshell in a subshell.
        """
        s, n = self.s, self.n
        depth = 0
        inner_close = -1
        for j in range(start, n):
            c = s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 1 and inner_close < 0:
                    inner_close = j
                if depth == 0:
                    return j if inner_close == j - 1 else -1
        return -1

    def _read_word(self) -> Word | None:
        s, n = self.s, self.n
        m = PLAIN.match(s, self.i)
        if m is not None:
            end = m.end()
            chunk = m.group()
            if (end >= n or s[end] in STOP) and not SPECIAL.search(chunk):
                self.i = end  # the common case: one unquoted run, nothing to expand
                return new_word(chunk, True, chunk, chunk, False, False)
        b = _WordBuilder()
        start = self.i
        while self.i < n:
            c = s[self.i]
            if c in STOP:
                if c in "<>" and self.i == start and s.startswith(("<(", ">("), self.i):
                    self.i += 1
                    self._command_substitution(b, self.i - 1)
                    continue
                break
            if c == "\\":
                if self.i + 1 >= n:
                    b.parts.append("\\")
                    self.i += 1
                elif s[self.i + 1] == "\n":
                    self.i += 2
                else:
                    b.parts.append(s[self.i + 1])
                    self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Unparseable("unbalanced single quote")
                b.parts.append(s[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                self._double_quoted(b)
            elif c == "$":
                self._dollar(b, in_double=False)
            elif c == "`":
                self._backtick(b, in_double=False)
            else:
                m = PLAIN.match(s, self.i)
                chunk = m.group() if m else c
                self.i += len(chunk)
                if not b.unquoted_special and (_GLOB_CHARS.intersection(chunk) or "{" in chunk):
                    b.unquoted_special = True
                    if "{" in chunk and ("," in chunk or ".." in chunk) and "}" in chunk:
                        b.expansion(chunk)  # a brace list expands to several words
                        continue
                b.parts.append(chunk)
        if self.i == start:
            return None
        word = b.build()
        tilde = word.text[:1] == "~" and literal_tilde(s[start : self.i], word.text)
        if b.unquoted_special or tilde:
            # A glob such as `/*` stays as written; a program name must not have one.
            return Word(word.text, word.literal, word.prefix, word.tail, b.unquoted_special, tilde)
        return word

    def _double_quoted(self, b: _WordBuilder) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n:
                nxt = s[self.i + 1]
                if nxt == "\n":
                    self.i += 2
                    continue
                b.parts.append(nxt if nxt in '$`"\\' else "\\" + nxt)
                self.i += 2
            elif c == "$":
                self._dollar(b, in_double=True)
            elif c == "`":
                self._backtick(b, in_double=True)
            else:
                end = self.i + 1
                while end < n and s[end] not in '"\\$`':
                    end += 1
                b.parts.append(s[self.i : end])
                self.i = end
        raise _Unparseable("unbalanced double quote")

    def scan_double_quoted_body(self) -> None:
        """Find the substitutions in an expanding here-doc body."""
        b = _WordBuilder()
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c == "\\":
                self.i += 2
            elif c == "$":
                self._dollar(b, in_double=True)
            elif c == "`":
                self._backtick(b, in_double=True)
            else:
                self.i += 1

    def _dollar(self, b: _WordBuilder, *, in_double: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < self.n else ""
        if nxt == "'" and not in_double:
            self.i = i + 2
            b.parts.append(self._ansi_c())
        elif nxt == '"' and not in_double:
            self.i = i + 2
            self._double_quoted(b)
        elif nxt == "(":
            end = self._arith_end(i + 1) if s.startswith("$((", i) else -1
            if end > 0:
                arith_check(s[i + 3 : end - 1])
                self.i = end + 1
                b.expansion(s[i : self.i])
            else:
                self.i = i + 1
                self._command_substitution(b, i)
        elif nxt == "[":
            # The old `$[…]` arithmetic: its brackets would be read as a glob, and a `<<` in
            # it as a here-doc (Bash reads it as one expansion).
            raise _Unparseable("the old $[…] arithmetic form is not analysed")
        elif nxt == "{":
            end = s.find("}", i)
            if end < 0:
                raise _Unparseable("missing '}'")
            body = s[i + 2 : end]
            if not body or not _SAFE_PARAM.fullmatch(body) or "@P" in body:
                # `@P` expands the value as a prompt string, command substitutions included.
                raise _Unparseable("parameter expansion too complex to analyse")
            self.i = end + 1
            b.expansion(s[i : self.i])
        else:
            m = VAR_NAME.match(s, i + 1)
            if m is None:
                b.parts.append("$")
                self.i = i + 1
            else:
                self.i = m.end()
                b.expansion(s[i : self.i])

    def _command_substitution(self, b: _WordBuilder, start: int) -> None:
        """`$(…)`, `<(…)` or `>(…)`: self.i is on the '('; parse the body as commands."""
        self.i += 1
        self._nest()
        pending, self.heredocs = self.heredocs, []
        if self.parse_list(frozenset({")"})) != ")":
            raise _Unparseable("missing ')'")
        if pending:
            if "\n" in self.s[start : self.i]:
                # Bash reads the pending here-doc's body after the substitution, not at
                # the first newline inside it.
                raise _Unparseable("a here-doc is pending across a multi-line substitution")
            self.heredocs = pending + self.heredocs
        self.nesting -= 1
        b.expansion(self.s[start : self.i])

    def _backtick(self, b: _WordBuilder, *, in_double: bool) -> None:
        s, n = self.s, self.n
        j = self.i + 1
        inner: list[str] = []
        while j < n and s[j] != "`":
            if s[j] == "\\" and j + 1 < n and (s[j + 1] in "$`\\" or (in_double and s[j + 1] == '"')):
                inner.append(s[j + 1])
                j += 2
            else:
                inner.append(s[j])
                j += 1
        if j >= n:
            raise _Unparseable("unbalanced backtick")
        self._reparse("".join(inner))
        b.expansion(s[self.i : j + 1])
        self.i = j + 1

    def _ansi_c(self) -> str:
        """Decode the body of `$'…'` (self.i is after the opening quote)."""
        s, n = self.s, self.n
        out: list[str] = []
        while self.i < n:
            c = s[self.i]
            if c == "'":
                self.i += 1
                text = "".join(out)
                if "$(" in text or "`" in text:
                    # Spelled with escapes, it would slip past the check for a substitution
                    # in a quoted array subscript (`shell._SUBSCRIPT_SUBSTITUTION`).
                    raise _Unparseable("a $'…' string spells a command substitution")
                return text
            if c != "\\" or self.i + 1 >= n:
                out.append(c)
                self.i += 1
                continue
            e = s[self.i + 1]
            self.i += 2
            if e in _ANSI:
                out.append(_ANSI[e])
            elif e == "x" and s.startswith("{", self.i):
                raise _Unparseable("a $'\\x{…}' escape is not analysed")
            elif e in "xuU01234567":
                digits, base, limit = ("01234567", 8, 3) if e in "01234567" else ("", 16, 2)
                if e == "u":
                    limit = 4
                elif e == "U":
                    limit = 8
                if digits:
                    self.i -= 1  # the first octal digit is part of the number
                    allowed = digits
                else:
                    allowed = "0123456789abcdefABCDEF"
                j = self.i
                while j < n and j - self.i < limit and s[j] in allowed:
                    j += 1
                if j == self.i:
                    out.append("\\" + e)
                    continue
                code = int(s[self.i : j], base)
                self.i = j
                if code > 0x10FFFF:
                    raise _Unparseable("bad escape in $'…'")
                out.append(chr(code))
            elif e == "c" and self.i < n:
                out.append(chr(ord(s[self.i]) & 0x1F))
                self.i += 1
            else:
                out.append("\\" + e)
        raise _Unparseable("unbalanced $'…' quote")


def arith_check(body: str) -> None:
    # A substitution or quoting inside arithmetic is not analysed (variables are; see the
    # docs for the values Bash evaluates recursively).
    if _UNSAFE_ARITH.search(body):
        raise _Unparseable("arithmetic with substitutions or quotes cannot be analysed")
