"""The shell reader behind `parse_command`: one recursive-descent pass over the command.

A character-level reader over the POSIX/Bash lexical rules (blanks, operators, here-docs
here; quotes, escapes, `$'…'`, `$(…)`, backticks, `${…}`, `$((…))` in
`_words.WordReader`) that walks lists and simple commands (the compound ones, `if`,
loops, `case`, groups, subshells, functions, `[[ ]]`, in `_compound.CompoundReader`) and
hands each simple command's words to `_resolve.resolve`, which follows the commands that
run other commands back into this reader one level deeper (`Parser.reparse`).
"""

from __future__ import annotations

import re

from ...exceptions import UserError
from ._compound import COMPOUND, UNEXPECTED, CompoundReader
from ._env import check_assignment
from ._lex import (
    ASSIGNMENT,
    IO_NUMBER,
    MAX_COMMANDS,
    OPS_BY_CHAR,
    REDIRECT_OPS,
    REDIRECT_START,
    RESERVED_PEEK,
)
from ._programs import STDIN_READERS
from ._resolve import resolve
from ._types import MAX_NESTING, Redirect, ShellParse, SimpleCommand, Unparseable, Word

__all__ = ["Parser", "parse_command"]

# In an assignment's subscript, what this reader would cut the word at or evaluate.
_UNSAFE_SUBSCRIPT = re.compile(r"[\s<>;&|()#'\"`\\$]")
# A name with a subscript that holds a command substitution, anywhere in the text: `let`,
# `declare`, `printf -v`, `read`, `test -v`, `[[ -v ]]`, `${!x}`, `$((x))`... evaluate a
# quoted `'a[$(rm x)]'` and run it, so the command fails closed even when it is quoted,
# escaped (`a\[\$\(rm x\)\]`) or split by quotes (`'a[$''(rm x)]'`): the text is read with
# its quotes and backslashes dropped. A subscript may hold one level of brackets. The name
# is looked for from the start of each run of name characters only (a leading digit is no
# name), so a long word costs one scan, not one per character.
_SUBSCRIPT_SUBSTITUTION = re.compile(
    r"(?<![A-Za-z0-9_])[0-9]*[A-Za-z_][A-Za-z0-9_]*\[(?:[^\]\[;&|\n]|\[[^\]]*\])*?(?:\$\(|`)"
)
_QUOTING = re.compile(r"['\"\\]")


def parse_command(command: str) -> ShellParse:
    """Split a shell command line into the simple commands it runs; never raises on bad shell.

    ```python
    from helikon.core.governance.shell import parse_command

    assert [c.program for c in parse_command("a=1 timeout 5 rm x | tee y").commands] == ["rm", "tee"]
    assert parse_command("echo 'unbalanced").error == "unbalanced single quote"
    ```

    Args:
        command: The command string, as the Bash tool would receive it.

    Raises:
        UserError: When `command` is not a `str` (a programming error, not a model's).
    """
    if not isinstance(command, str):
        raise UserError(f"parse_command() takes the command as a str, got {type(command).__name__}")
    could_hold_one = "[" in command and ("$" in command or "`" in command)
    if could_hold_one and _SUBSCRIPT_SUBSTITUTION.search(_QUOTING.sub("", command)):
        return ShellParse(error="an array subscript holds a command substitution")
    parser = Parser(command, 0)
    try:
        parser.parse_program()
    except Unparseable as exc:
        return ShellParse(error=str(exc) or "unparseable")
    except RecursionError:
        return ShellParse(error="nesting too deep")
    return ShellParse(tuple(parser.out), tuple(parser.redirects))


