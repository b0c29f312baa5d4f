"""The lexer and recursive-descent reader behind `shell.parse_command`.

A character-level state machine over the POSIX/Bash lexical rules (blanks, operators,
quotes, escapes, `$'…'`, `$(…)`, backticks, `${…}`, `$((…))`, here-docs) that walks
compound commands (`if`, loops, `case`, groups, subshells, functions, `[[ ]]`) and
hands each simple command's words to `_shell_resolve.resolve`.
"""

from __future__ import annotations

import re

from . import _shell_resolve
from ._shell_lex import (
    ASSIGNMENT,
    FAST_WORD,
    IO_NUMBER,
    MAX_COMMANDS,
    OPS_BY_CHAR,
    PLAIN,
    REDIRECT_OPS,
    REDIRECT_START,
    RESERVED_PEEK,
    SPECIAL,
    STOP,
    new_word,
    read_fast,
)
from .shell import MAX_NESTING, Redirect, SimpleCommand, Word, _Unparseable

_literal = Word.plain
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_SAFE_PARAM = re.compile(r"[A-Za-z0-9_#!@*?:\-+=%/.,^~ \[\]]*")
_UNSAFE_ARITH = re.compile(r"\$\(|[`'\"\\]")
_GLOB_CHARS = frozenset("*?[")
_COPROC_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])")
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


