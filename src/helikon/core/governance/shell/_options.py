"""Reading a wrapper's options as getopt does, by its option table (`_wrappers.Wrapper`).

`strip_options` finds where the wrapped command starts (`timeout -s KILL 5 rm x`: at `rm`),
the shell string of a `-c`-like option, and the short flags seen; `scan_permuted` reads
options anywhere among the words, as getopt permutes them (`su USER -c CMD`).
"""

from __future__ import annotations

from ._types import Word
from ._wrappers import LONG_FLAGS, Wrapper

_FLAG, _ARG, _SCRIPT_ARG = 0, 1, 2  # what an option takes: nothing, the next word, a shell string


def _long_kind(spec: Wrapper, name: str) -> int:
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


def strip_options(spec: Wrapper, words: list[Word]) -> tuple[int, Word | None, set[str]]:
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
            i, script = _long_option(spec, words, i, flags, script)
        elif len(text) > 1 and text[0] == "-":
            i, script = _short_options(spec, words, i, flags, script)
        else:
            break
    return min(i + spec.positional, n), script, flags


def _long_option(
    spec: Wrapper, words: list[Word], i: int, flags: set[str], script: Word | None
) -> tuple[int, Word | None]:
    """Read the `--name[=value]` at `i`: (the index after it, the script argument so far)."""
    name, eq, value = words[i].text.partition("=")
    kind = _long_kind(spec, name)
    if len(name) > 2:
        # An abbreviation of a long option the resolver acts on sets its short flag.
        flags.update(letter for option, letter in LONG_FLAGS.items() if option.startswith(name))
    if kind == _SCRIPT_ARG:
        if eq:
            return i + 1, Word(value, words[i].literal)
        return i + 2, words[i + 1] if i + 1 < len(words) else None
    if not eq and kind == _ARG:
        return i + 2, script
    return i + 1, script


def _short_options(
    spec: Wrapper, words: list[Word], i: int, flags: set[str], script: Word | None
) -> tuple[int, Word | None]:
    """Read the cluster of short options at `i` (`-us root`): (the index after it, the script argument)."""
    letters = words[i].text[1:]
    i += 1
    for k, letter in enumerate(letters):
        flags.add(letter)
        rest = letters[k + 1 :]
        if letter in spec.script:
            # The shell string is the rest of the cluster, or the next word.
            if rest:
                return i, Word.plain(rest)
            if i < len(words):
                return i + 1, words[i]
            return i, script
        if letter in spec.short_arg:
            return (i if rest else i + 1), script  # the argument is the rest, or the next word
    return i, script


def scan_permuted(spec: Wrapper, words: list[Word]) -> tuple[Word | None, Word | None, list[Word]]:
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
                    argument = Word(rest, word.literal, rest, rest) if rest else None
                    if argument is None and i < n:
                        argument = words[i]
                        i += 1
                    if letter in spec.script:
                        script = argument
                    elif letter == "s":
                        shell = argument
                    break
    return script, shell, []


def late_script(words: list[Word], start: int) -> Word | None:
    """`flock FILE -c CMD`: a `-c` right after the file."""
    if start + 1 < len(words) and words[start].text in ("-c", "--command"):
        return words[start + 1]
    return None
