"""The lexical tables of the shell reader, and its one-pass fast path.

Most commands an agent runs hold nothing but words, simple quoting, operators and
redirections. `read_fast` splits such a command at its operators with one `re.split`
(its quoted strings masked first, see `_QUOTED_STRING`), cuts the pieces into words with
`str.split`, and hands each simple command to `_resolve.resolve`, exactly as the
character-level reader in `_parse` would; at the first construct it does not cover
(an expansion, an escape, a parenthesis, a here-doc, a comment, a reserved word, a brace
list, ...) it declines, taking back whatever it added to the parser's results, and the
full reader runs instead. A property test over the adversarial corpus and generated
commands holds the two to the same result. Each simple command it reads is kept by its
text (`_read_segments`), so the parts a new command shares with earlier ones cost a
lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..._carrier import raw_constructor
from . import MAX_NESTING, Redirect, SimpleCommand, Word, _Unparseable
from . import _resolve as _resolve
from ._env import check_assignment

if TYPE_CHECKING:
    from ._parse import Parser

MAX_COMMANDS = 512  # a bound on work per call: a longer script is not analysed

_Commands = list[tuple[list[Word], tuple[Redirect, ...], tuple[str, ...]]]

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
new_command = raw_constructor(SimpleCommand)
_new_redirect = raw_constructor(Redirect)  # (op, target, fd)

# Whitespace `str.split` cuts at where Bash does not (in ASCII text).
_ODD_BLANK = re.compile(r"[\x0b\x0c\r\x1c-\x1f]")
# A command is split at its operators by one regex, then each piece into words by
# `str.split` (far cheaper than a regex match per word). Every alternative starts with a
# literal character, so `re` finds the next operator with a C scan over a character set;
# a class such as `[;&|<>\n]` as the last alternative would disable that (about twice
# the cost). `str.split` also splits at whitespace Bash keeps inside a word (a carriage
# return, a no-break space...), so a command holding any splits at blanks by `_BLANKS`.
_SPLIT = re.compile(r"(&>>|&>|>>|>\||>&|<&|<>|&&|\|\||;;&|;;|;&|\|&|;|&|\||<|>|\n)")
_BLANKS = re.compile(r"[^ \t]+")
# A quoted string, where the reader finds one: the first quote character opens it, the
# next one of the same kind closes it (the fast path declines on `$`, `\` and backticks).
# A command with quotes is read with each quoted string *masked* as one backslash (which
# the command cannot hold), so quoted operators and blanks stay in their word; the words
# get their quoted strings back, in order, before anything reads them.
_QUOTED_STRING = re.compile(r"""('[^']*'|"[^"]*")""")
# As the full reader: a descriptor starts with an ASCII digit, then `IO_NUMBER` takes any.
_FD = re.compile(r"[0-9]\d*|\{[A-Za-z_][A-Za-z0-9_]*\}")
_ASCII_DIGITS = frozenset("0123456789")
_SEPARATOR, _REDIRECTION, _DECLINED, _ASSIGNED, _WORD = 1, 2, 3, 4, 5
_KINDS = {
    **dict.fromkeys(("&&", "||", "|&", ";", "&", "|", "\n"), _SEPARATOR),
    **dict.fromkeys(("&>>", "&>", ">>", ">|", ">&", "<&", "<>", "<", ">"), _REDIRECTION),
    **dict.fromkeys((";;", ";&", ";;&"), _DECLINED),
}
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"|([^'\"]+)")
# Words the full reader treats specially at the start of a command (a superset: the
# fast path only has to decline on them).
_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "select",
     "function", "time", "coproc", "in", "{", "}", "!", "[[", "]]"}
)  # fmt: skip


# Words already read, by their source spelling: a `Word` is immutable, and the commands an
# agent runs repeat most of their words (`git`, `-la`, `&&`-joined `cd src`), so a new
# command mostly costs a lookup per word. A word not seen yet is read by `__missing__`, so
# `map(WORDS.__getitem__, raws)` runs in C for every word seen before. Bounded: cleared
# when full.
class _WordTable(dict[str, "Word | None"]):
    def __missing__(self, raw: str) -> Word | None:
        """Read a new word (and keep it); None to decline (a comment, a brace list), not kept."""
        first = raw[0]
        if first == "'" or first == '"':
            text = raw[1:-1]
            if raw[-1] == first and first not in text and len(raw) > 1:
                # One quoted string (a `bash -c` script, a pattern): mostly unique, not kept.
                return new_word(text, True, text, text, False, text[:1] == "~")
        elif first == "#":
            return None  # a comment
        word = _word(raw)
        if word is not None and len(raw) <= _WORD_KEPT_MAX:
            if len(self) >= _WORDS_SEEN_MAX:
                self.clear()
            self[raw] = word
        return word


