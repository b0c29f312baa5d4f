"""From the words of a simple command to the program(s) it really runs.

Strips wrappers (`sudo`, `timeout`, `env`, ...) with their options, and follows the
commands that run other commands: `bash -c`, `eval`, `xargs`, `find -exec`, `su -c`,
`watch`, `trap`, `alias`. Used by `shell._Parser`; see `shell.py` for the types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ._carrier import raw_constructor
from .shell import Redirect, SimpleCommand, Word, _Unparseable

if TYPE_CHECKING:
    from ._shell_parse import Parser as _Parser


_literal = Word.plain
_new_command = raw_constructor(SimpleCommand)  # every field positional: the hot path
_new_word = raw_constructor(Word)


class _Wrapper(NamedTuple):
    short_arg: str = ""  # short options that take an argument
    long_arg: frozenset[str] = frozenset()  # long options that take a separate argument
    positional: int = 0  # operands before the command (`timeout DURATION cmd`)
    script: str = ""  # a short option whose argument is a shell string (`su -c`)
    eval_flags: str = ""  # flags that make the rest one shell string (`sudo -s cmd`)


_WRAPPERS: dict[str, _Wrapper] = {
    "timeout": _Wrapper("sk", frozenset({"--signal", "--kill-after"}), 1),
    "nice": _Wrapper("n", frozenset({"--adjustment"})),
    "nohup": _Wrapper(),
    "stdbuf": _Wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "env": _Wrapper("uCS", frozenset({"--unset", "--chdir", "--split-string"})),
    "command": _Wrapper(),
    "builtin": _Wrapper(),
    "exec": _Wrapper("a"),
    "time": _Wrapper("fo", frozenset({"--format", "--output"})),
    "sudo": _Wrapper(
        "ugChprtUDRT",
        frozenset(
            {
                "--user",
                "--group",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--close-from",
                "--chdir",
                "--chroot",
                "--command-timeout",
            }
        ),
        eval_flags="si",
    ),
    "doas": _Wrapper("uC"),
    "setsid": _Wrapper(),
    "ionice": _Wrapper("cnpu", frozenset({"--class", "--classdata", "--pid", "--uid"})),
    "chrt": _Wrapper("TPD", frozenset({"--sched-runtime", "--sched-period", "--sched-deadline"}), 1),
    "taskset": _Wrapper("", frozenset(), 1),
    "chroot": _Wrapper("", frozenset({"--userspec", "--groups"}), 1),
    "nsenter": _Wrapper("tSG", frozenset({"--target", "--setuid", "--setgid"})),
    "flock": _Wrapper("wE", frozenset({"--timeout", "--conflict-exit-code"}), 1, script="c"),
    "runuser": _Wrapper("ugGw", frozenset({"--user", "--group", "--supp-group"}), script="c"),
    "su": _Wrapper("sgG", frozenset({"--shell", "--group", "--supp-group"}), script="c"),
    "unbuffer": _Wrapper(),
    "caffeinate": _Wrapper("wt"),
    "busybox": _Wrapper(),
    "toybox": _Wrapper(),
}
# Wrappers whose command is one shell string made of the remaining words.
_JOINING = frozenset({"watch"})
# Long options that mean a short flag the resolver acts on.
_LONG_FLAGS = {"--shell": "s", "--login": "i", "--edit": "e", "--split-string": "S"}
_WATCH = _Wrapper("nq", frozenset({"--interval", "--equexit"}))
_XARGS = _Wrapper(
    "adEILnPs",
    frozenset(
        {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}
    ),
)

POSIX_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh"})
_OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "pwsh", "powershell", "nu", "elvish", "xonsh"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_ACTIONS = _FIND_EXEC | _FIND_WRITES | {"-delete"}
# Every program `resolve` does more for than record it.
REENTRANT = frozenset(
    {*_WRAPPERS, *_JOINING, *POSIX_SHELLS, *_OTHER_SHELLS, "eval", "xargs", "find", "trap", "alias"}
)


def program_name(word: Word) -> str:
    """The program a word names, or `_Unparseable` when that cannot be known statically."""
    if word.literal and not word.glob:
        name = NAMES.get(word.text)
        if name is not None:
            return name
    name = _program_name(word)
    if len(NAMES) >= NAMES_MAX:
        NAMES.clear()
    NAMES[word.text] = name
    return name


# Program names already checked, by the word's text (for literal, glob-free words only:
# the checks below depend on nothing else); `_shell_lex.read_fast` reads it too.
# Bounded: cleared when full.
NAMES: dict[str, str] = {}
NAMES_MAX = 2048


def _program_name(word: Word) -> str:
    if not word.literal:
        raise _Unparseable(f"the program name {word.text!r} comes from an expansion")
    if word.glob:
        raise _Unparseable(f"the program name {word.text!r} has a glob or brace pattern")
    text = word.text
    if not text or not text.isascii() or not text.isprintable() or " " in text:
        raise _Unparseable(f"the program name {text!r} is empty or has non-ASCII or invisible characters")
    name = text.rsplit("/", 1)[-1]
    if not name:
        raise _Unparseable(f"the program name {text!r} is a directory")
    return name


def _strip_options(spec: _Wrapper, words: list[Word]) -> tuple[int, Word | None, set[str]]:
    """Skip a wrapper's options and operands: (index of the command, script argument, flags)."""
    i, n = 1, len(words)
    script: Word | None = None
    flags: set[str] = set()
    while i < n:
        text = words[i].text
        if text == "--":
            i += 1
            break
        if text.startswith("--"):
            name, eq, _ = text.partition("=")
            if name in _LONG_FLAGS:
                flags.add(_LONG_FLAGS[name])
            if name == "--command" and spec.script:
                value = text[len(name) + 1 :]
                script = words[i + 1] if not eq and i + 1 < n else Word(value, words[i].literal)
                i += 1 if eq else 2
            elif not eq and name in spec.long_arg:
                i += 2
            else:
                i += 1
            continue
        if len(text) > 1 and text[0] == "-":
            i += 1
            letters = text[1:]
            for k, letter in enumerate(letters):
                flags.add(letter)
                rest = letters[k + 1 :]
                if letter in spec.script:
                    if rest:
                        script = _literal(rest)
                    elif i < n:
                        script = words[i]
                        i += 1
                    break
                if letter in spec.short_arg:
                    if not rest:
                        i += 1  # the option's argument is the next word
                    break
            continue
        break
    return min(i + spec.positional, n), script, flags


