"""The built-in destructive guards behind `GuardRule.destructive_defaults()`.

Each check reads a `ToolSubject` and returns a short detail (the offending target)
when it trips. Bash write targets come from redirections and from the arguments of the
programs in `_WRITERS`; relative targets are resolved against every directory a `cd`
in the command may have moved to (order-insensitive, so a `cd` in a subshell counts too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING

from .path_glob import clean_path, is_protected_dotpath
from .shell import ShellParse, SimpleCommand, Word

if TYPE_CHECKING:
    from .rules import ToolSubject

_PROTECTED_TOP = frozenset({"etc", "usr", "bin", "sbin", "sys", "boot", "dev"})
_DEVICE_ALLOWLIST = frozenset({
    "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/dev/tty",
    "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
})  # fmt: skip
_WILDCARD = re.compile(r"(?:\*|\?|\[[^\]]*\])+")  # a component that matches every name
_BRACE_SPLIT = re.compile(r"[{},]")
_PARAMETER = re.compile(r"\$\{[^}]*\}")
_TEXT = attrgetter("text")

# Programs whose operands are written (short options that take an argument in the value).
_ALL_OPERANDS: dict[str, str] = {
    "tee": "p", "mv": "tS", "chmod": "", "chown": "", "chgrp": "", "chattr": "pv", "setfacl": "mMxX",
    "touch": "dtr", "truncate": "sr", "rm": "", "rmdir": "", "unlink": "", "shred": "nsu",
    "mkdir": "m", "mkfifo": "m", "mknod": "m", "sudoedit": "ugCh",
}  # fmt: skip
_LAST_OPERAND: dict[str, str] = {
    "cp": "tS",
    "install": "tmogS",
    "ln": "tS",
    "rsync": "efT",
    "scp": "cFiloPJS",
}
_OUTPUT_OPTION: dict[str, tuple[str, ...]] = {
    "curl": ("-o", "--output"),
    "wget": ("-O", "--output-document"),
}


def checks(subject: ToolSubject) -> Mapping[str, str | None]:
    """Every built-in guard's detail for the call (the offending target), or None where it holds."""
    command = subject.command
    parse = subject.parse
    if command is not None and parse is not None:
        cached = _CHECKED.get(command)
        if cached is None:
            cached = _bash_checks(parse)
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            _CHECKED[command] = cached
        return cached
    raw = subject.raw_path
    if parse is not None or not subject.edits or raw is None:
        # Not a write (a Bash call without a command string fails closed in the deny
        # and allow rules instead).
        return _CLEAR
    system_write = raw if _system_target(raw, [""], False) else None
    dotpath_write = raw if is_protected_dotpath(raw) else None
    if system_write is None and dotpath_write is None:
        return _CLEAR
    return {"rm_root": None, "system_write": system_write, "dotpath_write": dotpath_write}


_CLEAR: Mapping[str, str | None] = MappingProxyType(
    {"rm_root": None, "system_write": None, "dotpath_write": None}
)
CLEAR = _CLEAR
"""What `checks` returns whenever no built-in guard trips (always this object)."""
# Verdicts by command string, as the parse is cached: a repeated command costs one
# lookup. Bounded: cleared when full.
_CHECKED: dict[str, Mapping[str, str | None]] = {}
_CHECKED_MAX = 4096
# Programs `_write_targets` reads targets from; a command made only of others (and no
# writing redirection) writes nothing.
_WRITERS = frozenset({*_ALL_OPERANDS, *_LAST_OPERAND, *_OUTPUT_OPTION, "dd", "sed", "perl"})


def _bash_checks(parse: ShellParse) -> Mapping[str, str | None]:
    if parse.error:
        reason = f"the command cannot be analysed ({parse.error})"
        return MappingProxyType(dict.fromkeys(_CLEAR, reason))
    redirects = parse.redirects
    targets = [r.target for r in redirects if r.writes] if redirects else []
    removes: list[SimpleCommand] = []
    cwd_change = False
    for command in parse.commands:
        program = command.program.lower()
        if program in _WRITERS:
            if program in _ALL_OPERANDS:
                targets += _operands(command, _ALL_OPERANDS[program])
                if program == "rm":
                    removes.append(command)
            else:
                targets.extend(_write_targets(command, program))
        elif program in ("cd", "pushd"):
            cwd_change = True
    if not targets and not removes:
        return _CLEAR
    cwds, unknown = _cwds(parse) if cwd_change else (_START, False)
    rm_root = _rm_root(removes, cwds) if removes else None
    system_write = _system_write(targets, cwds, unknown) if targets else None
    dotpath_write = _dotpath_write(targets, cwds) if _may_name_dotpath(targets, cwds) else None
    if rm_root is None and system_write is None and dotpath_write is None:
        return _CLEAR  # the pipeline skips the built-in guards on seeing it
    return MappingProxyType(
        {"rm_root": rm_root, "system_write": system_write, "dotpath_write": dotpath_write}
    )