_WORDS_SEEN = _WordTable()
_WORDS_SEEN_MAX = 4096
_WORD_KEPT_MAX = 256  # longer words are read each time: at most some 3 MB kept


def _word(raw: str) -> Word | None:
    """The word `raw` (as the source spells it) stands for, or None to decline."""
    if "'" not in raw and '"' not in raw:
        if SPECIAL.search(raw) is None:
            return new_word(raw, True, raw, raw, False, False)
        if "{" in raw and ("," in raw or ".." in raw) and "}" in raw:
            return None  # a brace list expands to several words
        return new_word(raw, True, raw, raw, True, False)
    quote = raw[0]
    if (quote == "'" or quote == '"') and raw[-1] == quote and raw.count(quote) == 2:
        # One quoted string (`bash -c '…'`): the other quote character is literal in it.
        text = raw[1:-1]
        return new_word(text, True, text, text, False, text[:1] == "~")
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
    if glob and "{" in text and _resolve.BRACE_LIST.search(text):
        return None  # a brace list, maybe across quotes (`a*'x'{b,c}`): the runners skip the check
    return new_word(text, True, text, text, glob, literal_tilde(raw, text))


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


def read_fast(p: Parser) -> bool:
    """Read `p.s` in one pass into `p.out`; False (no command read) when it needs the full reader.

    It may set `p.plain` either way: that describes the source, not how it was read.
    """
    src = p.s
    if "<<" in src:
        return False
    split: Callable[[str], list[str]] = str.split
    if not p.plain:
        # What makes the fast path decline without tokenizing: expansions, escapes,
        # parentheses (subshells, functions, `$(`, `<(`, `((`, arrays) and, above,
        # here-docs (five `in` tests cost less than a regex scan). Then whitespace
        # `str.split` cuts at where Bash does not (a carriage return, a no-break space...):
        # cutting at blanks alone is always right, only slower. A printable ASCII line has
        # none (one C loop, no regex for the usual line).
        if "$" in src or "\\" in src or "`" in src or "(" in src or ")" in src:
            return False
        if src.isascii() and (src.isprintable() or _ODD_BLANK.search(src) is None):
            p.plain = True
        else:
            split = _BLANKS.findall
    # A script (`bash -c '…'`) from a plain command has only plain characters: no scan
    # (but quote removal can form a `<<`, tested above).
    single = "'" in src
    double = '"' in src
    masked = src
    quoted: list[str] = []
    if single or double:
        mark = "'" if single else '"'
        if src.count(mark) == 2:
            # One quoted string, and no other quote outside it (a `bash -c` script with
            # double quotes in it, a pattern): cut at its quotes without a regex.
            before, text, after = src.split(mark)
            if not (single and double) or ('"' not in before and '"' not in after):
                masked = before + "\\" + after
                quoted = [mark + text + mark]
        if not quoted:
            parts = _QUOTED_STRING.split(src)  # plain, quoted, plain, ..., plain
            masked = "\\".join(parts[::2])
            if "'" in masked or '"' in masked:
                return False  # an unbalanced quote
            quoted = parts[-2::-2]  # reversed: `_read_pieces` pops them in order
    if "&" in masked or ";" in masked or "|" in masked or ">" in masked or "<" in masked or "\n" in masked:
        pieces = _SPLIT.split(masked)  # text, operator, text, operator, ..., text
        pieces.append("")
        return _read_segments(p, pieces, split, quoted)
    if quoted or not p.nesting:
        # One simple command (a `bash -c` script often is): nothing to look up when it has
        # quoted strings (see `_read_segments`) or is the whole line (whose parse is cached
        # by its text already).
        commands = _read_pieces(((masked, ""),), split, quoted)
        if commands is None:
            return False
        _resolve_all(p, commands)
        return True
    return _read_segments(p, [masked, ""], split, quoted)


# The simple commands of a source (the text between two separators, blanks trimmed) already
# read, one table per nesting level (re-entry such as `eval` reads one level deeper, and
# the depth is bounded): what each added to the parser's commands and redirections. An
# agent's commands repeat most of theirs (`cd src && …`, `… 2>&1 | tail -n 20`), so a new
# command mostly costs a lookup for each of them. Only text without quoted strings is kept:
# masked, those would look alike. Bounded: commands of up to `_SEGMENT_KEPT_MAX`
# characters (some 46 bytes each at most), `_SEGMENTS_SEEN_MAX` of them at the top level
# and `_NESTED_SEEN_MAX` at each level below (scripts in scripts are rarer), cleared when
# full: some 40 MB at most.
_SEGMENTS_SEEN: list[dict[str, tuple[tuple[SimpleCommand, ...], tuple[Redirect, ...]]]] = [
    {} for _ in range(MAX_NESTING + 1)
]
_SEGMENTS_SEEN_MAX = 4096
_NESTED_SEEN_MAX = 256
_SEGMENT_KEPT_MAX = 128
# The operators that end a simple command ("" ends the source).
_ENDS = frozenset({"&&", "||", "|&", ";", "&", "|", "\n", ""})


