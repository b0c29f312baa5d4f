"""What the programs that run other commands run, and the builtins that set what the shell runs.

Each handler in `HANDLERS` records its program's simple command and follows what it runs:
a shell string (`bash -c`, `eval`, `watch`, `sg`, `script -c`, `trap`, `alias`) is read as a
script one level deeper (`Parser.reparse`); words run as a command (`xargs`, `find
-exec`, `watch -x`) are resolved as one (`Parser.resolve_words`); a shell that reads its
stdin reads its here-strings and here-docs as its script. Builtins that set variables or
bind code (`declare -n`, `read`, `printf -v`, `mapfile -C`, `hash -p`) have the names they
set checked like assignments (`_env.check_assignment`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ._env import check_assignment
from ._options import scan_permuted, strip_options
from ._programs import CODE_OPTIONS, DECLARES, NAME_SETTERS, OTHER_SHELLS, POSIX_SHELLS, runs_others
from ._types import Reader, Redirect, SimpleCommand, Unparseable, Word
from ._wrappers import JOINING, SCRIPT, WATCH, XARGS

Heredocs = list[tuple[list[str], bool]]
"""The here-doc bodies of a command (each filled in once read), with whether its delimiter was quoted."""


class Call:
    """A simple command being resolved: the program, its words from the program on, and what came before.

    The resolver strips wrappers by replacing `program` and `words` and appending to
    `wrappers`; `assignments` gathers the `NAME=value` words (`env A=1 cmd` adds `A=1`).
    """

    __slots__ = ("assignments", "heredocs", "program", "redirects", "stdin_args", "words", "wrappers")

    def __init__(
        self,
        program: str,
        words: list[Word],
        redirects: tuple[Redirect, ...],
        assignments: list[str],
        wrappers: list[str],
        heredocs: Heredocs,
        stdin_args: bool,
    ) -> None:
        self.program = program
        self.words = words
        self.redirects = redirects
        self.assignments = assignments
        self.wrappers = wrappers
        self.heredocs = heredocs
        self.stdin_args = stdin_args

    def record(
        self, p: Reader, *, inline: bool = False, stdin_args: bool = False, wrappers: list[str] | None = None
    ) -> None:
        """Append this command to `p.out`, with `wrappers` in place of its own when given."""
        command = SimpleCommand(
            self.program,
            tuple(self.words),
            self.redirects,
            tuple(self.wrappers if wrappers is None else wrappers),
            tuple(self.assignments),
            inline,
            stdin_args,
        )
        p.out.append(command)


# Script files that are a descriptor of the shell (`/dev/stdin`, `/dev/fd/3`,
# `/proc/self/fd/0`, however spelled: `//dev/./stdin`, `../../dev/stdin`): its here-strings
# and here-docs are the script.
_STDIN_FILE = re.compile(r"(?:^|/)(?:dev/stdin|fd/\d+)\Z")
_EMPTY_COMPONENTS = re.compile(r"/(?:\.?/)+")
# An unquoted brace list (`{-c,x}`, `{1..3}`): Bash turns it into several words.
BRACE_LIST = re.compile(r"\{[^}]*(?:,|\.\.)[^{]*\}")
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_ACTIONS = _FIND_EXEC | _FIND_WRITES | {"-delete"}
# find's options before its start paths, and the first characters that end the paths.
_FIND_GLOBAL = frozenset({"-H", "-L", "-P", "-D"})
_NOT_A_START = frozenset("-(!),")


def is_stdin_file(text: str) -> bool:
    """Whether a script file operand is the shell's own stdin (`/dev/stdin`, `/proc/self/fd/0`)."""
    return _STDIN_FILE.search(_EMPTY_COMPONENTS.sub("/", text)) is not None


def no_brace_list(words: list[Word], program: str) -> None:
    """Refuse an unquoted brace list: Bash makes it several words, maybe options (`{-c,x}`)."""
    for word in words:
        if word.glob and "{" in word.text and BRACE_LIST.search(word.text):
            raise Unparseable(f"{program} has a brace list among its words: {word.text!r}")


def stdin_script(p: Reader, program: str, redirects: tuple[Redirect, ...], heredocs: Heredocs) -> None:
    """A shell reading its stdin: its here-strings and here-docs are read as its script.

    Those on any descriptor: `0<&3` makes descriptor 3 stdin.
    """
    for redirect in redirects:
        if redirect.op == "<<<":
            reparse_words(p, [redirect.target], program)
    p.stdin_scripts.extend(heredocs)


