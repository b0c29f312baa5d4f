"""Bypasses of the wrapper and re-entry resolver (`governance.shell._resolve`), each confirmed with
real tools: the parse named another program, or none, while `rm` ran.

Each must now list `rm` among its programs or fail closed (unparseable); the ordinary
commands after them must resolve exactly as they did before the fixes.
"""

from __future__ import annotations

import pytest

from helikon.core.governance.rules import AllowRule, DenyRule
from helikon.core.governance.shell import parse_command

DENY_RM = DenyRule.bash_command("rm")

BYPASSES: list[tuple[str, str]] = [
    ("1", "timeout --sig KILL 5 rm y"),
    ("1", "timeout --foreground --k 1 5 rm y"),
    ("1", "nice --adj 5 rm y"),
    ("1", "env --ch /tmp rm y"),
    ("1", "env --un X rm y"),
    ("1", "stdbuf --out L rm y"),
    ("1", "ionice -c 2 --classd 0 rm y"),
    ("1", "flock --time 5 /tmp/lk rm y"),
    ("1", "echo a | xargs --max-a 1 rm"),
    ("1", "watch --int 1 rm y"),
    ("1", "watch -x --int 1 rm y"),
    ("1", "ionice --pg 5 rm y"),
    ("1", "strace --summary-col x rm y"),
    ("1", "strace --summary rm y"),
    ("1", "sudo --login-c x rm y"),
    ("1", "sudo --login rm y"),
    ("1", "nsenter --wd rm y"),
    ("1", "nsenter --wdn / rm y"),
    ("1", "env --split-str 'rm y'"),
    ("1", "unshare --map-u 0 rm y"),
    ("1", "xargs --max-lines rm"),
    ("1", "su --sh /bin/bash root -c 'rm y'"),
    ("2", "timeout {-k,1} 5 rm y"),
    ("2", "timeout {-s,KILL} 5 rm y"),
    ("2", "find . -maxdepth 0 {-exec,rm} y \\;"),
    ("2", "bash {-c,'rm y'}"),
    ("2", "sh {-c,'rm y'}"),
    # a brace list across quotes, after a glob in the same word (the fast path's word reader)
    ("2", "bash x*'y'{-c,'rm y'}"),
    ("2", "timeout x*'y'{-s,KILL} 5 rm y"),
    ("2", "ls && bash -c \"bash x*'y'{-c,'rm y'}\""),
    ("2", "nice {-n,5} rm y"),
    ("2", "xargs {-n,1} rm"),
    ("2", "bash -c{,} 'rm y'"),
    ("2", "eval {rm,y}"),
    ("2", "sudo {-u,root} rm y"),
    ("2", "env {-u,X} rm y"),
    ("3", "su root -c'rm y'"),
    ("3", "runuser root -c'rm y'"),
    ("3", "su root --command='rm y'"),
    ("3", "su root --comm 'rm y'"),
    ("3", "su root --session-command='rm y'"),
    ("3", "su root --sess 'rm y'"),
    ("3", "su -s /path/to/rm root y"),
    ("3", "su --shell=/bin/rm root"),
    ("3", "su -s/bin/rm root"),
    ("3", "runuser -u bob -s /bin/rm"),
    ("3", "su -s /usr/bin/fish root -c 'rm y'"),
    ("3", "su root -- -c 'rm y'"),
    ("3", "su - root <<< 'rm y'"),
    ("4", "rbash -c 'rm y'"),
    ("4", "script -qc 'rm y' /dev/null"),
    ("4", "script --command 'rm y' /dev/null"),
    ("4", "script /dev/null -c 'rm y'"),
    ("4", "script -q /dev/null <<< 'rm y'"),
    ("4", "sg root -c 'rm y'"),
    ("4", "sg - root 'rm y'"),
    ("4", "setpriv rm y"),
    ("4", "setpriv --reuid 1000 --init-groups rm y"),
    ("4", "unshare rm y"),
    ("4", "unshare -r --setuid 0 rm y"),
    ("4", "prlimit rm y"),
    ("4", "prlimit --pid 1 rm y"),
    ("4", "setarch x86_64 rm y"),
    ("4", "setarch x86_64 -R rm y"),
    ("4", "setarch -R rm y"),
    ("4", "x86_64 rm y"),
    ("4", "linux64 rm y"),
    ("4", "linux32 rm y"),
    ("4", "i386 rm y"),
    ("4", "strace -o /dev/null rm y"),
    ("4", "strace -e trace=open -s 80 rm y"),
    ("4", "strace --output /dev/null rm y"),
    ("4", "ltrace rm y"),
    ("4", "ltrace -o f -e malloc rm y"),
    ("4", "/lib64/ld-linux-x86-64.so.2 /bin/rm FILE"),
    ("4", "/lib/ld-linux.so.2 --library-path /lib rm y"),
    ("4", "ld.so --preload x rm y"),
    ("4", "/lib/ld-musl-x86_64.so.1 rm y"),
    ("5", "bash -s x <<< 'rm y'"),
    ("5", "bash -s -- x <<< 'rm y'"),
    ("5", "bash -ooc errexit pipefail 'rm y'"),
    ("5", "bash -oO errexit extglob -c 'rm y'"),
    ("5", "bash 3<<<'rm y' 0<&3"),
    ("5", "bash 3<<'EOF' 0<&3\nrm y\nEOF"),
    ("5", "BASH_ENV=/dev/stdin bash -c : <<< 'rm y'"),
    ("5", "env BASH_ENV=/dev/stdin bash -c : <<< 'rm y'"),
    ("5", "env 'BASH_FUNC_f%%=() { rm y; }' bash -c f"),
    ("5", "timeout 5 env PS4='$(rm y)' bash -xc :"),
    ("5", "export BASH_ENV=/dev/stdin; bash -c : <<< 'rm y'"),
    ("5", "declare -x PS4='$(rm y)'"),
    ("5", "typeset PROMPT_COMMAND='rm y'"),
    ("5", "local ENV=x"),
    ("5", "readonly SHELLOPTS=xtrace"),
    ("5", "command export BASH_ENV=x"),
    ("5", "exec 0<<<'rm y'; bash"),
    ("5", "exec {fd}<<<'rm y'; bash <&$fd"),
    ("5", "exec 3<<'EOF'\nrm y\nEOF"),
    ("5", "sudo -s <<< 'rm y'"),
    ("6", "mapfile -C 'rm y' -c 1 <<< a"),
    ("6", "readarray -C 'rm y' -c 1 <<< a"),
    ("6", "mapfile -tC 'rm y' arr"),
    ("6", "readarray -t -C 'rm y' arr"),
    ("6", "compgen -C 'rm y' a"),
    ("6", "compgen -F f"),
    ("6", "compgen -W x -F f"),
    ("6", "complete -C 'rm y' x"),
    ("6", "complete -F f x"),
    ("6", "hash -p /path/to/rm foo; foo y"),
    ("6", "hash -tp /bin/rm foo"),
    ("7", "sudo FOO=1 rm y"),
    ("7", "sudo -u root FOO=1 BAR=2 rm y"),
    ("7", "sudo BASH_ENV=/x bash -c :"),
    # a runner whose commands are not analysed, behind a wrapper: it was recorded as itself
    ("8", "timeout 5 gdb -batch -ex 'shell rm y'"),
    ("8", "sudo parallel rm ::: y"),
    ("8", "nice -n 5 capsh -- -c 'rm y'"),
    ("8", "env A=1 perf stat rm y"),
    ("8", "command tmux new 'rm y'"),
    ("8", "ld-linux-x86-64.so.2 /usr/bin/gdb -ex 'shell rm y'"),
]


