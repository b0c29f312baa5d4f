"""From the words of a simple command to the program(s) it really runs.

Strips wrappers (`sudo`, `timeout`, `env`, ...) with their options, and follows the
commands that run other commands: `bash -c`, `eval`, `xargs`, `find -exec`, `su -c`,
`watch`, `trap`, `alias`. Used by `shell._Parser`; see `shell.py` for the types.
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import TYPE_CHECKING

from ..._carrier import raw_constructor
from . import Redirect, SimpleCommand, Word, _Unparseable
from ._env import check_assignment
from ._wrappers import JOINING as _JOINING
from ._wrappers import LD_SO as _LD_SO
from ._wrappers import LONG_FLAGS as _LONG_FLAGS
from ._wrappers import OPAQUE_RUNNERS as _OPAQUE_RUNNERS
from ._wrappers import SCRIPT as _SCRIPT
from ._wrappers import SU as _SU
from ._wrappers import WATCH as _WATCH
from ._wrappers import WRAPPERS as _WRAPPERS
from ._wrappers import XARGS as _XARGS
from ._wrappers import Wrapper as _Wrapper

if TYPE_CHECKING:
    from ._parse import Parser as _Parser


_literal = Word.plain
_new_command = raw_constructor(SimpleCommand)  # every field positional: the hot path
_new_word = raw_constructor(Word)


POSIX_SHELLS = frozenset(
    {"sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh"}
)
_OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "pwsh", "powershell", "nu", "elvish", "xonsh"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_ACTIONS = _FIND_EXEC | _FIND_WRITES | {"-delete"}
# Declaration builtins, whose `NAME=value` arguments are assignments.
_DECLARES = frozenset({"export", "declare", "typeset", "local", "readonly"})
# Builtins with an option that runs a string or a function (`mapfile -C`, `compgen -F`) or
# binds a name to any file (`hash -p`): (the options that take an argument, the refused ones).
_CODE_OPTIONS = {
    "mapfile": ("dnOsuCc", "C"),
    "readarray": ("dnOsuCc", "C"),
    "compgen": ("oAGWFCXPSV", "FC"),
    "complete": ("oAGWFCXPSV", "FC"),
    "hash": ("p", "p"),
    "jobs": ("", "x"),  # `jobs -x cmd` runs cmd
}
# Every program `resolve` does more for than record it. A set: a dynamic loader
# (`ld-linux-x86-64.so.2`, any name of that shape) joins it when `_program_name` meets it.
_RUNNERS = frozenset({"eval", "xargs", "find", "trap", "alias", "sg", "script", "source", "."})
# Commands that read their stdin as a script when they run with no other.
_STDIN_READERS = frozenset({*POSIX_SHELLS, "source", ".", "eval"})
# Builtins that set the variables their arguments name (checked like assignments).
_NAME_SETTERS = frozenset({"read", "printf", "mapfile", "readarray"})
_NETWORK_RUNNERS = frozenset({"ip"})  # `ip netns exec NS cmd`
# Script files that are a descriptor of the shell (`/dev/stdin`, `/dev/fd/3`,
# `/proc/self/fd/0`, however spelled: `//dev/./stdin`, `../../dev/stdin`): its here-strings
# and here-docs are the script.
_STDIN_FILE = re.compile(r"(?:^|/)(?:dev/stdin|fd/\d+)\Z")


def _is_stdin_file(text: str) -> bool:
    return ("stdin" in text or "fd/" in text) and _STDIN_FILE.search(
        re.sub(r"/(?:\.?/)+", "/", text)
    ) is not None


REENTRANT = {
    *_OPAQUE_RUNNERS,
    *_WRAPPERS,
    *_JOINING,
    *POSIX_SHELLS,
    *_OTHER_SHELLS,
    *_DECLARES,
    *_CODE_OPTIONS,
    *_RUNNERS,
    *_NAME_SETTERS,
    *_NETWORK_RUNNERS,
}
_LOADER = re.compile(r"ld(?:-linux.*\.so.*|\.so|64\.so\..*|-musl-.*\.so.*)\Z")
_LOADERS_MAX = 64
# An unquoted brace list (`{-c,x}`, `{1..3}`): Bash turns it into several words.
_TEXT = attrgetter("text")
_BRACE_ANYWHERE = re.compile(r"\{[^}\0]*(?:,|\.\.)[^{\0]*\}")  # in words joined by NULs
BRACE_LIST = re.compile(r"\{[^}]*(?:,|\.\.)[^{]*\}")
_BRACE_LIST = BRACE_LIST


def program_name(word: Word) -> str:
    """The program a word names, or `_Unparseable` when that cannot be known statically."""
    if word.literal and not word.glob:
        name = NAMES.get(word.text)
        if name is not None:
            return name
    name = _program_name(word)
    if len(word.text) <= NAME_KEPT_MAX:
        if len(NAMES) >= NAMES_MAX:
            NAMES.clear()
        NAMES[word.text] = name
    return name


# Program names already checked, by the word's text (for literal, glob-free words only:
# the checks below depend on nothing else); `_lex.read_fast` reads it too.
# Bounded: words of up to `NAME_KEPT_MAX` characters, cleared when full.
NAMES: dict[str, str] = {}
NAMES_MAX = 2048
NAME_KEPT_MAX = 128


def _program_name(word: Word) -> str:
    if not word.literal:
        raise _Unparseable(f"the program name {word.text!r} comes from an expansion")
    if word.glob and word.text != "[":  # a lone `[` is the test command, not a pattern
        raise _Unparseable(f"the program name {word.text!r} has a glob or brace pattern")
    text = word.text
    if not text or not text.isascii() or not text.isprintable() or " " in text:
        raise _Unparseable(f"the program name {text!r} is empty or has non-ASCII or invisible characters")
    name = text.rsplit("/", 1)[-1]
    if not name:
        raise _Unparseable(f"the program name {text!r} is a directory")
    if name not in REENTRANT and name.startswith("ld") and _LOADER.match(name):
        # A dynamic loader runs the program named after its options: it joins the wrappers
        # for good, so a few names only, each no longer than a file name (255 bytes).
        if len(_WRAPPERS) >= _WRAPPERS_BASE + _LOADERS_MAX:
            raise _Unparseable(f"too many dynamic loader names: {name!r}")
        if len(name) > 255:
            raise _Unparseable(f"the dynamic loader name {name[:40]!r}… is longer than a file name can be")
        _WRAPPERS[name] = _LD_SO
        REENTRANT.add(name)
    return name


_WRAPPERS_BASE = len(_WRAPPERS)


_ARG, _SCRIPT_ARG, _FLAG = 1, 2, 0


def _long_kind(spec: _Wrapper, name: str) -> int:
    """What a `--name` (no `=`) of `spec` takes, abbreviations included as getopt_long reads them.

    An exact name wins; otherwise a prefix of any argument-taking option takes the next
    word (an ambiguous prefix makes the tool fail, so consuming is harmless).
    """
    if name in spec.long_arg:
        return _ARG
    if name in spec.long_script:
        return _SCRIPT_ARG
    if name in spec.long_flag or len(name) < 3:
        return _FLAG
    if any(option.startswith(name) for option in spec.long_script):
        return _SCRIPT_ARG
    if any(option.startswith(name) for option in spec.long_arg):
        return _ARG
    return _FLAG


def _strip_options(spec: _Wrapper, words: list[Word]) -> tuple[int, Word | None, set[str]]:
    """Skip a wrapper's options and operands: (index of the command, script argument, flags)."""
    i, n = 1, len(words)
    if spec.leading and n > 1 and not words[1].text.startswith("-"):
        i = 1 + spec.leading
    script: Word | None = None
    flags: set[str] = set()
    while i < n:
        text = words[i].text
        if text == "--":
            i += 1
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            kind = _long_kind(spec, name)
            if len(name) > 2:
                for option, letter in _LONG_FLAGS.items():
                    if option.startswith(name):
                        flags.add(letter)
            if kind == _SCRIPT_ARG:
                script = Word(value, words[i].literal) if eq else words[i + 1] if i + 1 < n else None
                i += 1 if eq else 2
            elif not eq and kind == _ARG:
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


