"""The lexical tables of the shell reader, and its one-pass fast path.

Most commands an agent runs hold nothing but words, simple quoting, operators and
redirections. `read_fast` tokenizes such a command with a single `re.findall` and hands
each simple command to `_shell_resolve.resolve`, exactly as the character-level reader
in `_shell_parse` would; at the first construct it does not cover (an expansion, an
escape, a parenthesis, a here-doc, a comment, a reserved word, a brace list, ...) it
declines before touching the parser's state, and the full reader runs instead. A
property test over the adversarial corpus and generated commands holds the two to the
same result.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import _shell_resolve
from ._carrier import raw_constructor
from .shell import Redirect, Word, _Unparseable

if TYPE_CHECKING:
    from ._shell_parse import Parser

MAX_COMMANDS = 512  # a bound on work per call: a longer script is not analysed

# Runs of characters with no special meaning, consumed in one step for speed.
PLAIN = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
RESERVED_PEEK = re.compile(r"(?:\[\[|\]\]|[A-Za-z_{}!]+)(?=[\s;&|()<>]|$)")
IO_NUMBER = re.compile(r"(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})(?=[<>])")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
SPECIAL = re.compile(r"[*?\[{]")
# A plain word after blanks: no quoting, expansion, glob, comment or descriptor number in it.
FAST_WORD = re.compile(
    r"[ \t]*([^ \t\n;&|()<>'\"\\$`*?\[{#0-9][^ \t\n;&|()<>'\"\\$`*?\[{]*)(?=[ \t\n;&|()<>]|\Z)"
)
OPS = (
    "&>>", ";;&", "<<<", "<<-",
    "&&", "||", ";;", ";&", "|&", "&>", ">>", ">|", ">&", "<&", "<>", "<<",
    ";", "&", "|", "(", ")", "<", ">", "\n",
)  # fmt: skip
OPS_BY_CHAR = {c: tuple(op for op in OPS if op[0] == c) for c in ";&|()<>\n"}
REDIRECT_OPS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", ">|", ">&", "<&", "<>", "<<", "<", ">"})
REDIRECT_START = frozenset("<>&0123456789{")
STOP = frozenset(" \t\n;&|()<>")

new_word = raw_constructor(Word)  # (text, literal, prefix, tail, glob): the hot path
_new_redirect = raw_constructor(Redirect)  # (op, target, fd)

# One token per match, blanks before it skipped; every character is matched by some
# alternative (`bad` last), so `findall` reads the string contiguously. The alternatives
# mirror the full reader's order: a redirection (with its descriptor, as `IO_NUMBER`)
# before a word, `&>` before `&`. `<<…`, `<(`, `>(`, `;;`, `;&`, parentheses, `\`, `$`,
# backticks, unbalanced quotes and double quotes holding `\`, `$` or a backtick are `bad`.
_TOKEN = re.compile(
    r"""[ \t]*(?:
        (\d+(?=[<>])|\{[A-Za-z_][A-Za-z0-9_]*\}(?=[<>]))?
        (&>>|&>|>>|>\||>&|<&|<>|>(?!\()|<(?![<(]))
      | (&&|\|\||\|&|;(?![;&])|[&|\n])
      | ((?:[^ \t\n;&|()<>'"\\$`]+|'[^']*'|"[^"\\$`]*")+)
      | (.)
    )""",
    re.VERBOSE | re.DOTALL,
)
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")
# Characters that make the fast path decline without tokenizing.
_DECLINE = ("$", "\\", "`", "(", "<<")
# Words the full reader treats specially at the start of a command (a superset: the
# fast path only has to decline on them).
_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "select",
     "function", "time", "coproc", "in", "{", "}", "!", "[[", "]]"}
)  # fmt: skip


# Words already read, by their source spelling: a `Word` is immutable, and the commands an
# agent runs repeat most of their words (`git`, `-la`, `&&`-joined `cd src`), so a new
# command mostly costs a lookup per word. Bounded: cleared when full.
_WORDS_SEEN: dict[str, Word] = {}
_WORDS_SEEN_MAX = 4096


def _word(raw: str) -> Word | None:
    """The word `raw` (as the source spells it) stands for, or None to decline."""
    if "'" not in raw and '"' not in raw:
        if SPECIAL.search(raw) is None:
            return new_word(raw, True, raw, raw, False)
        if "{" in raw and ("," in raw or ".." in raw) and "}" in raw:
            return None  # a brace list expands to several words
        return new_word(raw, True, raw, raw, True)
    parts: list[str] = []
    glob = False
    for single, double, plain in _QUOTED.findall(raw):
        if plain:
            # As the full reader: only the first unquoted run with a glob or brace
            # character is looked at.
            if not glob and SPECIAL.search(plain) is not None:
                if "{" in plain and ("," in plain or ".." in plain) and "}" in plain:
                    return None
                glob = True
            parts.append(plain)
        else:
            parts.append(single or double)
    text = "".join(parts)
    return new_word(text, True, text, text, glob)


def read_fast(p: Parser) -> bool:
    """Read `p.s` in one pass into `p.out`; False (nothing touched) when it needs the full reader."""
    src = p.s
    for marker in _DECLINE:
        if marker in src:
            return False
    commands: list[tuple[list[Word], list[Redirect], list[str]]] = []
    words: list[Word] = []
    redirects: list[Redirect] = []
    assignments: list[str] = []
    pending = ""  # a redirection operator waiting for its target
    pending_fd = ""
    words_seen = _WORDS_SEEN
    for fd, redirect_op, op, raw, bad in _TOKEN.findall(src):
        if raw:
            word = words_seen.get(raw)
            if word is None:
                if raw[0] == "#":
                    return False  # a comment
                word = _word(raw)
                if word is None:
                    return False
                if len(words_seen) >= _WORDS_SEEN_MAX:
                    words_seen.clear()
                words_seen[raw] = word
            if pending:
                redirects.append(_new_redirect(pending, word, pending_fd))
                pending = ""
            elif words:
                words.append(word)
            elif raw[0] in _NAME_START and ("=" in raw or "[" in raw):
                if "[" in raw:
                    # `a[i]=x`: the full reader matches an assignment's subscript in the
                    # source, where it may reach past this word (`a[x y]=1`).
                    return False
                if ASSIGNMENT.match(raw):
                    assignments.append(word.text)
                else:
                    words.append(word)
            else:
                if not redirects and not assignments:
                    reserved = RESERVED_PEEK.match(raw)
                    if reserved is not None and reserved.group() in _RESERVED:
                        return False
                words.append(word)
        elif redirect_op:
            if pending:
                return False
            pending = redirect_op
            pending_fd = fd
        elif op:
            if pending:
                return False
            if words or redirects or assignments:
                commands.append((words, redirects, assignments))
                words, redirects, assignments = [], [], []
        elif bad:
            return False
    if pending:
        return False
    if words or redirects or assignments:
        commands.append((words, redirects, assignments))
    resolve = _shell_resolve.resolve
    out = p.out
    for words, redirects, assignments in commands:
        if len(out) > MAX_COMMANDS:
            raise _Unparseable("too many commands")
        redirect_tuple = tuple(redirects)
        p.redirects.extend(redirect_tuple)
        if words:
            resolve(p, words, redirect_tuple, tuple(assignments), (), [])
    return True
