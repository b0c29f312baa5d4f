"""Deny, allow and guard rules; path globs; the write breaker; the destructive defaults."""

from __future__ import annotations

import time

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from helikon import JsonValue
from helikon.core.exceptions import UserError
from helikon.core.governance.path_glob import PathGlob, clean_path, is_protected_dotpath
from helikon.core.governance.rules import AllowRule, DenyRule, GuardAction, GuardRule, ToolSubject, allowed_by

GUARDS = GuardRule.destructive_defaults()


def tripped(tool: str, args: object) -> list[str]:
    subject = ToolSubject.of(tool, args)  # type: ignore[arg-type]
    return [g.matcher for g in GUARDS if g.check(subject)]


# --- path globs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "cleaned"),
    [
        ("./a/b", "a/b"),
        ("a/../b", "b"),
        ("src/../.git/config", ".git/config"),
        ("../escape", "../escape"),
        ("a/../../b", "../b"),
        ("a\\b\\c", "a/b/c"),
        (".\\src\\..\\.git", ".git"),
        ("/etc/passwd", "etc/passwd"),
        ("/../etc", "etc"),
        ("a//b/./c/", "a/b/c"),
        ("", ""),
    ],
)
def test_clean_path(path: str, cleaned: str) -> None:
    assert clean_path(path) == cleaned


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        (".env", [".env", "a/b/.env", "./.env", ".ENV", "cfg\\.env"], [".envrc", "a/.env/x", "x.env"]),
        ("*.pem", ["key.pem", "secrets/key.PEM"], ["key.pub", "pem", "a.pem/b"]),
        (
            "src/**",
            ["src/main.py", "src/a/b.py", "./src/x", "src\\x", "/src/x"],
            ["src", "tests/x", "a/src/x"],
        ),
        ("/src/**", ["src/main.py"], ["a/src/main.py"]),
        ("docs/*.md", ["docs/a.md"], ["docs/a/b.md", "a.md"]),
        ("**/build/*", ["build/x", "a/b/build/x"], ["build", "build/x/y"]),
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/x/c"]),
        ("dist/", ["dist", "dist/x", "a/dist/x/y"], ["distx"]),
        ("file?.txt", ["file1.txt", "a/fileZ.txt"], ["file10.txt", "file/.txt"]),
        ("[abc].py", ["a.py", "x/b.py"], ["d.py"]),
        ("[!abc].py", ["d.py"], ["a.py", "/.py"]),
        ("**", ["anything", "a/b/c"], []),
    ],
)
def test_path_glob(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    glob = PathGlob.compile(pattern)
    for path in matching:
        assert glob.matches(path), (pattern, path)
    for path in not_matching:
        assert not glob.matches(path), (pattern, path)


def test_anchored_globs_cannot_be_escaped_with_dotdot() -> None:
    glob = PathGlob.compile("src/**")
    assert not glob.matches("src/../.git/config")
    assert not glob.matches("../src/x")


def test_globs_are_cached_equal_and_immutable() -> None:
    assert PathGlob.compile("src/**") is PathGlob.compile("src/**")
    assert PathGlob.compile("./.env") == PathGlob.compile(".env")
    assert hash(PathGlob.compile("./.env")) == hash(PathGlob.compile(".env"))
    assert repr(PathGlob.compile("src/**")) == "PathGlob('src/**')"
    with pytest.raises(AttributeError):
        PathGlob.compile(".env").pattern = "x"  # type: ignore[misc]


@pytest.mark.parametrize("bad", ["", "   ", "/", "./", "src/[ab", "a**b/c", "../x", "a/./b", "x\0y"])
def test_bad_globs_are_user_errors(bad: str) -> None:
    with pytest.raises(UserError, match="path pattern"):
        PathGlob.compile(bad)


def test_non_str_glob_is_a_user_error() -> None:
    with pytest.raises(UserError, match="str"):
        PathGlob.compile(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        (".git/config", True),
        ("a/.ssh/id_rsa", True),
        (".env", True),
        ("src/.env.local", True),
        (".SSH/id_rsa", True),
        (".Git/config", True),
        ("config/.ENV", True),
        ("src/../.git/config", True),
        (".git\\config", True),
        (".git", True),
        ("name.git/config", False),
        (".gitignore", False),
        (".github/ci.yml", False),
        ("environment.env", False),
        (".envrc", False),
        (".env/x", False),
        ("src/main.rs", False),
        (".git/../src/x", False),
    ],
)
def test_write_breaker_is_component_exact(path: str, protected: bool) -> None:
    assert is_protected_dotpath(path) is protected


