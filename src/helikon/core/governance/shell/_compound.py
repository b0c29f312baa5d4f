"""The compound commands of the full shell reader: `if`, loops, `case`, groups, functions, `[[ ]]`.

`CompoundReader` walks each compound command's lists through the command-level hooks
`_parse.Parser` supplies (`parse_list`, `parse_command`, the blank and operator
scanners, trailing redirections); `COMPOUND` maps the reserved word that opens one to its
reader.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ._env import check_assignment
from ._lex import STOP
from ._types import Redirect, SimpleCommand, Unparseable, Word
from ._words import VAR_NAME, WordReader, arith_check

_literal = Word.plain
_COPROC_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])")


class CompoundReader(WordReader):
    """The compound-command half of the parser; `Parser` supplies the scanners and lists."""

    __slots__ = ()

    out: list[SimpleCommand]
    redirects: list[Redirect]

    @abstractmethod
    def parse_command(self, word: str | None = None, op: str | None = None) -> None:
        """Parse one command (the command-level parser's)."""

    @abstractmethod
    def _skip_blanks(self) -> None:
        """Skip blanks, line continuations and a comment."""

    @abstractmethod
    def _peek_op(self) -> str:
        """The operator at the current position, or ""."""

    @abstractmethod
    def _peek_reserved(self) -> str:
        """The reserved-word-shaped text at the current position, or ""."""

    @abstractmethod
    def _consume_newline(self) -> None:
        """Step over a newline, reading the here-doc bodies it starts."""

    @abstractmethod
    def _trailing_redirects(self) -> None:
        """Read the redirections after a compound command."""

    def _compound(self, terminators: set[str], closing: str) -> None:
        self._nest()
        end = self.parse_list(frozenset(terminators))
        if end != closing:
            raise Unparseable(f"missing {closing!r}")
        self.nesting -= 1
        self._trailing_redirects()

    def _expect(self, *words: str) -> str:
        self._skip_separators()
        word = self._peek_reserved()
        if word not in words:
            raise Unparseable(f"expected {' or '.join(words)}")
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
        for option in ("-p", "--"):  # `time -p -- cmd`
            if self.s.startswith(option, self.i) and (self.i + 2 >= self.n or self.s[self.i + 2] in STOP):
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
                raise Unparseable("missing 'fi'")
        self.nesting -= 1
        self._trailing_redirects()

    def _expect_list(self, closing: str) -> None:
        if self.parse_list(frozenset({closing})) != closing:
            raise Unparseable(f"missing {closing!r}")

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
            if name is None or not name.literal or not VAR_NAME.fullmatch(name.text):
                raise Unparseable("bad 'for' variable")
            check_assignment(name.text + "=")  # `for PS4 in '$(rm x)'`
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
            raise Unparseable("bad 'case' word")
        self._skip_separators()
        if self._peek_reserved() != "in":
            raise Unparseable("expected 'in'")
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
                    raise Unparseable("bad 'case' pattern")
                self._skip_blanks()
                op = self._peek_op()
                if op == "|":
                    self.i += 1
                    continue
                if op == ")":
                    self.i += 1
                    break
                raise Unparseable("bad 'case' pattern")
            end = self.parse_list(frozenset({";;", "esac"}))
            if end == "esac":
                break
            if end != ";;":
                raise Unparseable("missing 'esac'")
        self.nesting -= 1
        self._trailing_redirects()

    def _function(self) -> None:
        self._skip_blanks()
        name = self._read_word()
        if name is None:
            raise Unparseable("bad function name")
        self._skip_blanks()
        if self.s.startswith("()", self.i):
            self.i += 2
        self._function_body()

    def _function_body(self) -> None:
        self._skip_separators()
        if self.i >= self.n:
            raise Unparseable("missing function body")
        self.parse_command()

    def _double_bracket(self) -> None:
        words: list[Word] = [_literal("[[")]
        while True:
            self._skip_blanks()
            if self.i >= self.n:
                raise Unparseable("missing ']]'")
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
                    raise Unparseable("bad '[['")
                words.append(word)
        self.out.append(SimpleCommand("[[", tuple(words)))
        self._trailing_redirects()

    def _arith_command(self) -> None:
        self._arith_body()
        self.out.append(SimpleCommand("((", (_literal("(("),)))
        self._trailing_redirects()

    def _arith_body(self) -> None:
        """Skip `((…))`; its body must hold no substitution or quoting (see `arith_check`)."""
        end = self._arith_end(self.i)
        if end < 0:
            raise Unparseable("missing '))'")
        arith_check(self.s[self.i + 2 : end - 1])
        self.i = end + 1


COMPOUND: Mapping[str, Callable[[CompoundReader], None]] = MappingProxyType(
    {
        "{": CompoundReader._group,
        "!": CompoundReader._bang,
        "time": CompoundReader._time,
        "if": CompoundReader._if,
        "while": CompoundReader._while,
        "until": CompoundReader._while,
        "for": CompoundReader._for,
        "select": CompoundReader._for,
        "case": CompoundReader._case,
        "function": CompoundReader._function,
        "[[": CompoundReader._double_bracket,
        "coproc": CompoundReader._coproc,
    }
)
"""The reader of each compound command, by the reserved word that opens it."""
UNEXPECTED = frozenset({"}", "fi", "then", "elif", "else", "do", "done", "esac", "]]"})
"""Reserved words that close a compound command: out of place where a command starts."""