@pytest.mark.parametrize(("item", "command"), BYPASSES, ids=[f"{i}:{c}" for i, c in BYPASSES])
def test_bypass_runs_rm_or_fails_closed(item: str, command: str) -> None:
    """`item` is the number of the confirmed bypass family (see the commit messages)."""
    parse = parse_command(command)
    assert not parse.ok or "rm" in [c.program for c in parse.commands], parse
    assert DENY_RM.matches("Bash", {"command": command})


# (command, ((program, wrappers, args), ...)) as the resolver read them before the fixes.
ORDINARY: list[tuple[str, tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]]] = [
    ("timeout 5 pytest -q", (("pytest", ("timeout",), ("-q",)),)),
    ("timeout -s KILL 5 make", (("make", ("timeout",), ()),)),
    ("timeout --signal=TERM 10 make test", (("make", ("timeout",), ("test",)),)),
    ("timeout --foreground 5 ls", (("ls", ("timeout",), ()),)),
    ("nice -n 5 make", (("make", ("nice",), ()),)),
    ("nice -5 make", (("make", ("nice",), ()),)),
    ("nice --adjustment=3 make", (("make", ("nice",), ()),)),
    ("env A=1 B=2 python x.py", (("python", ("env",), ("x.py",)),)),
    ("env -i PATH=/bin ls", (("ls", ("env",), ()),)),
    ("env -u X ls", (("ls", ("env",), ()),)),
    ("env -C /tmp ls", (("ls", ("env",), ()),)),
    ("stdbuf -oL grep x f", (("grep", ("stdbuf",), ("x", "f")),)),
    ("stdbuf --output=L grep x f", (("grep", ("stdbuf",), ("x", "f")),)),
    ("xargs -n 1 echo", (("xargs", (), ("-n", "1", "echo")), ("echo", (), ()))),
    (
        "xargs -0 -I {} cp {} dir",
        (("xargs", (), ("-0", "-I", "{}", "cp", "{}", "dir")), ("cp", (), ("{}", "dir"))),
    ),
    ("xargs --max-args=2 echo", (("xargs", (), ("--max-args=2", "echo")), ("echo", (), ()))),
    ("ionice -c 3 make", (("make", ("ionice",), ()),)),
    ("flock /tmp/lk make", (("make", ("flock",), ()),)),
    ("flock -w 5 /tmp/lk make", (("make", ("flock",), ()),)),
    ("flock /tmp/lk -c 'make x'", (("flock", (), ("/tmp/lk", "-c", "make x")), ("make", (), ("x",)))),
    ("su - root", (("-", ("su",), ("root",)),)),
    ("su root", (("root", ("su",), ()),)),
    ("su -l root", (("root", ("su",), ()),)),
    ("su root -c ls", (("su", (), ("root", "-c", "ls")), ("ls", (), ()))),
    ("su - root -c 'make'", (("su", (), ("-", "root", "-c", "make")), ("make", (), ()))),
    ("runuser -u bob ls", (("ls", ("runuser",), ()),)),
    ("runuser -u bob -- make test", (("make", ("runuser",), ("test",)),)),
    ("sudo -u bob ls", (("ls", ("sudo",), ()),)),
    ("sudo -E make install", (("make", ("sudo",), ("install",)),)),
    ("sudo --user=bob make", (("make", ("sudo",), ()),)),
    ("sudo -s", (("sudo", (), ("-s",)),)),
    ("sudo -i", (("sudo", (), ("-i",)),)),
    ("sudo -s ls", (("sudo", (), ("-s", "ls")), ("ls", (), ()))),
    ("sudo -e /etc/hosts", (("sudoedit", ("sudo",), ("/etc/hosts",)),)),
    ("sudo mkdir -p d/{a,b}", (("mkdir", ("sudo",), ("-p", "d/{a,b}")),)),
    ("doas -u bob ls", (("ls", ("doas",), ()),)),
    ("bash -c 'ls'", (("bash", (), ("-c", "ls")), ("ls", (), ()))),
    ("bash -lc 'make && ls'", (("bash", (), ("-lc", "make && ls")), ("make", (), ()), ("ls", (), ()))),
    ("bash script.sh", (("bash", (), ("script.sh",)),)),
    ("bash -x script.sh arg", (("bash", (), ("-x", "script.sh", "arg")),)),
    ("sh -e script.sh", (("sh", (), ("-e", "script.sh")),)),
    (
        "bash -o pipefail -c 'ls | wc'",
        (("bash", (), ("-o", "pipefail", "-c", "ls | wc")), ("ls", (), ()), ("wc", (), ())),
    ),
    ("bash -O extglob script.sh", (("bash", (), ("-O", "extglob", "script.sh")),)),
    ("bash <<< 'ls'", (("bash", (), ()), ("ls", (), ()))),
    ("bash -s <<< 'ls'", (("bash", (), ("-s",)), ("ls", (), ()))),
    (
        "find . -name '*.py' -exec grep -n x {} +",
        (
            ("find", (), (".", "-name", "*.py", "-exec", "grep", "-n", "x", "{}", "+")),
            ("grep", ("find",), ("-n", "x", ".")),
        ),
    ),
    (
        "find . -type f -delete",
        (("find", (), (".", "-type", "f", "-delete")), ("rm", ("find",), ("-r", "-f", "--", "."))),
    ),
    (
        "find src -name x -execdir ls {} \\;",
        (("find", (), ("src", "-name", "x", "-execdir", "ls", "{}", ";")), ("ls", ("find",), ("src",))),
    ),
    ("watch -n 1 ls", (("watch", (), ("-n", "1", "ls")), ("ls", (), ()))),
    ("watch -x ls -l", (("watch", (), ("-x", "ls", "-l")), ("ls", (), ("-l",)))),
    ("eval ls", (("eval", (), ("ls",)), ("ls", (), ()))),
    ("trap 'ls' EXIT", (("trap", (), ("ls", "EXIT")), ("ls", (), ()))),
    ("alias ll='ls -l'", (("alias", (), ("ll=ls -l",)), ("ls", (), ("-l",)))),
    ("exec ls", (("ls", ("exec",), ()),)),
    ("exec 3>x", (("exec", (), ()),)),
    ("exec >log 2>&1", (("exec", (), ()),)),
    ("command -v ls", (("ls", ("command",), ()),)),
    ("builtin cd /tmp", (("cd", ("builtin",), ("/tmp",)),)),
    ("nohup make &", (("make", ("nohup",), ()),)),
    ("setsid make", (("make", ("setsid",), ()),)),
    ("chroot /srv ls", (("ls", ("chroot",), ()),)),
    ("nsenter -t 1 -m ls", (("ls", ("nsenter",), ()),)),
    ("taskset 0x1 make", (("make", ("taskset",), ()),)),
    ("chrt 5 make", (("make", ("chrt",), ()),)),
    ("export A=1 B=2", (("export", (), ("A=1", "B=2")),)),
    ("export PATH=/x:$PATH", (("export", (), ("PATH=/x:$PATH",)),)),
    ("declare -a x", (("declare", (), ("-a", "x")),)),
    ("local y=1", (("local", (), ("y=1",)),)),
    ("readonly Z=3", (("readonly", (), ("Z=3",)),)),
    ("typeset -i n=1", (("typeset", (), ("-i", "n=1")),)),
    ("mapfile -t arr < f", (("mapfile", (), ("-t", "arr")),)),
    ("readarray -t lines", (("readarray", (), ("-t", "lines")),)),
    ("compgen -W 'a b' -- a", (("compgen", (), ("-W", "a b", "--", "a")),)),
    ("complete -W 'x y' cmd", (("complete", (), ("-W", "x y", "cmd")),)),
    ("hash -r", (("hash", (), ("-r",)),)),
    ("hash", (("hash", (), ()),)),
    ("X=1 timeout 5 ls", (("ls", ("timeout",), ()),)),
    ("A=1 bash -c ls", (("bash", (), ("-c", "ls")), ("ls", (), ()))),
    ("ls -la", (("ls", (), ("-la",)),)),
    ("git status && ls", (("git", (), ("status",)), ("ls", (), ()))),
    ("script", (("script", (), ()),)),
    ("strace", (("strace", (), ()),)),
    ("unshare", (("unshare", (), ()),)),
]


