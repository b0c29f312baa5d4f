"""helikon: the Python SDK for building agentic AI systems.

The names most users need: every name of `helikon.core.__all__` (where they are written,
each once), `open_session` (from `helikon.sessions`, loaded on first use: core never imports
a sibling package), plus `__version__`. Runners live in `helikon.runtime`, test doubles in
`helikon.testing`, the strict-schema normalizer in `helikon.schema`.

Example:
    ```python
    from helikon import LlmAgent, RunContext, tool
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="hello", model=MockModel.with_scripts([text_turn("Hello!")]))
    assert agent.run_sync("Hi", context=RunContext.ephemeral(None)).final_output == "Hello!"
    ```
"""

import typing

from . import core as _core
from .providers._strings import register_builtin_prefixes as _register_builtin_prefixes

if typing.TYPE_CHECKING:
    from .core import *  # noqa: F403  (what type checkers read: core's names, each re-exported)
    from .sessions import open_session as open_session

__version__ = "0.1.0"

_SIBLINGS = {"open_session": "helikon.sessions"}
"""Facade names from outside core, by the module they load from on first access."""

__all__ = sorted([*_core.__all__, *_SIBLINGS, "__version__"])  # pyright: ignore[reportUnsupportedDunderAll]

# Core never imports a provider: the built-in model-string prefixes are registered from here.
_register_builtin_prefixes()


# The names core has loaded already; the others load from core on first access.
globals().update({name: value for name, value in vars(_core).items() if name in _core.__all__})


def __getattr__(name: str) -> typing.Any:
    if name in _SIBLINGS:
        import importlib

        value = getattr(importlib.import_module(_SIBLINGS[name]), name)
        globals()[name] = value
        return value
    if name not in _core.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_core, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
