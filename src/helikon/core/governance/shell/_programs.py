"""Which program a word names, and which programs may run other commands.

`program_name` turns the first word of a simple command into the program it runs, or
refuses (`Unparseable`) when that cannot be known from the text. `runs_others` says
whether the resolver must look further than the name; `wrapper_of` gives a wrapper's
option table. All three are pure: what a command names changes no table.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from ._types import Unparseable, Word
from ._wrappers import JOINING, LD_SO, OPAQUE_RUNNERS, WRAPPERS, Wrapper

POSIX_SHELLS = frozenset(
    {"sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh"}
)
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "pwsh", "powershell", "nu", "elvish", "xonsh"})
# Declaration builtins, whose `NAME=value` arguments are assignments.
DECLARES = frozenset({"export", "declare", "typeset", "local", "readonly"})
# Builtins with an option that runs a string or a function (`mapfile -C`, `compgen -F`) or
# binds a name to any file (`hash -p`): (the options that take an argument, the refused ones).
CODE_OPTIONS = MappingProxyType({
    "mapfile": ("dnOsuCc", "C"),
    "readarray": ("dnOsuCc", "C"),
    "compgen": ("oAGWFCXPSV", "FC"),
    "complete": ("oAGWFCXPSV", "FC"),
    "hash": ("p", "p"),
    "jobs": ("", "x"),  # `jobs -x cmd` runs cmd
})  # fmt: skip
# Builtins that set the variables their arguments name (checked like assignments).
NAME_SETTERS = frozenset({"read", "printf", "mapfile", "readarray"})
# Programs that run a string or words given to them as a command, or read a script.
COMMAND_RUNNERS = frozenset({"eval", "xargs", "find", "trap", "alias", "sg", "script", "source", ".", "ip"})
# Commands that read their stdin as a script when they run with no other.
STDIN_READERS = frozenset({*POSIX_SHELLS, "source", ".", "eval"})
REENTRANT = frozenset({
    *OPAQUE_RUNNERS, *WRAPPERS, *JOINING, *POSIX_SHELLS, *OTHER_SHELLS, *DECLARES, *CODE_OPTIONS,
    *NAME_SETTERS, *COMMAND_RUNNERS,
})  # fmt: skip
"""Every program `resolve` does more for than record it (besides the dynamic loaders)."""

# A dynamic loader (`ld-linux-x86-64.so.2`, `ld.so`, `ld-musl-x86_64.so.1`, any name of
# that shape) runs the program named after its options.
_LOADER = re.compile(r"ld(?:-linux.*\.so.*|\.so|64\.so\..*|-musl-.*\.so.*)\Z")
_FILE_NAME_MAX = 255  # bytes in a file name: a longer loader name names no file


def is_loader(name: str) -> bool:
    """Whether `name` has the shape of a dynamic loader's."""
    return name.startswith("ld") and _LOADER.match(name) is not None


def runs_others(program: str) -> bool:
    """Whether `program` may run other commands (or refuses to be analysed): a wrapper, a shell, ..."""
    return program in REENTRANT or is_loader(program)


def wrapper_of(program: str) -> Wrapper | None:
    """The option table of a wrapper (`sudo`, `timeout`, a dynamic loader, ...), or None."""
    spec = WRAPPERS.get(program)
    if spec is None and is_loader(program):
        return LD_SO
    return spec


def program_name(word: Word) -> str:
    """The program a word names: its text without the directory.

    Raises `Unparseable` when that cannot be known statically: the word holds an
    expansion or a glob, is empty, has non-ASCII or invisible characters (a look-alike of
    another name), names a directory, or is a loader name longer than a file name.
    """
    text = word.text
    if not word.literal:
        raise Unparseable(f"the program name {text!r} comes from an expansion")
    if word.glob and text != "[":  # a lone `[` is the test command, not a pattern
        raise Unparseable(f"the program name {text!r} has a glob or brace pattern")
    if not text or not text.isascii() or not text.isprintable() or " " in text:
        raise Unparseable(f"the program name {text!r} is empty or has non-ASCII or invisible characters")
    name = text.rsplit("/", 1)[-1]
    if not name:
        raise Unparseable(f"the program name {text!r} is a directory")
    if len(name) > _FILE_NAME_MAX and is_loader(name):
        raise Unparseable(f"the dynamic loader name {name[:40]!r}… is longer than a file name can be")
    return name
