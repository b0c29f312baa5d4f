"""The built-in destructive guards against confirmed bypasses (each checked with real bash).

Every command in `TRIPS` wrote a system path or a `.git`/`.ssh`/`.env` path, or removed
`/` or home, while the guards held; `HOLDS` are ordinary commands that must stay clear.
"""

from __future__ import annotations

import pytest

from helikon.core.governance.rules import GuardRule, ToolSubject

GUARDS = GuardRule.destructive_defaults()


def trips(command: str) -> bool:
    subject = ToolSubject.of("Bash", {"command": command})
    return any(g.check(subject) for g in GUARDS)


TRIPS = [
    # 1. globs in write targets and cd targets
    "echo x >> /e?c/hosts",
    "echo x >> /e[t]c/hosts",
    "echo x >> /[[:alpha:]]tc/hosts",
    "echo x >> /E?C/hosts",
    "echo x >> .gi?/config",
    "echo x >> .G[I]t/config",
    "sed -i s/a/b/ /e?c/hosts",
    "chmod 600 /e*c/hostname",
    "cp x /e?c/",
    "cd /e?c && echo x > hosts",
    "pushd /e?c; echo > hosts",
    "cd .gi? && echo x > config",
    "rm -rf .gi?",
    "rm -rf .s*",
    "touch /*",
    "echo x > /tmp/.?/etc/x",
    # 2. tilde climbing above home
    "echo x > ~/../../../../../../../etc/x",
    "cd ~/../../../../../../etc; echo x > hosts",
    "echo x > ~root/../etc/x",
    "echo x > $HOME/../../etc/x",
    "echo x > ~/../e?c/x",
    # 3. brace lists
    "tee /e{t,}c/x </dev/null",
    "touch /e{t,}c/x",
    "tee .g{i,}t/newfile </dev/null",
    "touch .{g,s}{i,s}{t,h}/x",
    "touch {a,/{u,x}sr}/x",
    "touch /{d..f}tc/x",
    "touch /e{{t,x},y}c/x",
    "echo x > /dev/fd/{1..3}",
    "touch /tmp/{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}",  # past the expansion bound
    "cd /e{t,}c && echo x > hosts",
    # 4. target-directory options
    "mv -t /etc x",
    "mv --target-directory=/etc x",
    "mv -t .git x",
    "cp -rt /etc x",
    "cp -vt .ssh x",
    "ln -st /etc x",
    "install -Dt /etc x",
    "cp --target=/etc x",
    "cp --t /etc x",
    "cp -t/etc x",
    "mv -t/etc x",
    # 5. downloaders
    "wget -qO /etc/x https://example.com",
    "wget -q -P /etc https://example.com",
    "wget -q --output-doc=/etc/x https://example.com",
    "wget --directory-prefix /etc https://example.com",
    "wget -o /etc/log https://example.com",
    "curl -so /etc/x https://example.com",
    "curl -sSLo/etc/x https://example.com",
    "curl --out /etc/x https://example.com",
    "curl --output-dir /etc -O https://example.com/x",
    "curl -o .git/config https://example.com",
    # 6. rm long-option prefixes
    "rm --recu ~",
    "rm --r /",
    "echo a | xargs rm --recu",
    "find ~ -maxdepth 0 -exec rm --recu {} +",
    "rm --no-p -r /",
    # 7. find name tests that may pick a protected entry
    "find . -name .git -exec rm -rf {} +",
    "find . -name .git -delete",
    "find . -iname .GIT -exec rm -rf {} +",
    "find . -name '.gi?' -exec rm -rf {} \\;",
    "find . -name '.s*' -exec rm -rf {} +",
    "find . -name '*' -delete",
    "find . -name .env -exec truncate -s0 {} +",
    "find . -path '*/.git' -exec rm -rf {} +",
    "find . -path '*/.gi?' -exec rm -rf {} +",
    "find . -regex '.*/\\.git' -exec rm -rf {} +",
    "find . -regex '.*t' -exec rm -rf {} +",
    "find . ! -name '*.pyc' -delete",
    "find . -not ( -name '*.pyc' ) -delete",
    "find . -name .git -exec mv {} /tmp/x \\;",
    "find . -name .git -exec touch {}/hooks/x \\;",
    # 8. sed's w command and s///w flag
    "sed -i 's/a/b/w /etc/x' f",
    "sed -n 'w /etc/x' f",
    "sed -e 's/a/b/' -e '/x/w .git/hooks/post-checkout' f",
    "sed --expression='W /etc/x' f",
    # 9. options read wrongly: flags taken as taking an argument, and the reverse
    "echo x | tee -p /etc/hostname",
    "shred -u /etc/hostname",
    "sed -ie s/a/b/ /etc/hostname",
    "sed -i -Ee s/a/b/ /etc/hostname",
    "perl -i -pe s/a/b/ /etc/hostname",
    "perl -pi -e s/a/b/ /etc/hostname",
    "cp f /etc/hostname --suffix .bak",
    "cp f /etc/hostname --sparse always",
    "install a /etc/x --mode 644",
    "mv f /etc/hostname --suffix .bak",
    # 10. literal text before an expansion
    "echo x > .git$X/config",
    "echo x > ./.git${X}/config",
    "echo x > .gi$X/config",
    "cd / && echo x > etc$X/hostname",
    # 11. wrappers that change the directory
    "env -C /etc tee hostname",
    "env --chdir=/etc sh -c 'echo x > hostname'",
    "unshare -w /etc sh -c 'echo x > hostname'",
    "env -C / sh -c 'rm -rf *'",
    "su - root -c 'rm -rf *'",
    "su -l root -c 'rm -rf *'",
    "runuser -l root -c 'rm -rf *'",
    "sudo -i rm -rf *",
    "sudo -D /etc tee hostname",
    "sudo --chdir=/etc tee hostname",
    # 12. find: leading options, `-o`, `-prune` with `-depth`
    "find -D stat ~ -maxdepth 0 -exec rm -rf {} +",
    "find -O1 . -name .git -delete",
    "find -O1 /etc -maxdepth 1 -name hostname -exec sed -i s/a/b/ {} +",
    "find . -name '*.pyc' -o -delete",
    "find . -name '*.pyc' -or -exec rm -rf {} +",
    "find . -name '*.pyc' , -delete",
    "find . -name .git -prune -o -type f -delete -depth",
    "find . -name .git -prune -o -name '*.pyc' -delete",
    "find . \\( -name '*.pyc' -o -true \\) -delete",
    # 13. wget's wgetrc commands
    "wget -e output_document=/etc/x https://example.com",
    "wget --execute dir_prefix=/etc https://example.com",
]

