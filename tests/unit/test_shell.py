"""The operator-aware shell matcher: an adversarial corpus, properties, and the parse itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helikon import JsonValue
from helikon.core.exceptions import UserError
from helikon.core.governance.rules import AllowRule, DenyRule, GuardRule, ToolSubject, allowed_by
from helikon.core.governance.shell import (
    MAX_NESTING,
    ParseCache,
    Redirect,
    ShellParse,
    SimpleCommand,
    Word,
    parse_command,
)

CORPUS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "shell_corpus.json").read_text(encoding="utf-8")
)
GUARDS = GuardRule.destructive_defaults()


def bash(command: str) -> ToolSubject:
    return ToolSubject.of("Bash", {"command": command})


def test_the_corpus_is_adversarial_enough() -> None:
    assert len(CORPUS) >= 200
    assert sum(1 for e in CORPUS if e.get("parseable") is False) >= 40
    assert sum(1 for e in CORPUS if "guard" in e) >= 100


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i}:{e['command'][:40]!r}" for i, e in enumerate(CORPUS)])
def test_corpus_verdict(entry: dict[str, Any]) -> None:
    command: str = entry["command"]
    subject = bash(command)
    parse = subject.parse
    assert parse is not None
    if entry.get("parseable") is False:
        assert not parse.ok, parse
        # Fail closed: any deny rule matches, no allow rule does.
        assert DenyRule.bash_command("no-such-program").matches(subject)
        assert not AllowRule.bash_command("echo").matches(subject)
        assert any(g.check(subject) for g in GUARDS)
    for program in entry.get("denied_by", []):
        assert DenyRule.bash_command(program).matches(subject), (program, parse)
    for program in entry.get("not_denied_by", []):
        assert parse.ok, parse.error
        assert not DenyRule.bash_command(program).matches(subject), (program, parse)
    if "guard" in entry:
        reasons = [r for g in GUARDS if (r := g.check(subject))]
        assert bool(reasons) is entry["guard"], (reasons, parse)
    if "allowed_by" in entry:
        rules = [AllowRule.bash_command(p) for p in entry["allowed_by"]]
        assert allowed_by(rules, subject), parse
    if "not_allowed_by" in entry:
        rules = [AllowRule.bash_command(p) for p in entry["not_allowed_by"]]
        assert not allowed_by(rules, subject), parse


# --- the parse ------------------------------------------------------------------------------------


def programs(command: str) -> list[str]:
    parsed = parse_command(command)
    assert parsed.ok, parsed.error
    return [c.program for c in parsed.commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo ok && rm -rf .", ["echo", "rm"]),
        ("a&&b||c;d|e|&f&g", ["a", "b", "c", "d", "e", "f", "g"]),
        ("x=1; y=2", []),
        ("", []),
        ("   \n\n  ", []),
        ("# only a comment", []),
        ("echo a#b", ["echo"]),
        ("git status && ls -la src | grep -v foo > /tmp/out.txt", ["git", "ls", "grep"]),
        ("bash -c 'rm x'", ["bash", "rm"]),
        ("echo $(date) `whoami`", ["date", "whoami", "echo"]),
        ("find . -name x -exec grep y {} \\; -delete", ["find", "rm", "grep"]),
        ("ls | xargs -n1 wc -l", ["ls", "xargs", "wc"]),
        ("sudo -u root timeout -s KILL 5 rm x", ["rm"]),
        ("[[ -n $x ]] && echo y", ["[[", "echo"]),
        ("(( 1 + 2 ))", ["(("]),
        ("echo x\\\n y", ["echo"]),
    ],
)
def test_programs(command: str, expected: list[str]) -> None:
    assert programs(command) == expected


def test_words_keep_their_expansions_and_literal_edges() -> None:
    (cmd,) = parse_command("rm -rf \"$DIR\"/build ~/x '$lit' a{b,c}").commands
    words = {w.text: w for w in cmd.argv}
    assert words["$DIR/build"] == Word("$DIR/build", False, "", "/build")
    assert words["~/x"].literal
    assert words["$lit"].literal  # single quotes: no expansion
    assert words["a{b,c}"].glob and not words["a{b,c}"].literal


def test_wrappers_and_assignments_are_recorded() -> None:
    (cmd,) = parse_command("A=1 sudo -u root env B=2 nice -n 3 rm x").commands
    assert cmd.program == "rm"
    assert cmd.wrappers == ("sudo", "env", "nice")
    assert cmd.assignments == ("A=1", "B=2")
    assert cmd.args == ("x",)
    assert repr(cmd) == "SimpleCommand('rm x')"


def test_redirections_with_descriptors() -> None:
    parsed = parse_command("cmd 2>&1 >out 3>>log <in &>all <<<here 4<>rw >&2")
    ops = [(r.fd, r.op, r.target.text, r.writes) for r in parsed.redirects]
    assert ops == [
        ("2", ">&", "1", False),
        ("", ">", "out", True),
        ("3", ">>", "log", True),
        ("", "<", "in", False),
        ("", "&>", "all", True),
        ("", "<<<", "here", False),
        ("4", "<>", "rw", True),
        ("", ">&", "2", False),
    ]
    assert parse_command("echo >& file").redirects[0].writes  # Bash's `&>file`
    assert parse_command("{fd}>file cmd").commands[0].program == "cmd"


def test_here_doc_bodies_are_data_unless_they_expand() -> None:
    assert programs("cat <<EOF\nrm -rf /\nEOF\necho done") == ["cat", "echo"]
    assert programs("cat <<EOF\n$(rm x)\nEOF") == ["cat", "rm"]  # the body is read after the line
    assert programs("cat <<'EOF'\n$(rm x)\nEOF") == ["cat"]
    assert programs("cat <<-EOF\n\t$(rm x)\n\tEOF\nls") == ["cat", "rm", "ls"]
    assert programs("cat <<EOF\nno end") == ["cat"]


def test_ansi_c_quoting_is_decoded() -> None:
    assert programs("$'\\x72\\x6d' x") == ["rm"]
    assert programs("$'\\162\\155' x") == ["rm"]
    assert programs("$'\\u0072m' x") == ["rm"]
    assert parse_command("echo $'\\cA\\e\\n\\q'").commands[0].args == ("\x01\x1b\n\\q",)


def test_unparseable_reasons_are_specific() -> None:
    assert "comes from an expansion" in parse_command("$CMD x").error
    assert "unbalanced single quote" in parse_command("echo 'x").error
    assert "non-ASCII" in parse_command("\uff52\uff4d x").error
    assert "glob" in parse_command("r* x").error
    assert parse_command("$CMD").commands == ()


def nested_bash(depth: int, inner: str = "rm x") -> str:
    command = inner
    for _ in range(depth):
        command = "bash -c " + "'" + command.replace("'", "'\\''") + "'"
    return command


def test_bash_c_is_followed_to_the_bound_then_fails_closed() -> None:
    assert "rm" in programs(nested_bash(MAX_NESTING - 1))
    deep = parse_command(nested_bash(MAX_NESTING + 2))
    assert not deep.ok and "nested deeper" in deep.error
    assert DenyRule.bash_command("anything").matches(bash(nested_bash(MAX_NESTING + 2)))


def test_deep_structural_nesting_fails_closed() -> None:
    assert not parse_command("( " * 50 + "ls" + " )" * 50).ok
    assert not parse_command("echo " + "$(" * 50 + "ls" + ")" * 50).ok
    assert programs("((((ls))))") == ["(("]  # arithmetic, as in Bash


def test_a_huge_script_is_bounded() -> None:
    parsed = parse_command("ls;" * 2000)
    assert not parsed.ok


def test_non_str_command_is_a_user_error() -> None:
    with pytest.raises(UserError, match="str"):
        parse_command(b"rm x")  # type: ignore[arg-type]


def test_malformed_tool_arguments_fail_closed() -> None:
    malformed: tuple[JsonValue, ...] = (None, {}, {"command": 42}, ["rm"], "rm x")
    for args in malformed:
        subject = ToolSubject.of("Bash", args)
        assert DenyRule.bash_command("rm").matches(subject)
        assert not AllowRule.bash_command("rm").matches(subject)


def test_results_are_frozen_hashable_and_cached_by_a_parse_cache() -> None:
    first = parse_command("ls && rm x")
    assert first == parse_command("ls && rm x")  # read afresh: `parse_command` keeps nothing
    cache = ParseCache()
    assert cache.read("ls && rm x") == first  # read once: not kept
    assert cache.read("ls && rm x") is cache.read("ls && rm x") == first
    assert hash(first) == hash(ShellParse(first.commands, first.redirects))
    command = first.commands[0]
    assert isinstance(command, SimpleCommand)
    with pytest.raises(AttributeError):
        command.program = "x"  # type: ignore[misc]
    assert Redirect(">", Word.plain("f")).writes


# --- properties: a denied program cannot be smuggled -----------------------------------------------

_WRAPPERS = st.sampled_from(
    [
        "timeout 5", "timeout -s KILL 5", "nice", "nice -n 5", "nohup", "stdbuf -oL", "env",
        "env -i A=1", "command", "sudo", "sudo -u root", "doas", "doas -u root", "exec", "time",
        "builtin", "A=1", "X='a b'", "setsid", "busybox", "nice -n -5 sudo -E",
    ]
)  # fmt: skip
_OPERATORS = st.sampled_from(["&&", "||", ";", "|", "|&", "&", "\n", " && ", " ; ", " | ", ";\n"])
_ALLOWED = st.sampled_from(["ls", "git status", "echo ok", "cat f", "true", "grep -r x .", "pwd"])
_SPELLINGS = st.sampled_from(["rm", "\\rm", "'rm'", '"rm"', "r''m", "/bin/rm", "/usr/bin/rm", "r\\m", "RM"])
_CONTEXTS = st.sampled_from(
    [
        "{}", "( {} )", "{{ {}; }}", "if true; then {}; fi", "for x in a; do {}; done",
        "while false; do {}; done", "echo $({})", "echo `{}`", "bash -c '{}'", "sh -lc '{}'",
        "eval '{}'", "f() {{ {}; }}", "! {}",
        "case a in a) {};; esac", "ls | xargs {}", "find . -exec {} \\;", "cat <({})",
    ]
)  # fmt: skip


@given(
    wrappers=st.lists(_WRAPPERS, max_size=4),
    spelling=_SPELLINGS,
    before=st.lists(st.tuples(_ALLOWED, _OPERATORS), max_size=3),
    after=st.lists(st.tuples(_OPERATORS, _ALLOWED), max_size=3),
    context=_CONTEXTS,
)
def test_a_denied_program_is_never_let_through(
    wrappers: list[str],
    spelling: str,
    before: list[tuple[str, str]],
    after: list[tuple[str, str]],
    context: str,
) -> None:
    if "xargs" in context or "find" in context:
        # xargs and find exec a program directly: there `A=1 rm` runs a program named `A=1`.
        wrappers = [w for w in wrappers if "=" not in w.split()[0]]
    # `NAME=value` is an assignment only before the program: after `timeout` it is the program.
    wrappers.sort(key=lambda w: "=" not in w.split()[0])
    core = " ".join([*wrappers, spelling, "-rf", "build"])
    core = context.format(core) if "'" not in core or "'" not in context else core
    command = "".join(a + op for a, op in before) + core + "".join(op + a for op, a in after)
    subject = bash(command)
    assert DenyRule.bash_command("rm").matches(subject), (command, subject.parse)
    assert not allowed_by(
        [AllowRule.bash_command(p) for p in ("ls", "git", "echo", "cat", "true", "grep")], subject
    )


@given(commands=st.lists(_ALLOWED, min_size=1, max_size=5), ops=st.lists(_OPERATORS, min_size=4, max_size=4))
def test_allowed_programs_joined_by_any_operator_stay_allowed(commands: list[str], ops: list[str]) -> None:
    command = commands[0] + "".join(op + c for op, c in zip(ops, commands[1:], strict=False))
    rules = [AllowRule.bash_command(p) for p in ("ls", "git", "echo", "cat", "true", "grep", "pwd")]
    assert allowed_by(rules, bash(command)), command
    assert not DenyRule.bash_command("rm").matches(bash(command))


@given(st.text(max_size=60))
def test_arbitrary_text_never_raises(text: str) -> None:
    parsed = parse_command(text)
    assert parsed.ok or parsed.error
    subject = bash(text)
    for guard in GUARDS:
        guard.check(subject)


_PLAIN_PIECES = st.sampled_from(
    ["ls", "rm", "-rf", "/", "a=1", "2", ">", ">>", "2>", "&>", ">&", "<", "<>", "&&", "||", ";", "|", "&",
     "|&", "git", "x.txt", "~/a", "if", "for", "done", "sudo", "-u", "root", "timeout", "5", "env", "A=b",
     "xargs", "find", ".", "-delete", "bash", "-c", "eval", "echo", "/etc/x", "1", ";;", "'a b'", '"x y"',
     "'rm -rf /'", '"*.pyc"', "{}", "+", "*", "a{b,c}", "{x}", "#c", "\n", "\r", "''", "'", '"', "!", "{",
     "}", "[[", "a[1]=x", "[", "-exec", "\\;", "X='a b'", "\uff52\uff4d", "2>&1", ">&2", "<<<", "<<", "$x",
     "(", ")", "{fd}>", "if\rx", "a=(", "sh", "-lc", "'ls; rm x'", "su", "watch", ";&", "é",
     # quoting that is easy to get wrong: quotes inside words, quoted operators and blanks, the
     # other quote character inside a quoted string, whitespace str.split would cut at
     "a'b c'd", "\"it's\"", "'a;b|c'", "\"x>y\"z", "''x", "'\"'", "\xa0", "'\r'", "2'>'", "'é x'",
     # one quoted string with the other kind of quote inside it, or around it
     "'-name \"*.py\" x'", "\"a'b'c\"", "'a\"b'\"c\""]
)  # fmt: skip


def _reads(command: str) -> tuple[ShellParse, ShellParse, ShellParse]:
    """`command` read three times: afresh, again, and through a new `ParseCache`.

    The reader keeps nothing between commands: what came before never changes a parse.
    """
    return parse_command(command), parse_command(command), ParseCache().read(command)


def _read_twice(command: str) -> ShellParse:
    """The parse of `command`, checked to be the same each time it is read."""
    first, again, cached = _reads(command)
    assert again == first == cached, command
    return first


@given(st.lists(st.tuples(_PLAIN_PIECES, st.sampled_from([" ", "", "  ", "\t", "\n"])), max_size=12))
def test_a_command_of_tricky_pieces_reads_the_same_each_time(pieces: list[tuple[str, str]]) -> None:
    first, again, cached = _reads("".join(p + sep for p, sep in pieces))
    assert again == first == cached
    assert first.ok or first.error


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i}:{e['command'][:40]!r}" for i, e in enumerate(CORPUS)])
def test_a_corpus_command_reads_the_same_each_time(entry: dict[str, Any]) -> None:
    first, again, cached = _reads(entry["command"])
    assert again == first == cached, entry["command"]
    assert first.ok or first.error


def test_common_commands_read_as_their_programs() -> None:
    for command, programs in (
        ("cd src && git status --short && timeout 60 pytest -q tests/ 2>&1 | tail -n 5",
         ["cd", "git", "pytest", "tail"]),
        ("bash -c 'find . -name \"*.pyc\" -exec rm {} +' && echo done", ["bash", "find", "rm", "echo"]),
        ("ls -la 1; sudo rm -rf /", ["ls", "rm"]),
        ("git commit -m 'fix: the parser' && git push", ["git", "git"]),
    ):  # fmt: skip
        assert [c.program for c in _read_twice(command).commands] == programs, command


def test_find_substitutes_each_start_with_its_literal_edges() -> None:
    def argv(command: str) -> list[tuple[str, bool, str, str]]:
        parsed = parse_command(command)
        assert parsed.ok, parsed.error
        return [(w.text, w.literal, w.prefix, w.tail) for w in parsed.commands[-1].argv[1:]]

    # `{}` is the start itself: nothing literal after `$DIR`, as in `rm -rf "$DIR"`.
    assert argv('find "$DIR" -exec rm {} +') == [("$DIR", False, "", "")]
    assert argv('find "$DIR" -exec rm {}/x \\;') == [("$DIR/x", False, "", "/x")]
    assert argv('find /etc/"$X" -exec cp a {}/b \\;') == [
        ("a", True, "a", "a"),
        ("/etc/$X/b", False, "/etc/", "/b"),
    ]
    assert argv("find a b -exec rm x{} \\;") == [("xa", True, "xa", "xa"), ("xb", True, "xb", "xb")]
    assert argv('find "$A" -exec rm "$Q"{}z \\;') == [("$Q$Az", False, "", "z")]


@pytest.mark.parametrize(
    ("command", "literal_tilde"),
    [
        ("rm ~ ~/x ~root ~/'x' x~ \\\n~", [False] * 6),
        ("rm '~' \"~\" \\~ $'~' ''~ ~\"root\" ~'/'x ~\\/x \"~\"/x", [True] * 9),
        ("rm -rf '~'", [False, True]),  # one quoted string
        ("rm x && rm '~' y\"\"", [False, True, False]),
    ],
)
def test_a_quoted_tilde_is_marked(command: str, literal_tilde: list[bool]) -> None:
    words = [w for c in _read_twice(command).commands for w in c.argv[1:]]
    assert [w.literal_tilde for w in words] == literal_tilde


@given(
    st.lists(st.tuples(_PLAIN_PIECES, st.sampled_from([" ", "", "  ", "\t", "\n"])), max_size=6),
    st.booleans(),
)
def test_the_plain_words_shortcut_reads_what_the_word_reader_reads(
    pieces: list[tuple[str, str]], may_assign: bool
) -> None:
    from helikon.core.governance.shell._parse import Parser

    text = "".join(p + sep for p, sep in pieces)
    shortcut, general = Parser(text, 0), Parser(text, 0)
    words = shortcut.read_plain_words(may_assign=may_assign)
    if not words:
        assert shortcut.i == 0
        return
    assert not (may_assign and "=" in words[0].text)
    for word in words:
        general._skip_blanks()  # pyright: ignore[reportPrivateUsage]
        assert general._maybe_redirect() is None and not general._peek_op()  # pyright: ignore[reportPrivateUsage]
        assert general._read_word() == word  # pyright: ignore[reportPrivateUsage]
    assert general.i == shortcut.i