def reparse_words(p: Reader, words: list[Word], program: str) -> None:
    """Read the words, joined by spaces, as a script (`eval`, `bash -c`, `su -c`, ...)."""
    if not all(w.literal for w in words):
        # An expanded value would be parsed as shell syntax: its commands are unknown.
        raise Unparseable(f"{program} runs a script that comes from an expansion")
    p.reparse(" ".join(w.text for w in words))


def _stdin(p: Reader, call: Call) -> None:
    stdin_script(p, call.program, call.redirects, call.heredocs)


# --- the handlers, by program ----------------------------------------------------------------------


def _watch(p: Reader, call: Call) -> None:
    """`watch CMD…`: the words are one shell string; with `-x` they are the command itself."""
    words = call.words
    start, _, flags = strip_options(WATCH, words)
    no_brace_list(words, call.program)
    exec_mode = "x" in flags
    call.record(p, inline=not exec_mode)
    if start >= len(words):
        return
    if exec_mode:
        p.resolve_words(words[start:])
    else:
        reparse_words(p, words[start:], call.program)


def _shell(p: Reader, call: Call) -> None:
    """A shell: `-c` runs its string; with no script file (or `-s`) it reads its stdin."""
    program, words = call.program, call.words
    no_brace_list(words, program)
    i, has_c, has_s = _shell_options(words)
    operand = words[i] if i < len(words) else None
    if program in OTHER_SHELLS:
        if has_c:
            raise Unparseable(f"{program} -c runs a script in a syntax other than POSIX shell")
        call.record(p)
        return
    if has_c:
        if operand is None:
            # Bash refuses a `-c` without its script, unless one arrives at run time
            # (`xargs bash -c`): unknown either way.
            raise Unparseable(f"{program} -c without its script")
        call.record(p, inline=True)
        reparse_words(p, [operand], program)
        return
    call.record(p)
    if operand is not None and not has_s and not is_stdin_file(operand.text):
        return  # a script file: matched as the shell itself
    # No script operand (or `-s`, whose operands are arguments): the shell reads stdin.
    _stdin(p, call)


def _shell_options(words: list[Word]) -> tuple[int, bool, bool]:
    """A shell's options: (the index of its first operand, whether `-c` is set, whether `-s` is)."""
    i, n = 1, len(words)
    has_c = has_s = False
    while i < n:
        text = words[i].text
        if text in ("--", "-"):
            return i + 1, has_c, has_s
        if text.startswith("--"):
            i += 2 if text in ("--rcfile", "--init-file") else 1
        elif len(text) > 1 and text[0] in "-+":
            letters = text[1:]
            has_c = has_c or (text[0] == "-" and "c" in letters.lower())
            has_s = has_s or (text[0] == "-" and "s" in letters)
            # Each `o`/`O` of a cluster takes one word: `-ooc errexit pipefail 'script'`.
            i += 1 + letters.count("o") + letters.count("O")
        else:
            break
    return i, has_c, has_s


def _eval(p: Reader, call: Call) -> None:
    """`eval WORDS…`: the words, joined by spaces, are a script."""
    no_brace_list(call.words, "eval")
    call.record(p, inline=True)
    args = call.words[1:]
    if args and args[0].text == "--":
        args = args[1:]
    if args:
        reparse_words(p, args, "eval")


def _sg(p: Reader, call: Call) -> None:
    """`sg [-] GROUP [-c] COMMAND`: the command is a `sh -c` string; without one, a shell reads stdin."""
    words = call.words
    no_brace_list(words, "sg")
    call.record(p)
    i = 2 if len(words) > 1 and words[1].text == "-" else 1
    i += 1  # the group
    if i < len(words) and words[i].text == "-c":
        i += 1
    if i >= len(words):
        _stdin(p, call)
    else:
        reparse_words(p, words[i:], "sg")


def _script(p: Reader, call: Call) -> None:
    """`script [options] [file]`: its `-c` string, or an interactive shell reading stdin."""
    no_brace_list(call.words, "script")
    call.record(p)
    found = scan_permuted(SCRIPT, call.words)[0]
    if found is None:
        _stdin(p, call)
    else:
        reparse_words(p, [found], "script")


def _xargs(p: Reader, call: Call) -> None:
    """`xargs CMD…`: CMD runs with more arguments read from stdin."""
    call.record(p, stdin_args=call.stdin_args)
    words = call.words
    start, _, _ = strip_options(XARGS, words)
    no_brace_list(words[1:start], "xargs")
    if start < len(words):
        p.resolve_words(words[start:], stdin_args=True)