def _may_name_dotpath(targets: list[Word], cwds: list[str]) -> bool:
    """Whether `_dotpath_write` can trip: every path it checks is made of these texts.

    Its paths join pieces of the targets' texts to the directories, normalized, and
    lowered; lowering works character by character, so a `.git`, `.ssh` or `.env` in
    one of them is also in the lowered texts.
    """
    joined = "\0".join([*map(_TEXT, targets), *cwds]).lower()
    return ".git" in joined or ".ssh" in joined or ".env" in joined


_START = [""]  # only the start directory (read-only: the checks never change it)


# --- targets ------------------------------------------------------------------------------------


def _operands(command: SimpleCommand, arg_options: str) -> list[Word]:
    out: list[Word] = []
    words = command.argv[1:]
    i, n = 0, len(words)
    while i < n:
        text = words[i].text
        if text == "--":
            out.extend(words[i + 1 :])
            break
        if len(text) > 1 and text[0] == "-":
            if not text.startswith("--"):
                letters = text[1:]
                for k, letter in enumerate(letters):
                    if letter in arg_options:
                        if k == len(letters) - 1:
                            i += 1
                        break
        else:
            out.append(words[i])
        i += 1
    return out


def _option_values(command: SimpleCommand, names: tuple[str, ...]) -> Iterator[Word]:
    words = command.argv
    for i, word in enumerate(words):
        text = word.text
        for name in names:
            if text == name and i + 1 < len(words):
                yield words[i + 1]
            elif text.startswith(name + "=") and name.startswith("--"):
                yield Word(text[len(name) + 1 :], word.literal)
            elif len(name) == 2 and text.startswith(name) and len(text) > 2 and not name.startswith("--"):
                yield Word(text[2:], word.literal)


def _write_targets(command: SimpleCommand, program: str) -> Iterator[Word]:
    if program in _ALL_OPERANDS:
        yield from _operands(command, _ALL_OPERANDS[program])
    elif program in _LAST_OPERAND:
        yield from _option_values(command, ("-t", "--target-directory"))
        operands = [w for w in _operands(command, _LAST_OPERAND[program]) if not _is_remote(w.text)]
        if len(operands) > 1:
            yield operands[-1]
    elif program == "dd":
        for word in command.argv[1:]:
            if word.text.startswith("of="):
                yield Word(word.text[3:], word.literal, word.prefix[3:], word.tail)
    elif program in ("sed", "perl"):
        yield from _in_place_files(command)
    elif program in _OUTPUT_OPTION:
        yield from _option_values(command, _OUTPUT_OPTION[program])


def _is_remote(text: str) -> bool:
    head = text.split("/", 1)[0]
    return ":" in head


def _in_place_files(command: SimpleCommand) -> Iterator[Word]:
    in_place = False
    script_given = False
    for word in command.argv[1:]:
        text = word.text
        if text.startswith("--in-place") or (
            text.startswith("-") and not text.startswith("--") and "i" in text
        ):
            in_place = True
        if text in ("-e", "-f", "--expression", "--file") or text.startswith(("--expression=", "--file=")):
            script_given = True
    if not in_place:
        return
    operands = _operands(command, "efl" if command.program == "sed" else "eEIlMmx")
    yield from operands if script_given else operands[1:]


def _cwds(parse: ShellParse) -> tuple[list[str], bool]:
    """The directories relative paths may resolve against ("" is the start), and whether one is unknown."""
    cwds = [""]
    unknown = False
    for command in parse.commands:
        if command.program not in ("cd", "pushd") or len(cwds) > 8:
            continue
        operands = [w for w in command.argv[1:] if not w.text.startswith("-") or w.text == "-"]
        if not operands:
            cwds.append("~")
            continue
        word = operands[0]
        if not word.literal or word.text == "-":
            unknown = True
        elif word.text.startswith(("/", "~")):
            cwds.append(word.text)
        else:
            cwds.extend(f"{base}/{word.text}" if base else word.text for base in list(cwds))
    return cwds, unknown


def _absolute(path: str) -> str:
    """Collapse an absolute path lexically (`/a/../..` is `/`)."""
    return "/" + clean_path(path)