def _late_script(program: str, words: list[Word], start: int) -> Word | None:
    """`flock FILE -c CMD` and `su USER -c CMD`: a `-c` after the operand."""
    # flock looks only right after its file; su and runuser permute their options.
    candidates = range(start, start + 1) if program == "flock" else range(1, len(words))
    for i in candidates:
        if i + 1 < len(words) and words[i].text in ("-c", "--command"):
            return words[i + 1]
    return None


def resolve(
    p: _Parser,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: tuple[str, ...],
    wrappers: tuple[str, ...],
    heredocs: list[tuple[list[str], bool]],
    *,
    stdin_args: bool = False,
) -> None:
    """Append the simple command(s) that `words` run to `p.out`, following re-entry."""
    first = words[0]
    # `program_name`'s cache, without the call for a name already checked.
    program = NAMES.get(first.text) if first.literal and not first.glob else None
    if program is None:
        program = program_name(first)
    if program not in REENTRANT:
        # The common case: a program that runs no other command.
        p.out.append(_new_command(program, tuple(words), redirects, wrappers, assignments, False, stdin_args))
        return
    if program in POSIX_SHELLS and _shell_script(p, program, words, redirects, assignments, wrappers):
        return
    if program == "find":  # not a wrapper: recorded as it is, then its `-exec` commands
        p.out.append(_new_command(program, tuple(words), redirects, wrappers, assignments, False, stdin_args))
        _find(p, words[1:])
        return
    assigned = list(assignments)
    wrapped = list(wrappers)
    while True:
        spec = _WRAPPERS.get(program)
        if spec is None:
            break
        start, script, flags = _strip_options(spec, words)
        if program == "env":
            if "S" in flags:
                raise _Unparseable("env -S splits a string into a command")
            while start < len(words) and "=" in words[start].text and not words[start].text.startswith("="):
                assigned.append(words[start].text)
                start += 1
        wrapped.append(program)
        if script is None and spec.script:
            script = _late_script(program, words, start)
        if script is not None:
            _emit(p, program, words, redirects, assigned, wrapped[:-1], stdin_args=stdin_args)
            _reparse_literal(p, [script], program)
            return
        rest = words[start:]
        if not rest:
            _emit(p, program, words, redirects, assigned, wrapped[:-1], stdin_args=stdin_args)
            return
        if program == "sudo" and "e" in flags:
            _emit(p, "sudoedit", [_literal("sudoedit"), *rest], redirects, assigned, wrapped)
            return
        if spec.eval_flags and not flags.isdisjoint(spec.eval_flags):
            # Not `inline`: the privilege change must itself be allowed.
            _emit(p, program, words, redirects, assigned, wrapped[:-1])
            _reparse_literal(p, rest, program)
            return
        words = rest
        program = program_name(words[0])
    args = words[1:]
    if program in _JOINING:
        start, _, flags = _strip_options(_WATCH, words)
        exec_mode = "x" in flags
        _emit(p, program, words, redirects, assigned, wrapped, inline=not exec_mode)
        if start < len(words):
            if exec_mode:
                resolve(p, words[start:], (), (), (), [])
            else:
                _reparse_literal(p, words[start:], program)
        return
    if program in POSIX_SHELLS or program in _OTHER_SHELLS:
        _shell(p, program, words, redirects, assigned, wrapped, heredocs)
        return
    if program == "eval":
        _emit(p, program, words, redirects, assigned, wrapped, inline=True)
        if args and args[0].text == "--":
            args = args[1:]
        if args:
            _reparse_literal(p, args, program)
        return
    _emit(p, program, words, redirects, assigned, wrapped, stdin_args=stdin_args)
    if program == "xargs":
        start, _, _ = _strip_options(_XARGS, words)
        if start < len(words):
            resolve(p, words[start:], (), (), (), [], stdin_args=True)
    elif program == "find":
        _find(p, args)
    elif program == "trap":
        if args and args[0].text == "--":
            args = args[1:]
        if len(args) > 1 and not args[0].text.startswith("-"):
            _reparse_literal(p, args[:1], program)
    elif program == "alias":
        for arg in args:
            name, eq, value = arg.text.partition("=")
            if eq and name and value:
                _reparse_literal(p, [Word(value, arg.literal)], program)


