"""OpenAI-compatible servers on this machine: no API key needed, connection errors name the endpoint.

The server is a real HTTP server the test starts on 127.0.0.1. It answers
`POST /v1/chat/completions` with a recorded OpenAI stream (the SSE body of
`openai_chat/test_openai_moderation_stream.yaml`, a gpt-5 answer "Paris.") and keeps
every request it got, as Ollama, vLLM or llama.cpp would be reached.
"""

from __future__ import annotations

import socket

import pytest

from helikon import LlmAgent, RunError, Transport
from helikon.cli import main
from helikon.core.cancel import CancellationToken
from helikon.core.items import UserMessage
from helikon.core.model import ModelRequest
from helikon.providers.openai import OpenAIModel
from local_chat_server import ChatServer

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _refused_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_local_server_needs_no_api_key(chat_server: ChatServer) -> None:
    model = OpenAIModel.chat("gpt-5", base_url=chat_server.base_url)
    result = await LlmAgent(name="local", model=model).run("What is the capital of France?")
    assert result.final_output == "Paris."
    assert result.usage.input_tokens == 13
    (sent,) = chat_server.received
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.body["model"] == "gpt-5"
    assert sent.body["messages"] == [{"role": "user", "content": "What is the capital of France?"}]
    # The SDK insists on a key: a placeholder goes to the local server, never a real one.
    assert sent.headers["authorization"] == "Bearer no-key-local-server"


async def test_an_openai_compatible_model_string_runs_on_the_local_server(chat_server: ChatServer) -> None:
    agent = LlmAgent(name="local", model=f"openai-compatible:llama3.2:3b@{chat_server.base_url}")
    assert not chat_server.received  # nothing is built or sent until the first run
    result = await agent.run("What is the capital of France?")
    assert result.final_output == "Paris."
    (sent,) = chat_server.received
    assert sent.body["model"] == "llama3.2:3b"
    assert agent.model.provider == "openai" and agent.model.model_name == "llama3.2:3b"


async def test_an_ollama_model_string_uses_OLLAMA_BASE_URL(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", chat_server.base_url)
    result = await LlmAgent(name="local", model="ollama:qwen3").run("What is the capital of France?")
    assert result.final_output == "Paris."
    assert chat_server.received[0].body["model"] == "qwen3"


async def test_a_key_given_is_sent_to_the_local_server(chat_server: ChatServer) -> None:
    model = OpenAIModel.chat("gpt-5", base_url=chat_server.base_url, api_key="sk-local-proxy")
    assert (await LlmAgent(name="local", model=model).run("Hi")).final_output == "Paris."
    assert chat_server.received[0].headers["authorization"] == "Bearer sk-local-proxy"


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_refused_connection_names_the_endpoint(api: str) -> None:
    base_url = f"http://127.0.0.1:{_refused_port()}/v1"
    build = OpenAIModel.chat if api == "chat" else OpenAIModel.responses
    model = build("gpt-5", base_url=base_url)
    request = ModelRequest(messages=(UserMessage.from_text("Hi"),))
    with pytest.raises(Transport) as caught:
        async for _ in model.invoke(request, CancellationToken()):
            pass
    assert str(caught.value).startswith(f"could not reach {base_url}/: ")
    assert caught.value.retryable


async def test_a_run_on_an_unreachable_server_fails_naming_it() -> None:
    base_url = f"http://localhost:{_refused_port()}/v1"
    agent = LlmAgent(name="local", model=f"openai-compatible:llama3.2@{base_url}")
    with pytest.raises(RunError, match=f"could not reach {base_url}/"):
        await agent.run("Hi")


def test_helikon_demo_runs_on_a_model_string(
    chat_server: ChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--model", f"openai-compatible:gpt-5@{chat_server.base_url}"]) == 0
    out = capsys.readouterr().out
    assert f"Running on openai-compatible:gpt-5@{chat_server.base_url} (--model)." in out
    assert "Paris." in out  # the recorded answer, streamed by the demo
    assert "scripted" not in out
    (sent,) = chat_server.received
    assert sent.body["model"] == "gpt-5"
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["lookup_spending", "budget_status"]


def test_helikon_demo_on_an_unreachable_server_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    base_url = f"http://127.0.0.1:{_refused_port()}/v1"
    assert main(["demo", "--model", f"openai-compatible:gpt-5@{base_url}"]) == 1
    assert f"could not reach {base_url}/" in capsys.readouterr().err
