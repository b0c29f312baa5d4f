r"""An operator-aware reading of a shell command line, for permission rules.

`parse_command` turns a Bash command string into the simple commands it would run,
each with its resolved program name, its arguments and its redirections. It follows
the POSIX/Bash lexical rules (quoting, escapes, `$(…)`, backticks, here-docs) with a
small character-level lexer, so that `r\\m`, `'r'm`, `/usr/bin/rm`, `sudo -u root rm`,
`a&&rm`, `$(rm …)` and `bash -c 'rm …'` all resolve to `rm`.

What it cannot analyse soundly (a program named by a variable, unbalanced quotes,
nesting past the bound, look-alike characters in a program name, ...) makes the parse
*unparseable*; the rules then fail closed. See `docs/shell-matcher.md`.

```python
from helikon.core.governance.shell import parse_command

parsed = parse_command("cd src && FOO=1 sudo -u root rm -rf build 2>/dev/null")
assert [c.program for c in parsed.commands] == ["cd", "rm"]
assert parsed.commands[1].wrappers == ("sudo",)
assert parse_command("$CMD -rf /").ok is False
```
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from ..._carrier import carrier, raw_constructor
from ...exceptions import UserError

if TYPE_CHECKING:
    from ._parse import Parser

__all__ = ["MAX_NESTING", "ParseCache", "Redirect", "ShellParse", "SimpleCommand", "Word", "parse_command"]

MAX_NESTING = 12
"""How deep `$(…)`, backticks, subshells, groups, `bash -c` and `eval` may nest."""


@carrier(kw_only=False)
class Word:
    r"""One shell word after quote removal.

    Attributes:
        text: The word with quotes removed; expansions (`$X`, `${X}`, `$(…)`, backticks,
            brace lists) are kept as written.
        literal: `True` when the word holds no expansion, so `text` is what runs.
        prefix: The literal text before the first expansion (all of `text` when literal).
        tail: The literal text after the last expansion (all of `text` when literal).
        glob: `True` when the word has an unquoted glob or brace character (`*`, `?`, `[`, `{`).
        literal_tilde: `True` when `text` starts with a `~` that Bash leaves as it is: a
            quoted one (`"~"`, `'~'`, `\~`), or one whose user name holds quoting
            (`~"root"`, `~\/x`). Such a word names a file `~…` in the working directory,
            not a home directory (`False` for an unquoted `~`, `~/x`, `~user`).
    """

    text: str
    literal: bool = True
    prefix: str = ""
    tail: str = ""
    glob: bool = False
    literal_tilde: bool = False

    @classmethod
    def plain(cls, text: str) -> Word:
        """A literal word (no quoting, no expansion)."""
        return cls(text, True, text, text)

    def __repr__(self) -> str:
        flags = "" if self.literal else ", literal=False"
        if self.literal_tilde:
            flags += ", literal_tilde=True"
        return f"Word({self.text!r}{flags})"


@carrier(kw_only=False)
class Redirect:
    """A redirection: `op` is `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `<`, `<<`, `<<-`, `<<<`, `>&` or `<&`.

    `fd` is the explicit descriptor (`"2"` in `2>`), or `""`. `target` is the file, the
    here-doc delimiter, the here-string, or the descriptor duplicated (`1` in `2>&1`).
    """

    op: str
    target: Word
    fd: str = ""

    @property
    def writes(self) -> bool:
        """Whether this redirection opens `target` as a file for writing."""
        if self.op in _WRITE_OPS:
            return True
        # `>&word` with a non-descriptor word is Bash's `&>word`.
        return self.op == ">&" and not _is_fd_word(self.target)


_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


def _is_fd_word(word: Word) -> bool:
    text = word.text.rstrip("-")
    return word.literal and (text.isdigit() or text == "")


@carrier(kw_only=False)
class SimpleCommand:
    """One simple command as it would run.

    Attributes:
        program: The resolved program name: unquoted, wrappers stripped, directory removed.
        argv: The words from the program on (`argv[0]` is the program as written).
        redirects: Its redirections.
        wrappers: The wrappers stripped in front of it (`sudo`, `timeout`, `env`, ...).
        assignments: Leading `NAME=value` words (and `env NAME=value` ones).
        inline: `True` for `bash -c '…'`, `eval …` and the like, whose payload was parsed
            into the commands that follow it.
        stdin_args: `True` when more arguments arrive at run time (`xargs`).
    """

    program: str
    argv: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    wrappers: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    inline: bool = False
    stdin_args: bool = False

    @property
    def args(self) -> tuple[str, ...]:
        """The argument texts after the program."""
        return tuple(w.text for w in self.argv[1:])

    def __repr__(self) -> str:
        return f"SimpleCommand({' '.join(w.text for w in self.argv)!r})"


@carrier(kw_only=False)
class ShellParse:
    """The result of `parse_command`.

    Attributes:
        commands: Every simple command found, in source order, including those inside
            substitutions, compound commands, `bash -c`, `eval`, `xargs` and `find -exec`.
        redirects: Every redirection, including those on compound commands (`{ …; } >f`).
        error: Why the command cannot be analysed, or `""`. When set, `commands` is empty
            and rules fail closed.
    """

    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether the command was analysed; `False` means *fail closed*."""
        return not self.error


class _Unparseable(Exception):
    """Raised inside the parser: the command cannot be analysed soundly."""


def parse_command(command: str) -> ShellParse:
    """Split a shell command line into the simple commands it runs; never raises on bad shell.

    Args:
        command: The command string, as the Bash tool would receive it.

    Raises:
        UserError: When `command` is not a `str` (a programming error, not a model's).
    """
    if not isinstance(command, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"parse_command() takes the command as a str, got {type(command).__name__}")
    return _parse_text(command)


# The longest command whose parse (and guard verdicts, `_guards.checks`) is kept for a
# repeat. A parse holds some 16 to 46 bytes per character of its command (a `Word` per
# word), so the 2048 kept parses take at most about 48 MB; a longer command, rarely
# repeated, is parsed each time. The reader's other tables keep only short keys too: the
# model writes the commands, and a table bounded by entries alone grew to gigabytes.
_CACHED_COMMAND_MAX = 512


def _parse_text(command: str) -> ShellParse:
    """`parse_command` for a `str`, without the type check: through the cache when short."""
    if len(command) <= _CACHED_COMMAND_MAX:
        return _parse_cached(command)
    return _read(command)


# A name with a subscript that holds a command substitution, anywhere in the text: `let`,
# `declare`, `printf -v`, `read`, `test -v`, `[[ -v ]]`, `${!x}`, `$((x))`... evaluate a
# quoted `'a[$(rm x)]'` and run it, so the command fails closed even when it is quoted,
# escaped (`a\[\$\(rm x\)\]`) or split by quotes (`'a[$''(rm x)]'`): the text is read with
# its quotes and backslashes dropped. A subscript may hold one level of brackets.
_SUBSCRIPT_SUBSTITUTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(?:[^\]\[;&|\n]|\[[^\]]*\])*?(?:\$\(|`)")
_QUOTING = re.compile(r"['\"\\]")


def _read(command: str) -> ShellParse:
    if (
        "[" in command
        and ("$" in command or "`" in command)
        and _SUBSCRIPT_SUBSTITUTION.search(_QUOTING.sub("", command))
    ):
        return ShellParse(error="an array subscript holds a command substitution")
    parser = (_parser_class or _load_parser())(command, 0)
    try:
        parser.parse_program()
    except _Unparseable as exc:
        return ShellParse(error=str(exc) or "unparseable")
    except RecursionError:
        return ShellParse(error="nesting too deep")
    return _new_parse(tuple(parser.out), tuple(parser.redirects), "")


_parse_cached = lru_cache(maxsize=2048)(_read)
_new_parse = raw_constructor(ShellParse)
_parser_class: type[Parser] | None = None


def _load_parser() -> type[Parser]:
    # Imported on first use, not per call (an import statement costs about a
    # microsecond), and not at the top: the parser needs the types above.
    global _parser_class
    from ._parse import Parser

    _parser_class = Parser
    return Parser


from ._cache import ParseCache  # noqa: E402  (the cache reads through parse_command above)