def _emit(
    p: _Parser,
    program: str,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: list[str],
    wrappers: list[str],
    *,
    inline: bool = False,
    stdin_args: bool = False,
) -> None:
    p.out.append(
        _new_command(
            program, tuple(words), redirects, tuple(wrappers), tuple(assignments), inline, stdin_args
        )
    )


def _reparse_literal(p: _Parser, words: list[Word], program: str) -> None:
    """Parse the words, joined by spaces, as a script (`eval`, `bash -c`, `su -c`, ...)."""
    if len(words) == 1:  # the common case: `bash -c '…'`
        word = words[0]
        literal = word.literal
        source = word.text
    else:
        literal = all(w.literal for w in words)
        source = " ".join([w.text for w in words])
    if not literal:
        # An expanded value would be parsed as shell syntax: its commands are unknown.
        raise _Unparseable(f"{program} runs a script that comes from an expansion")
    p._reparse(source)


def _shell_script(
    p: _Parser,
    program: str,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: tuple[str, ...],
    wrappers: tuple[str, ...],
) -> bool:
    """`sh -c 'script' …`, the common form, as `_shell` reads it; False (nothing done) for any other.

    The script is the word after `-c` unless that word is an option itself.
    """
    if len(words) < 3 or words[1].text != "-c":
        return False
    script = words[2]
    if script.text.startswith(("-", "+")):
        return False
    p.out.append(_new_command(program, tuple(words), redirects, wrappers, assignments, True, False))
    if script.literal:
        p._reparse(script.text)
    else:
        _reparse_literal(p, [script], program)  # refuses an expanded script
    return True