def _scan_permuted(spec: _Wrapper, words: list[Word]) -> tuple[Word | None, Word | None, list[Word]]:
    """Options anywhere among the words, as getopt permutes them (`su USER -c CMD`).

    Returns the script (`-c`, `--command`, `--session-command`), the shell (`-s`,
    `--shell`) and the words after a `--`.
    """
    i, n = 1, len(words)
    script: Word | None = None
    shell: Word | None = None
    while i < n:
        word = words[i]
        text = word.text
        i += 1
        if text == "--":
            return script, shell, words[i:]
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            kind = _long_kind(spec, name)
            if kind == _FLAG:
                continue
            argument = Word(value, word.literal) if eq else words[i] if i < n else None
            if not eq:
                i += 1
            if kind == _SCRIPT_ARG:
                script = argument
            elif len(name) > 2 and "--shell".startswith(name):
                shell = argument
            continue
        if len(text) > 1 and text[0] == "-":
            letters = text[1:]
            for k, letter in enumerate(letters):
                rest = letters[k + 1 :]
                if letter in spec.script or letter in spec.short_arg:
                    argument = _new_word(rest, word.literal, rest, rest, False, False) if rest else None
                    if argument is None and i < n:
                        argument = words[i]
                        i += 1
                    if letter in spec.script:
                        script = argument
                    elif letter == "s":
                        shell = argument
                    break
    return script, shell, []