# --- deny rules -----------------------------------------------------------------------------------


def test_deny_tool_matches_the_exact_name() -> None:
    rule = DenyRule.tool("Bash")
    assert rule.matches("Bash", {"command": "ls"})
    assert not rule.matches("bash", {})
    assert not rule.matches("Read", {"path": "x"})


def test_deny_bash_command_is_scoped_to_bash() -> None:
    rule = DenyRule.bash_command("rm")
    assert rule.matches("Bash", {"command": "rm x"})
    assert not rule.matches("Other", {"command": "rm -rf ."})
    assert not rule.matches("Read", {"path": "rm"})


def test_deny_bash_command_matches_wrappers_too() -> None:
    assert DenyRule.bash_command("sudo").matches("Bash", {"command": "sudo ls"})
    assert DenyRule.bash_command("timeout").matches("Bash", {"command": "timeout 5 ls"})
    assert DenyRule.bash_command("bash").matches("Bash", {"command": "bash -c 'ls'"})
    assert DenyRule.bash_command("xargs").matches("Bash", {"command": "ls | xargs echo"})


def test_deny_bash_command_ignores_case_as_macos_would() -> None:
    assert DenyRule.bash_command("rm").matches("Bash", {"command": "RM x"})
    assert DenyRule.bash_command("RM").matches("Bash", {"command": "rm x"})


def test_deny_read_and_edit_paths() -> None:
    read = DenyRule.read(".env")
    assert read.matches("Read", {"path": "app/.env"})
    assert read.matches("Read", {"file_path": "./.ENV"})
    assert not read.matches("Write", {"path": ".env"})
    assert not read.matches("Read", {"path": ".envrc"})
    edit = DenyRule.edit("dist/**")
    for tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        assert edit.matches(tool, {"path": "dist/a.js"})
    assert not edit.matches("Read", {"path": "dist/a.js"})
    assert not edit.matches("Write", {"path": "src/dist/a.js"})


