"""What `find`, `sed`, `perl` and directory-changing wrappers may write, for `_guards`.

The commands `find -exec` runs have `{}` as its start paths; `found_dotpaths` adds the
`.git`, `.ssh` or `.env` entry under each start that the find's name tests may pick.
`in_place_files` and `sed_write_files` read sed's and perl's own option and script
syntax; `wrapper_moves` finds a wrapper option that runs the command elsewhere (`env -C`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from ._guard_patterns import glob_matches, glob_run, glob_tokens
from .shell import SimpleCommand, Word
from .shell._wrappers import WRAPPERS as WRAPPER_SPECS

FIND_NAME_TESTS = frozenset({"-name", "-iname"})
FIND_PATH_TESTS = frozenset({"-path", "-ipath", "-wholename", "-iwholename"})
FIND_TESTS = frozenset({*FIND_NAME_TESTS, *FIND_PATH_TESTS, "-regex", "-iregex"})
PROTECTED_NAMES = (".git", ".ssh", ".env")
# An ASCII character that is in no protected name, either case, and no glob operator: a
# pattern without brackets or extglobs that holds one cannot match any of them (the NFA
# is left for the rest; a character outside ASCII may fold to one of theirs).
FOREIGN = re.compile(r"[^.gitshenvGITSHENV*?\\\x80-\U0010ffff]")


def found_dotpaths(command: SimpleCommand) -> list[Word]:
    """For a `find` that writes what it finds and whose tests may find a protected entry: that entry.

    The commands `find` runs have `{}` as its start paths, so a `find . -name .git -exec
    rm -rf {} +` would be judged as `rm -rf .`; the found `.git` is judged here, under
    each start (as `./.git`). `find` writes what it finds with `-delete`, or with an
    `-exec`/`-execdir`/`-ok`/`-okdir` command that is not a known reader.
    """
    texts = [word.text for word in command.argv]
    if FIND_WRITES.isdisjoint(texts) or _PICKERS.isdisjoint(texts):
        return []  # writes nothing, or picks nothing by name (no name test, no negation)
    if _BRANCHES.isdisjoint(texts) and plain_pick(command, texts, 1) is None:
        return []  # the usual `find . -name '*.pyc' -delete`: no name test may pick one
    n = len(texts)
    i = 1
    while i < n and texts[i][:2] in ("-H", "-L", "-P", "-D", "-O"):
        # `-D DEBUGOPTS` and `-O LEVEL` (or `-O3`) come before the start paths too.
        i += 2 if texts[i] in ("-D", "-O") else 1
    first = i
    while first < n and not texts[first].startswith(("-", "(", "!", ")", ",")):
        first += 1
    starts = command.argv[i:first]
    name = find_may_pick(command, texts, first)
    if name is None or not writes_found(texts, first):
        return []
    found: list[Word] = []
    for start in starts or [Word.plain(".")]:
        text = f"{start.text.rstrip('/')}/{name}" if start.literal else name
        found.append(Word(text, True, text, text))
    return found


def writes_found(texts: list[str], first: int) -> bool:
    """Whether the find writes what it finds: `-delete`, or `-exec` & co. of a program not in `READERS`."""
    n = len(texts)
    for k in range(first, n):
        if texts[k] == "-delete":
            return True
        if texts[k] in FIND_EXEC and k + 1 < n and texts[k + 1].rsplit("/", 1)[-1].lower() not in READERS:
            return True
    return False


NEGATIONS = frozenset({"!", "-not"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
FIND_WRITES = frozenset({"-delete", *FIND_EXEC})
# Programs that only read the files `find -exec` gives them.
READERS = frozenset({
    "cat", "ls", "du", "stat", "file", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg",
    "md5sum", "sha1sum", "sha256sum", "readlink", "realpath", "basename", "dirname", "echo",
    "printf", "test", "[", "true", "false", "diff", "cmp", "less", "more",
})  # fmt: skip


def find_may_pick(command: SimpleCommand, texts: list[str], first: int) -> str | None:
    """The protected name (`.git`, `.ssh`, `.env`) a find's name tests may pick, or None.

    `-name`/`-iname` patterns are matched against the names, `-path`/`-wholename` ones
    against a path ending in one, `-regex` ones by their literal end. A negated test
    (`! -name x`, `-not ( … )`) may pick anything, and so may an expression with `-o`,
    `-or` or `,` (the action may be on the other side of it), except inside a group of
    name tests only (`( -name a -o -name b )`) and after a leading `TEST -prune -o`
    (or `( TESTS ) -prune -o`), which skips what matches unless `-depth` or `-delete`
    (which implies it) makes `-prune` do nothing. Without name tests, nothing is judged.
    """
    if DISJUNCTIONS.isdisjoint(texts) and NEGATIONS.isdisjoint(texts) and "(" not in texts:
        return plain_pick(command, texts, first)  # the usual `find . -name '*.pyc' -delete`
    n = len(texts)
    first = pruned_start(texts, first)
    depth = 0
    groups: list[list[int]] = []  # each open group: [its start, whether it holds `-o`]
    for k in range(first, n):
        test = texts[k]
        if test in DISJUNCTIONS:
            if depth == 0 or not groups:
                return ".git"
            groups[-1][1] = 1
            continue
        if test == "(":
            depth += 1
            groups.append([k + 1, 0])
            if k > first and texts[k - 1] in NEGATIONS:
                return ".git"
            continue
        if test == ")":
            depth = max(depth - 1, 0)
            if groups:
                start, disjunction = groups.pop()
                if disjunction and not tests_only(texts, start, k):
                    return ".git"  # `( -name '*.pyc' -o -true )`
            continue
        if test not in FIND_TESTS or k + 1 >= n or (k > first and texts[k - 1] in FIND_TAKES_ARG):
            continue
        pattern = command.argv[k + 1]
        if (k > first and texts[k - 1] in NEGATIONS) or not pattern.literal:
            return ".git"
        name = find_test_may_pick(test, pattern.text)
        if name is not None:
            return name
    return None


def plain_pick(command: SimpleCommand, texts: list[str], first: int) -> str | None:
    """`find_may_pick` for an expression without `-o`, `,`, negations or groups.

    Every test must hold, so each name test is judged alone (a `-prune` without `-o`
    protects nothing: it is only a test that is true).
    """
    for k in range(first, len(texts) - 1):  # a test in the last word has no pattern
        test = texts[k]
        if test not in FIND_TESTS or (k > first and texts[k - 1] in FIND_TAKES_ARG):
            continue
        pattern = command.argv[k + 1]
        if not pattern.literal:
            return ".git"
        name = find_test_may_pick(test, pattern.text)
        if name is not None:
            return name
    return None


DISJUNCTIONS = frozenset({"-o", "-or", ","})
# The words that may pick an entry by name (a name test, a negation), and those that make
# an expression more than a conjunction (what `plain_pick` reads).
_PICKERS = FIND_TESTS | NEGATIONS
_BRANCHES = DISJUNCTIONS | NEGATIONS | {"("}
CONNECTIVES = frozenset({"-o", "-or", "-a", "-and", "(", ")"})
# Options and tests whose argument is the next word (the ones a name test's pattern could
# be mistaken for, `-name -name`, and the usual others).
FIND_TAKES_ARG = frozenset(
    {*FIND_TESTS, "-type", "-xtype", "-maxdepth", "-mindepth", "-newer", "-perm", "-size"}
)


def tests_only(texts: list[str], start: int, end: int) -> bool:
    """Whether `texts[start:end]` holds only name tests (with their patterns) and connectives."""
    k = start
    while k < end:
        if texts[k] in FIND_TESTS:
            k += 2
        elif texts[k] in CONNECTIVES:
            k += 1
        else:
            return False
    return True


def pruned_start(texts: list[str], first: int) -> int:
    """Where the expression starts after a leading `TEST PATTERN -prune -o` (or `( … ) -prune -o`).

    `first` itself when there is none, or when `-depth`/`-d`/`-delete` makes `-prune` do nothing.
    """
    n = len(texts)
    end = first
    if first < n and texts[first] in FIND_TESTS:
        end = first + 2
    elif first < n and texts[first] == "(":
        close = texts.index(")", first) if ")" in texts[first:] else -1
        if close < 0 or not tests_only(texts, first + 1, close):
            return first
        end = close + 1
    if (
        end == first
        or texts[end : end + 1] != ["-prune"]
        or texts[end + 1 : end + 2] not in (["-o"], ["-or"])
    ):
        return first
    if not DEPTH_FIRST.isdisjoint(texts):
        return first
    return end + 2


DEPTH_FIRST = frozenset({"-depth", "-d", "-delete"})


def find_test_may_pick(test: str, pattern: str) -> str | None:
    lowered = pattern.lower()
    spelled = next((name for name in PROTECTED_NAMES if name in lowered), None)
    if spelled is not None:
        return spelled
    if test in FIND_NAME_TESTS:
        if "[" not in pattern and "(" not in pattern and FOREIGN.search(pattern):
            return None  # `*.pyc`, `__pycache__`: a character of it is in no protected name
        return _name_may_pick(pattern)
    if test in FIND_PATH_TESTS:
        return _path_may_pick(pattern)
    return _regex_may_pick(pattern, lowered)


def _name_may_pick(pattern: str) -> str | None:
    return next((n for n in PROTECTED_NAMES if glob_matches(pattern, n, escapes=True)), None)


def _path_may_pick(pattern: str) -> str | None:
    tokens = glob_tokens(pattern, True)
    everywhere = range(len(tokens) + 1)  # any text may come before the name
    return next((n for n in PROTECTED_NAMES if len(tokens) in glob_run(tokens, everywhere, "/" + n)), None)


def _regex_may_pick(pattern: str, lowered: str) -> str | None:
    # -regex: a match ends with the pattern's literal end, which must be able to end a name.
    if "|" in pattern or "\\\\" in pattern or any(n[1:] in lowered for n in PROTECTED_NAMES):
        return ".git"
    end = regex_literal_end(lowered)
    return next((n for n in PROTECTED_NAMES if not end or ("/" + n).endswith(end)), None)


def regex_literal_end(regex: str) -> str:
    r"""The literal text a regex ends with (`\.pyc` for `.*\.pyc`), or "" when it ends with an operator."""
    out: list[str] = []
    i = len(regex) - 1
    while i >= 0:
        char = regex[i]
        if char.isalnum() or char in "_-/~,=%@#:":
            if i > 0 and regex[i - 1] == "\\":
                break  # `\w`, `\b` and the like are operators
            out.append(char)
            i -= 1
        elif char == "." and i > 0 and regex[i - 1] == "\\":
            out.append(".")
            i -= 2
        else:
            break
    return "".join(reversed(out))


def in_place_files(command: SimpleCommand) -> Iterator[Word]:
    """The files `sed -i` or `perl -i` edits: every operand but the script.

    Read as getopt does for sed (options anywhere, `-i` takes the rest of its cluster as
    the backup suffix: `-ie` is `-i` with suffix `e`) and as perl does (switches up to
    the first operand; `-i` takes the rest of its cluster, `-e`/`-E`/`-I` the rest or the
    next word, `-l` and `-0` digits, the other letters with a value the rest). The first
    operand is the script unless `-e`/`-f` (sed) or `-e`/`-E` (perl) gave one.
    """
    perl = command.program == "perl"
    takes = "eEI" if perl else "efl"
    scripts = "eE" if perl else "ef"
    rest = "xdDCFVMm" if perl else ""
    words = command.argv
    in_place = script_given = False
    operands: list[Word] = []
    options = True
    i, n = 1, len(words)
    while i < n:
        word = words[i]
        text = word.text
        if not options or text == "-" or text[:1] != "-":
            operands.append(word)
            options = options and not perl
        elif text == "--":
            options = False
        elif text[1] == "-" and not perl:
            name, eq, _ = text[2:].partition("=")
            if "in-place".startswith(name):
                in_place = True
            elif any(full.startswith(name) for full in ("expression", "file", "line-length")):
                script_given = script_given or not "line-length".startswith(name)
                i += 0 if eq else 1
        else:
            k = 1
            while k < len(text):
                letter = text[k]
                if letter == "i":
                    in_place = True
                    break
                if letter in takes:
                    script_given = script_given or letter in scripts
                    i += k == len(text) - 1
                    break
                if letter in rest:
                    break
                k += 1
                if perl and letter in "l0":
                    if text[k : k + 1] in ("x", "X"):
                        break  # `-0xHH`
                    while k < len(text) and text[k] in "01234567":
                        k += 1
        i += 1
    if in_place:
        yield from operands if script_given else operands[1:]


def sed_scripts(command: SimpleCommand) -> list[str]:
    """The script texts of a sed command: its `-e`/`--expression` values, else its first operand.

    A `-f`/`--file` script counts as given (the operand is then a file, not a script).
    """
    words = [w.text for w in command.argv]
    scripts: list[str] = []
    operand: str | None = None
    script_given = False
    i, n = 1, len(words)
    while i < n:
        text = words[i]
        if text == "--":
            if operand is None and i + 1 < n:
                operand = words[i + 1]
            break
        if text.startswith("--"):
            i, letter, value = _sed_long_option(words, i)
        elif len(text) > 1 and text[0] == "-":
            i, letter, value = _sed_short_options(words, i)
        else:
            operand = text if operand is None else operand
            letter, value = "", None
        if letter == "e" and value is not None:
            scripts.append(value)
        script_given = script_given or letter in ("e", "f")
        i += 1
    if not script_given and operand is not None:
        scripts.append(operand)
    return scripts


def _sed_long_option(words: list[str], i: int) -> tuple[int, str, str | None]:
    """The `--name[=value]` at `i`: (its last index, the short letter it stands for or "", its value).

    Any prefix of `--expression`, `--file` and `--line-length` counts, as getopt_long reads it.
    """
    name, eq, rest = words[i][2:].partition("=")
    letter = next(
        (full[0] for full in ("expression", "file", "line-length") if name and full.startswith(name)), ""
    )
    if not letter:
        return i, "", None
    if eq:
        return i, letter, rest
    if i + 1 < len(words):
        return i + 1, letter, words[i + 1]
    return i, letter, None


def _sed_short_options(words: list[str], i: int) -> tuple[int, str, str | None]:
    """The short options at `i` (`-ne`, `-es/a/b/`): (the last index read, `e`, `f` or `l` or "", its value).

    `-i` takes the rest of the word as its backup suffix; `-e`, `-f` and `-l` take the rest
    of the word, or the next word.
    """
    text = words[i]
    for k in range(1, len(text)):
        letter = text[k]
        if letter == "i":
            break  # the rest is the backup suffix
        if letter in "efl":
            value = text[k + 1 :]
            if not value and i + 1 < len(words):
                return i + 1, letter, words[i + 1]
            return i, letter, value
    return i, "", None


def sed_write_files(command: SimpleCommand) -> Iterator[Word]:
    """The files a sed script may write with its `w`/`W` command or `s///w` flag.

    Either names its file from after the letter (and blanks) to the end of the line. The
    script is not parsed: the rest of the line after every `w` or `W` counts, which
    holds the real file name and, elsewhere, only text that is not written to.
    """
    for script in sed_scripts(command):
        if "w" not in script and "W" not in script:
            continue
        for index, char in enumerate(script):
            if char in "wW":
                name = script[index + 1 :].split("\n", 1)[0].strip()
                if name:
                    yield Word(name, True, name, name)


# Wrappers with an option that runs the command in another directory (the resolver keeps
# their names, not their options, so those are read from the source text).
CHDIR_WRAPPERS = frozenset({"env", "unshare", "nsenter", "su", "runuser", "sudo"})
# Per wrapper: (short options that move, long options that move).
CHDIR_OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = MappingProxyType(
    {
        "env": ("C", ("chdir",)),
        "unshare": ("w", ("wd",)),
        "nsenter": ("w", ("wd",)),
        "su": ("l", ("login",)),
        "runuser": ("l", ("login",)),
        "sudo": ("iD", ("login", "chdir")),
    }
)
SOURCE_WORD = re.compile(r"[^\s;&|()<>]+")


def source_words(source: str) -> list[str]:
    """The source text's words, roughly: split at blanks and operators, quotes stripped."""
    return [w.strip("'\"") for w in SOURCE_WORD.findall(source)]


def wrapper_moves(words: list[str]) -> bool:
    """Whether a wrapper in these words has an option that changes the directory.

    Read from the words after each wrapper name, as far as its options go; `su`/`runuser`
    take one operand (the user) among them, and `-` alone is `--login`.
    """
    for index, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name not in CHDIR_WRAPPERS:
            continue
        moving, moving_longs = CHDIR_OPTIONS[name]
        spec = WRAPPER_SPECS[name]
        user = name in ("su", "runuser")
        j = index + 1
        while j < len(words):
            text = words[j]
            if text == "-" and user:
                return True
            if text.startswith("--"):
                option, eq, _ = text[2:].partition("=")
                if option and any(full.startswith(option) for full in moving_longs):
                    return True
                if not eq and f"--{option}" in spec.long_arg:
                    j += 1
            elif text.startswith("-") and len(text) > 1:
                for k in range(1, len(text)):
                    if text[k] in moving:
                        return True
                    if text[k] in spec.short_arg or text[k] == spec.script:
                        j += k == len(text) - 1
                        break
            elif user:
                user = False
            else:
                break
            j += 1
    return False
