"""From the words of a simple command to the program(s) it really runs.

`resolve` records a program that runs no other command as it is. For one that may
(`_programs.runs_others`) it follows what runs:

1. a runner whose commands are not modelled (`gdb`, `parallel`, ...) fails closed, also
   behind wrappers;
2. the assignments before it are checked (`PS4=…`, `BASH_ENV=…` hide commands);
3. wrappers (`sudo`, `timeout`, `env`, a dynamic loader, ...) are stripped with their
   options (`_options.strip_options`), one after the other: each is recorded as a wrapper
   of the command it runs, or as a command of its own when it runs a shell string
   (`su -c`, `sudo -s`, `flock -c`) or nothing;
4. the program left is handed to its handler in `_runners.HANDLERS` (shells, `eval`,
   `xargs`, `find`, ...), or recorded with its wrappers.
"""

from __future__ import annotations

from types import MappingProxyType

from ._env import check_assignment
from ._options import late_script, scan_permuted, strip_options
from ._programs import POSIX_SHELLS, STDIN_READERS, program_name, runs_others, wrapper_of
from ._runners import HANDLERS, Call, Heredocs, no_brace_list, reparse_words, stdin_script
from ._types import Reader, Redirect, SimpleCommand, Unparseable, Word
from ._wrappers import OPAQUE_RUNNERS, SU, Wrapper


def resolve(
    p: Reader,
    words: list[Word],
    redirects: tuple[Redirect, ...],
    assignments: tuple[str, ...],
    wrappers: tuple[str, ...],
    heredocs: Heredocs,
    *,
    stdin_args: bool = False,
) -> None:
    """Append the simple command(s) that `words` run to `p.out`, following re-entry."""
    program = program_name(words[0])
    if not runs_others(program):
        p.out.append(
            SimpleCommand(program, tuple(words), redirects, wrappers, assignments, False, stdin_args)
        )
        return
    before = len(p.out)
    call = Call(program, words, redirects, list(assignments), list(wrappers), heredocs, stdin_args)
    _resolve_runner(p, call)
    reads_stdin = bool(heredocs) or any(r.op == "<<<" for r in redirects)
    if reads_stdin and any(c.program in STDIN_READERS for c in p.out[before + 1 :]):
        # A shell it runs inherits its stdin: `eval bash <<< 'cmd'`, `bash -c bash <<< 'cmd'`.
        stdin_script(p, program, redirects, heredocs)


def _resolve_runner(p: Reader, call: Call) -> None:
    """`resolve` for a program that may run other commands."""
    _refuse_opaque(call.program)
    for assignment in call.assignments:
        check_assignment(assignment)
    while (spec := wrapper_of(call.program)) is not None:
        if _unwrap(p, call, spec):
            return  # the wrapper runs a shell string, its stdin or nothing: all recorded
        _refuse_opaque(call.program)  # `timeout 5 gdb -ex 'shell rm x'` hides `rm` as `gdb` alone does
    handler = HANDLERS.get(call.program)
    if handler is None:
        call.record(p, stdin_args=call.stdin_args)
    else:
        handler(p, call)


def _refuse_opaque(program: str) -> None:
    if program in OPAQUE_RUNNERS:
        raise Unparseable(f"{program} runs commands in ways not analysed")


