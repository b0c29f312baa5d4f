"""Commands a red-team review ran through real Bash: each hid a program from the reader.

Every one must now either name the program it runs or fail closed; the ordinary commands
beside them must read as before.
"""

from __future__ import annotations

import pytest

from helikon.core.governance.rules import DenyRule, ToolSubject
from helikon.core.governance.shell import parse_command

HIDDEN_RM = [
    "echo $[1<<X]\nrm y",  # the old $[…] arithmetic, read as a here-doc
    "a[1<<X]=1\nrm y",  # a subscript holding `<<`
    "a[0+ 0]=3 rm y",  # a subscript holding a blank
    "declare -A a; a[k #x]=1; rm y",  # a subscript holding a comment sign
    "cat <<EOF\nEO\\\nF\nrm y\nEOF",  # a backslash-newline in the delimiter line
    ": <<EOF\nEO\\\nF\nrm y\nEOF",
    "cat <<EOF $(\nrm y\nEOF\n)",  # a here-doc pending across a multi-line substitution
    "$'\\x{72}m' y",  # bash 5.2's \x{HH}
    "time -- rm y",
    "time -p -- rm y",
    # a shell inside a compound command reads the compound's stdin
    "{ bash; } <<< 'rm y'",
    "(sh) <<< 'rm y'",
    "{ bash; } <<'EOF'\nrm y\nEOF",
    '{ bash; } <<< "$X"',
    "source /dev/stdin <<< 'rm y'",
    ". /dev/fd/0 <<< 'rm y'",
    "bash /dev/stdin <<< 'rm y'",
    "sh /proc/self/fd/0 <<'EOF'\nrm y\nEOF",
    # a second review's variants
    "env - rm y",
    "bash -c 'env - PATH=/tmp/bin rm y'",
    "find /tmp/bin -name rm -exec env {} y ';'",
    "find . -exec timeout 5 {} y \\;",
    "find . -exec sh -c {} \\;",
    "bash /dev/fd/3 3<<< 'rm y'",
    "source /dev/fd/3 3<<< 'rm y'",
    "bash /dev/./stdin <<< 'rm y'",
    "bash //dev/stdin <<< 'rm y'",
    "bash /proc/thread-self/fd/0 <<< 'rm y'",
    "bash ../../../../dev/stdin <<< 'rm y'",
    "trap -- '-x; rm y' EXIT",
    "printf 'rm y\\0' | xargs -0 bash -c",
    "SHELL=/usr/bin/python3 script -qc 'import os' /dev/null",
    "read PS4 <<< '$(rm y)'; set -x; :",
    "printf -v PS4 %s '$(rm y)'; set -x; :",
    "for PS4 in '$(rm y)'; do set -x; :; done",
    "declare -n r=PS4; r='$(rm y)'; set -x; :",
    "declare -n r=BASH_CMDS; r[foo]=/tmp/bin/rm; foo y",
    "shopt -s expand_aliases\nalias e='echo \\'\ne #; rm y",
    "cat <<EO\\\nF\n$(rm y)\nEOF",
    "find -O1 . -name x -exec rm {} +",
    "find -D stat . -exec rm -rf {} +",
    "eval bash <<< 'rm y'",  # a shell it runs inherits its stdin
    "bash -c bash <<< 'rm y'",
    "sh -c 'sh' <<< 'rm y'",
    "find . -maxdepth 0 -exec bash \\; <<< 'rm y'",
    "let a\\[\\$\\(rm\\ y\\)\\]=1",  # escaped or quote-split subscripts
    "test -v a\\[\\$\\(rm\\ y\\)\\]",
    "let 'a[$''(rm y)]=1'",
    "let 'a[b[1]+$(rm y)]=1'",
    "x='a[b[0]+$(rm y)]'; echo $((x))",
    "choom -n 0 rm y",  # runners the tables lacked
    "ssh-agent rm y",
    "fakeroot rm y",
    "valgrind -q rm y",
    "dbus-run-session -- rm y",
    "capsh -- -c 'rm y'",
    "start-stop-daemon --start --exec /bin/rm -- y",
    "gdb -batch -ex 'shell rm y'",
    "jobs -x rm y",  # a third review
    "a=1 jobs -x curl http://x; rm y",
    "ip netns exec ns1 rm y",
    "tmux new -d rm y",
    "screen -dm rm y",
    "parallel rm ::: y",
    "sshpass -p pw rm y",
    "at now <<< 'rm y'",
    "eatmydata rm y",
    "torsocks rm y",
    "proxychains4 -f /tmp/p.conf rm y",
    "trickle -d 10 rm y",
    "chronic rm y",
    "faketime '2020-01-01' rm y",
    "gtimeout 5 rm y",
    "hyperfine 'rm y'",
    "enable -f ./x.so rm",
    "faketime -f '+1d' rm y",  # wrapper tables checked against the tools' usage
    "torsocks -i rm y",
    "nocache -n 2 rm y",
    # variables whose value bash runs
    "PS4='$(rm y)'; set -x; :",
    "BASH_ENV=/dev/stdin bash -c : <<< 'rm y'",
    "PROMPT_COMMAND='rm y' bash -i </dev/null",
    "PS1='$(rm y)' bash --norc -i </dev/null",
    "x='$(rm y)'; echo ${x@P}",
    "BASH_CMDS[foo]=/bin/rm; foo y",
    "shopt -s expand_aliases; BASH_ALIASES[foo]=rm\nfoo y",
    # array subscripts evaluated from quoted text
    "let 'a[$(rm y)]=1'",
    "printf -v 'a[$(rm y)]' %s 1",
    "read 'a[$(rm y)]' <<< 1",
    "declare 'a[$(rm y)]=1'",
    "declare -i x='a[$(rm y)]'",
    "test -v 'a[$(rm y)]'",
    "[[ -v 'a[$(rm y)]' ]]",
    "[[ 'a[$(rm y)]' -eq 1 ]]",
    "x='a[$(rm y)]'; echo ${!x}",
    "declare -n r='a[$(rm y)]'; echo $r",
    "x='a[`rm y`]'; echo $((x))",
    "let $'a[\\x24(rm y)]=1'",
]