def _late_script(words: list[Word], start: int) -> Word | None:
    """`flock FILE -c CMD`: a `-c` right after the file."""
    if start + 1 < len(words) and words[start].text in ("-c", "--command"):
        return words[start + 1]
    return None


# Files a wrapper itself writes, by its options: recorded as `>` redirections, which the
# guards judge (`time -o .git/x cmd`, `strace -o /etc/x cmd`, `flock /etc/lock cmd`).
_WRAPPER_OUTPUTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "time": ("o", ("--output",)),
    "strace": ("o", ("--output",)),
    "ltrace": ("o", ("--output",)),
    "valgrind": ("", ("--log-file", "--xml-file")),
}


def _wrapper_outputs(p: _Parser, program: str, options: list[Word]) -> None:
    if program == "flock":  # `flock FILE cmd`: FILE is created (a number is a descriptor)
        operands = [w for w in options if not w.text.startswith("-")]
        if operands and not operands[0].text.isdigit():
            p.redirects.append(Redirect(">", operands[0]))
        return
    spec = _WRAPPER_OUTPUTS.get(program)
    if spec is None:
        return
    shorts, longs = spec
    for k, word in enumerate(options):
        text = word.text
        name, eq, value = text.partition("=")
        if name in longs or (len(text) > 1 and text[0] == "-" and text[1:2] in shorts and text[1:2]):
            if eq and name in longs:
                p.redirects.append(Redirect(">", Word(value, word.literal)))
            elif len(text) > 2 and name not in longs:
                p.redirects.append(Redirect(">", Word(text[2:], word.literal)))  # `-ofile`
            elif k + 1 < len(options):
                p.redirects.append(Redirect(">", options[k + 1]))


def _no_brace_list(p: _Parser, words: list[Word], program: str) -> None:
    """Refuse an unquoted brace list: Bash makes it several words, maybe options (`{-c,x}`).

    Not for words the fast path read (`p.braceless`): it declines a word with a brace list.
    """
    if p.braceless:
        return
    if _BRACE_ANYWHERE.search("\0".join(map(_TEXT, words))) is None:
        return  # no word holds one, quoted or not (one C scan for the usual command)
    for word in words:
        if word.glob and "{" in word.text and _BRACE_LIST.search(word.text):
            raise _Unparseable(f"{program} has a brace list among its words: {word.text!r}")


def _stdin_script(
    p: _Parser, program: str, redirects: tuple[Redirect, ...], heredocs: list[tuple[list[str], bool]]
) -> None:
    """A shell reading its stdin: its here-strings and here-docs are read as its script.

    Those on any descriptor: `0<&3` makes descriptor 3 stdin.
    """
    for redirect in redirects:
        if redirect.op == "<<<":
            _reparse_literal(p, [redirect.target], program)
    p.stdin_scripts.extend(heredocs)


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
    before = len(p.out)
    resolve_runner(p, program, words, redirects, assignments, wrappers, heredocs, stdin_args)
    if (heredocs or (redirects and any(r.op == "<<<" for r in redirects))) and any(
        c.program in _STDIN_READERS for c in p.out[before + 1 :]
    ):
        # A shell it runs inherits its stdin: `eval bash <<< 'cmd'`, `bash -c bash <<< 'cmd'`.
        _stdin_script(p, program, redirects, heredocs)