HOLDS = [
    "cp a.txt b/",
    "mv -t build x",
    "mv --target-directory=build x",
    "cp -rt dist src",
    "echo x > out.txt",
    "rm -rf build",
    "rm -rf build/*",
    "rm -f *.o",
    "rm -rf dist/* .cache",
    "find . -name '*.pyc' -delete",
    "find . -name '*.pyc' -exec rm {} +",
    "find . -name __pycache__ -exec rm -rf {} +",
    "find . -name .git -prune -o -name '*.pyc' -exec rm {} +",
    "find . -regex '.*\\.pyc' -delete",
    "find . -name .git -type d",
    "find . -name .env -exec cat {} \\;",
    "wget -qO out.html https://example.com",
    "wget -qO- https://example.com",
    "wget -P downloads https://example.com",
    "curl -sSLo out.html https://example.com",
    "curl -o /dev/null https://example.com",
    "curl --output-dir downloads -O https://example.com/x",
    "curl -H 'Accept: x' https://example.com",
    "tee -a log.txt",
    "touch src/{a,b}.py",
    "touch file{1..1000}.txt",
    "mkdir -p src/{core,cli}/{a,b}",
    "ls ~/..",
    "cd ~/src && echo > x",
    "cd ~ && echo x > notes.txt",
    "echo x > ~/notes.txt",
    "echo x > ~/../../tmp/x",
    "cp *.py build/",
    "chmod +x scripts/*.sh",
    "echo x > /tmp/e?c",
    "echo x 2>/dev/null > out.log",
    "sed -i 's/a/b/g' f.txt",
    "sed -i 's/www/web/' /tmp/x.conf",
    "sed -n '/\\.github/p' f",
    "sed 's/a/b/w out.txt' f",
    "rm --dir empty",
    "rm --force x",
    "install -m 644 a build/a",
    "ln -s ../x build/x",
    "cd src && touch {a,b}.py",
    "cp /etc/hosts .",
    "cp /etc/hosts backup/ --suffix .bak",
    "sed -i s/a/b/ f.txt",
    "sed -i -e 's/.git/x/' f.txt",
    "perl -i -pe s/a/b/ f.txt",
    "tee -a log",
    "echo $HOME",
    "echo x > out$N.log",
    "echo x > /tmp/run$N/out",
    "sudo sed -i s/a/b/ f.txt",
    "sudo -u root tee -a log",
    "env -i PATH=/bin tee out.txt",
    "find . \\( -name '*.pyc' -o -name '*.pyo' \\) -delete",
    "find -O2 . -name '*.pyc' -delete",
    "wget -e robots=off -P downloads https://example.com",
]


@pytest.mark.parametrize(
    ("command", "guard"),
    [
        ("echo x >> /e?c/hosts", "system_write"),
        ("touch /e{t,}c/x", "system_write"),
        ("tee .g{i,}t/newfile </dev/null", "dotpath_write"),
        ("rm --recu ~", "rm_root"),
        ("find . -name .git -exec rm -rf {} +", "dotpath_write"),
        ("mv -t .git x", "dotpath_write"),
        ("sed -i 's/a/b/w /etc/x' f", "system_write"),
    ],
)
def test_the_right_guard_trips(command: str, guard: str) -> None:
    checks = ToolSubject.of("Bash", {"command": command}).guard_checks()
    assert checks[guard] is not None