@pytest.mark.parametrize("args", [None, {}, {"path": 3}, {"path": ""}, ["x"], {"path": "a\0b"}])
def test_malformed_paths_fail_closed(args: object) -> None:
    assert DenyRule.read("*.pem").matches("Read", args)  # type: ignore[arg-type]
    assert not AllowRule.read("**").matches("Read", args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "arg", "message"),
    [
        (DenyRule.tool, "", "non-empty"),
        (DenyRule.tool, 3, "non-empty str"),
        (DenyRule.bash_command, "", "non-empty"),
        (DenyRule.bash_command, "/bin/rm", "program name"),
        (DenyRule.bash_command, "rm -rf", "program name"),
        (AllowRule.bash_command, " git", "program name"),
        (DenyRule.read, "src/[", "unclosed"),
        (AllowRule.edit, "", "non-empty"),
    ],
)
def test_bad_rules_are_user_errors(build: object, arg: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        build(arg)  # type: ignore[operator]


def test_rules_are_frozen_hashable_and_readable() -> None:
    assert DenyRule.bash_command("rm") == DenyRule.bash_command("rm")
    assert len({DenyRule.bash_command("rm"), DenyRule.bash_command("rm"), AllowRule.bash_command("rm")}) == 2
    assert repr(DenyRule.bash_command("rm")) == "DenyRule.bash_command('rm')"
    assert repr(AllowRule.edit("src/**")) == "AllowRule.edit('src/**')"
    assert repr(GUARDS[0]) == "GuardRule(ASK, 'rm_root')"
    guard = GuardRule.deny(DenyRule.tool("X"), "no X")
    assert repr(guard) == "GuardRule.deny(DenyRule.tool('X'), 'no X')"
    with pytest.raises(AttributeError):
        DenyRule.tool("X").value = "Y"  # type: ignore[misc]


# --- allow rules ----------------------------------------------------------------------------------


def test_allow_rules_by_tool_and_path() -> None:
    assert AllowRule.tool("WebSearch").matches("WebSearch", {"q": "x"})
    assert not AllowRule.tool("WebSearch").matches("WebFetch", {})
    assert AllowRule.read("src/**").matches("Read", {"path": "src/a.py"})
    assert not AllowRule.read("src/**").matches("Read", {"path": "src/../.env"})
    assert AllowRule.edit("src/**").matches("Write", {"path": "src/a.py"})
    assert not AllowRule.edit("src/**").matches("Read", {"path": "src/a.py"})


def test_allow_bash_needs_every_sub_command() -> None:
    git = AllowRule.bash_command("git")
    assert git.matches("Bash", {"command": "git status && git diff"})
    assert not git.matches("Bash", {"command": "git status && ls"})
    assert not git.matches("Bash", {"command": "x=1"})  # nothing to allow
    assert not git.matches("Bash", {"command": "GIT=1"})
    assert not git.matches("Bash", {"command": "git 'x"})


def test_allowed_by_composes_rules() -> None:
    rules = [AllowRule.bash_command("git"), AllowRule.bash_command("ls"), AllowRule.tool("Read")]
    assert allowed_by(rules, "Bash", {"command": "ls && git status"})
    assert not allowed_by(rules, "Bash", {"command": "ls && rm x"})
    assert allowed_by(rules, "Read", {"path": "x"})
    assert not allowed_by(rules, "Write", {"path": "x"})
    assert not allowed_by([], "Bash", {"command": "ls"})


# --- guard rules ----------------------------------------------------------------------------------


def test_destructive_defaults_ask() -> None:
    assert [g.matcher for g in GUARDS] == ["rm_root", "system_write", "dotpath_write"]
    assert all(g.action is GuardAction.ASK for g in GUARDS)
    assert GuardAction.ASK == "ask"
    assert GuardRule.destructive_defaults() is GUARDS


def test_guard_reasons_name_the_target() -> None:
    reason = GUARDS[1].check("Bash", {"command": "echo x > /etc/passwd"})
    assert reason is not None
    assert reason.startswith("write to a protected system path") and reason.endswith(": /etc/passwd")
    assert GUARDS[0].check("Bash", {"command": "ls"}) is None


@pytest.mark.parametrize(
    ("tool", "path", "expected"),
    [
        ("Write", "/etc/passwd", ["system_write"]),
        ("Edit", "/usr/local/bin/x", ["system_write"]),
        ("Write", "/tmp/../etc/x", ["system_write"]),
        ("Write", "../../../etc/x", ["system_write"]),
        ("Write", "/dev/null", []),
        ("Write", "/dev/sda", ["system_write"]),
        ("Write", "./notes.txt", []),
        ("Write", "/tmp/x", []),
        ("Write", ".git/config", ["dotpath_write"]),
        ("Edit", "a/.ssh/known_hosts", ["dotpath_write"]),
        ("Write", ".env.local", ["dotpath_write"]),
        ("Write", "repo.git/HEAD", []),
        ("Write", ".gitignore", []),
        ("Write", "/etc/.git/x", ["system_write", "dotpath_write"]),
        ("Read", "/etc/passwd", []),
        ("Read", ".env", []),
    ],
)
def test_guards_on_write_tools(tool: str, path: str, expected: list[str]) -> None:
    assert tripped(tool, {"path": path}) == expected


def test_custom_guard_rules() -> None:
    ask = GuardRule.ask(DenyRule.edit("migrations/**"), "migrations are reviewed")
    assert ask.action is GuardAction.ASK
    assert ask.check("Write", {"path": "migrations/001.sql"}) == "migrations are reviewed"
    assert ask.check("Write", {"path": "src/x.py"}) is None
    with pytest.raises(UserError, match="DenyRule"):
        GuardRule.deny("rm", "x")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="reason"):
        GuardRule.ask(DenyRule.tool("X"), "")


def test_the_breaker_runs_even_when_an_allow_rule_would_match() -> None:
    subject = ToolSubject.of("Write", {"path": ".git/hooks/pre-commit"})
    assert AllowRule.edit(".git/**").matches(subject)
    assert any(g.check(subject) for g in GUARDS)  # the pipeline checks guards first


def test_subject_is_reused_and_computes_each_guard_once() -> None:
    subject = ToolSubject.of("Bash", {"command": "cd / && rm -rf *"})
    assert ToolSubject.of(subject) is subject
    first = GUARDS[0].check(subject)
    assert first is not None and GUARDS[0].check(subject) == first
    assert subject.guard("rm_root") == "*"
    assert "ToolSubject('Bash'" in repr(subject)


def test_tool_name_must_be_a_str() -> None:
    with pytest.raises(UserError, match="tool name"):
        ToolSubject(3)  # type: ignore[arg-type]


