"""`OpenAIModel` and servers on this machine: no API key needed there, and only there."""

from __future__ import annotations

import pytest

from helikon import UserError
from helikon.providers.openai import OpenAIModel


@pytest.fixture(autouse=True)
def no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _key(model: OpenAIModel) -> str:
    return model._client.api_key  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    "base_url",
    [
        "http://localhost:11434/v1",
        "http://127.0.0.1:8000/v1",
        "http://127.8.9.10:8080/v1",
        "http://[::1]:8080/v1",
        "https://llm.localhost/v1",
        "http://LOCALHOST:1234/v1",
    ],
)
def test_a_local_base_url_needs_no_key(base_url: str) -> None:
    assert _key(OpenAIModel.chat("llama3.2", base_url=base_url)) == "no-key-local-server"
    assert _key(OpenAIModel.responses("llama3.2", base_url=base_url)) == "no-key-local-server"


@pytest.mark.parametrize(
    "base_url",
    [
        None,
        "https://api.together.xyz/v1",
        "http://10.0.0.5:8000/v1",
        "http://localhost.example.com/v1",
        "http://0.0.0.0:8000/v1",
    ],
)
def test_any_other_endpoint_still_needs_a_key(base_url: str | None) -> None:
    with pytest.raises(UserError, match=r"OPENAI_API_KEY.*base_url=http://localhost"):
        OpenAIModel.chat("gpt-5-mini", base_url=base_url)


def test_OPENAI_BASE_URL_on_this_machine_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    model = OpenAIModel.chat("llama3.2")
    assert _key(model) == "no-key-local-server"
    assert str(model._client.base_url) == "http://127.0.0.1:8000/v1/"  # pyright: ignore[reportPrivateUsage]


def test_a_key_given_or_in_the_environment_wins_over_the_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _key(OpenAIModel.chat("m", base_url="http://localhost:1/v1", api_key="sk-given")) == "sk-given"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert _key(OpenAIModel.chat("m", base_url="http://localhost:1/v1")) == "sk-env"
