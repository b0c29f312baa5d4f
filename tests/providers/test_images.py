"""An agent input with text and images, as `docs/input.md` builds it, on every provider that takes images.

No recording holds a user turn with an image (the one Gemini recording with an image has it
in a tool result), so each test runs the agent on a recorded text answer and checks the body
the adapter sent against the provider's documented form for images: by URL and inline.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from helikon import (
    Base64Source,
    ImagePart,
    LlmAgent,
    RunError,
    TextPart,
    UrlSource,
    UserMessage,
)
from helikon.providers.anthropic import AnthropicModel
from helikon.providers.openai import OpenAIModel

from . import test_anthropic, test_bedrock, test_gemini, test_openai
from .cassettes import ReplayTransport

# The first bytes of a PNG file; a real one comes from `Path("chart.png").read_bytes()`.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452")
PNG_BASE64 = base64.b64encode(PNG).decode()
TEXT = "What is in these two pictures?"
URL = "https://example.com/cat.png"


def question(url: str = URL) -> UserMessage:
    """The user turn of `docs/input.md`: text, an image by URL, an image inline."""
    return UserMessage(
        content=(
            TextPart(text=TEXT),
            ImagePart(source=UrlSource(url=url), detail="high"),
            ImagePart(source=Base64Source(media_type="image/png", data=PNG_BASE64)),
        )
    )


def sent(transport: ReplayTransport | test_gemini.GeminiReplay) -> dict[str, Any]:
    return json.loads(transport.requests[0].content)


async def test_openai_chat_completions_sends_image_url_parts() -> None:
    transport = test_openai.replay("openai_chat/test_openai_moderation_stream.yaml")
    model = OpenAIModel.chat("gpt-5", client=test_openai.client_for(transport))
    result = await LlmAgent(name="describer", model=model).run([question()])
    assert result.final_output == "Paris."  # the recorded answer: the request is what is checked
    assert sent(transport)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": TEXT},
                {"type": "image_url", "image_url": {"url": URL, "detail": "high"}},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_BASE64}"}},
            ],
        }
    ]


async def test_openai_responses_sends_input_image_parts() -> None:
    transport = test_openai.replay("openai_responses/test_responses_basic_streaming.yaml")
    model = OpenAIModel.responses("gpt-5.5", client=test_openai.client_for(transport))
    result = await LlmAgent(name="describer", model=model).run([question()])
    assert result.final_output == "pong"
    assert sent(transport)["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": TEXT},
                {"type": "input_image", "image_url": URL, "detail": "high"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_BASE64}", "detail": "auto"},
            ],
        }
    ]


async def test_anthropic_sends_image_blocks() -> None:
    transport = test_anthropic.replay("test_stream_events_text")
    model = AnthropicModel.messages("claude-haiku-4-5", client=test_anthropic.client_for(transport))
    result = await LlmAgent(name="describer", model=model).run([question()])
    assert result.final_output == "Hello"
    assert sent(transport)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": TEXT},
                {"type": "image", "source": {"type": "url", "url": URL}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64},
                },
            ],
        }
    ]


async def test_gemini_sends_file_data_and_inline_data_parts() -> None:
    transport = test_gemini.GeminiReplay.of("test_google_model_stream")
    model = test_gemini.model_for(transport, "gemini-2.5-flash")
    result = await LlmAgent(name="describer", model=model).run([question()])
    assert result.final_output.startswith("The capital of France is Paris.")
    # The SDK camel-cases the part's key and passes the fields as given: the API reads both
    # spellings (proto JSON), as the Vertex recording with an image shows it reading
    # `file_data: {file_uri, mime_type}` (its 400 is about fetching that very URL).
    assert sent(transport)["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": TEXT},
                {"fileData": {"file_uri": URL, "mime_type": "image/png"}},
                {"inlineData": {"mime_type": "image/png", "data": PNG_BASE64}},
            ],
        }
    ]


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Placeholder credentials and a region; nothing from this machine's AWS setup."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


async def test_bedrock_sends_image_blocks_inline_and_from_s3(aws_env: None) -> None:
    recorded, model_id = test_bedrock.replay("test_bedrock_model_stream")
    agent = LlmAgent(name="describer", model=recorded.model(model_id))
    result = await agent.run([question("s3://my-bucket/cat.png")])
    assert result.final_output.startswith("The capital of France is Paris.")
    assert recorded.sent[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": TEXT},
                {"image": {"format": "png", "source": {"s3Location": {"uri": "s3://my-bucket/cat.png"}}}},
                {"image": {"format": "png", "source": {"bytes": PNG_BASE64}}},
            ],
        }
    ]


async def test_bedrock_refuses_an_http_image_and_says_what_to_send(aws_env: None) -> None:
    recorded, model_id = test_bedrock.replay("test_bedrock_model_stream")
    with pytest.raises(RunError, match="download the URL and pass a Base64Source"):
        await LlmAgent(name="describer", model=recorded.model(model_id)).run([question()])
    assert recorded.sent == []  # refused before anything was sent