def _pieces(word: Word) -> list[str]:
    """The literal texts a write target may stand for (brace lists split, expansions cut)."""
    if word.literal:
        return [word.text]
    pieces: list[str] = []
    prefix = word.prefix
    if "{" in word.text:
        # A brace list `{/etc/x,y}`: each alternative that is a whole literal path.
        text = _PARAMETER.sub("\0", word.text)
        pieces.extend(
            p for p in _BRACE_SPLIT.split(text) if p.startswith("/") and "$" not in p and "\0" not in p
        )
    if "/" in prefix:
        pieces.append(prefix.rsplit("/", 1)[0] + "/")  # the directory before the expansion
    return pieces


# --- the checks ---------------------------------------------------------------------------------


def _is_system_path(path: str) -> bool:
    if path in _DEVICE_ALLOWLIST:
        return False
    if path == "/":
        return True
    top = path[1:].split("/", 1)[0].lower()
    return top in _PROTECTED_TOP


def _system_target(text: str, cwds: list[str], unknown: bool) -> bool:
    if text.startswith("~"):
        return False
    if text.startswith("/"):
        return _is_system_path(_absolute(text))
    for cwd in cwds:
        if cwd.startswith("/") and _is_system_path(_absolute(f"{cwd}/{text}")):
            return True
    # From an unknown directory, `../../etc/x` reaches `/etc/x` when the depth is right.
    if not unknown and ".." not in text:
        return False  # it cannot climb: `clean_path` keeps a `..` only where one was written
    parts = clean_path(text).split("/")
    first = next((p for p in parts if p != ".."), "")
    escapes = parts[0] == ".." or unknown
    return escapes and first.lower() in _PROTECTED_TOP


def _system_write(targets: list[Word], cwds: list[str], unknown: bool) -> str | None:
    for word in targets:
        if word.literal and cwds is _START and not unknown:
            # From the start directory alone, a relative path reaches a system path only
            # by climbing (`_system_target`): skip the common `rm build`, `> out.txt`.
            text = word.text
            if not text.startswith("/") and ".." not in text:
                continue
        for text in _pieces(word):
            if _system_target(text, cwds, unknown):
                return word.text
    return None


def _dotpath_write(targets: list[Word], cwds: list[str]) -> str | None:
    for word in targets:
        texts = _pieces(word)
        if not word.literal and word.tail:
            texts.append(word.tail)
        for text in texts:
            if any(is_protected_dotpath(f"{cwd}/{text}" if cwd and not text.startswith("/") else text)
                   for cwd in cwds):  # fmt: skip
                return word.text
    return None


def _rm_root(removes: list[SimpleCommand], cwds: list[str]) -> str | None:
    for command in removes:
        recursive = False
        targets: list[Word] = []
        options = True
        for word in command.argv[1:]:
            text = word.text
            if options and text == "--":
                options = False
            elif options and text.startswith("--"):
                recursive = recursive or text in ("--recursive", "--no-preserve-root")
            elif options and len(text) > 1 and text[0] == "-":
                recursive = recursive or "r" in text or "R" in text
            else:
                targets.append(word)
        if not recursive:
            continue
        if command.stdin_args:
            return "rm -r with targets read from stdin"
        for word in targets:
            if _root_or_home(word, cwds):
                return word.text
    return None


def _root_or_home(word: Word, cwds: list[str]) -> bool:
    text = word.text
    if not word.literal:
        for home in ("$HOME", "${HOME}"):
            if text.startswith(home) and text.count("$") == 1:
                return _root_or_home(Word("~" + text[len(home) :]), cwds)
        # Unknown expansion: safe only when a named component follows the last one.
        return _only_wildcards(word.tail.split("/"))
    if text.startswith("~"):
        head, _, rest = text.partition("/")
        del head  # `~` or `~user`: a home directory either way
        return _only_wildcards(rest.split("/"))
    if text.startswith("/"):
        return _only_wildcards(text.split("/"))
    for cwd in cwds:
        if cwd.startswith(("/", "~")) and _root_or_home(Word(f"{cwd}/{text}"), [""]):
            return True
    if ".." not in text:
        return False
    # `..` (and `../*`) from the start directory may be the home directory or above.
    parts = text.split("/")
    for part in parts:
        if part not in ("", "."):
            return part == ".." and _only_wildcards(parts)
    return False


def _only_wildcards(parts: list[str]) -> bool:
    """Whether these components, from a base directory, name the base itself (or everything in it).

    A `..` above the base is dropped: above `/` is `/`, above `~` holds every home.
    """
    kept: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if kept:
                kept.pop()
            continue
        kept.append(part)
    return all(map(_WILDCARD.fullmatch, kept))  # a match object is true
