"""The `helikon` command (the `cli` extra): declarative agents from `agents.toml`, run, eval, REPL, web.

`main(argv)` runs the command line and returns its exit code. Errors are one line on
stderr (`helikon: ...`), with the traceback only under `--debug`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `helikon` console script; the exit code."""
    try:
        import click
        import typer
    except ImportError:
        from ..core._internal.extras import missing_extra

        print(f"helikon: {missing_extra('the command needs typer', 'cli')}", file=sys.stderr)
        return 2
    from ..core.exceptions import HelikonError
    from .app import app
    from .state import STATE

    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(app)
    try:
        result = command.main(args=args, prog_name="helikon", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        print("helikon: interrupted", file=sys.stderr)
        return 130
    except HelikonError as exc:
        if STATE.debug or "--debug" in args:
            raise
        print(f"helikon: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("helikon: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, and where to find more
        if STATE.debug or "--debug" in args:
            raise
        print(
            f"helikon: unexpected error: {exc!r} (run again with --debug for the traceback)", file=sys.stderr
        )
        return 1
    return result if isinstance(result, int) else 0


__all__ = ["main"]