def _trap(p: Reader, call: Call) -> None:
    """`trap ACTION SIGNAL…`: the action is a script."""
    call.record(p, stdin_args=call.stdin_args)
    no_brace_list(call.words, "trap")
    args = call.words[1:]
    if args and args[0].text == "--":
        if len(args) > 2:  # after `--` the action is the next word, whatever it starts with
            reparse_words(p, args[1:2], "trap")
    elif len(args) > 1 and not args[0].text.startswith("-"):
        reparse_words(p, args[:1], "trap")


def _alias(p: Reader, call: Call) -> None:
    """`alias NAME=VALUE…`: each value is a script, run wherever the name is used."""
    call.record(p, stdin_args=call.stdin_args)
    no_brace_list(call.words, "alias")
    for arg in call.words[1:]:
        name, eq, value = arg.text.partition("=")
        if not (eq and name and value):
            continue
        if value.endswith(("\\", " ", "\t")):
            # A trailing backslash escapes what follows the alias where it is used, and a
            # trailing blank makes the next word an alias too: neither is seen here.
            raise Unparseable(f"alias {name} ends in a backslash or a blank")
        reparse_words(p, [Word(value, arg.literal)], "alias")


def _declare(p: Reader, call: Call) -> None:
    """`declare NAME=value…`: each is an assignment; with `-n` its value is a name too."""
    call.record(p, stdin_args=call.stdin_args)
    args = call.words[1:]
    # `declare -n r=PS4` makes `r` another name for PS4: its value is checked as a name.
    nameref = any(a.text[:1] == "-" and "n" in a.text for a in args)
    for arg in args:
        if "=" in arg.text and not arg.text.startswith(("-", "+")):
            check_assignment(arg.text)
            if nameref:
                check_assignment(arg.text.split("=", 1)[1] + "=")


def _name_setter(p: Reader, call: Call) -> None:
    """`read NAME`, `printf -v NAME`, `mapfile -C CODE`...: the names set are checked, code refused."""
    call.record(p, stdin_args=call.stdin_args)
    program, args = call.program, call.words[1:]
    if program in CODE_OPTIONS:
        _code_options(program, args)
    for name in _variables_set(program, args):  # `read PS4`, `printf -v PS4 …`
        check_assignment(name + "=")


def _ip(p: Reader, call: Call) -> None:
    """`ip netns exec NS CMD` runs a command: not analysed."""
    call.record(p, stdin_args=call.stdin_args)
    if any(w.text == "exec" for w in call.words[1:]):
        raise Unparseable("ip netns exec runs a command in ways not analysed")


def _source(p: Reader, call: Call) -> None:
    """`source FILE`: a script file, matched as `source` itself; `. /dev/stdin` reads stdin."""
    call.record(p, stdin_args=call.stdin_args)
    args = call.words[1:]
    if args and is_stdin_file(args[0].text):
        _stdin(p, call)  # `. /dev/stdin <<< 'cmd'`


def _find(p: Reader, call: Call) -> None:
    """`find`: recorded as it is; `-delete` is an `rm`, each `-exec` command is resolved, `-fprint` writes."""
    call.record(p, stdin_args=call.stdin_args)
    no_brace_list(call.words, "find")
    args = call.words[1:]
    i, starts = _find_starts(args)
    pending: list[list[Word]] = []
    while i < len(args):
        text = args[i].text
        if text not in _FIND_ACTIONS:
            i += 1  # a test or an option
        elif text in _FIND_EXEC:
            i, inner = _find_exec(args, i, starts)
            pending.append(inner)
        elif text == "-delete":
            argv = (Word.plain("rm"), Word.plain("-r"), Word.plain("-f"), Word.plain("--"), *starts)
            p.out.append(SimpleCommand("rm", argv, wrappers=("find",)))
            i += 1
        elif i + 1 < len(args):  # `-fprint FILE` and the like
            p.redirects.append(Redirect(">", args[i + 1]))
            i += 2
        else:
            i += 1
    for inner in pending:
        p.resolve_words(inner, wrappers=("find",))


def _find_starts(args: list[Word]) -> tuple[int, list[Word]]:
    """Find's start paths (`.` when none): (the index after them, the paths)."""
    i, n = 0, len(args)
    while i < n and args[i].text[:1] == "-" and (args[i].text in _FIND_GLOBAL or args[i].text[:2] == "-O"):
        i += 2 if args[i].text == "-D" else 1  # `-D DEBUGOPTS`, `-O3`
    starts: list[Word] = []
    while i < n and args[i].text[:1] not in _NOT_A_START:
        starts.append(args[i])
        i += 1
    return i, starts or [Word.plain(".")]