def resolve_runner(
    p: _Parser,
    program: str,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: tuple[str, ...],
    wrappers: tuple[str, ...],
    heredocs: list[tuple[list[str], bool]],
    stdin_args: bool,
) -> None:
    """`resolve` for a program in `REENTRANT`: one that may run other commands."""
    if program in _OPAQUE_RUNNERS:
        raise _Unparseable(f"{program} runs commands in ways not analysed")
    for assignment in assignments:
        check_assignment(assignment)
    if program in POSIX_SHELLS:
        if not p.braceless:  # (tested here too: the usual shell and find skip a call)
            _no_brace_list(p, words, program)
        if _shell_script(p, program, words, redirects, assignments, wrappers):
            return
    if program == "find":  # not a wrapper: recorded as it is, then its `-exec` commands
        if not p.braceless:
            _no_brace_list(p, words, program)
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
        _no_brace_list(p, words[1:start], program)
        if program == "env" or program == "sudo":
            if "S" in flags and program == "env":
                raise _Unparseable("env -S splits a string into a command")
            # `NAME=value` words before the command (sudo takes them too), and env's lone
            # `-` (its `-i`), which may come between them.
            while start < len(words) and (
                ("=" in words[start].text and not words[start].text.startswith("="))
                or (words[start].text == "-" and program == "env")
            ):
                if words[start].text != "-":
                    check_assignment(words[start].text)
                    assigned.append(words[start].text)
                start += 1
        wrapped.append(program)
        _wrapper_outputs(p, program, words[1:start])
        shell_reads_stdin = False
        if spec is _SU:
            script, shell, after = _scan_permuted(spec, words)
            if shell is not None and program_name(shell) not in POSIX_SHELLS:
                raise _Unparseable(f"{program} -s runs {shell.text!r} as the shell")
            if any(w.text[:1] in ("-", "+") and w.text != "-" for w in after):
                raise _Unparseable(f"{program} passes options to the shell after '--'")
            shell_reads_stdin = script is None
        elif script is None and spec.script:
            script = _late_script(words, start)
        if script is not None:
            _emit(p, program, words, redirects, assigned, wrapped[:-1], stdin_args=stdin_args)
            _reparse_literal(p, [script], program)
            return
        rest = words[start:]
        if shell_reads_stdin:
            _stdin_script(p, program, redirects, heredocs)
        if not rest:
            _emit(p, program, words, redirects, assigned, wrapped[:-1], stdin_args=stdin_args)
            if program == "exec" or (spec.eval_flags and not flags.isdisjoint(spec.eval_flags)):
                # `exec 3<<<'…'` leaves the text for any later shell to read; `sudo -s` reads it.
                _stdin_script(p, program, redirects, heredocs)
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
        _no_brace_list(p, words, program)
        exec_mode = "x" in flags
        _emit(p, program, words, redirects, assigned, wrapped, inline=not exec_mode)
        if start < len(words):
            if exec_mode:
                resolve(p, words[start:], (), (), (), [])
            else:
                _reparse_literal(p, words[start:], program)
        return
    if program in POSIX_SHELLS or program in _OTHER_SHELLS:
        _no_brace_list(p, words, program)
        _shell(p, program, words, redirects, assigned, wrapped, heredocs)
        return
    if program == "eval":
        _no_brace_list(p, words, program)
        _emit(p, program, words, redirects, assigned, wrapped, inline=True)
        if args and args[0].text == "--":
            args = args[1:]
        if args:
            _reparse_literal(p, args, program)
        return
    if program == "sg" or program == "script":
        _no_brace_list(p, words, program)
        _emit(p, program, words, redirects, assigned, wrapped)
        if program == "sg":  # `sg [-] GROUP [-c] COMMAND`: the command is a `sh -c` string
            i = 2 if len(words) > 1 and words[1].text == "-" else 1
            i += 1
            if i < len(words) and words[i].text == "-c":
                i += 1
            script = None if i >= len(words) else words[i:]
        else:  # `script [options] [file]`: its `-c` string, or a shell reading stdin
            found = _scan_permuted(_SCRIPT, words)[0]
            script = None if found is None else [found]
        if script is None:
            _stdin_script(p, program, redirects, heredocs)
        else:
            _reparse_literal(p, script, program)
        return
    _emit(p, program, words, redirects, assigned, wrapped, stdin_args=stdin_args)
    if program == "xargs":
        start, _, _ = _strip_options(_XARGS, words)
        _no_brace_list(p, words[1:start], program)
        if start < len(words):
            resolve(p, words[start:], (), (), (), [], stdin_args=True)
    elif program == "find":
        _no_brace_list(p, words, program)
        _find(p, args)
    elif program == "trap":
        _no_brace_list(p, words, program)
        if args and args[0].text == "--":
            if len(args) > 2:  # after `--` the action is the next word, whatever it starts with
                _reparse_literal(p, args[1:2], program)
        elif len(args) > 1 and not args[0].text.startswith("-"):
            _reparse_literal(p, args[:1], program)
    elif program == "alias":
        _no_brace_list(p, words, program)
        for arg in args:
            name, eq, value = arg.text.partition("=")
            if eq and name and value:
                if value.endswith(("\\", " ", "\t")):
                    # A trailing backslash escapes what follows the alias where it is used, and
                    # a trailing blank makes the next word an alias too: neither is seen here.
                    raise _Unparseable(f"alias {name} ends in a backslash or a blank")
                _reparse_literal(p, [Word(value, arg.literal)], program)
    elif program in _DECLARES:
        # `declare -n r=PS4` makes `r` another name for PS4: its value is checked as a name.
        nameref = any(a.text[:1] == "-" and "n" in a.text for a in args)
        for arg in args:
            if "=" in arg.text and not arg.text.startswith(("-", "+")):
                check_assignment(arg.text)
                if nameref:
                    check_assignment(arg.text.split("=", 1)[1] + "=")
    elif program in _CODE_OPTIONS or program in _NAME_SETTERS:
        if program in _CODE_OPTIONS:
            _code_options(program, args)
        for name in _variables_set(program, args):  # `read PS4`, `printf -v PS4 …`
            check_assignment(name + "=")
    elif program == "ip" and any(w.text == "exec" for w in args):
        raise _Unparseable("ip netns exec runs a command in ways not analysed")
    elif program in ("source", ".") and args and _is_stdin_file(args[0].text):
        _stdin_script(p, program, redirects, heredocs)  # `. /dev/stdin <<< 'cmd'`


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
    takes_arg, refused = _CODE_OPTIONS[program]
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
                raise _Unparseable(f"{program} -{letter} runs or binds code")
            if letter in takes_arg:
                if k + 2 == len(text):
                    i += 1
                break
    return


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
    if script.text[:1] in ("-", "+"):
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
    has_c = has_s = False
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
            has_s = has_s or (text[0] == "-" and "s" in letters)
            # Each `o`/`O` of a cluster takes one word: `-ooc errexit pipefail 'script'`.
            i += 1 + letters.count("o") + letters.count("O")
            continue
        break
    operand = words[i] if i < n else None
    if program in _OTHER_SHELLS:
        if has_c:
            raise _Unparseable(f"{program} -c runs a script in a syntax other than POSIX shell")
        _emit(p, program, words, redirects, assignments, wrappers)
        return
    if has_c:
        if operand is None:
            # Bash refuses a `-c` without its script, unless one arrives at run time
            # (`xargs bash -c`): unknown either way.
            raise _Unparseable(f"{program} -c without its script")
        _emit(p, program, words, redirects, assignments, wrappers, inline=True)
        _reparse_literal(p, [operand], program)
        return
    _emit(p, program, words, redirects, assignments, wrappers)
    if operand is not None and not has_s and not _is_stdin_file(operand.text):
        return  # a script file: matched as the shell itself
    # No script operand (or `-s`, whose operands are arguments): the shell reads stdin.
    _stdin_script(p, program, redirects, heredocs)