def _read_segments(
    p: Parser, pieces: list[str], split: Callable[[str], list[str]], quoted: list[str]
) -> bool:
    """Read the simple commands in `pieces` (text, operator, ..., text, "") into `p.out`.

    A command met before adds what it added then; a new one is read and resolved, and
    kept. On a decline, everything this call added is taken back, so the parser is as it
    was for the full reader.
    """
    seen = _SEGMENTS_SEEN[p.nesting]
    out = p.out
    redirects = p.redirects
    out_start, redirects_start = len(out), len(redirects)
    start = 0
    for k in range(1, len(pieces), 2):
        if pieces[k] not in _ENDS:
            continue  # a redirection: the command goes on
        key = (pieces[start] if k == start + 1 else "".join(pieces[start:k])).strip(" \t")
        kept = None if "\\" in key else seen.get(key)  # quoted text is never kept
        if kept is not None:
            out += kept[0]
            if kept[1]:
                redirects += kept[1]
            if len(out) > MAX_COMMANDS:
                raise _Unparseable("too many commands")
        else:
            if k == start + 1:  # the usual: no redirection in the command
                commands = _read_pieces(((pieces[start], pieces[k]),), split, quoted)
            else:
                # Equal lengths by construction; a `strict=` keyword costs more than the zip.
                pairs = zip(pieces[start:k:2], pieces[start + 1 : k + 1 : 2])  # noqa: B905
                commands = _read_pieces(pairs, split, quoted)
            if commands is None:
                del out[out_start:], redirects[redirects_start:]
                return False
            first_command, first_redirect = len(out), len(redirects)
            _resolve_all(p, commands)
            if "\\" not in key and len(key) <= _SEGMENT_KEPT_MAX:
                if len(seen) >= (_NESTED_SEEN_MAX if p.nesting else _SEGMENTS_SEEN_MAX):
                    seen.clear()
                seen[key] = (tuple(out[first_command:]), tuple(redirects[first_redirect:]))
        start = k + 1
    return True


def _resolve_all(p: Parser, commands: _Commands) -> None:
    """Append what `commands` (from `_read_pieces`) run to `p.out`."""
    resolve = _resolve.resolve
    resolve_runner = _resolve.resolve_runner
    names = _resolve.NAMES
    reentrant = _resolve.REENTRANT
    out = p.out
    braceless = p.braceless
    for words, redirects, assignments in commands:
        if len(out) > MAX_COMMANDS:
            raise _Unparseable("too many commands")
        if redirects:
            p.redirects.extend(redirects)
        if not words:
            continue
        first = words[0]
        program = names.get(first.text) if first.literal and not first.glob else None
        if program is not None and program not in reentrant:
            # `resolve`'s common case, without the call: a known program that runs no other.
            out.append(new_command(program, tuple(words), redirects, (), assignments, False, False))
            continue
        # The runners skip their brace-list check for these words (`_word` declines one); a
        # script they read is read by a parser of its own, or here again.
        p.braceless = True
        if program is None:
            resolve(p, words, redirects, assignments, (), [])
        else:
            # `resolve` for a known runner, without the call (the fast path reads no
            # here-doc or here-string for a shell it runs to inherit).
            resolve_runner(p, program, words, redirects, assignments, (), [], False)
        p.braceless = braceless


def _command_start(raw: str, first: bool) -> int:
    """At a command's first word (`first`: no redirection or assignment before it), what `raw` is.

    `_DECLINED` for a reserved word or an assignment with a subscript, `_ASSIGNED` for
    an assignment, `_WORD` for the program.
    """
    if first:
        # The full reader first peeks for a reserved word; it ends at any whitespace (`if`
        # then a carriage return is `if`), and all whitespace but a space is unprintable.
        if raw in _RESERVED:
            return _DECLINED
        if not raw.isprintable():
            reserved = RESERVED_PEEK.match(raw)
            if reserved is not None and reserved.group() in _RESERVED:
                return _DECLINED
    if raw[0] in _NAME_START and ("=" in raw or "[" in raw):
        if "[" in raw:
            # `a[i]=x`: the full reader matches an assignment's subscript in the source,
            # where it may reach past this word (`a[x y]=1`).
            return _DECLINED
        if ASSIGNMENT.match(raw):
            return _ASSIGNED
    return _WORD


