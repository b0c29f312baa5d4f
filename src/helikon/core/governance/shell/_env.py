"""Variables whose value Bash itself runs as code, or that move `cd`.

An assignment to one of them (`PS4='$(rm x)'; set -x`, `BASH_ENV=f bash -c :`,
`env 'BASH_FUNC_f%%=() { rm x; }' bash -c f`, `CDPATH=/ cd etc`) hides a command, or a
directory change, that no word of the command line shows: the parse fails closed on it.
"""

from __future__ import annotations

import re

from ._types import Unparseable

# Prompt strings and the command run before a prompt (expanded with command substitution),
# the startup files a non-interactive shell sources, exported functions, shell options
# (`xtrace` with PS4), the hash and alias tables, the interpreter `script -c`, `flock -c` and
# `su -m -c` run their string with (`SHELL`), and where `cd` goes (the guards follow
# `cd` to judge relative paths).
_CODE_VARIABLE = re.compile(
    r"(?:PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|BASH_FUNC_.*|BASH_CMDS|BASH_ALIASES"
    r"|CDPATH|HOME|SHELL)(?:\[.*)?\Z",
    re.ASCII,
)


def check_assignment(text: str) -> None:
    """Raise `Unparseable` when an assignment sets a variable the shell runs or `cd` follows.

    `text` is the assignment as written: `NAME=value`, `NAME+=value` or `NAME[i]=value`.
    """
    name = text.split("=", 1)[0].removesuffix("+")
    if _CODE_VARIABLE.match(name):
        raise Unparseable(f"the assignment to {name} changes what the shell runs")
