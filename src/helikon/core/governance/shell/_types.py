"""The values the shell reader produces: `Word`, `Redirect`, `SimpleCommand`, `ShellParse`.

Also `MAX_NESTING` and `Unparseable`, the exception the reader raises inside itself when a
command cannot be analysed soundly (`parse_command` turns it into `ShellParse.error`).
"""

from __future__ import annotations

from typing import Protocol

from ..._internal.carrier import carrier

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


class Unparseable(Exception):
    """Raised inside the parser: the command cannot be analysed soundly."""


class Reader(Protocol):
    """What the resolver needs of the reader that found a command (`_parse.Parser` is one).

    The commands and redirections found so far, the here-doc bodies a shell reads as its
    script, and the two ways to read further: a script one level deeper, and words as a
    command of their own.
    """

    out: list[SimpleCommand]
    redirects: list[Redirect]
    stdin_scripts: list[tuple[list[str], bool]]

    def reparse(self, source: str) -> None:
        """Read `source` as a script one level deeper (`bash -c`, `eval`)."""
        ...

    def resolve_words(
        self, words: list[Word], *, wrappers: tuple[str, ...] = (), stdin_args: bool = False
    ) -> None:
        """Resolve `words` as a command of their own (`xargs CMD`)."""
        ...