class Parser(CompoundReader):
    """A recursive-descent reader of one command string; it appends to shared result lists."""

    __slots__ = ("heredocs", "i", "n", "nesting", "out", "redirects", "s", "stdin_scripts")

    def __init__(self, src: str, nesting: int, out: list[SimpleCommand] | None = None,
                 redirects: list[Redirect] | None = None) -> None:  # fmt: skip
        if nesting > MAX_NESTING:
            raise Unparseable(f"nested deeper than {MAX_NESTING} levels")
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
        """Read the whole source into `out` and `redirects`; raise `Unparseable` when it cannot."""
        end = self.parse_list(frozenset())
        if end:
            raise Unparseable(f"unexpected {end!r}")
        if self.heredocs:
            self._read_heredocs()  # bodies running to the end of the input
        for body, quoted in self.stdin_scripts:
            text = "".join(body)
            if not quoted and ("$" in text or "`" in text):
                # The expanded text is read as script: its commands are unknown.
                raise Unparseable("a shell reads an expanding here-doc as its script")
            self.reparse(text)

    def reparse(self, source: str) -> None:
        """Read `source` (a `bash -c` script, an `eval`'s words, ...) one level deeper."""
        Parser(source, self.nesting + 1, self.out, self.redirects).parse_program()

    def resolve_words(
        self, words: list[Word], *, wrappers: tuple[str, ...] = (), stdin_args: bool = False
    ) -> None:
        """Resolve `words` as a command of their own (`xargs CMD`, `find -exec CMD ;`)."""
        resolve(self, words, (), (), wrappers, [], stdin_args=stdin_args)

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
                while not quoted and (len(line) - len(line.rstrip("\\"))) % 2 and self.i < self.n:
                    # An unquoted body drops a backslash-newline before it looks for the
                    # delimiter: `EO\` then `F` ends the here-doc.
                    end = self.s.find("\n", self.i)
                    line = line[:-1] + self.s[self.i : self.n if end < 0 else end]
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
                raise Unparseable(f"unexpected {op!r}")
            if op == ")":
                if ")" in terminators:
                    self.i += 1
                    return ")"
                raise Unparseable("unbalanced ')'")
            word = self._peek_reserved()
            if word in terminators:
                self.i += len(word)
                return word
            self.parse_command(word, op)

    def parse_command(self, word: str | None = None, op: str | None = None) -> None:
        """Parse one command; `word` and `op` are what the caller already peeked, if it did."""
        if len(self.out) > MAX_COMMANDS:
            raise Unparseable("too many commands")
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
        handler = COMPOUND.get(word)
        if handler is not None:
            self.i += len(word)
            handler(self)
            return
        if word in UNEXPECTED:
            raise Unparseable(f"unexpected {word!r}")
        self.parse_simple()

    def _trailing_redirects(self) -> None:
        bodies: list[tuple[list[str], bool]] = []
        while True:
            self._skip_blanks()
            redirect = self._maybe_redirect(bodies)
            if redirect is None:
                break
            self.redirects.append(redirect)
            if redirect.op == "<<<" and redirect.fd in ("", "0") and self._reads_script():
                # `{ bash; } <<< 'cmd'`: a shell inside reads the compound's stdin.
                if not redirect.target.literal:
                    raise Unparseable("a shell reads an expanded here-string as its script")
                self.reparse(redirect.target.text)
        if bodies and self._reads_script():
            self.stdin_scripts.extend(bodies)  # parsed once the bodies have been read

    def _reads_script(self) -> bool:
        """Whether a command read so far may read its stdin as a script (a shell, `source`)."""
        return any(c.program in STDIN_READERS for c in self.out)

    # -- simple commands --

    def parse_simple(self) -> None:
        words: list[Word] = []
        assignments: list[str] = []
        redirects: list[Redirect] = []
        heredoc_bodies: list[tuple[list[str], bool]] = []
        while True:
            # Before the program, a word with `=` may be an assignment: the general path reads it.
            plain = self.read_plain_words(may_assign=not words)
            if plain:
                words += plain
                continue
            self._skip_blanks()
            if self.i >= self.n:
                break
            redirect = self._maybe_redirect(heredoc_bodies)
            if redirect is not None:
                redirects.append(redirect)
                continue
            if self.s.startswith(("<(", ">("), self.i):
                words.append(self._read_word() or Word.plain(""))
                continue
            op = self._peek_op()
            if op == "(" and len(words) == 1 and not assignments and self._function_def():
                return
            if op:
                if op == "(":
                    raise Unparseable("unexpected '('")
                break
            start = self.i
            word = self._read_word()
            if word is None:  # pragma: no cover - a non-operator always starts a word
                raise Unparseable("bad word")
            assignment = None if words or self.s[start] == "=" else ASSIGNMENT.match(self.s, start)
            if assignment is not None:
                if "[" in assignment.group() and _UNSAFE_SUBSCRIPT.search(assignment.group()):
                    # Bash reads `a[…]=` as one word up to the matching bracket, blanks and
                    # `<<` included, and evaluates the subscript (substitutions too).
                    raise Unparseable("an array subscript too complex to analyse")
                if self.i < self.n and self.s[self.i] == "(" and word.text.endswith("="):
                    self._array_literal()
                check_assignment(word.text)
                assignments.append(word.text)
                continue
            words.append(word)
        self.redirects.extend(redirects)
        if words:
            resolve(self, words, tuple(redirects), tuple(assignments), (), heredoc_bodies)

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
                raise Unparseable("missing ')' in an array")
            if self.s[self.i] == ")":
                self.i += 1
                return
            if self._peek_op():
                raise Unparseable("bad array literal")
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
            raise Unparseable(f"missing target after {op!r}")
        return Redirect(op, target, fd)

    def _heredoc(self, op: str, fd: str, bodies: list[tuple[list[str], bool]] | None) -> Redirect:
        start = self.i
        word = self._read_word()
        if word is None:
            raise Unparseable("missing here-doc delimiter")
        raw = self.s[start : self.i].replace("\\\n", "")  # a line continuation quotes nothing
        quoted = any(c in raw for c in "'\"\\")
        body: list[str] = []
        self.heredocs.append((word.text, op == "<<-", quoted, body))
        if bodies is not None:
            bodies.append((body, quoted))
        return Redirect(op, word, fd)
