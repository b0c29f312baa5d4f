"""How each built-in model-string prefix builds its model (see `helikon.core.model_strings`).

Each builder imports its provider module when called, so a string loads only its own SDK.
Keys and endpoints come from the environment, as the providers' own constructors read them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from helikon.core.model import Model
from helikon.core.model_strings import split_compatible

OLLAMA_BASE_URL = "http://localhost:11434/v1"
"""Where `ollama:` models are served unless `OLLAMA_BASE_URL` says otherwise."""


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


BUILDERS: dict[str, Callable[[str], Model]] = {
    "openai": _openai,
    "openai-responses": _openai_responses,
    "openai-compatible": _openai_compatible,
    "ollama": _ollama,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "gemini-vertex": _gemini_vertex,
    "bedrock": _bedrock,
}
"""The built-in prefixes' builders, by prefix."""
