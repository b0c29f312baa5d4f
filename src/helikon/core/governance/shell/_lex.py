"""The lexical tables of the shell reader: operators, plain runs, reserved words, descriptors."""

from __future__ import annotations

import re
from types import MappingProxyType

MAX_COMMANDS = 512
"""A bound on work per call: a script with more simple commands is not analysed."""

# A run of characters with no special meaning to the shell (no blank, operator, quote,
# backslash, `$` or backtick).
PLAIN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
# Words that are each one unquoted run with nothing special in it, after blanks: no quote,
# expansion, glob, brace, comment or operator, and none right before a `<` or `>` (`2>`
# is a redirection).
PLAIN_WORDS = re.compile(
    r"(?:[ \t]*[^ \t\n;&|()<>'\"\\$`*?\[{#][^ \t\n;&|()<>'\"\\$`*?\[{]*(?=[ \t\n;&|()]|\Z))+"
)
BLANKS = re.compile(r"[ \t]+")
# Text shaped like a reserved word (`if`, `{`, `[[`, ...) where a command starts.
RESERVED_PEEK = re.compile(r"(?:\[\[|\]\]|[A-Za-z_{}!]+)(?=[\s;&|()<>]|$)")
# The descriptor before a redirection operator: `2>`, `{fd}>`.
IO_NUMBER = re.compile(r"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})(?=[<>])")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
# A glob or brace character: a word with one unquoted may stand for other words.
SPECIAL = re.compile(r"[*?\[{]")
# Every operator, longest first for each first character.
OPS = (
    "&>>", ";;&", "<<<", "<<-",
    "&&", "||", ";;", ";&", "|&", "&>", ">>", ">|", ">&", "<&", "<>", "<<",
    ";", "&", "|", "(", ")", "<", ">", "\n",
)  # fmt: skip
OPS_BY_CHAR = MappingProxyType({c: tuple(op for op in OPS if op[0] == c) for c in ";&|()<>\n"})
REDIRECT_OPS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<&", "<>", "<<", "<", ">"})
REDIRECT_START = frozenset("<>&0123456789{")
# The characters that end an unquoted word.
STOP = frozenset(" \t\n;&|()<>")


def literal_tilde(raw: str, text: str) -> bool:
    r"""Whether the word spelled `raw` (with quotes) starts its `text` with a `~` Bash keeps as it is.

    Bash expands a `~` only when it starts the word unquoted and nothing up to the first
    unquoted `/` is quoted, so `"~"`, `\~`, `''~`, `~"root"`, `~\/x` and `~"/"x` name
    a file `~…`, while `~`, `~/"x"` and `~root` are home directories. A line continuation
    is no quoting: `\<newline>~` is home.
    """
    if text[:1] != "~":
        return False
    raw = raw.replace("\\\n", "")
    # A quote or backslash before the first `/` quotes part of the user name, or that `/`.
    head = raw.partition("/")[0]
    return raw[:1] != "~" or "'" in head or '"' in head or "\\" in head
