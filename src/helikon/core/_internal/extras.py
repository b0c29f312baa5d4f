"""`missing_extra`: the one error for an optional dependency that is not installed.

Every module behind a packaging extra raises it where the dependency is first needed (at
import, or at first use for a dependency loaded lazily), so a missing extra always reads the
same way: what needs it, and the `pip install` that brings it.
"""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(needs: str, extra: str) -> ImportError:
    """The `ImportError` to raise (`from` the original one) when `extra`'s dependency is missing.

    Example:
        ```python
        from helikon.core._internal.extras import missing_extra

        error = missing_extra("helikon.sessions.postgres needs asyncpg", "sessions-postgres")
        assert str(error) == (
            "helikon.sessions.postgres needs asyncpg: pip install 'paigasus-helikon[sessions-postgres]'"
        )
        ```
    """
    return ImportError(f"{needs}: pip install 'paigasus-helikon[{extra}]'")