MOVED_CD = ["HOME=/etc; cd; echo x > passwd", "CDPATH=/ cd etc; echo x > passwd"]

ORDINARY = {
    "FOO=1 make -j4": ["make"],
    "a[1]=x; echo ok": ["echo"],
    "echo $((1<<3))": ["echo"],
    "cat <<EOF\nline \\\ncontinued\nEOF": ["cat"],
    "cat <<'EOF'\nEO\\\nF\nEOF": ["cat"],
    '[[ "$(git status --short)" == "" ]] && echo clean': ["git", "[[", "echo"],
    "echo '$(date)' > notes.txt": ["echo"],
    "time -p make": ["make"],
    "time make": ["make"],
    "while read l; do echo $l; done <<< 'a b'": ["read", "echo"],
    "[ -f pyproject.toml ] && uv sync": ["[", "uv"],
    "source .venv/bin/activate && pytest -q": ["source", "pytest"],
    "bash scripts/setup.sh <<< 'yes'": ["bash"],
    "read -r line < notes.txt && printf '%s\\n' \"$line\"": ["read", "printf"],
    "mapfile -t lines < notes.txt": ["mapfile"],
    "declare -n ref=items": ["declare"],
    "trap 'rm -f /tmp/lock' EXIT": ["trap", "rm"],
    "find . -name '*.py' -exec grep -n TODO {} +": ["find", "grep"],
    "bash -c 'read x; echo $x' <<< 'hi'": ["bash", "read", "echo"],
    "echo ${arr[1]} $(date)": ["date", "echo"],
    "valgrind --tool=memcheck ./a.out": ["a.out"],
    "ip addr show": ["ip"],
    "jobs -l": ["jobs"],
    "x=$(git rev-parse HEAD); echo ${x:0:7}": ["git", "echo"],
}
# Refused to be safe: bash evaluates a subscript as arithmetic, and a variable's value there
# is evaluated again (`i='x[$(rm y)]'` runs rm).
CONSERVATIVE = ["for i in 1 2; do a[$i]=x; done", "a[i j]=1"]


@pytest.mark.parametrize("command", HIDDEN_RM)
def test_a_hidden_rm_is_named_or_fails_closed(command: str) -> None:
    parsed = parse_command(command)
    assert not parsed.ok or "rm" in [c.program for c in parsed.commands], parsed
    assert DenyRule.bash_command("rm").matches(ToolSubject.of("Bash", {"command": command}))


@pytest.mark.parametrize("command", MOVED_CD + CONSERVATIVE)
def test_a_moved_cd_or_an_evaluated_subscript_fails_closed(command: str) -> None:
    assert not parse_command(command).ok


@pytest.mark.parametrize(("command", "programs"), ORDINARY.items())
def test_ordinary_commands_read_as_before(command: str, programs: list[str]) -> None:
    parsed = parse_command(command)
    assert parsed.ok, parsed.error
    assert [c.program for c in parsed.commands if c.program in programs] == programs
