"""The word reader behind `_parse.Parser`: quoting, escapes and expansions.

Reads one shell word the way Bash removes its quotes (`'…'`, `"…"`, `$'…'`, `$"…"`,
backslashes, line continuations) and records where its expansions are (`$X`, `${…}`,
`$((…))`, brace lists), parsing the commands of `$(…)`, `<(…)`, `>(…)` and backticks
through the parser that owns it (`parse_list`, `reparse`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from types import MappingProxyType

from ._lex import BLANKS, PLAIN, PLAIN_WORDS, SPECIAL, STOP, literal_tilde
from ._types import MAX_NESTING, Unparseable, Word

VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_SAFE_PARAM = re.compile(r"[A-Za-z0-9_#!@*?:\-+=%/.,^~ \[\]]*")
_UNSAFE_ARITH = re.compile(r"\$\(|[`'\"\\]")
_GLOB_CHARS = frozenset("*?[")
_DOUBLE_QUOTED_SPECIAL = re.compile(r'["\\$`]')  # what ends a run of text inside double quotes
_ANSI = MappingProxyType({
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
    "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
})  # fmt: skip


def _ends_word(s: str, i: int) -> bool:
    return i >= len(s) or s[i] in STOP


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

    def build(self, *, glob: bool = False, tilde: bool = False) -> Word:
        text = "".join(self.parts)
        if self.first_exp < 0:
            return Word(text, True, text, text, glob, tilde)
        return Word(text, False, text[: self.first_exp], text[self.last_exp :], glob, tilde)


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
    def reparse(self, source: str) -> None:
        """Parse `source` as a nested command line (the command-level parser's)."""

    def _nest(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise Unparseable(f"nested deeper than {MAX_NESTING} levels")

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

    def read_plain_words(self, *, may_assign: bool = False) -> list[Word]:
        """The usual words, read in one step: each one unquoted run with nothing special in it.

        With `may_assign`, a first word with `=` declines them all (it may be an
        assignment). Its contract: the words are those `_skip_blanks()` then `_read_word()`,
        repeated, would read, and it leaves the position where they would; none starts
        an operator, a redirection or a comment, so the command reader would read a word
        at each (`test_shell.py` holds the two readers to it). None read leaves the
        position as it is. A shortcut for speed: most words of an agent's command are such.
        """
        m = PLAIN_WORDS.match(self.s, self.i)
        if m is None:
            return []
        texts = BLANKS.split(m.group().strip(" \t"))
        if may_assign and "=" in texts[0]:
            return []
        self.i = m.end()
        return [Word(text, True, text, text) for text in texts]

    def _read_word(self) -> Word | None:
        """Read the word at `self.i` (None when an operator or the end is there)."""
        start = self.i
        plain = PLAIN.match(self.s, start)
        if plain is not None and _ends_word(self.s, plain.end()) and not SPECIAL.search(plain.group()):
            self.i = plain.end()
            return Word.plain(plain.group())  # as the loop below reads one unquoted run, nothing to expand
        b = _WordBuilder()
        while self.i < self.n and self._read_word_part(b, start):
            pass
        if self.i == start:
            return None
        text = "".join(b.parts)
        # A glob such as `/*` stays as written; a program name must not have one.
        return b.build(glob=b.unquoted_special, tilde=literal_tilde(self.s[start : self.i], text))

    def _read_word_part(self, b: _WordBuilder, start: int) -> bool:
        """Read one part of the word that began at `start` into `b`; False where the word ends."""
        s = self.s
        c = s[self.i]
        if c in STOP:
            if c in "<>" and self.i == start and s.startswith(("<(", ">("), self.i):
                self.i += 1
                self._command_substitution(b, self.i - 1)  # `<(…)`, `>(…)`
                return True
            return False
        if c == "\\":
            self._backslash(b)
        elif c == "'":
            end = s.find("'", self.i + 1)
            if end < 0:
                raise Unparseable("unbalanced single quote")
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
            self._unquoted_run(b)
        return True

    def _backslash(self, b: _WordBuilder) -> None:
        """An unquoted backslash: it quotes the next character; before a newline, both go."""
        s, i = self.s, self.i
        if i + 1 >= self.n:
            b.parts.append("\\")
            self.i += 1
        elif s[i + 1] == "\n":
            self.i += 2  # a line continuation
        else:
            b.parts.append(s[i + 1])
            self.i += 2

    def _unquoted_run(self, b: _WordBuilder) -> None:
        """Unquoted text up to the next special character; its first glob or brace marks the word."""
        m = PLAIN.match(self.s, self.i)
        chunk = m.group() if m else self.s[self.i]
        self.i += len(chunk)
        if not b.unquoted_special and (_GLOB_CHARS.intersection(chunk) or "{" in chunk):
            b.unquoted_special = True
            if "{" in chunk and ("," in chunk or ".." in chunk) and "}" in chunk:
                b.expansion(chunk)  # a brace list expands to several words
                return
        b.parts.append(chunk)

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
                special = _DOUBLE_QUOTED_SPECIAL.search(s, self.i + 1)
                end = n if special is None else special.start()
                b.parts.append(s[self.i : end])
                self.i = end
        raise Unparseable("unbalanced double quote")

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
            raise Unparseable("the old $[…] arithmetic form is not analysed")
        elif nxt == "{":
            end = s.find("}", i)
            if end < 0:
                raise Unparseable("missing '}'")
            body = s[i + 2 : end]
            if not body or not _SAFE_PARAM.fullmatch(body) or "@P" in body:
                # `@P` expands the value as a prompt string, command substitutions included.
                raise Unparseable("parameter expansion too complex to analyse")
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
            raise Unparseable("missing ')'")
        if pending:
            if "\n" in self.s[start : self.i]:
                # Bash reads the pending here-doc's body after the substitution, not at
                # the first newline inside it.
                raise Unparseable("a here-doc is pending across a multi-line substitution")
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
            raise Unparseable("unbalanced backtick")
        self.reparse("".join(inner))
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
                    raise Unparseable("a $'…' string spells a command substitution")
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
                raise Unparseable("a $'\\x{…}' escape is not analysed")
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
                    raise Unparseable("bad escape in $'…'")
                out.append(chr(code))
            elif e == "c" and self.i < n:
                out.append(chr(ord(s[self.i]) & 0x1F))
                self.i += 1
            else:
                out.append("\\" + e)
        raise Unparseable("unbalanced $'…' quote")


def arith_check(body: str) -> None:
    # A substitution or quoting inside arithmetic is not analysed (variables are; see the
    # docs for the values Bash evaluates recursively).
    if _UNSAFE_ARITH.search(body):
        raise Unparseable("arithmetic with substitutions or quotes cannot be analysed")
