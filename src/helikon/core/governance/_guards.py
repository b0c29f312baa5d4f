"""The built-in destructive guards behind `GuardRule.destructive_defaults()`.

`bash_checks` reads a parsed Bash command and `path_checks` a written file's path; each
guard gives a short detail (the offending target) when it trips. Bash write targets come
from redirections and from the arguments of the programs that write (`_ALL_OPERANDS`,
`_write_targets`); relative targets are resolved against every directory a `cd` in the
command may have moved to (order-insensitive, so a `cd` in a subshell counts too).
Globs and brace lists are judged by what they may match (`/e?c/x`, `.g{i,}t/x`), a `~`
path climbing above home from `/`, and a `find` that writes what it finds by whether its
name tests may pick a `.git`, `.ssh` or `.env` entry. See docs/shell-matcher.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ._guard_find import CHDIR_WRAPPERS as _CHDIR_WRAPPERS
from ._guard_find import found_dotpaths as _found_dotpaths
from ._guard_find import in_place_files as _in_place_files
from ._guard_find import sed_write_files as _sed_write_files
from ._guard_find import source_words as _source_words
from ._guard_find import wrapper_moves as _wrapper_moves
from ._guard_patterns import brace_expand as _brace_expand
from ._guard_patterns import component_may_be as _component_may_be
from ._guard_patterns import dotdot_variants as _dotdot_variants
from ._guard_patterns import glob_matches as _glob_matches
from ._guard_patterns import glob_run as _glob_run
from ._guard_patterns import glob_tokens as _glob_tokens
from ._guard_patterns import has_glob as _has_glob
from .path_glob import clean_path, is_protected_dotpath
from .shell import ShellParse, SimpleCommand, Word

_PROTECTED_TOP = frozenset({"etc", "usr", "bin", "sbin", "sys", "boot", "dev"})
_DEVICE_ALLOWLIST = frozenset({
    "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/dev/tty",
    "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
})  # fmt: skip
_WILDCARD = re.compile(r"(?:\*|\?|\[[^\]]*\])+")  # a component that matches every name

# Programs whose operands are written (short options that take an argument in the value).
_ALL_OPERANDS: Mapping[str, str] = MappingProxyType({
    "tee": "", "chmod": "", "chown": "", "chgrp": "", "chattr": "pv", "setfacl": "mMxX",
    "touch": "dtr", "truncate": "sr", "rm": "", "rmdir": "", "unlink": "", "shred": "ns",
    "mkdir": "m", "mkfifo": "m", "mknod": "m", "sudoedit": "ugCh",
})  # fmt: skip
_LAST_OPERAND: Mapping[str, str] = MappingProxyType(
    {
        "cp": "tS",
        "install": "tmogS",
        "ln": "tS",
        "rsync": "efTBM@",
        "scp": "cFiloPJS",
    }
)
# Long options that take the next word as their argument (any prefix counts, as getopt_long
# takes an unambiguous one); `--backup` takes its argument after `=` only.
_LONG_ARGS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "cp": ("suffix", "target-directory", "no-preserve", "sparse"),
    "mv": ("suffix", "target-directory"),
    "ln": ("suffix", "target-directory"),
    "install": ("suffix", "target-directory", "mode", "owner", "group", "strip-program"),
    "rsync": (
        "rsh", "rsync-path", "filter", "exclude", "exclude-from", "include", "include-from",
        "files-from", "out-format", "log-file", "log-file-format", "password-file", "temp-dir",
        "compare-dest", "copy-dest", "link-dest", "partial-dir", "backup-dir", "suffix", "chmod",
        "chown", "usermap", "groupmap", "timeout", "contimeout", "port", "sockopts", "bwlimit",
        "max-size", "min-size", "max-delete", "block-size", "checksum-choice", "compress-choice",
        "compress-level", "skip-compress", "modify-window", "iconv", "only-write-batch",
        "write-batch", "read-batch", "protocol", "max-alloc", "info", "debug", "stderr", "outbuf",
        "remote-option", "address", "early-input", "copy-as", "stop-after", "stop-at",
        "checksum-seed",
    ),
    "shred": ("iterations", "size", "random-source"),
})  # fmt: skip
# Programs taking `-t DIR` / `--target-directory=DIR` (or any prefix of it, as getopt_long
# takes an unambiguous one): the directory is written.
_TARGET_DIRECTORY = frozenset({"cp", "mv", "ln", "install"})
# Downloaders: (short options taking a value, the short ones whose value is written, the
# long ones whose value is written). A prefix of a long name counts (`--out`, `--output-doc`):
# an ambiguous one makes the program fail, so taking it as the name only errs towards tripping.
_OUTPUT_OPTION: Mapping[str, tuple[str, str, tuple[str, ...]]] = MappingProxyType({
    "curl": (
        "AbcCdDeEFHKmoPQrtTuUwxXyYz",
        "oDc",
        ("output", "output-dir", "dump-header", "cookie-jar", "trace", "trace-ascii", "stderr",
         "libcurl", "etag-save"),
    ),
    "wget": (
        "aABDeiIlnoOPQRtTUwX",
        "oaOP",
        ("output-document", "directory-prefix", "output-file", "append-output"),
    ),
    "sort": ("kotST", "o", ("output",)),
    "unzip": ("dPx", "d", ()),
    "gpg": ("ouru", "o", ("output",)),
    "ssh-keygen": ("abCEfFIJjKmMnNOrsStwYz", "f", ()),
})  # fmt: skip


def bash_checks(parse: ShellParse, source: str) -> Mapping[str, str | None]:
    """Every built-in guard's detail for a Bash command (the offending target), or None where it holds.

    `source` is the command's text: a wrapper that may move to another directory (`env
    -C`, `su -`) is read from it when the resolver dropped the wrapper's words. `CLEAR`
    itself when none trips.
    """
    if parse.error:
        # Fail closed: a command that cannot be analysed trips every guard.
        reason = f"the command cannot be analysed ({parse.error})"
        return MappingProxyType(dict.fromkeys(CLEAR, reason))
    targets = [r.target for r in parse.redirects if r.writes]
    removes: list[SimpleCommand] = []
    for command in parse.commands:
        program = command.program.lower()
        if program in _ALL_OPERANDS:
            operands = _operands(command, _ALL_OPERANDS[program])
            targets += operands
            if program == "rm" and len(operands) != len(command.argv) - 1:
                removes.append(command)  # it has options, maybe `-r` (`_rm_root` reads them)
        else:
            targets += _write_targets(command, program)
    if not targets and not removes:
        return CLEAR
    cwds, unknown = _cwds(parse, source)
    rm_root = _rm_root(removes, cwds)
    system_write = _system_write(targets, cwds, unknown)
    dotpath_write = _dotpath_write(targets, cwds)
    if rm_root is None and system_write is None and dotpath_write is None:
        return CLEAR
    return MappingProxyType(
        {"rm_root": rm_root, "system_write": system_write, "dotpath_write": dotpath_write}
    )


def path_checks(path: str) -> Mapping[str, str | None]:
    """The built-in guards for a file a tool writes (`Write`, `Edit`): a system path, a protected dotpath."""
    system_write = path if _system_target(path, [""], False) else None
    dotpath_write = path if is_protected_dotpath(path) else None
    if system_write is None and dotpath_write is None:
        return CLEAR
    return MappingProxyType({"rm_root": None, "system_write": system_write, "dotpath_write": dotpath_write})


CLEAR: Mapping[str, str | None] = MappingProxyType(
    {"rm_root": None, "system_write": None, "dotpath_write": None}
)
"""What the checks return whenever no built-in guard trips (always this object)."""


# --- targets ------------------------------------------------------------------------------------


def _operands(command: SimpleCommand, arg_options: str) -> list[Word]:
    """The operands: words that are not options nor an option's argument (as getopt_long reads them).

    `arg_options` are the short options that take an argument; the long ones that take the
    next word are in `_LONG_ARGS` (a prefix of one counts).
    """
    longs = _LONG_ARGS.get(command.program.lower(), ())
    words = command.argv
    out: list[Word] = []
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            out += words[i + 1 :]
            break
        if len(text) < 2 or text[0] != "-":
            out.append(words[i])
        elif text[1] == "-":
            if "=" not in text and any(full.startswith(text[2:]) for full in longs):
                i += 1  # `--suffix .bak`: the next word is its argument
        elif _next_word_is_argument(text[1:], arg_options):
            i += 1  # `-m 755`
        i += 1
    return out


def _next_word_is_argument(letters: str, arg_options: str) -> bool:
    """Whether a cluster of short options ends with one that takes the next word as its argument.

    The first letter in `arg_options` takes the rest of the cluster (`-m755`), or the next word.
    """
    for k, letter in enumerate(letters):
        if letter in arg_options:
            return k == len(letters) - 1
    return False


def _option_args(
    command: SimpleCommand, arg_options: str, wanted: str, longs: tuple[str, ...]
) -> Iterator[Word]:
    """The values of the short options in `wanted` and of the long options in `longs`.

    Short options as getopt reads them: in a cluster (`-qO file`, `-rt/etc`), the first
    letter in `arg_options` takes the rest of the word, or the next word. A long option
    counts when its name is a prefix of one in `longs` (`--target` for
    `--target-directory`), with its value after `=` or in the next word.
    """
    words = command.argv
    i, n = 1, len(words)
    while i < n:
        word = words[i]
        text = word.text
        if text == "--":
            return
        if text.startswith("--"):
            name, eq, _ = text[2:].partition("=")
            if name and any(full.startswith(name) for full in longs):
                if eq:
                    yield _cut(word, len(name) + 3)
                elif i + 1 < n:
                    i += 1
                    yield words[i]
        elif len(text) > 1 and text[0] == "-":
            for k in range(1, len(text)):
                letter = text[k]
                if letter in arg_options or letter in wanted:
                    if k + 1 < len(text):
                        if letter in wanted:
                            yield _cut(word, k + 1)
                    elif i + 1 < n:
                        i += 1
                        if letter in wanted:
                            yield words[i]
                    break
        i += 1


def _cut(word: Word, start: int) -> Word:
    """`word` without its first `start` characters (an option's attached value)."""
    text = word.text[start:]
    if word.literal:
        return Word(text, True, text, text, word.glob)
    tail = word.tail if len(word.tail) <= len(text) else text
    return Word(text, False, word.prefix[start:], tail, word.glob)


def _write_targets(command: SimpleCommand, program: str) -> Iterator[Word]:
    if program == "mv":
        yield from _operands(command, "tS")
        yield from _option_args(command, "tS", "t", ("target-directory",))
    elif program == "find":
        yield from _found_dotpaths(command)
    elif program in _LAST_OPERAND:
        yield from _copy_targets(command, program)
    elif program == "dd":
        for word in command.argv[1:]:
            if word.text.startswith("of="):
                yield _cut(word, 3)
    elif program in ("sed", "perl"):
        yield from _in_place_files(command)
        if program == "sed":
            yield from _sed_write_files(command)
    elif program in _OUTPUT_OPTION:
        yield from _option_args(command, *_OUTPUT_OPTION[program])
        if program == "wget":
            # `-e output_document=/etc/x`: a wgetrc command; every value counts as written.
            for word in _option_args(command, _OUTPUT_OPTION[program][0], "e", ("execute",)):
                value = word.text.partition("=")[2].strip()
                if value:
                    yield Word(value, word.literal, value if word.literal else "", value, word.glob)


def _copy_targets(command: SimpleCommand, program: str) -> Iterator[Word]:
    """What cp, ln, install, rsync and scp write: the destination, and each source's name in it.

    Brace lists are expanded first (`cp /etc/hosts{,.bak}` is two operands), and a source
    keeps its name in a destination directory (`cp ../x/.env .` writes `./.env`), as does a
    lone `ln` operand (`ln -s ../x/.env`). `install -d` creates every operand.
    """
    arg_options = _LAST_OPERAND[program]
    directories = list(_option_args(command, arg_options, "t", ("target-directory",)))
    if program not in _TARGET_DIRECTORY:
        directories = []
    operands: list[Word] = []
    for word in _operands(command, arg_options):
        if _is_remote(word.text):
            continue
        if word.glob and "{" in word.text:
            expanded = _brace_expand(word.text)
            if expanded is None:
                yield word  # too many words to judge: the word itself, which trips
                continue
            operands += [Word(text, word.literal, text, text, True) for text in expanded]
        else:
            operands.append(word)
    if program == "install" and any(
        (w.text[:1] == "-" and "d" in w.text[1:] and w.text[:2] != "--") or w.text.startswith("--dir")
        for w in command.argv
    ):
        yield from operands  # `install -d DIR…` creates every operand
        return
    if not directories:
        if len(operands) > 1:
            directories = [operands.pop()]
        elif program == "ln" and operands:
            directories = [Word.plain(".")]  # `ln -s ../x/.env`: the link is made here
        else:
            return
    yield from directories
    for directory in directories:
        for source in operands:
            name = source.text.rstrip("/").rsplit("/", 1)[-1]
            if name and source.literal and directory.literal:
                text = f"{directory.text.rstrip('/')}/{name}"
                yield Word(text, True, text, text, source.glob or directory.glob)


def _is_remote(text: str) -> bool:
    head = text.split("/", 1)[0]
    return ":" in head


def _cwds(parse: ShellParse, source: str = "") -> tuple[list[str], bool]:
    """The directories relative paths may resolve against ("" is the start), and whether one is unknown.

    A wrapper that runs its command in another directory (`env -C DIR`, `su -`, `sudo -i`)
    adds `/*` (any directory: every relative target there may be a system path, `*` under
    it may be `/`) and `~`; its options are read from its words when the resolver kept it
    as the program (`su -c`, `sudo -i`), else from the source text.
    """
    cwds = [""]
    unknown = False
    moved = False
    for command in parse.commands:
        program = command.program.lower()
        if program in _CHDIR_WRAPPERS:
            moved = moved or _wrapper_moves([w.text for w in command.argv])
        if command.wrappers and source and not _CHDIR_WRAPPERS.isdisjoint(command.wrappers):
            moved = moved or _wrapper_moves(_source_words(source))
        if program not in ("cd", "pushd"):
            continue
        if len(cwds) > 8:
            unknown = True
            continue
        operands = [w for w in command.argv[1:] if not w.text.startswith("-") or w.text == "-"]
        if not operands:
            cwds.append("~")
            continue
        texts = _cd_texts(operands[0])
        if texts is None:
            unknown = True
            continue
        for text in texts:
            if text.startswith(("/", "~")):
                cwds.append(text)
            else:
                cwds.extend(f"{base}/{text}" if base else text for base in list(cwds))
    if moved:
        return [*cwds, "/*", "~"], True
    return cwds, unknown


def _cd_texts(word: Word) -> list[str] | None:
    """The directories a `cd` operand may name, or None when unknown."""
    text = word.text
    if word.literal:
        return None if text == "-" else [_path_text(word)]
    text = _home_as_tilde(text)
    if _first_expansion(text) >= 0:
        return None
    if word.glob and "{" in text:
        return _brace_expand(text)
    return [text]


def _absolute(path: str) -> str:
    """Collapse an absolute path lexically (`/a/../..` is `/`)."""
    return "/" + clean_path(path)


def _pieces(word: Word) -> list[str]:
    """The texts the system check reads for a write target (`/` when past `_BRACE_MAX`)."""
    pieces = _expand(word)
    return ["/"] if pieces is None else pieces[0]


def _dot_pieces(word: Word) -> list[str]:
    """The texts the dotpath check reads for a write target (`.git` when past `_BRACE_MAX`)."""
    pieces = _expand(word)
    return [".git"] if pieces is None else pieces[1]


def _expand(word: Word) -> tuple[list[str], list[str]] | None:
    """The texts a write target may stand for: (for the system check, for the dotpath check).

    A literal word is itself. Otherwise brace lists are expanded (None when they make more
    than `_BRACE_MAX` words), `$HOME` is `~`, and a piece with an expansion left gives
    the directory before it (both checks) and the text after it (the dotpath check); when
    literal text comes before it, also the piece with the expansions empty and, if that
    text ends inside a component, the text with `*` after it (both checks).
    """
    text = word.text
    if word.literal:
        path = _path_text(word)
        return [path], [path]
    texts = [text]
    if word.glob and "{" in text:
        expanded = _brace_expand(text)
        if expanded is None:
            return None
        texts += expanded
    system: list[str] = []
    dot: list[str] = []
    for k, piece in enumerate(texts):
        piece = _home_as_tilde(piece)
        cut = _first_expansion(piece)
        if cut < 0:
            system.append(piece)
            continue
        head = word.prefix if k == 0 else piece[:cut]
        if "/" in head:
            system.append(head.rsplit("/", 1)[0] + "/")  # the directory before the expansion
        tail = word.tail if k == 0 else _after_expansions(piece)
        if tail:
            dot.append(tail)
        if head:
            # The expansions may be empty (`.git$X/config`, `etc${X}/x`), and one in the
            # middle of a component makes the literal text before it a prefix (`.gi$X`).
            system.append(head + tail)
            if head[-1] != "/":
                system.append(head + "*")
    return system, system + dot


def _path_text(word: Word) -> str:
    r"""A literal word's text as a path: a `~` Bash keeps as it is (`"~"`, `\~/x`) is a file here."""
    return "./" + word.text if word.literal_tilde else word.text


def _first_expansion(text: str) -> int:
    """The index of the first `$` or backtick in `text`, or -1."""
    dollar, tick = text.find("$"), text.find("`")
    if dollar < 0 or tick < 0:
        return max(dollar, tick)
    return min(dollar, tick)


def _after_expansions(text: str) -> str:
    """The text after the last `$name`, `${…}`, `$(…)` or backtick in `text`."""
    index = max(text.rfind("$"), text.rfind("`"))
    if text[index] == "`":
        return text[index + 1 :]
    rest = text[index + 1 :]
    if rest[:1] in ("{", "("):
        end = rest.rfind("}" if rest[0] == "{" else ")")
        return rest[end + 1 :] if end >= 0 else ""
    k = 0
    while k < len(rest) and (rest[k].isalnum() or rest[k] == "_"):
        k += 1
    return rest[max(k, 1) :]


def _home_as_tilde(text: str) -> str:
    """`$HOME/x` and `${HOME}/x` as `~/x` (other text as it is)."""
    for home in ("$HOME", "${HOME}"):
        if text.startswith(home) and text[len(home) : len(home) + 1] in ("", "/"):
            return "~" + text[len(home) :]
    return text


# --- the checks ---------------------------------------------------------------------------------


def _is_system_path(path: str) -> bool:
    if path in _DEVICE_ALLOWLIST:
        return False
    if path == "/":
        return True
    top = path[1:].split("/", 1)[0].lower()
    return top in _PROTECTED_TOP


def _top_protected(part: str, glob: bool) -> bool:
    """Whether a first component (of a path climbing out of the start) may be a protected one."""
    if glob and _has_glob(part):
        return any(_glob_matches(part, top) for top in _PROTECTED_TOP)
    return part.lower() in _PROTECTED_TOP


def _above_home(path: str) -> str | None:
    """For `~/…` (or `~user/…`) climbing above the home directory, the rest after the climb.

    Home may be `/root` or `/home/u`: the rest may land anywhere, so it is judged from `/`.
    None when the path stays under home.
    """
    parts = clean_path(path.partition("/")[2]).split("/")
    if parts[0] != "..":
        return None
    return "/".join(p for p in parts if p != "..")


def _system_path(path: str, glob: bool) -> bool:
    """Whether an absolute or `~` path may be a system path."""
    variants = _dotdot_variants(path) if glob else (path,)
    if variants is None:
        return True
    for variant in variants:
        if variant.startswith("~"):
            rest = _above_home(variant)
            if rest is None:
                continue
            variant = "/" + rest
        absolute = _absolute(variant)
        if glob and absolute != "/":
            top = absolute[1:].split("/", 1)[0]
            if _has_glob(top):
                if _top_protected(top, True):
                    return True
                continue
        if _is_system_path(absolute):
            return True
    return False


def _climbs_to_system(text: str, unknown: bool, glob: bool) -> bool:
    """Whether a relative path may reach a system path from a directory of unknown depth."""
    if not unknown and ".." not in text:
        return False  # it cannot climb: `clean_path` keeps a `..` only where one was written
    parts = clean_path(text).split("/")
    first = next((p for p in parts if p != ".."), "")
    escapes = parts[0] == ".." or unknown
    return escapes and _top_protected(first, glob)


def _system_target(text: str, cwds: list[str], unknown: bool) -> bool:
    glob = _has_glob(text)  # quoted glob characters count too: that only errs towards tripping
    if text.startswith(("/", "~")):
        return _system_path(text, glob)
    for cwd in cwds:
        if cwd.startswith(("/", "~")) and _system_path(f"{cwd}/{text}", glob or _has_glob(cwd)):
            return True
    # From the start (or an unknown) directory, `../../etc/x` reaches `/etc/x` when the depth is right.
    variants = _dotdot_variants(text) if glob else (text,)
    return variants is None or any(_climbs_to_system(v, unknown, glob) for v in variants)


def _system_write(targets: list[Word], cwds: list[str], unknown: bool) -> str | None:
    for word in targets:
        for text in _pieces(word):
            if _system_target(text, cwds, unknown):
                return word.text
    return None


def _dotpath_write(targets: list[Word], cwds: list[str]) -> str | None:
    for word in targets:
        for text in _dot_pieces(word):
            for cwd in cwds:
                path = f"{cwd}/{text}" if cwd and not text.startswith("/") else text
                if _has_glob(path):
                    if _dotpath_glob(path):
                        return word.text
                elif is_protected_dotpath(path):
                    return word.text
    return None


def _dotpath_glob(path: str) -> bool:
    """`is_protected_dotpath` for a path with glob components: whether one may match."""
    variants = _dotdot_variants(path)
    if variants is None:
        return True
    for variant in variants:
        parts = clean_path(variant).split("/")
        for part in parts:
            if part and (_component_may_be(part, ".git") or _component_may_be(part, ".ssh")):
                return True
        last = parts[-1]
        if last and _component_may_be(last, ".env"):
            return True
        if last.lower().startswith(".env.") or (
            _has_glob(last) and last[0] == "." and _glob_run(_glob_tokens(last), (0,), ".env.")
        ):
            return True
    return False


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
                # GNU rm takes any unambiguous prefix: `--r`, `--recu`, `--no-p`.
                name = text[2:].partition("=")[0]
                recursive = recursive or (
                    bool(name) and ("recursive".startswith(name) or "no-preserve-root".startswith(name))
                )
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
    text = _path_text(word)  # `rm -rf "~"` removes a file `./~`
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
    # `..` (and `../*`) from the start directory may be the home directory or above, as may
    # a path climbing back past its named parts (`x/../../*`, `"~"/../..`).
    parts = clean_path(text).split("/")
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