def test_fifty_rules_and_the_guards_are_cheap() -> None:
    # Not a timing assertion (the machines are noisy): a sanity bound far above the
    # measured cost, to catch an accidental per-rule parse.
    rules = [DenyRule.bash_command(f"prog{i}") for i in range(25)]
    rules += [DenyRule.read(f"secret{i}/**") for i in range(10)]
    rules += [DenyRule.tool(f"Tool{i}") for i in range(15)]
    args: JsonValue = {"command": "git status && ls -la src | grep -v foo > /tmp/out.txt"}
    start = time.perf_counter()
    for _ in range(200):
        subject = ToolSubject("Bash", args)
        assert not any(rule.matches(subject) for rule in rules)
        assert not any(guard.check(subject) for guard in GUARDS)
    assert (time.perf_counter() - start) / 200 < 0.005


_PATH_PIECES = st.sampled_from(
    ["a", ".git", ".GIT", ".ssh", ".env", ".env.local", ".envrc", "..", ".", "/", "\\", "~", "x.git", "$X",
     "{a,.git}", "${HOME}", "*", "\u212a", "\u0130", "\u03a3", ".G\u0130T", "src", "etc", "ETC", "usr",
     "a..b"]
)  # fmt: skip


@given(
    st.lists(st.lists(_PATH_PIECES, max_size=5).map("/".join), max_size=3),
    st.lists(st.lists(_PATH_PIECES, max_size=4).map("/".join), max_size=2),
    st.booleans(),
)
def test_a_dotpath_trip_always_names_a_protected_entry_or_a_pattern(
    texts: list[str], cwds: list[str], literal: bool
) -> None:
    from helikon.core.governance import _guards
    from helikon.core.governance.shell import Word

    targets = [Word(t, literal, t.split("$")[0], t.rsplit("}", 1)[-1]) for t in texts]
    directories = ["", *cwds]
    if _guards._dotpath_write(targets, directories) is None:
        return
    # Lowering works character by character, so a `.git`, `.ssh` or `.env` in a checked
    # path is in the lowered texts; only a glob, a brace list or an expansion may stand
    # for one without spelling it.
    joined = "\0".join([*(w.text for w in targets), *directories]).lower()
    assert any(name in joined for name in (".git", ".ssh", ".env", "*", "?", "[")) or any(
        w.glob or (w.prefix and not w.literal) for w in targets
    ), (texts, cwds, literal)


def test_guard_verdicts_are_shared_by_command_and_read_from_the_subjects_parse() -> None:
    first = ToolSubject.of("Bash", {"command": "cd /tmp && rm -rf ../* > .git/x"})
    second = ToolSubject.of("Bash", {"command": "cd /tmp && rm -rf ../* > .git/x"})
    assert first.guard("rm_root") == "../*"
    assert first.guard("dotpath_write") == ".git/x"
    assert first.guard("system_write") == "../*"  # /tmp/../* is /*, which holds /etc
    assert second.guard("no_such_guard") is None
    assert ToolSubject.of("Bash", {"command": "cd /tmp && rm -rf ../x"}).guard("system_write") is None
    assert ToolSubject.of("Bash", {"command": "ls -la && git status"}).guard("rm_root") is None
    assert ToolSubject.of("Bash", {}).guard("rm_root") is None  # the deny and allow rules fail closed


@given(st.lists(_PATH_PIECES, max_size=6).map("/".join), st.lists(_PATH_PIECES, max_size=3).map("/".join))
def test_the_system_path_shortcut_agrees_with_the_full_check(text: str, cwd: str) -> None:
    from helikon.core.governance import _guards

    def reference(text: str, cwds: list[str], unknown: bool) -> bool:  # without the `..` shortcut
        if text.startswith("~"):
            return False
        if text.startswith("/"):
            return _guards._is_system_path("/" + clean_path(text))
        if any(c.startswith("/") and _guards._is_system_path("/" + clean_path(f"{c}/{text}")) for c in cwds):
            return True
        parts = clean_path(text).split("/")
        first = next((p for p in parts if p != ".."), "")
        return (parts[0] == ".." or unknown) and first.lower() in _guards._PROTECTED_TOP

    # Globs and `~` paths climbing out of home are judged as patterns (tests/unit/
    # test_guard_bypasses.py); the reference is for plain paths.
    assume(not any(c in text + cwd for c in "*?[{~"))
    for cwds in ([""], ["", cwd], ["", "/" + cwd]):
        for unknown in (False, True):
            assert _guards._system_target(text, cwds, unknown) == reference(text, cwds, unknown)