class Parser:
    """A recursive-descent reader of one command string; it appends to shared result lists."""

    s: str
    n: int
    i: int
    nesting: int
    fast = True  # try `_shell_lex.read_fast` first (the tests turn it off to compare)

    def __init__(self, src: str, nesting: int, out: list[SimpleCommand] | None = None,
                 redirects: list[Redirect] | None = None) -> None:  # fmt: skip
        if nesting > MAX_NESTING:
            raise _Unparseable(f"nested deeper than {MAX_NESTING} levels")
        self.s = src
        self.n = len(src)
        self.i = 0
        self.nesting = nesting
        self.out: list[SimpleCommand] = [] if out is None else out
        self.redirects: list[Redirect] = [] if redirects is None else redirects
        self.heredocs: list[tuple[str, bool, bool, list[str]]] = []  # delimiter, strip tabs, quoted, body
        # Here-doc bodies fed to a shell as its script, parsed once they have been read.
        self.stdin_scripts: list[tuple[list[str], bool]] = []

    # -- top level --

    def parse_program(self) -> None:
        if self.fast and read_fast(self):
            return
        end = self.parse_list(frozenset())
        if end:
            raise _Unparseable(f"unexpected {end!r}")
        if self.heredocs:
            self._read_heredocs()  # bodies running to the end of the input
        for body, quoted in self.stdin_scripts:
            text = "".join(body)
            if not quoted and ("$" in text or "`" in text):
                # The expanded text is read as script: its commands are unknown.
                raise _Unparseable("a shell reads an expanding here-doc as its script")
            self._reparse(text)

    def _reparse(self, source: str) -> None:
        inner = Parser(source, self.nesting + 1, self.out, self.redirects)
        inner.parse_program()

    def _nest(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise _Unparseable(f"nested deeper than {MAX_NESTING} levels")

    # -- low-level scanning --

    def _skip_blanks(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c == " " or c == "\t":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2  # a line continuation
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            else:
                return

    def _peek_op(self) -> str:
        s, i = self.s, self.i
        if i >= self.n:
            return ""
        candidates = OPS_BY_CHAR.get(s[i])
        if candidates is None:
            return ""
        for op in candidates:
            if s.startswith(op, i):
                return op
        return ""  # pragma: no cover - every start character has a one-character operator

    def _peek_reserved(self) -> str:
        m = RESERVED_PEEK.match(self.s, self.i)
        return m.group() if m else ""

    def _consume_newline(self) -> None:
        self.i += 1
        if self.heredocs:
            self._read_heredocs()

    def _read_heredocs(self) -> None:
        for delimiter, strip_tabs, quoted, body in self.heredocs:
            lines: list[str] = []
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                line = self.s[self.i : self.n if end < 0 else end]
                self.i = self.n if end < 0 else end + 1
                check = line.lstrip("\t") if strip_tabs else line
                if check == delimiter:
                    break
                lines.append(check)
            text = "\n".join(lines)
            if not quoted:
                # An unquoted delimiter makes the body expand like a double-quoted string.
                Parser(text, self.nesting + 1, self.out, self.redirects).scan_double_quoted_body()
            body.append(text)
        self.heredocs = []

    # -- lists and compound commands --

    def parse_list(self, terminators: frozenset[str]) -> str:
        """Parse commands until one of `terminators` (consumed and returned) or the end ("")."""
        while True:
            self._skip_blanks()
            if self.i >= self.n:
                return ""
            op = self._peek_op()
            if op == "\n":
                self._consume_newline()
                continue
            if op in (";", "&", "&&", "||", "|", "|&"):
                self.i += len(op)
                continue
            if op in (";;", ";&", ";;&"):
                if ";;" in terminators:
                    self.i += len(op)
                    return ";;"
                raise _Unparseable(f"unexpected {op!r}")
            if op == ")":
                if ")" in terminators:
                    self.i += 1
                    return ")"
                raise _Unparseable("unbalanced ')'")
            word = self._peek_reserved()
            if word in terminators:
                self.i += len(word)
                return word
            self.parse_command(word, op)

    def parse_command(self, word: str | None = None, op: str | None = None) -> None:
        """Parse one command; `word` and `op` are what the caller already peeked, if it did."""
        if len(self.out) > MAX_COMMANDS:
            raise _Unparseable("too many commands")
        if op is None:
            op = self._peek_op()
        if op == "(":
            if self.s.startswith("((", self.i) and self._arith_end(self.i) > 0:
                self._arith_command()
                return
            self.i += 1
            self._compound({")"}, ")")
            return
        if word is None:
            word = self._peek_reserved()
        handler = _COMPOUND.get(word)
        if handler is not None:
            self.i += len(word)
            handler(self)
            return
        if word in _UNEXPECTED:
            raise _Unparseable(f"unexpected {word!r}")
        self.parse_simple()

    def _compound(self, terminators: set[str], closing: str) -> None:
        self._nest()
        end = self.parse_list(frozenset(terminators))
        if end != closing:
            raise _Unparseable(f"missing {closing!r}")
        self.nesting -= 1
        self._trailing_redirects()

    def _expect(self, *words: str) -> str:
        self._skip_separators()
        word = self._peek_reserved()
        if word not in words:
            raise _Unparseable(f"expected {' or '.join(words)}")
        self.i += len(word)
        return word

    def _skip_separators(self) -> None:
        while True:
            self._skip_blanks()
            op = self._peek_op()
            if op == "\n":
                self._consume_newline()
            elif op == ";":
                self.i += 1
            else:
                return

    def _coproc(self) -> None:
        # `coproc cmd args` or `coproc NAME compound-command`.
        self._skip_blanks()
        m = _COPROC_NAME.match(self.s, self.i)
        if m is not None:
            self.i = m.end()
        self.parse_command()

    def _group(self) -> None:
        self._compound({"}"}, "}")

    def _bang(self) -> None:
        self.parse_command()

    def _time(self) -> None:
        self._skip_blanks()
        if self.s.startswith("-p", self.i) and (self.i + 2 >= self.n or self.s[self.i + 2] in STOP):
            self.i += 2
        self._skip_blanks()
        if self.i < self.n and not self._peek_op():
            self.parse_command()

    def _if(self) -> None:
        self._nest()
        self._expect_list("then")
        while True:
            end = self.parse_list(frozenset({"elif", "else", "fi"}))
            if end == "elif":
                self._expect_list("then")
            elif end == "else":
                self._expect_list("fi")
                break
            elif end == "fi":
                break
            else:
                raise _Unparseable("missing 'fi'")
        self.nesting -= 1
        self._trailing_redirects()

    def _expect_list(self, closing: str) -> None:
        if self.parse_list(frozenset({closing})) != closing:
            raise _Unparseable(f"missing {closing!r}")

    def _while(self) -> None:
        self._nest()
        self._expect_list("do")
        self._expect_list("done")
        self.nesting -= 1
        self._trailing_redirects()

    def _for(self) -> None:
        self._nest()
        self._skip_blanks()
        if self.s.startswith("((", self.i):
            self._arith_body()
        else:
            name = self._read_word()
            if name is None or not name.literal or not _VAR_NAME.fullmatch(name.text):
                raise _Unparseable("bad 'for' variable")
            self._skip_blanks()
            while self._peek_op() == "\n":
                self._consume_newline()
                self._skip_blanks()
            if self._peek_reserved() == "in":
                self.i += 2
                self._words_until_separator()
        body = self._expect("do", "{")
        self._expect_list("done" if body == "do" else "}")
        self.nesting -= 1
        self._trailing_redirects()

    def _words_until_separator(self) -> None:
        while True:
            self._skip_blanks()
            if self.i >= self.n or self._peek_op():
                return
            self._read_word()

    def _case(self) -> None:
        self._nest()
        self._skip_blanks()
        if self._read_word() is None:
            raise _Unparseable("bad 'case' word")
        self._skip_separators()
        if self._peek_reserved() != "in":
            raise _Unparseable("expected 'in'")
        self.i += 2
        while True:
            self._skip_separators()
            if self._peek_reserved() == "esac":
                self.i += 4
                break
            if self._peek_op() == "(":
                self.i += 1
            while True:  # the patterns, `a|b)`
                self._skip_blanks()
                if self._read_word() is None:
                    raise _Unparseable("bad 'case' pattern")
                self._skip_blanks()
                op = self._peek_op()
                if op == "|":
                    self.i += 1
                    continue
                if op == ")":
                    self.i += 1
                    break
                raise _Unparseable("bad 'case' pattern")
            end = self.parse_list(frozenset({";;", "esac"}))
            if end == "esac":
                break
            if end != ";;":
                raise _Unparseable("missing 'esac'")
        self.nesting -= 1
        self._trailing_redirects()

    def _function(self) -> None:
        self._skip_blanks()
        name = self._read_word()
        if name is None:
            raise _Unparseable("bad function name")
        self._skip_blanks()
        if self.s.startswith("()", self.i):
            self.i += 2
        self._function_body()

    def _function_body(self) -> None:
        self._skip_separators()
        if self.i >= self.n:
            raise _Unparseable("missing function body")
        self.parse_command()

    def _double_bracket(self) -> None:
        words: list[Word] = [_literal("[[")]
        while True:
            self._skip_blanks()
            if self.i >= self.n:
                raise _Unparseable("missing ']]'")
            if self._peek_reserved() == "]]":
                self.i += 2
                break
            op = self._peek_op()
            if op == "\n":
                self._consume_newline()
            elif op:  # `&&`, `<`, `(` … are operators of the test here, not of the shell
                self.i += len(op)
                words.append(_literal(op))
            else:
                word = self._read_word()
                if word is None:
                    raise _Unparseable("bad '[['")
                words.append(word)
        self.out.append(SimpleCommand("[[", tuple(words)))
        self._trailing_redirects()

    def _arith_command(self) -> None:
        self._arith_body()
        self.out.append(SimpleCommand("((", (_literal("(("),)))
        self._trailing_redirects()

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

    def _arith_body(self) -> None:
        """Skip `((…))`; its body must hold no substitution or quoting (see `_arith_check`)."""
        end = self._arith_end(self.i)
        if end < 0:
            raise _Unparseable("missing '))'")
        _arith_check(self.s[self.i + 2 : end - 1])
        self.i = end + 1

    def _trailing_redirects(self) -> None:
        while True:
            self._skip_blanks()
            redirect = self._maybe_redirect()
            if redirect is None:
                return
            self.redirects.append(redirect)

    # -- simple commands --

    def parse_simple(self) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        redirects: list[Redirect] = []
        heredoc_bodies: list[tuple[list[str], bool]] = []
        src = self.s
        fast = FAST_WORD.match
        while True:
            m = fast(src, self.i)
            if m is not None and (words or "=" not in m.group(1)):
                # The common case, read in one step: a plain unquoted word after blanks.
                text = m.group(1)
                self.i = m.end()
                words.append(new_word(text, True, text, text, False))
                continue
            self._skip_blanks()
            if self.i >= self.n:
                break
            redirect = self._maybe_redirect(heredoc_bodies)
            if redirect is not None:
                redirects.append(redirect)
                continue
            if self.s.startswith(("<(", ">("), self.i):
                words.append(self._read_word() or _literal(""))
                continue
            op = self._peek_op()
            if op == "(" and len(words) == 1 and not assignments and self._function_def():
                return
            if op:
                if op == "(":
                    raise _Unparseable("unexpected '('")
                break
            start = self.i
            word = self._read_word()
            if word is None:  # pragma: no cover - a non-operator always starts a word
                raise _Unparseable("bad word")
            if not words and ASSIGNMENT.match(self.s, start) and self.s[start] != "=":
                if self.i < self.n and self.s[self.i] == "(" and word.text.endswith("="):
                    self._array_literal()
                assignments.append(word.text)
                continue
            words.append(word)
        self.redirects.extend(redirects)
        if words:
            _shell_resolve.resolve(self, words, tuple(redirects), tuple(assignments), (), heredoc_bodies)

    def _function_def(self) -> bool:
        j = self.i + 1
        while j < self.n and self.s[j] in " \t":
            j += 1
        if j >= self.n or self.s[j] != ")":
            return False
        self.i = j + 1
        self._function_body()
        return True

    def _array_literal(self) -> None:
        self.i += 1  # the '('
        while True:
            self._skip_separators()
            if self.i >= self.n:
                raise _Unparseable("missing ')' in an array")
            if self.s[self.i] == ")":
                self.i += 1
                return
            if self._peek_op():
                raise _Unparseable("bad array literal")
            self._read_word()

    def _maybe_redirect(self, heredoc_bodies: list[tuple[list[str], bool]] | None = None) -> Redirect | None:
        if self.i >= self.n or self.s[self.i] not in REDIRECT_START:
            return None
        fd = ""
        m = IO_NUMBER.match(self.s, self.i)
        start = self.i
        if m is not None:
            fd = m.group()
            self.i = m.end()
        op = self._peek_op()
        if op not in REDIRECT_OPS or self.s.startswith(("<(", ">("), self.i):
            self.i = start
            return None
        self.i += len(op)
        self._skip_blanks()
        if op in ("<<", "<<-"):
            return self._heredoc(op, fd, heredoc_bodies)
        target = self._read_word()
        if target is None:
            raise _Unparseable(f"missing target after {op!r}")
        return Redirect(op, target, fd)

    def _heredoc(self, op: str, fd: str, bodies: list[tuple[list[str], bool]] | None) -> Redirect:
        start = self.i
        word = self._read_word()
        if word is None:
            raise _Unparseable("missing here-doc delimiter")
        raw = self.s[start : self.i]
        quoted = any(c in raw for c in "'\"\\")
        body: list[str] = []
        self.heredocs.append((word.text, op == "<<-", quoted, body))
        if bodies is not None:
            bodies.append((body, quoted))
        return Redirect(op, word, fd)

    # -- words --

    def _read_word(self) -> Word | None:
        s, n = self.s, self.n
        m = PLAIN.match(s, self.i)
        if m is not None:
            end = m.end()
            chunk = m.group()
            if (end >= n or s[end] in STOP) and not SPECIAL.search(chunk):
                self.i = end  # the common case: one unquoted run, nothing to expand
                return new_word(chunk, True, chunk, chunk, False)
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
        if b.unquoted_special:
            # A glob such as `/*` stays as written; a program name must not have one.
            return Word(word.text, word.literal, word.prefix, word.tail, True)
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
                _arith_check(s[i + 3 : end - 1])
                self.i = end + 1
                b.expansion(s[i : self.i])
            else:
                self.i = i + 1
                self._command_substitution(b, i)
        elif nxt == "{":
            end = s.find("}", i)
            if end < 0:
                raise _Unparseable("missing '}'")
            body = s[i + 2 : end]
            if not body or not _SAFE_PARAM.fullmatch(body):
                raise _Unparseable("parameter expansion too complex to analyse")
            self.i = end + 1
            b.expansion(s[i : self.i])
        else:
            m = _VAR_NAME.match(s, i + 1)
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
        if self.parse_list(frozenset({")"})) != ")":
            raise _Unparseable("missing ')'")
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
                return "".join(out)
            if c != "\\" or self.i + 1 >= n:
                out.append(c)
                self.i += 1
                continue
            e = s[self.i + 1]
            self.i += 2
            if e in _ANSI:
                out.append(_ANSI[e])
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


def _arith_check(body: str) -> None:
    # A substitution or quoting inside arithmetic is not analysed (variables are; see the
    # docs for the values Bash evaluates recursively).
    if _UNSAFE_ARITH.search(body):
        raise _Unparseable("arithmetic with substitutions or quotes cannot be analysed")


_COMPOUND = {
    "{": Parser._group,
    "!": Parser._bang,
    "time": Parser._time,
    "if": Parser._if,
    "while": Parser._while,
    "until": Parser._while,
    "for": Parser._for,
    "select": Parser._for,
    "case": Parser._case,
    "function": Parser._function,
    "[[": Parser._double_bracket,
    "coproc": Parser._coproc,
}
_UNEXPECTED = frozenset({"}", "fi", "then", "elif", "else", "do", "done", "esac", "]]"})