@pytest.mark.parametrize(("command", "expected"), ORDINARY, ids=[c for c, _ in ORDINARY])
def test_ordinary_commands_resolve_as_before(
    command: str, expected: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
) -> None:
    parse = parse_command(command)
    assert parse.ok, parse.error
    assert tuple((c.program, c.wrappers, c.args) for c in parse.commands) == expected


@pytest.mark.parametrize(
    ("command", "programs"),
    [
        ("strace -f -o out.txt python x.py", ["python"]),
        ("strace -e trace=file -s 200 make", ["make"]),
        ("unshare -r --map-user 0 id", ["id"]),
        ("setpriv --reuid 1000 --regid 1000 --init-groups id", ["id"]),
        ("prlimit --nofile=1024 make", ["make"]),
        ("setarch x86_64 -R ./a.out", ["a.out"]),
        ("linux32 make", ["make"]),
        ("/lib64/ld-linux-x86-64.so.2 --list /bin/ls", ["ls"]),
        ("script -qc 'make test' /dev/null", ["script", "make"]),
        ("script out.log", ["script"]),
        ("sg docker -c 'docker ps'", ["sg", "docker"]),
        ("rbash -c ls", ["rbash", "ls"]),
        ("su -s /bin/bash root -c 'make'", ["su", "make"]),
        ("bash -s arg <<< 'ls'", ["bash", "ls"]),
        ("bash -o errexit -o pipefail -c 'ls'", ["bash", "ls"]),
        ("sudo FOO=1 make", ["make"]),
        ("exec 3<<<'hello'", ["exec", "hello"]),
        ("export A=1 PATH=/x", ["export"]),
        ("mapfile -t -c 1 arr < f", ["mapfile"]),
        ("timeout 5 ls dir/{a,b}", ["ls"]),
        ("sudo mkdir -p build/{a,b}", ["mkdir"]),
    ],
)
def test_new_runners_resolve(command: str, programs: list[str]) -> None:
    parse = parse_command(command)
    assert parse.ok, parse.error
    assert [c.program for c in parse.commands] == programs


def test_sudo_assignments_are_recorded() -> None:
    (command,) = parse_command("sudo -u bob FOO=1 make").commands
    assert command.assignments == ("FOO=1",)
    assert not AllowRule.bash_command("make").matches("Bash", {"command": "sudo FOO=1 make"})


def test_loader_names_are_wrappers() -> None:
    assert DenyRule.bash_command("ld-linux-aarch64.so.1").matches(
        "Bash", {"command": "/lib/ld-linux-aarch64.so.1 /bin/true"}
    )
    assert [c.program for c in parse_command("/lib/ld-linux-aarch64.so.1 /bin/rm x").commands] == ["rm"]
