"""Model strings: parsing, the built-in prefixes, the registry, lazy building, and their errors."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from helikon import (
    LazyModel,
    LlmAgent,
    Model,
    RunError,
    UserError,
    model_prefixes,
    register_model_prefix,
    resolve_model,
    unregister_model_prefix,
)
from helikon.core import model_strings
from helikon.providers._strings import split_compatible
from helikon.providers.anthropic import AnthropicModel
from helikon.providers.bedrock import BedrockModel
from helikon.providers.gemini import GeminiModel
from helikon.providers.openai import OpenAIModel
from helikon.testing import MockModel, text_turn

KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*KEYS, "GOOGLE_CLOUD_PROJECT", "OLLAMA_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def prefix() -> Iterator[str]:
    """A prefix name the test may register; removed afterwards so tests stay independent."""
    yield "acme"
    if "acme" in model_prefixes():
        unregister_model_prefix("acme")


# --- the built-in prefixes --------------------------------------------------------------------

BUILT_IN = [
    ("openai:gpt-5-mini", "openai", "gpt-5-mini"),
    ("openai-responses:gpt-5-mini", "openai", "gpt-5-mini"),
    ("openai-compatible:llama3.2@http://localhost:8000/v1", "openai", "llama3.2"),
    ("ollama:llama3.2:3b", "openai", "llama3.2:3b"),
    ("anthropic:claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6"),
    ("gemini:gemini-2.5-flash", "gemini", "gemini-2.5-flash"),
    ("gemini-vertex:gemini-2.5-flash", "gemini", "gemini-2.5-flash"),
    (
        "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0",
        "aws.bedrock",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
    ),
]


@pytest.mark.parametrize(("spec", "provider", "name"), BUILT_IN)
def test_a_built_in_string_builds_an_agent_without_any_key(spec: str, provider: str, name: str) -> None:
    agent = LlmAgent(name="a", model=spec)
    model = agent.model
    assert isinstance(model, LazyModel)
    assert (model.spec, model.provider, model.model_name, model.built) == (spec, provider, name, False)
    assert repr(model) == f"LazyModel({spec!r})"


@pytest.mark.parametrize(
    ("spec", "env", "cls", "api"),
    [
        ("openai:gpt-5-mini", "OPENAI_API_KEY", OpenAIModel, "chat"),
        ("openai-responses:gpt-5-mini", "OPENAI_API_KEY", OpenAIModel, "responses"),
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY", AnthropicModel, None),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY", GeminiModel, None),
        ("bedrock:amazon.nova-lite-v1:0", None, BedrockModel, None),
    ],
)
def test_the_first_use_builds_the_providers_model(
    spec: str, env: str | None, cls: type[Model], api: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env is not None:
        monkeypatch.setenv(env, "test-key-not-used")
    model = resolve_model(spec)
    assert isinstance(model, LazyModel)
    declared = (model.provider, model.model_name)
    model.capabilities()  # builds; no request is made
    built = model.build()
    assert model.built and isinstance(built, cls) and model.build() is built
    assert (built.provider, built.model_name) == declared
    if api is not None:
        assert isinstance(built, OpenAIModel) and built.api == api


def test_an_openai_compatible_string_sets_the_base_url() -> None:
    built = resolve_model("openai-compatible:llama3.2:3b@http://127.0.0.1:8000/v1")
    assert isinstance(built, LazyModel)
    model = built.build()
    assert isinstance(model, OpenAIModel) and model.model_name == "llama3.2:3b"
    assert str(model._client.base_url) == "http://127.0.0.1:8000/v1/"  # pyright: ignore[reportPrivateUsage]


def test_ollama_defaults_to_its_local_port_and_reads_OLLAMA_BASE_URL(monkeypatch: pytest.MonkeyPatch) -> None:
    def base_url() -> str:
        lazy = resolve_model("ollama:qwen3")
        assert isinstance(lazy, LazyModel)
        model = lazy.build()
        assert isinstance(model, OpenAIModel)
        return str(model._client.base_url)  # pyright: ignore[reportPrivateUsage]

    assert base_url() == "http://localhost:11434/v1/"
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9999/v1")
    assert base_url() == "http://127.0.0.1:9999/v1/"


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        ("llama3.2@http://localhost:11434/v1", ("llama3.2", "http://localhost:11434/v1")),
        ("llama3.2:3b@https://vllm.internal:8000/v1", ("llama3.2:3b", "https://vllm.internal:8000/v1")),
        ("claude-3@20240229@http://127.0.0.1:4000", ("claude-3@20240229", "http://127.0.0.1:4000")),
        ("m@http://user:pw@host:1/v1", ("m", "http://user:pw@host:1/v1")),
    ],
)
def test_split_compatible_splits_at_the_url(rest: str, expected: tuple[str, str]) -> None:
    assert split_compatible(rest) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "openai-compatible:llama3.2",
        "openai-compatible:llama3.2@localhost:8000/v1",
        "openai-compatible:@http://localhost:8000/v1",
        "openai-compatible:llama3.2@http://",
    ],
)
def test_a_malformed_openai_compatible_string_shows_the_form(spec: str) -> None:
    with pytest.raises(UserError, match="openai-compatible:<model>@<base_url>"):
        LlmAgent(name="a", model=spec)


def test_a_missing_key_fails_the_first_run_naming_the_variable() -> None:
    agent = LlmAgent(name="a", model="anthropic:claude-sonnet-4-6")
    with pytest.raises(RunError, match="ANTHROPIC_API_KEY"):
        agent.run_sync("Hi")
    assert isinstance(agent.model, LazyModel) and not agent.model.built


def test_a_missing_gemini_vertex_project_fails_at_the_build() -> None:
    model = resolve_model("gemini-vertex:gemini-2.5-flash")
    with pytest.raises(UserError, match="GOOGLE_CLOUD_PROJECT"):
        model.capabilities()


@pytest.mark.parametrize(
    ("spec", "sdk", "extra"),
    [
        ("openai:gpt-5-mini", "openai", "openai"),
        ("openai-compatible:m@http://localhost:1/v1", "openai", "openai"),
        ("anthropic:claude-sonnet-4-6", "anthropic", "anthropic"),
        ("gemini:gemini-2.5-flash", "google.genai", "gemini"),
        ("bedrock:amazon.nova-lite-v1:0", "aiobotocore", "bedrock"),
    ],
)
def test_a_missing_extra_names_the_pip_install(
    spec: str, sdk: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == sdk else real(name, package)

    monkeypatch.setattr(model_strings.importlib.util, "find_spec", find_spec)
    with pytest.raises(ImportError) as caught:
        LlmAgent(name="a", model=spec)
    assert str(caught.value) == (
        f"model string {spec!r} needs the {extra} extra: pip install 'paigasus-helikon[{extra}]'"
    )


# --- malformed strings ------------------------------------------------------------------------


def test_a_string_without_a_prefix_lists_the_known_ones() -> None:
    with pytest.raises(UserError) as caught:
        LlmAgent(name="a", model="gpt-5-mini")
    message = str(caught.value)
    assert "expected a Model or a model string '<prefix>:<model>'" in message
    assert "'gpt-5-mini' has no prefix" in message
    assert f"known prefixes: {', '.join(model_prefixes())}" in message


def test_an_unknown_prefix_lists_the_known_ones_and_the_registry() -> None:
    with pytest.raises(UserError) as caught:
        resolve_model("mistral:large")
    message = str(caught.value)
    assert "unknown prefix 'mistral'" in message
    assert (
        "anthropic, bedrock, gemini, gemini-vertex, ollama, openai, openai-compatible, openai-responses"
        in message
    )
    assert "register_model_prefix" in message


def test_a_capitalised_prefix_gets_a_hint() -> None:
    with pytest.raises(UserError, match="did you mean 'openai'"):
        resolve_model("OpenAI:gpt-5-mini")


@pytest.mark.parametrize("spec", ["openai:", ":gpt-5", "", "openai: gpt-5", "anthropic:claude sonnet"])
def test_an_empty_or_spaced_string_is_a_user_error(spec: str) -> None:
    with pytest.raises(UserError, match="model"):
        resolve_model(spec)


def test_resolve_model_passes_a_model_through_and_rejects_anything_else() -> None:
    mock = MockModel.with_scripts([])
    assert resolve_model(mock) is mock
    with pytest.raises(UserError, match=r"expected a Model .* or a model string"):
        resolve_model(42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="expected a model string"):
        LazyModel(42)  # type: ignore[arg-type]


# --- the registry -----------------------------------------------------------------------------


def test_a_registered_prefix_builds_once_on_the_first_call(prefix: str) -> None:
    made: list[str] = []

    def factory(rest: str) -> Model:
        made.append(rest)
        return MockModel.with_scripts([text_turn(f"from {rest}"), text_turn("again")])

    register_model_prefix(prefix, factory)
    assert prefix in model_prefixes()
    agent = LlmAgent(name="a", model=f"{prefix}:model-7")
    assert made == []  # lazy: nothing built with the agent
    assert (agent.model.provider, agent.model.model_name) == (prefix, "model-7")
    assert agent.run_sync("Hi").final_output == "from model-7"
    assert agent.run_sync("Hi").final_output == "again"
    assert made == ["model-7"]
    assert agent.model.provider == "mock"  # the built model's, once built


def test_a_registered_prefix_may_declare_its_provider(prefix: str) -> None:
    register_model_prefix(prefix, lambda rest: MockModel.with_scripts([]), provider="acme.cloud")
    assert resolve_model(f"{prefix}:x").provider == "acme.cloud"


def test_a_prefix_is_registered_once_unless_replaced(prefix: str) -> None:
    register_model_prefix(prefix, lambda rest: MockModel.with_scripts([text_turn("one")]))
    with pytest.raises(UserError, match="already registered; pass replace=True"):
        register_model_prefix(prefix, lambda rest: MockModel.with_scripts([text_turn("two")]))
    register_model_prefix(prefix, lambda rest: MockModel.with_scripts([text_turn("two")]), replace=True)
    assert LlmAgent(name="a", model=f"{prefix}:x").run_sync("Hi").final_output == "two"


@pytest.mark.parametrize("builtin", ["openai", "anthropic", "openai-compatible"])
def test_a_built_in_prefix_is_neither_replaced_nor_removed(builtin: str) -> None:
    with pytest.raises(UserError, match="is built in"):
        register_model_prefix(builtin, lambda rest: MockModel.with_scripts([]), replace=True)
    with pytest.raises(UserError, match="cannot be removed"):
        unregister_model_prefix(builtin)


@pytest.mark.parametrize("bad", ["", "Acme", "1acme", "ac me", "acme:", 7])
def test_a_malformed_prefix_is_refused(bad: Any) -> None:
    with pytest.raises(UserError, match="lower-case letters"):
        register_model_prefix(bad, lambda rest: MockModel.with_scripts([]))


def test_a_factory_must_be_callable_and_return_a_model(prefix: str) -> None:
    with pytest.raises(UserError, match="must be a function"):
        register_model_prefix(prefix, "not callable")  # type: ignore[arg-type]
    register_model_prefix(prefix, lambda rest: "not a model")  # type: ignore[arg-type,return-value]
    model = resolve_model(f"{prefix}:x")
    with pytest.raises(UserError, match="its factory returned 'not a model', not a Model"):
        model.capabilities()


def test_unregistering_removes_the_prefix_and_keeps_resolved_models(prefix: str) -> None:
    register_model_prefix(prefix, lambda rest: MockModel.with_scripts([text_turn("still here")]))
    agent = LlmAgent(name="a", model=f"{prefix}:x")
    unregister_model_prefix(prefix)
    assert prefix not in model_prefixes()
    with pytest.raises(UserError, match="unknown prefix 'acme'"):
        resolve_model(f"{prefix}:x")
    with pytest.raises(UserError, match="no such prefix"):
        unregister_model_prefix(prefix)
    assert agent.run_sync("Hi").final_output == "still here"


async def test_aclose_closes_the_built_model_only(prefix: str) -> None:
    closed: list[bool] = []

    class Closing(MockModel):
        async def aclose(self) -> None:
            closed.append(True)

    register_model_prefix(prefix, lambda rest: Closing.with_scripts([]))
    model = resolve_model(f"{prefix}:x")
    assert isinstance(model, LazyModel)
    await model.aclose()
    assert closed == []  # never built: nothing to close
    model.build()
    await model.aclose()
    assert closed == [True]