def _shell(
    p: _Parser,
    program: str,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: list[str],
    wrappers: list[str],
    heredocs: list[tuple[list[str], bool]],
) -> None:
    i, n = 1, len(words)
    has_c = False
    while i < n:
        text = words[i].text
        if text in ("--", "-"):
            i += 1
            break
        if text.startswith("--"):
            i += 2 if text in ("--rcfile", "--init-file") else 1
            continue
        if len(text) > 1 and text[0] in "-+":
            letters = text[1:]
            has_c = has_c or (text[0] == "-" and "c" in letters.lower())
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    operand = words[i] if i < n else None
    if program in _OTHER_SHELLS:
        if has_c:
            raise _Unparseable(f"{program} -c runs a script in a syntax other than POSIX shell")
        _emit(p, program, words, redirects, assignments, wrappers)
        return
    if has_c:
        _emit(p, program, words, redirects, assignments, wrappers, inline=operand is not None)
        if operand is not None:
            _reparse_literal(p, [operand], program)
        return
    _emit(p, program, words, redirects, assignments, wrappers)
    if operand is not None:
        return  # a script file: matched as the shell itself
    # No script operand: the shell reads stdin, which a here-string or here-doc may show.
    for redirect in redirects:
        if redirect.op == "<<<" and redirect.fd in ("", "0"):
            _reparse_literal(p, [redirect.target], program)
    p.stdin_scripts.extend(heredocs)


def _find(p: _Parser, args: list[Word]) -> None:
    i, n = 0, len(args)
    while i < n and args[i].text in ("-H", "-L", "-P"):
        i += 1
    starts: list[Word] = []
    while i < n and not args[i].text.startswith(("-", "(", "!", ")", ",")):
        starts.append(args[i])
        i += 1
    if not starts:
        starts = [_literal(".")]
    pending: list[list[Word]] = []
    while i < n:
        text = args[i].text
        if text not in _FIND_ACTIONS:  # a test or an option: one lookup for the usual word
            i += 1
        elif text in _FIND_EXEC:
            j = i + 1
            while j < n:
                end = args[j].text
                if end == ";" or (end == "+" and args[j - 1].text == "{}"):
                    break
                j += 1
            else:
                raise _Unparseable(f"find {text} without its ';' or '+'")
            if j == i + 1:
                raise _Unparseable(f"find {text} without a command")
            if "{}" in args[i + 1].text:
                # `-exec {} …` runs each file found: which programs that are is unknown.
                raise _Unparseable(f"find {text} runs the files it finds as programs")
            inner: list[Word] = []
            for w in args[i + 1 : j]:
                if "{}" in w.text:
                    inner += _substitute(w, starts)
                else:
                    inner.append(w)
            pending.append(inner)
            i = j + 1
        elif text == "-delete":
            argv = (_literal("rm"), _literal("-r"), _literal("-f"), _literal("--"), *starts)
            p.out.append(SimpleCommand("rm", argv, wrappers=("find",)))
            i += 1
        elif i + 1 < n:  # `-fprint FILE` and the like
            p.redirects.append(Redirect(">", args[i + 1]))
            i += 2
        else:
            i += 1
    for inner in pending:
        resolve(p, inner, (), (), ("find",), [])


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
        return _new_word(new, True, new, new, start.glob)
    # A `{}` in the word's literal head (tail) is in the new word's literal head (tail).
    prefix, tail = word.prefix, word.tail
    first, last = text.find("{}"), text.rfind("{}")
    if first + 2 <= len(prefix):
        prefix = prefix.replace("{}", start.text) if start.literal else prefix[:first] + start.prefix
    if last >= len(text) - len(tail):
        tail = tail.replace("{}", start.text) if start.literal else start.tail + text[last + 2 :]
    return _new_word(new, False, prefix, tail, start.glob)
