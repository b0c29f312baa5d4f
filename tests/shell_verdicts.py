"""The shell matcher's verdicts on a fixed set of commands, recorded once and replayed by a test.

The set is every string in the shell, guard, rule and resolver tests (their bypass corpora,
`data/shell_corpus.json`), plus commands generated from the pieces of the property tests
with a fixed seed. For each one the record holds the parse (every simple command with its
words, wrappers, assignments and flags; the redirections; or the error), what the rules
read from it (the programs, the programs an allow rule must cover, fail closed or not),
the verdicts of the built-in guards, and the same string judged as a `Write`
path. `tests/unit/test_shell_verdicts.py` holds today's matcher to those records, so a
rewrite of the reader, the resolver or the guards keeps every verdict.

Record the fixture again (only when a verdict is meant to change, and say why in the
commit):

    uv run python tests/shell_verdicts.py
"""

from __future__ import annotations

import ast
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from helikon.core.governance.rules import ToolSubject
from helikon.core.governance.shell import Redirect, ShellParse, Word, parse_command

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "shell_verdicts.jsonl"
_SOURCES = (
    "test_shell.py", "test_shell_segments.py", "test_parser_bypasses.py", "test_resolver_bypasses.py",
    "test_guard_bypasses.py", "test_rules.py", "test_permission_pipeline.py", "test_cache_bounds.py",
)  # fmt: skip
_LONGEST = 4000  # longer strings in the tests are scripts or filler, not commands