# A third review: copies into a directory keep the source's name, and brace lists are expanded
# before the destination is picked.
COPY_TRIPS = [
    "cp /etc/hosts{,.bak}",
    "sudo cp /etc/nginx/nginx.conf{,.bak}",
    "cd /etc && cp hosts{,.new}",
    "ln -s /etc/hosts{,.lnk}",
    "cp ~/.ssh/config{,.bak}",
    "cp .env{.example,}",
    "cp {.env.example,.env}",
    "cp ../other/.env .",
    "cp ../other/.env ./",
    "cp -r backup/.ssh ~",
    "cp -rt ~ backup/.ssh",
    "cp -t . ~/x/.git",
    "install ../x/.env .",
    "ln -s ../x/.env .",
    "ln -sf ~/shared/.env",
    "install -d /etc/foo build",
    "install -dm755 /etc/foo",
    "install --directory /etc/foo",
]
COPY_CLEAR = [
    "cp a.txt b/",
    "cp /etc/hosts .",
    "cp -r src/ dist/",
    "cp README.md{,.bak}",
    "ln -s ../lib/x.so .",
    "install -m644 a.conf build/",
    "cp src/{a,b}.py dst/",
    "install -d build/bin",
]


# A fourth review: programs and wrapper options that write a file.
WRITER_TRIPS = [
    "sort -o .env f",
    "sort -o/etc/x f",
    "unzip x.zip -d /etc",
    "unzip -o x.zip -d .git",
    "/usr/bin/time -o .git/timelog true",
    "/usr/bin/time -o /etc/tlog true",
    "flock /etc/lock true",
    "flock .git/lk true",
    "strace -o .git/st true",
    "ltrace -o /etc/x true",
    "valgrind --log-file=.env true",
    "gpg -o .env -d f.gpg",
    "ssh-keygen -f ~/.ssh/id_x",
]
WRITER_CLEAR = [
    "sort -o out.txt f",
    "sort -k2 -t, f",
    "unzip x.zip -d build",
    "flock 9 true",
    "flock /tmp/lock make",
    "strace -f -o trace.txt python x.py",
    "ssh-keygen -t ed25519 -f keys/id",
]


@pytest.mark.parametrize("command", TRIPS + COPY_TRIPS + WRITER_TRIPS)
def test_bypass_trips(command: str) -> None:
    assert trips(command)


@pytest.mark.parametrize("command", HOLDS + COPY_CLEAR + WRITER_CLEAR)
def test_ordinary_command_holds(command: str) -> None:
    assert not trips(command)


# Issue 16, item 5: Bash expands a `~` only unquoted at the start of a word, with nothing up to
# the first unquoted `/` quoted (`bash -c 'printf "%s\n" "~" ~"root" \~ ~'` prints `~`, `~root`,
# `~` and the home directory). A quoted one names a file `./~…`, which the guards judge as such.
TILDE_REMOVES_HOME = [
    "rm -rf ~",
    "rm -rf ~/",
    "rm -rf ~root",
    "rm -rf ~/*",
    'rm -rf ~/""',  # the quotes come after the `/`
    "rm -rf \\\n~",  # a line continuation is no quoting
    "rm -rf ~\\\n/",
    "cd ~ && rm -rf '~'/..",  # `~/~/..` is home
    "rm -rf '~'/../../*",  # `./~/../../*` is `../*`, which may be home's contents
    "rm -rf x/../../*",
]
TILDE_REMOVES_A_FILE = [
    'rm -rf "~"',
    "rm -rf '~'",
    "rm -rf \\~",
    "rm -rf $'~'",
    "rm -rf ''~",
    'rm -rf "~"/',
    'rm -rf "~/"',
    'rm -rf "~"/*',
    'rm -rf ~"root"',
    'rm -rf ~"/"',
    "rm -rf ~\\/",
    "rm -rf './~'",
    'cd "~" && rm -rf *',
    "cd '~/build' && rm -rf ./*",
]


@pytest.mark.parametrize("command", TILDE_REMOVES_HOME)
def test_an_unquoted_tilde_is_home(command: str) -> None:
    assert ToolSubject.of("Bash", {"command": command}).guard("rm_root") is not None


@pytest.mark.parametrize("command", TILDE_REMOVES_A_FILE)
def test_a_quoted_tilde_is_a_file_named_tilde(command: str) -> None:
    assert not trips(command)


def test_a_quoted_tilde_still_climbs_to_a_system_path() -> None:
    assert ToolSubject.of("Bash", {"command": "echo x > '~'/../../etc/x"}).guard("system_write")
    assert ToolSubject.of("Bash", {"command": "echo x > '~'/.git/config"}).guard("dotpath_write")
