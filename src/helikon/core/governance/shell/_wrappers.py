"""The programs that run the command after their options: their option tables.

`Wrapper` describes one (`timeout DURATION cmd`, `sudo -u USER cmd`, `su USER -c CMD`):
which short and long options take an argument, which one holds a shell string, how many
operands come before the command. `_resolve` strips them by these tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple


class Wrapper(NamedTuple):
    short_arg: str = ""  # short options that take an argument
    long_arg: frozenset[str] = frozenset()  # long options that take a separate argument
    positional: int = 0  # operands before the command (`timeout DURATION cmd`)
    script: str = ""  # a short option whose argument is a shell string (`su -c`)
    eval_flags: str = ""  # flags that make the rest one shell string (`sudo -s cmd`)
    # Long options with no separate argument whose name begins an argument-taking one's
    # (`strace --summary` against `--summary-columns`): an exact name wins over a prefix.
    long_flag: frozenset[str] = frozenset()
    long_script: frozenset[str] = frozenset()  # long options whose argument is a shell string
    leading: int = 0  # an operand before the options (`setarch ARCH -R cmd`)


def longs(names: str) -> frozenset[str]:
    """`--name` for each space-separated name."""
    return frozenset(f"--{name}" for name in names.split())


SU = Wrapper(
    "ugGws",
    longs("user group supp-group shell whitelist-environment"),
    script="c",
    long_script=longs("command session-command"),
)
STRACE = Wrapper(
    "abeEIoOpPsSuUX",
    longs(
        "env attach user detach-on interruptible trace signal status trace-path columns abbrev"
        " verbose raw read write kvm inject fault output string-limit const-print-style"
        " summary-syscall-overhead summary-sort-by summary-columns decode-pids argv0"
    ),
    long_flag=longs("summary"),
)
SETARCH = Wrapper()  # `x86_64 -R cmd`: flags only
# ld.so runs the program named after its options (`/lib64/ld-linux-x86-64.so.2 /bin/rm`).
LD_SO = Wrapper(
    "",
    longs("library-path inhibit-rpath audit preload argv0 glibc-hwcaps-prepend glibc-hwcaps-mask"),
)
# setarch's personality names, each a `setarch ARCH`.
ARCHES = (
    "linux32 linux64 uname26 i386 i486 i586 i686 x86_64 ppc ppc32 ppc64 s390 s390x sparc"
    " sparc32 sparc64 ia64 parisc parisc32 parisc64 mips mips32 mips64"
)
WRAPPERS: Mapping[str, Wrapper] = MappingProxyType(
    {
        "timeout": Wrapper("sk", longs("signal kill-after"), 1),
        "nice": Wrapper("n", longs("adjustment")),
        "nohup": Wrapper(),
        "stdbuf": Wrapper("ioe", longs("input output error")),
        # `--block-signal`, `--default-signal`, `--ignore-signal` take their value after `=` only.
        "env": Wrapper("uCSa", longs("unset chdir split-string argv0")),
        "command": Wrapper(),
        "builtin": Wrapper(),
        "exec": Wrapper("a"),
        "time": Wrapper("fo", longs("format output")),
        "sudo": Wrapper(
            "ugChprtUDRTac",
            longs(
                "user group host prompt role type other-user close-from chdir chroot"
                " command-timeout auth-type login-class"
            ),
            eval_flags="si",
            long_flag=longs("login"),
        ),
        "doas": Wrapper("uCa"),
        "setsid": Wrapper(),
        "ionice": Wrapper("cnpPu", longs("class classdata pid pgid uid")),
        "chrt": Wrapper("TPD", longs("sched-runtime sched-period sched-deadline"), 1),
        "taskset": Wrapper("", frozenset(), 1),
        "chroot": Wrapper("", longs("userspec groups"), 1),
        "nsenter": Wrapper("tSGW", longs("target setuid setgid wdns"), long_flag=longs("wd")),
        "flock": Wrapper(
            "wEc", longs("timeout conflict-exit-code"), 1, script="c", long_script=longs("command")
        ),
        "runuser": SU,
        "su": SU,
        "unbuffer": Wrapper(),
        "caffeinate": Wrapper("wt"),
        "busybox": Wrapper(),
        "toybox": Wrapper(),
        "setpriv": Wrapper(
            "",
            longs(
                "ambient-caps inh-caps bounding-set ruid euid rgid egid reuid regid groups securebits"
                " pdeathsig selinux-label apparmor-profile landlock-access landlock-rule"
                " seccomp-filter ptracer"
            ),
        ),
        "unshare": Wrapper(
            "SGRw",
            longs(
                "map-user map-group map-users map-groups propagation setgroups root wd setuid setgid"
                " monotonic boottime load-interp"
            ),
        ),
        "prlimit": Wrapper("po", longs("pid output")),
        "setarch": Wrapper(leading=1),
        "strace": STRACE,
        "ltrace": Wrapper("aADeFlnopsuwx", longs("align config indent library output where")),
        **dict.fromkeys(ARCHES.split(), SETARCH),
        "ld.so": LD_SO,
        "choom": Wrapper("np", longs("adjust pid")),
        "fakeroot": Wrapper("lsib", longs("lib faked")),
        "ssh-agent": Wrapper("aEPtO"),
        "valgrind": Wrapper(),  # its long options take `=value`
        "dbus-run-session": Wrapper("", longs("config-file dbus-daemon")),
        "uclampset": Wrapper("mMp", longs("pid")),
        "runcon": Wrapper("urtl", longs("user role type range")),
        "firejail": Wrapper(),  # its options take `=value`
        "numactl": Wrapper("CNmPpi", longs("cpunodebind physcpubind membind preferred interleave")),
        "catchsegv": Wrapper(),
        "xvfb-run": Wrapper("nsfpe", longs("server-num server-args auth-file xauth-protocol error-file")),
        "gtimeout": Wrapper("sk", longs("signal kill-after"), 1),
        "eatmydata": Wrapper(),
        "chronic": Wrapper(),
        "nocache": Wrapper("n"),
        "ifne": Wrapper(),
        "torsocks": Wrapper("aPu", longs("address port user pass")),
        "tsocks": Wrapper(),
        "proxychains": Wrapper("f"),
        "proxychains4": Wrapper("f"),
        "trickle": Wrapper("udwtlnL"),
        "sshpass": Wrapper("pfdP"),
        "faketime": Wrapper("", frozenset(), 1),  # -m and -f are flags; then the timestamp
        "setuidgid": Wrapper("", frozenset(), 1),
        "envuidgid": Wrapper("", frozenset(), 1),
        "envdir": Wrapper("", frozenset(), 1),
    }
)
# Programs that run a command in ways not modelled here (`capsh -- -c CMD` is bash,
# `start-stop-daemon --exec`, `gdb -ex 'shell CMD'`, `perf stat CMD`, `systemd-run`, `bwrap`):
# a command with one of them fails closed.
OPAQUE_RUNNERS = frozenset(
    {"capsh", "start-stop-daemon", "gdb", "perf", "systemd-run", "bwrap", "chpst", "pkexec", "machinectl",
     "parallel", "sem", "at", "batch", "tmux", "screen", "rlwrap", "entr", "watchexec", "hyperfine",
     "systemd-nspawn", "proot", "fakechroot", "cgexec", "softlimit", "tsp", "nq", "daemonize", "dtach",
     "xe", "enable"}
)  # fmt: skip
# Wrappers whose command is one shell string made of the remaining words.
JOINING = frozenset({"watch"})
# Long options that mean a short flag the resolver acts on.
LONG_FLAGS = MappingProxyType({"--shell": "s", "--login": "i", "--edit": "e", "--split-string": "S"})
WATCH = Wrapper("nq", longs("interval equexit"))
XARGS = Wrapper("adEILnPs", longs("arg-file delimiter max-args max-procs max-chars process-slot-var"))
# util-linux `script`: runs its `-c` string, or an interactive shell reading stdin.
SCRIPT = Wrapper(
    "IOBTmEoc",
    longs("log-in log-out log-io log-timing logging-format echo output-limit"),
    script="c",
    long_script=longs("command"),
)