def _unwrap(p: Reader, call: Call, spec: Wrapper) -> bool:
    """Strip the wrapper `call.program`; True when that resolved the call, False to go on with its command.

    The wrapper is recorded as a command of its own (with the wrappers before it) when it
    runs a shell string (`su -c CMD`, `flock F -c CMD`, `sudo -s CMD`), reads its stdin as
    a script (`su`, `sudo -s` alone), or runs nothing; `sudo -e FILE` is `sudoedit FILE`.
    """
    program, words = call.program, call.words
    start, script, flags = _command_start(call, spec)
    outer = list(call.wrappers)
    call.wrappers.append(program)
    _wrapper_outputs(p, program, words[1:start])
    shell_reads_stdin = False
    if spec is SU:
        script, shell_reads_stdin = _su_script(call)
    elif script is None and spec.script:
        script = late_script(words, start)
    if script is not None:
        call.record(p, stdin_args=call.stdin_args, wrappers=outer)
        reparse_words(p, [script], program)
        return True
    if shell_reads_stdin:
        stdin_script(p, program, call.redirects, call.heredocs)
    rest = words[start:]
    runs_a_shell = bool(spec.eval_flags) and not flags.isdisjoint(spec.eval_flags)  # `sudo -s`, `sudo -i`
    if not rest:
        call.record(p, stdin_args=call.stdin_args, wrappers=outer)
        if program == "exec" or runs_a_shell:
            # `exec 3<<<'…'` leaves the text for any later shell to read; `sudo -s` reads it.
            stdin_script(p, program, call.redirects, call.heredocs)
        return True
    if program == "sudo" and "e" in flags:
        sudoedit = (Word.plain("sudoedit"), *rest)
        p.out.append(
            SimpleCommand("sudoedit", sudoedit, call.redirects, tuple(call.wrappers), tuple(call.assignments))
        )
        return True
    if runs_a_shell:
        # The rest is one shell string. Not `inline`: the privilege change must itself be allowed.
        call.record(p, wrappers=outer)
        reparse_words(p, rest, program)
        return True
    call.words = rest
    call.program = program_name(rest[0])
    return False


def _command_start(call: Call, spec: Wrapper) -> tuple[int, Word | None, set[str]]:
    """Where the wrapped command starts, the wrapper's shell-string option, and its flags.

    `env` and `sudo` take `NAME=value` words before the command (checked, and added to
    the call's assignments), and env its lone `-` (its `-i`) among them.
    """
    program, words = call.program, call.words
    start, script, flags = strip_options(spec, words)
    no_brace_list(words[1:start], program)
    if program not in ("env", "sudo"):
        return start, script, flags
    if "S" in flags and program == "env":
        raise Unparseable("env -S splits a string into a command")
    while start < len(words):
        text = words[start].text
        if text == "-" and program == "env":
            start += 1
        elif "=" in text and not text.startswith("="):
            check_assignment(text)
            call.assignments.append(text)
            start += 1
        else:
            break
    return start, script, flags


def _su_script(call: Call) -> tuple[Word | None, bool]:
    """`su`/`runuser`: (the `-c` string, whether the shell reads its stdin instead).

    Options may come anywhere (`su USER -c CMD`); a `-s` shell other than a POSIX one, or
    options passed to the shell after `--`, are not analysed.
    """
    script, shell, after = scan_permuted(SU, call.words)
    if shell is not None and program_name(shell) not in POSIX_SHELLS:
        raise Unparseable(f"{call.program} -s runs {shell.text!r} as the shell")
    if any(w.text[:1] in ("-", "+") and w.text != "-" for w in after):
        raise Unparseable(f"{call.program} passes options to the shell after '--'")
    return script, script is None


# Files a wrapper itself writes, by its options: recorded as `>` redirections, which the
# guards judge (`time -o .git/x cmd`, `strace -o /etc/x cmd`, `flock /etc/lock cmd`).
_WRAPPER_OUTPUTS = MappingProxyType({
    "time": ("o", ("--output",)),
    "strace": ("o", ("--output",)),
    "ltrace": ("o", ("--output",)),
    "valgrind": ("", ("--log-file", "--xml-file")),
})  # fmt: skip


def _wrapper_outputs(p: Reader, program: str, options: list[Word]) -> None:
    """Record the files the wrapper writes by its options as `>` redirections."""
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
        if name not in longs and not (len(text) > 1 and text[0] == "-" and text[1:2] and text[1:2] in shorts):
            continue
        if eq and name in longs:
            p.redirects.append(Redirect(">", Word(value, word.literal)))  # `--output=file`
        elif len(text) > 2 and name not in longs:
            p.redirects.append(Redirect(">", Word(text[2:], word.literal)))  # `-ofile`
        elif k + 1 < len(options):
            p.redirects.append(Redirect(">", options[k + 1]))  # `-o file`