def _find(p: _Parser, args: list[Word]) -> None:
    i, n = 0, len(args)
    while i < n and args[i].text[:1] == "-" and (args[i].text in _FIND_GLOBAL or args[i].text[:2] == "-O"):
        i += 2 if args[i].text == "-D" else 1  # `-D DEBUGOPTS`, `-O3`
    starts: list[Word] = []
    while i < n and args[i].text[:1] not in _NOT_A_START:  # (a slice costs less than `startswith`)
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
            first = args[i + 1].text
            if "{}" in first or (
                (first.rsplit("/", 1)[-1] if "/" in first else first) in REENTRANT
                and any("{}" in w.text for w in args[i + 2 : j])
            ):
                # `-exec {} …` runs each file found, and so may `-exec env {} …` or
                # `-exec sh -c {} \;`: which programs those are is unknown.
                raise _Unparseable(f"find {text} runs the files it finds as programs")
            inner: list[Word] = []
            for w in args[i + 1 : j]:
                if "{}" not in w.text:
                    inner.append(w)
                elif w.text == "{}" and w.literal:
                    inner += starts  # `_substitute`'s usual case, without the call
                else:
                    inner += _substitute(w, starts)
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


# find's options before its start paths, and the first characters that end the paths.
_FIND_GLOBAL = frozenset({"-H", "-L", "-P", "-D"})
_NOT_A_START = frozenset("-(!),")


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
        return _new_word(new, True, new, new, start.glob, False)
    # A `{}` in the word's literal head (tail) is in the new word's literal head (tail).
    prefix, tail = word.prefix, word.tail
    first, last = text.find("{}"), text.rfind("{}")
    if first + 2 <= len(prefix):
        prefix = prefix.replace("{}", start.text) if start.literal else prefix[:first] + start.prefix
    if last >= len(text) - len(tail):
        tail = tail.replace("{}", start.text) if start.literal else start.tail + text[last + 2 :]
    return _new_word(new, False, prefix, tail, start.glob, False)
