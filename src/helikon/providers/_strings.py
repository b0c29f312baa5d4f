"""The built-in model-string prefixes: how each builds its model (see `helikon.core.model_strings`).

`register_builtin_prefixes` registers them; the facade calls it as `import helikon` runs,
since core never imports a provider. Each builder imports its provider module only when called, so a string
loads only its own SDK. Keys and endpoints come from the environment, as the providers' own
constructors read them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from helikon.core.exceptions import UserError
from helikon.core.model import Model
from helikon.core.model_strings import register_builtin_prefix

OLLAMA_BASE_URL = "http://localhost:11434/v1"
"""Where `ollama:` models are served unless `OLLAMA_BASE_URL` says otherwise."""

_COMPATIBLE = re.compile(r"(?P<model>.+?)@(?P<url>https?://.+)\Z")
COMPATIBLE_FORM = (
    "openai-compatible:<model>@<base_url>, e.g. openai-compatible:llama3.2@http://localhost:8000/v1"
)


def split_compatible(rest: str) -> tuple[str, str]:
    """`(model, base_url)` of an `openai-compatible:` string's rest, `<model>@<base_url>`.

    The model part may hold `@` and `:` (Ollama's `llama3.2:3b`); the split is at the `@`
    that starts the `http://` or `https://` base URL.

    Raises:
        UserError: If the rest is not `<model>@<base_url>` with a URL that names a host.
    """
    # Imported here: `import helikon` imports this module, and urllib.parse (with ipaddress) is ~2 ms.
    from urllib.parse import urlsplit

    match = _COMPATIBLE.match(rest)
    if match is None or not urlsplit(match["url"]).hostname:
        raise UserError(f"model string 'openai-compatible:{rest}': write {COMPATIBLE_FORM}")
    return match["model"], match["url"]


def _openai(rest: str) -> Model:
    from .openai import OpenAIModel

    return OpenAIModel.chat(rest)


def _openai_responses(rest: str) -> Model:
    from .openai import OpenAIModel

    return OpenAIModel.responses(rest)


def _openai_compatible(rest: str) -> Model:
    from .openai import OpenAIModel

    model, base_url = split_compatible(rest)
    return OpenAIModel.chat(model, base_url=base_url)


def _ollama(rest: str) -> Model:
    from .openai import OpenAIModel

    return OpenAIModel.chat(rest, base_url=os.environ.get("OLLAMA_BASE_URL") or OLLAMA_BASE_URL)


def _anthropic(rest: str) -> Model:
    from .anthropic import AnthropicModel

    return AnthropicModel.messages(rest)


def _gemini(rest: str) -> Model:
    from .gemini import GeminiModel

    return GeminiModel.from_env(rest)


def _gemini_vertex(rest: str) -> Model:
    from .gemini import GeminiModel

    return GeminiModel.vertex_from_env(rest)


def _bedrock(rest: str) -> Model:
    from .bedrock import BedrockModel

    return BedrockModel.converse(rest)


def _compatible_name(rest: str) -> str:
    return split_compatible(rest)[0]


def register_builtin_prefixes() -> None:
    """Register the built-in prefixes (the facade does, as `import helikon` runs)."""

    def openai(prefix: str, factory: Callable[[str], Model], **more: Callable[[str], str]) -> None:
        register_builtin_prefix(prefix, factory, provider="openai", sdk="openai", extra="openai", **more)

    openai("openai", _openai)
    openai("openai-responses", _openai_responses)
    openai("openai-compatible", _openai_compatible, model_name=_compatible_name)
    openai("ollama", _ollama)
    register_builtin_prefix("anthropic", _anthropic, provider="anthropic", sdk="anthropic", extra="anthropic")
    register_builtin_prefix("gemini", _gemini, provider="gemini", sdk="google.genai", extra="gemini")
    register_builtin_prefix(
        "gemini-vertex", _gemini_vertex, provider="gemini", sdk="google.genai", extra="gemini"
    )
    register_builtin_prefix("bedrock", _bedrock, provider="aws.bedrock", sdk="aiobotocore", extra="bedrock")
