r"""An operator-aware reading of a shell command line, for permission rules.

`parse_command` turns a Bash command string into the simple commands it would run,
each with its resolved program name, its arguments and its redirections. It follows
the POSIX/Bash lexical rules (quoting, escapes, `$(…)`, backticks, here-docs) with a
small character-level lexer, so that `r\\m`, `'r'm`, `/usr/bin/rm`, `sudo -u root rm`,
`a&&rm`, `$(rm …)` and `bash -c 'rm …'` all resolve to `rm`.

What it cannot analyse soundly (a program named by a variable, unbalanced quotes,
nesting past the bound, look-alike characters in a program name, ...) makes the parse
*unparseable*; the rules then fail closed. See `docs/shell-matcher.md`.

```python
from helikon.core.governance.shell import parse_command

parsed = parse_command("cd src && FOO=1 sudo -u root rm -rf build 2>/dev/null")
assert [c.program for c in parsed.commands] == ["cd", "rm"]
assert parsed.commands[1].wrappers == ("sudo",)
assert parse_command("$CMD -rf /").ok is False
```
"""

from __future__ import annotations

from ._cache import ParseCache
from ._parse import parse_command
from ._types import MAX_NESTING, Redirect, ShellParse, SimpleCommand, Word

__all__ = ["MAX_NESTING", "ParseCache", "Redirect", "ShellParse", "SimpleCommand", "Word", "parse_command"]
