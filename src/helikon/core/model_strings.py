"""Model strings: `"openai:gpt-5-mini"` names a provider's model in one line.

A model string is `<prefix>:<model>`. `resolve_model` (what `LlmAgent(model="...")` calls)
checks the string at once — a typo, an unknown prefix or a provider extra that is not
installed fails where the agent is built — and returns a `LazyModel`, which builds the
provider's `Model` on its first call. So building an agent needs no API key, imports no
provider SDK and opens no connection: keys are often supplied later (a deployment's
secrets, a test's environment), and an agent whose model a test replaces never needs one.

Built-in prefixes: `openai` (Chat Completions), `openai-responses` (the Responses API),
`openai-compatible:<model>@<base_url>` (any OpenAI-compatible server), `ollama` (a local
Ollama), `anthropic`, `gemini`, `gemini-vertex` and `bedrock`. `register_model_prefix`
adds your own.

Example:
    ```python
    from helikon import LlmAgent, LazyModel, register_model_prefix, unregister_model_prefix
    from helikon.testing import MockModel, text_turn

    agent = LlmAgent(name="a", model="openai:gpt-5-mini")  # no API key needed to build it
    assert isinstance(agent.model, LazyModel) and agent.model.model_name == "gpt-5-mini"

    register_model_prefix("echo", lambda rest: MockModel.with_scripts([text_turn(rest)]))
    agent = LlmAgent(name="b", model="echo:Hello!")
    assert agent.run_sync("Hi").final_output == "Hello!"
    unregister_model_prefix("echo")
    ```
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from ._internal.extras import missing_extra
from .exceptions import UserError
from .model import Model, ModelCapabilities, ModelEvent, ModelRequest

if TYPE_CHECKING:
    from .cancel import CancellationToken

ModelFactory: TypeAlias = Callable[[str], Model]
"""Builds a `Model` from the part of a model string after `<prefix>:`."""

_PREFIX = re.compile(r"[a-z][a-z0-9._-]*\Z")


@dataclass(frozen=True, slots=True)
class _Prefix:
    """One registered prefix: how to build its model, and what can be known before that."""

    factory: ModelFactory
    provider: str  # the built model's `provider`, known without building it
    sdk: str | None = None  # the module the provider extra installs, checked when a string is resolved
    extra: str | None = None
    model_name: Callable[[str], str] | None = None  # the model's name from the rest, checking its form


# The built-in prefixes are declared in `helikon.providers._strings` and registered by the facade:
# core never imports a sibling package, so it holds only the mechanism.
_BUILTIN: dict[str, _Prefix] = {}
_registry: dict[str, _Prefix] = {}


def register_builtin_prefix(
    prefix: str,
    factory: ModelFactory,
    *,
    provider: str,
    sdk: str,
    extra: str,
    model_name: Callable[[str], str] | None = None,
) -> None:
    """Declare a prefix of a helikon provider (for `helikon.providers`; users call `register_model_prefix`).

    `sdk` is the module its extra installs: a string naming it fails at once, with the
    `pip install` of `extra`, when that module is missing. `model_name` checks the rest of a
    string and returns the model's name (default: the rest).
    """
    entry = _Prefix(factory, provider, sdk, extra, model_name)
    _BUILTIN[prefix] = entry
    _registry[prefix] = entry


def checked_model(model: Model | str, where: str) -> Model:
    """`model` as a `Model`: a model string resolved, anything else checked to be one.

    Raises:
        UserError: If it is neither, naming `where` it was given.
    """
    if isinstance(model, str):
        model = resolve_model(model)
    if not callable(getattr(model, "invoke", None)) or not callable(getattr(model, "capabilities", None)):
        raise UserError(
            f"{where}(model={model!r}): expected a Model (an object with invoke() and capabilities()) "
            "or a model string such as 'openai:gpt-5-mini'"
        )
    return model


def model_prefixes() -> tuple[str, ...]:
    """The prefixes a model string may start with, built-in and registered, sorted.

    Example:
        ```python
        from helikon import model_prefixes

        assert {"openai", "anthropic", "gemini", "bedrock", "openai-compatible"} <= set(model_prefixes())
        ```
    """
    return tuple(sorted(_registry))


def _known() -> str:
    return ", ".join(model_prefixes())


def register_model_prefix(
    prefix: str, factory: ModelFactory, *, provider: str | None = None, replace: bool = False
) -> None:
    """Let model strings `<prefix>:<rest>` build their model with `factory(rest)`.

    Args:
        prefix: Lower-case letters, digits, `.`, `_` or `-`, starting with a letter.
        factory: Called once per `LazyModel`, on its first use, with the text after `<prefix>:`.
        provider: What the model's `provider` says before it is built (default: `prefix`).
        replace: Replace a prefix registered before (built-in prefixes cannot be replaced).

    Example:
        ```python
        from helikon import register_model_prefix, resolve_model, unregister_model_prefix
        from helikon.providers.openai import OpenAIModel

        register_model_prefix("gateway", lambda rest: OpenAIModel.chat(rest, base_url="http://127.0.0.1:4000/v1"))
        model = resolve_model("gateway:gpt-5-mini")  # built on its first call
        unregister_model_prefix("gateway")
        ```

    Raises:
        UserError: If the prefix is malformed, built in, or already registered without `replace`.
    """
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise UserError(
            f"register_model_prefix({prefix!r}): a prefix is lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter"
        )
    if not callable(factory):
        raise UserError(f"register_model_prefix({prefix!r}): `factory` must be a function of the model name")
    if prefix in _BUILTIN:
        raise UserError(f"register_model_prefix({prefix!r}): {prefix!r} is built in; pick another prefix")
    if prefix in _registry and not replace:
        raise UserError(
            f"register_model_prefix({prefix!r}): {prefix!r} is already registered; "
            "pass replace=True to replace it"
        )
    _registry[prefix] = _Prefix(factory, provider or prefix)


def unregister_model_prefix(prefix: str) -> None:
    """Remove a prefix `register_model_prefix` added (models already resolved keep working).

    Example:
        ```python
        from helikon import model_prefixes, register_model_prefix, unregister_model_prefix
        from helikon.testing import MockModel

        register_model_prefix("scratch", lambda rest: MockModel.with_scripts([]))
        unregister_model_prefix("scratch")
        assert "scratch" not in model_prefixes()
        ```

    Raises:
        UserError: If `prefix` is built in or not registered.
    """
    if prefix in _BUILTIN:
        raise UserError(f"unregister_model_prefix({prefix!r}): built-in prefixes cannot be removed")
    if _registry.pop(prefix, None) is None:
        raise UserError(f"unregister_model_prefix({prefix!r}): no such prefix; known prefixes: {_known()}")


def _parse(spec: str) -> tuple[_Prefix, str, str]:
    """`(entry, rest, model name)` of a model string, or a `UserError` that says how to write it."""
    prefix, colon, rest = spec.partition(":")
    if not colon or not prefix:
        raise UserError(
            f"model={spec!r}: expected a Model or a model string '<prefix>:<model>', "
            f"e.g. 'openai:gpt-5-mini'; {spec!r} has no prefix; known prefixes: {_known()}"
        )
    entry = _registry.get(prefix)
    if entry is None:
        hint = (
            f"prefixes are lower case: did you mean {prefix.lower()!r}? "
            if prefix.lower() in _registry
            else ""
        )
        raise UserError(
            f"model string {spec!r}: unknown prefix {prefix!r}; {hint}known prefixes: {_known()} "
            "(add your own with register_model_prefix)"
        )
    if not rest or any(c.isspace() for c in spec):
        raise UserError(
            f"model string {spec!r}: write '{prefix}:<model>' with a model name and no spaces, "
            f"e.g. 'openai:gpt-5-mini'"
        )
    name = entry.model_name(rest) if entry.model_name is not None else rest
    extra = entry.extra
    if entry.sdk is not None and extra is not None and importlib.util.find_spec(entry.sdk) is None:
        raise missing_extra(f"model string {spec!r} needs the {extra} extra", extra)
    return entry, rest, name


class LazyModel(Model):
    """The model a model string names: checked when made, built on its first call.

    `provider` and `model_name` are known before the build; `invoke` and `capabilities`
    build the provider's model once (which is when its API key is read) and delegate to it.

    Example:
        ```python
        from helikon import LazyModel

        model = LazyModel("anthropic:claude-sonnet-4-6")
        assert (model.provider, model.model_name, model.built) == ("anthropic", "claude-sonnet-4-6", False)
        ```
    """

    __slots__ = ("_built", "_entry", "_name", "_rest", "spec")

    def __init__(self, spec: str) -> None:
        if not isinstance(spec, str):
            raise UserError(f"LazyModel({spec!r}): expected a model string such as 'openai:gpt-5-mini'")
        self._entry, self._rest, self._name = _parse(spec)
        self.spec = spec
        """The model string, as written."""
        self._built: Model | None = None

    @property
    def built(self) -> bool:
        """Whether the provider's model has been built."""
        return self._built is not None

    def build(self) -> Model:
        """The provider's model, built on the first call (raises its `UserError` for a missing key)."""
        built = self._built
        if built is None:
            made: object = self._entry.factory(self._rest)
            if not callable(getattr(made, "invoke", None)) or not callable(
                getattr(made, "capabilities", None)
            ):
                raise UserError(f"model string {self.spec!r}: its factory returned {made!r}, not a Model")
            built = self._built = made  # pyright: ignore[reportAttributeAccessIssue]
        return built  # pyright: ignore[reportReturnType]

    def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        """The built model's `invoke`."""
        return self.build().invoke(request, cancel)

    def capabilities(self) -> ModelCapabilities:
        """The built model's capabilities."""
        return self.build().capabilities()

    @property
    def provider(self) -> str:
        """The provider's name (the built model's, once built)."""
        built = self._built
        return built.provider if built is not None else self._entry.provider

    @property
    def model_name(self) -> str:
        """The model's name (the built model's, once built)."""
        built = self._built
        return built.model_name if built is not None else self._name

    async def aclose(self) -> None:
        """Close the built model's client, if it was built and has one to close."""
        close = getattr(self._built, "aclose", None)
        if close is not None:
            await close()

    def __repr__(self) -> str:
        return f"LazyModel({self.spec!r})"


def resolve_model(model: Model | str) -> Model:
    """A `Model` as is; a model string as the `LazyModel` it names.

    Example:
        ```python
        from helikon import resolve_model
        from helikon.testing import MockModel

        mock = MockModel.with_scripts([])
        assert resolve_model(mock) is mock
        assert resolve_model("gemini:gemini-2.5-flash").provider == "gemini"
        ```

    Raises:
        UserError: If a string is malformed or has an unknown prefix (the message lists the known ones).
        ImportError: If the string's provider extra is not installed (the message gives the `pip install`).
    """
    if isinstance(model, str):
        return LazyModel(model)
    if not callable(getattr(model, "invoke", None)) or not callable(getattr(model, "capabilities", None)):
        raise UserError(
            f"model={model!r}: expected a Model (an object with invoke() and capabilities()) "
            "or a model string such as 'openai:gpt-5-mini'"
        )
    return model


__all__ = [
    "LazyModel",
    "ModelFactory",
    "checked_model",
    "model_prefixes",
    "register_model_prefix",
    "register_builtin_prefix",
    "resolve_model",
    "unregister_model_prefix",
]
