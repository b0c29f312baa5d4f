"""Old import paths of the sessions' modules.

`helikon.sessions.lazy` (where `open_session` and `LazySession` were written until 0.2) is
`helikon.sessions._open`, named for what it holds; the old name imports as that module
(`helikon.core._internal.moved` does it), for one release.
"""

from types import MappingProxyType

MOVED = MappingProxyType({"helikon.sessions.lazy": "helikon.sessions._open"})
"""Old module name -> the module it is now."""
