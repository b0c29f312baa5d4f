"""What a `find` that deletes or runs a writer on what it finds may reach.

The commands `find -exec` runs have `{}` as its start paths; `found_dotpaths` adds the
`.git`, `.ssh` or `.env` entry under each start that the find's name tests may pick.
Used by `_guards`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ._guard_patterns import glob_matches, glob_run, glob_tokens
from .shell import SimpleCommand, Word

FIND_NAME_TESTS = frozenset({"-name", "-iname"})
FIND_PATH_TESTS = frozenset({"-path", "-ipath", "-wholename", "-iwholename"})
FIND_TESTS = frozenset({*FIND_NAME_TESTS, *FIND_PATH_TESTS, "-regex", "-iregex"})
PROTECTED_NAMES = (".git", ".ssh", ".env")
# An ASCII character that is in no protected name, either case, and no glob operator: a
# pattern without brackets or extglobs that holds one cannot match any of them (the NFA
# is left for the rest; a character outside ASCII may fold to one of theirs).
FOREIGN = re.compile(r"[^.gitshenvGITSHENV*?\\\x80-\U0010ffff]")


def found_dotpaths(command: SimpleCommand) -> Iterator[Word]:
    """For a `find` that writes what it finds and whose tests may find a protected entry: that entry.

    The commands `find` runs have `{}` as its start paths, so a `find . -name .git -exec
    rm -rf {} +` would be judged as `rm -rf .`; the found `.git` is judged here, under
    each start (as `./.git`). `find` writes what it finds with `-delete`, or with an
    `-exec`/`-execdir`/`-ok`/`-okdir` command that is not a known reader.
    """
    texts = [w.text for w in command.argv]
    if FIND_WRITES.isdisjoint(texts) or (FIND_TESTS.isdisjoint(texts) and NEGATIONS.isdisjoint(texts)):
        return  # writes nothing, or picks nothing by name
    n = len(texts)
    i = 1
    while i < n and texts[i] in ("-H", "-L", "-P"):
        i += 1
    first = i
    while first < n and not texts[first].startswith(("-", "(", "!", ")", ",")):
        first += 1
    starts = command.argv[i:first]
    name = find_may_pick(command, texts, first)
    if name is None or not writes_found(texts, first):
        return
    for start in starts or [Word.plain(".")]:
        text = f"{start.text.rstrip('/')}/{name}" if start.literal else name
        yield Word(text, True, text, text)


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
    (`! -name x`, `-not ( … )`) may pick anything; a test followed by `-prune -o` picks
    what is skipped. Without name tests, nothing is judged here.
    """
    n = len(texts)
    for k in range(first, n - 1):
        test = texts[k]
        if test not in FIND_TESTS:
            if test == "(" and k > first and texts[k - 1] in NEGATIONS:
                return ".git"
            continue
        negated = k > first and texts[k - 1] in NEGATIONS
        if texts[k + 2 : k + 4] in (["-prune", "-o"], ["-prune", "-or"]) and (
            k == first or texts[k - 1] in ("(", "-o", "-or", ",")
        ):
            continue  # `-name .git -prune -o …`: what matches is skipped
        pattern = command.argv[k + 1]
        if negated or not pattern.literal:
            return ".git"
        name = find_test_may_pick(test, pattern.text)
        if name is not None:
            return name
    return None


def find_test_may_pick(test: str, pattern: str) -> str | None:
    lowered = pattern.lower()
    for name in PROTECTED_NAMES:
        if name in lowered:
            return name
    if test in FIND_NAME_TESTS:
        if "[" not in pattern and "(" not in pattern and FOREIGN.search(pattern):
            return None  # `*.pyc`, `__pycache__`: a character of it is in no protected name
        return next((n for n in PROTECTED_NAMES if glob_matches(pattern, n, escapes=True)), None)
    if test in FIND_PATH_TESTS:
        tokens = glob_tokens(pattern, True)
        everywhere = range(len(tokens) + 1)  # any text may come before the name
        return next(
            (n for n in PROTECTED_NAMES if len(tokens) in glob_run(tokens, everywhere, "/" + n)), None
        )
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