def corpus_commands() -> list[str]:
    """Every string of the shell-related tests and of the JSON corpus, once each, in order."""
    seen: dict[str, None] = {}
    corpus = json.loads((HERE / "unit" / "data" / "shell_corpus.json").read_text(encoding="utf-8"))
    for entry in corpus:
        seen[entry["command"]] = None
    for name in _SOURCES:
        tree = ast.parse((HERE / "unit" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) <= _LONGEST:
                seen[node.value] = None
    return list(seen)


# The pieces of the property tests in `test_shell.py` and `test_shell_segments.py`.
_PIECES = [
    "ls", "rm", "-rf", "/", "a=1", "2", ">", ">>", "2>", "&>", ">&", "<", "<>", "&&", "||", ";", "|", "&",
    "|&", "git", "x.txt", "~/a", "if", "for", "done", "sudo", "-u", "root", "timeout", "5", "env", "A=b",
    "xargs", "find", ".", "-delete", "bash", "-c", "eval", "echo", "/etc/x", "1", ";;", "'a b'", '"x y"',
    "'rm -rf /'", '"*.pyc"', "{}", "+", "*", "a{b,c}", "{x}", "#c", "\n", "\r", "''", "'", '"', "!", "{",
    "}", "[[", "a[1]=x", "[", "-exec", "\\;", "X='a b'", "\uff52\uff4d", "2>&1", ">&2", "<<<", "<<", "$x",
    "(", ")", "{fd}>", "if\rx", "a=(", "sh", "-lc", "'ls; rm x'", "su", "watch", ";&", "é",
    "a'b c'd", "\"it's\"", "'a;b|c'", "\"x>y\"z", "''x", "'\"'", "\xa0", "'\r'", "2'>'", "'é x'",
    "'-name \"*.py\" x'", "\"a'b'c\"", "'a\"b'\"c\"",
    # and some of the guards' concerns: paths, cd, downloads, find tests
    "cd", "..", "~", "/etc", ".git/config", "~/.ssh/id_rsa", ".env", "-name", "'.g*'", "-path", "cp", "mv",
    "tee", "curl", "-o", "wget", "-O", "sed", "-i", "dd", "of=/etc/x", "$HOME", "/*", "'*'", "-t",
]  # fmt: skip
_SEPARATORS = [" ", "", "  ", "\t", "\n"]
_SIMPLE = [
    "ls -la", "git status", "rm -rf /", "sudo rm x", "timeout 5 curl x", "a=1 env B=2 nc", "cat f 2>&1",
    "echo hi >/etc/x", "xargs rm", "find . -delete", "eval rm y", "bash -c ls", "2>/dev/null", "cd /",
    "sh -c 'wget z'", "echo 'a;b'", "x=1", "", "cd .. && rm -rf *", "tee .git/hooks/x", "cp a ~/.ssh/",
    "find ~ -name '.e*' -delete", "sed -i s/a/b/ /etc/hosts", "curl -o /usr/bin/x u", "rm -rf ~/",
    "ld-linux-x86-64.so.2 rm x", "su -c 'rm -rf /'", "env -C / rm -rf etc", "mv x /bin/",
]  # fmt: skip
_JOINS = [" && ", ";", " | ", "\n", " || ", " & ", "|&", " ;  "]
_WRAPPERS = [
    "timeout 5", "timeout -s KILL 5", "nice", "nice -n 5", "nohup", "stdbuf -oL", "env", "env -i A=1",
    "command", "sudo", "sudo -u root", "doas", "doas -u root", "exec", "time", "builtin", "A=1", "X='a b'",
    "setsid", "busybox", "nice -n -5 sudo -E",
]  # fmt: skip
_SPELLINGS = ["rm", "\\rm", "'rm'", '"rm"', "r''m", "/bin/rm", "/usr/bin/rm", "r\\m", "RM"]
_CONTEXTS = [
    "{}", "( {} )", "{{ {}; }}", "if true; then {}; fi", "for x in a; do {}; done",
    "while false; do {}; done", "echo $({})", "echo `{}`", "bash -c '{}'", "sh -lc '{}'",
    "eval '{}'", "f() {{ {}; }}", "! {}", "case a in a) {};; esac", "ls | xargs {}", "find . -exec {} \\;",
    "cat <({})",
]  # fmt: skip


def generated_commands(count: int = 3000, seed: int = 17) -> list[str]:
    """`count` commands made from the property tests' pieces, the same on every call."""
    rng = random.Random(seed)
    out: list[str] = []
    for k in range(count):
        kind = k % 3
        if kind == 0:
            out.append(
                "".join(rng.choice(_PIECES) + rng.choice(_SEPARATORS) for _ in range(rng.randint(1, 12)))
            )
        elif kind == 1:
            out.append("".join(rng.choice(_SIMPLE) + rng.choice(_JOINS) for _ in range(rng.randint(1, 6))))
        else:
            core = " ".join(
                [*rng.sample(_WRAPPERS, rng.randint(0, 3)), rng.choice(_SPELLINGS), "-rf", "build"]
            )
            context = rng.choice(_CONTEXTS)
            out.append(context.format(core) if "'" not in core or "'" not in context else core)
    return out


def all_commands() -> list[str]:
    seen = dict.fromkeys(corpus_commands())
    seen.update(dict.fromkeys(generated_commands()))
    return list(seen)


def _word(word: Word) -> Any:
    if word.literal and word.prefix == word.text == word.tail and not word.glob and not word.literal_tilde:
        return word.text  # the usual plain word
    return [word.text, word.literal, word.prefix, word.tail, word.glob, word.literal_tilde]


def _redirect(redirect: Redirect) -> list[Any]:
    return [redirect.op, _word(redirect.target), redirect.fd]


def _parse(parse: ShellParse) -> Any:
    if parse.error:
        return {"error": parse.error}
    return {
        "commands": [
            [
                c.program,
                [_word(w) for w in c.argv],
                [_redirect(r) for r in c.redirects],
                list(c.wrappers),
                list(c.assignments),
                int(c.inline) + 2 * int(c.stdin_args),
            ]
            for c in parse.commands
        ],
        "redirects": [_redirect(r) for r in parse.redirects],
    }


def _guards(subject: ToolSubject) -> dict[str, str]:
    return {name: detail for name, detail in subject.guard_checks().items() if detail is not None}


def record(command: str) -> dict[str, Any]:
    """What the matcher makes of `command`: as a Bash command, and as a Bash command and as a Write path."""
    bash = ToolSubject("Bash", {"command": command})
    write = ToolSubject("Write", {"path": command})
    allow = bash.allow_programs
    return {
        "command": command,
        "parse": _parse(parse_command(command)),
        "programs": sorted(bash.programs),
        "allow": None if allow is None else sorted(allow),
        "deny_all": bash.deny_all,
        "guards": _guards(bash),
        "write": [write.path, _guards(write)],
    }


def read_fixture() -> Iterator[dict[str, Any]]:
    with FIXTURE.open(encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def main() -> None:
    """Record every command again: those of the fixture (a command is never dropped) and today's corpora."""
    commands = dict.fromkeys(entry["command"] for entry in read_fixture()) if FIXTURE.exists() else {}
    commands.update(dict.fromkeys(all_commands()))
    records = [record(command) for command in commands]
    FIXTURE.parent.mkdir(exist_ok=True)
    with FIXTURE.open("w", encoding="utf-8") as out:
        for entry in records:
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