def _find_exec(args: list[Word], i: int, starts: list[Word]) -> tuple[int, list[Word]]:
    """The `-exec CMD… ;` (or `+`) at `i`: (the index after it, CMD with each `{}` as the starts)."""
    action = args[i].text
    j = i + 1
    while j < len(args):
        end = args[j].text
        if end == ";" or (end == "+" and args[j - 1].text == "{}"):
            break
        j += 1
    else:
        raise Unparseable(f"find {action} without its ';' or '+'")
    if j == i + 1:
        raise Unparseable(f"find {action} without a command")
    first = args[i + 1].text
    if "{}" in first or (
        runs_others(first.rsplit("/", 1)[-1]) and any("{}" in w.text for w in args[i + 2 : j])
    ):
        # `-exec {} …` runs each file found, and so may `-exec env {} …` or
        # `-exec sh -c {} \;`: which programs those are is unknown.
        raise Unparseable(f"find {action} runs the files it finds as programs")
    inner: list[Word] = []
    for word in args[i + 1 : j]:
        inner += _substitute(word, starts) if "{}" in word.text else [word]
    return j + 1, inner


def _variables_set(program: str, args: list[Word]) -> list[str]:
    """The variables `read`, `printf -v`, `mapfile`/`readarray` would set (a superset)."""
    texts = [a.text for a in args]
    if program == "printf":
        names = [texts[i + 1] for i, t in enumerate(texts[:-1]) if t == "-v"]
        return names + [t[2:] for t in texts if t.startswith("-v") and len(t) > 2]
    # read and mapfile: every word that is not an option (option values included: a superset)
    return [t for t in texts if not t.startswith("-")]


def _code_options(program: str, args: list[Word]) -> None:
    """Refuse `mapfile -C CMD`, `compgen -F FUNC`, `hash -p FILE NAME` and the like."""
    takes_arg, refused = CODE_OPTIONS[program]
    i, n = 0, len(args)
    while i < n:
        text = args[i].text
        i += 1
        if text == "--" or len(text) < 2 or text[0] != "-":
            if program in ("compgen", "complete"):
                continue  # options may follow the words they complete
            return
        for k, letter in enumerate(text[1:]):
            if letter in refused:
                raise Unparseable(f"{program} -{letter} runs or binds code")
            if letter in takes_arg:
                if k + 2 == len(text):
                    i += 1
                break
    return


def _substitute(word: Word, starts: list[Word]) -> list[Word]:
    """`word` with `{}` as each found path: a path under a start, judged as the start itself.

    The literal edges follow the substitution: `{}` after `find "$DIR"` is `$DIR`, with
    nothing literal after it, as in `rm -rf "$DIR"`.
    """
    if word.text == "{}" and word.literal:
        return starts  # the usual `-exec cmd {} +`: each start as it is
    return [_substituted(word, start) for start in starts]


def _substituted(word: Word, start: Word) -> Word:
    text = word.text
    new = text.replace("{}", start.text)
    if word.literal and start.literal:
        return Word(new, True, new, new, start.glob)
    # A `{}` in the word's literal head (tail) is in the new word's literal head (tail).
    prefix, tail = word.prefix, word.tail
    first, last = text.find("{}"), text.rfind("{}")
    if first + 2 <= len(prefix):
        prefix = prefix.replace("{}", start.text) if start.literal else prefix[:first] + start.prefix
    if last >= len(text) - len(tail):
        tail = tail.replace("{}", start.text) if start.literal else start.tail + text[last + 2 :]
    return Word(new, False, prefix, tail, start.glob)


HANDLERS: Mapping[str, Callable[[Reader, Call], None]] = MappingProxyType({
    **dict.fromkeys(JOINING, _watch),
    **dict.fromkeys(POSIX_SHELLS | OTHER_SHELLS, _shell),
    "eval": _eval,
    "sg": _sg,
    "script": _script,
    "xargs": _xargs,
    "find": _find,
    "trap": _trap,
    "alias": _alias,
    **dict.fromkeys(DECLARES, _declare),
    **dict.fromkeys(CODE_OPTIONS.keys() | NAME_SETTERS, _name_setter),
    "ip": _ip,
    "source": _source,
    ".": _source,
})  # fmt: skip
"""What follows a program that runs other commands once its wrappers are stripped."""