def _unmask(raws: list[str], quoted: list[str]) -> None:
    """Give the words of a masked text their quoted strings back (`quoted` is reversed; popped).

    The words hold no newline (an operator), so joined by newlines the words before a mask
    are counted in C; a restored string holds no backslash, so the first one left in its
    word is the next mask.
    """
    joined = "\n".join(raws)
    at = joined.find("\\")
    while at >= 0:
        k = joined.count("\n", 0, at)
        raws[k] = raws[k].replace("\\", quoted.pop(), 1)
        at = joined.find("\\", at + 1)


_NO_WORDS: list[Word] = []  # never extended (see `_read_pieces`)
# The first words of commands that were neither a reserved word nor an assignment, nor had
# a character that needs a closer look: most commands start with one of a few programs.
# Bounded: names of up to `_PLAIN_START_KEPT_MAX` characters, cleared when full.
_PLAIN_STARTS: set[str] = set()
_PLAIN_STARTS_MAX = 1024
_PLAIN_START_KEPT_MAX = 64


def _read_pieces(
    pairs: Iterable[tuple[str, str]], split: Callable[[str], list[str]], quoted: list[str]
) -> _Commands | None:
    """Group (text, operator) pairs into simple commands.

    `split` cuts a text into words as spelled, but for the quoted strings, masked as a
    backslash each: `quoted` holds them, last first.
    """
    # A command's redirections and assignments are tuples, most often the empty one: no
    # list to make per command. Its words start as the shared `_NO_WORDS`, replaced (never
    # extended: `words += …` runs only on words read) by the first words read.
    commands: _Commands = []
    words = _NO_WORDS
    redirects: tuple[Redirect, ...] = ()
    assignments: tuple[str, ...] = ()
    pending = ""  # a redirection operator waiting for its target
    pending_fd = ""
    word_of = _WORDS_SEEN.__getitem__
    for text, op in pairs:
        raws = split(text)
        whole = -1
        if quoted and "\\" in text:
            if len(quoted) == 1 and "\\" in raws:
                # The usual: the last quoted string, a whole word (`count` would parse its
                # arguments the slow way). Its word is made below, without the word
                # table; the mask stands for it meanwhile, a plain word like the string.
                whole = raws.index("\\")
            else:
                _unmask(raws, quoted)
        fd = ""
        if raws and op and op[0] in "<>" and text[-1] not in " \t":
            end = raws[-1]
            if (end[0] in _ASCII_DIGITS and end.isdecimal()) or (end[0] == "{" and _FD.fullmatch(end)):
                fd = raws.pop()  # a descriptor (`2>`), not a word
        if raws:
            known: list[Any] = list(map(word_of, raws))
            if whole >= 0:
                string = quoted.pop()[1:-1]  # one quoted string: its text, literal, no glob
                known[whole] = new_word(string, True, string, string, False, string[:1] == "~")
            # `all`, not `None in`, which would call `Word.__eq__`: a `Word` is always true.
            if not all(known):
                return None  # a word the fast path does not read
            start = 0
            if pending:
                redirects += (_new_redirect(pending, known[0], pending_fd),)
                pending = ""
                start = 1
            if words:
                words += known[start:] if start else known
            elif start < len(raws):
                raw = raws[start]
                if raw in _PLAIN_STARTS:
                    pass  # a program name seen before: no reserved word, assignment or odd blank
                elif raw in _RESERVED or "=" in raw or "[" in raw or not raw.isprintable():
                    while start < len(raws):  # a reserved word or an assignment, maybe
                        kind = _command_start(raws[start], not redirects and not assignments)
                        if kind is _WORD:
                            break
                        if kind is _DECLINED:
                            return None
                        check_assignment(known[start].text)
                        assignments += (known[start].text,)
                        start += 1
                elif len(raw) <= _PLAIN_START_KEPT_MAX:
                    if len(_PLAIN_STARTS) >= _PLAIN_STARTS_MAX:
                        _PLAIN_STARTS.clear()
                    _PLAIN_STARTS.add(raw)
                words = known[start:] if start else known
        elif pending:
            return None  # a redirection without its target
        if not op:
            break
        kind = _KINDS[op]
        if kind is _REDIRECTION:
            pending = op
            pending_fd = fd
        elif kind is _SEPARATOR:
            if words or redirects or assignments:
                commands.append((words, redirects, assignments))
                words, redirects, assignments = _NO_WORDS, (), ()
        else:
            return None
    if pending:
        return None
    if words or redirects or assignments:
        commands.append((words, redirects, assignments))
    return commands
