"""`python -m helikon.cli`: the `helikon` command."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
