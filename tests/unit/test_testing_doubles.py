"""Test doubles (`MockModel`, `FunctionModel`, `ScriptFile`, script helpers) and `RetryPolicy`."""

import asyncio
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from helikon import (
    CancellationToken,
    Finish,
    Model,
    ModelCapabilities,
    ModelError,
    ModelEvent,
    ModelRequest,
    OtherModelError,
    RateLimited,
    ReasoningDelta,
    TokenDelta,
    ToolCallDelta,
    Transport,
    Unavailable,
    Usage,
    UserError,
    UserMessage,
)
from helikon.runtime import RetryPolicy
from helikon.testing import (
    Delay,
    FunctionModel,
    MockModel,
    ScriptFile,
    reasoning_turn,
    text_turn,
    tool_call_turn,
    tool_calls_turn,
)


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=[UserMessage.from_text(text)])


async def play(model: Model, req: ModelRequest | None = None) -> list[ModelEvent]:
    stream: AsyncIterator[ModelEvent] = model.invoke(req or request(), CancellationToken())
    return [event async for event in stream]


async def play_into(seen: list[ModelEvent], model: Model) -> None:
    """Like `play`, but keeps what streamed before a failure or a timeout."""
    async for event in model.invoke(request(), CancellationToken()):
        seen.append(event)  # noqa: PERF401 - the partial list is the point


# --- MockModel --------------------------------------------------------------------------------


async def test_mock_model_plays_its_scripts_in_order() -> None:
    model = MockModel.with_scripts([text_turn("first"), text_turn("second")])
    assert model.remaining == 2
    assert await play(model) == [TokenDelta(text="first"), Finish(reason="stop")]
    assert model.remaining == 1
    assert await play(model) == [TokenDelta(text="second"), Finish(reason="stop")]
    assert model.remaining == 0


async def test_mock_model_records_every_request() -> None:
    model = MockModel([text_turn("a"), text_turn("b")])
    first, second = request("one"), request("two")
    await play(model, first)
    await play(model, second)
    assert model.requests == [first, second]
    assert model.requests[1].messages[0].text == "two"  # type: ignore[union-attr]


async def test_running_out_of_scripts_is_a_model_error() -> None:
    model = MockModel([text_turn("only")])
    await play(model)
    with pytest.raises(OtherModelError) as info:
        await play(model)
    assert isinstance(info.value, ModelError)
    assert info.value.kind == "other"
    assert "ran out of scripts" in str(info.value)
    assert "after 1 call(s)" in str(info.value)
    # the failed call was still recorded
    assert len(model.requests) == 2


async def test_an_empty_mock_model_fails_on_the_first_call() -> None:
    with pytest.raises(OtherModelError, match="ran out of scripts after 0 call"):
        await play(MockModel())


async def test_a_delay_step_pauses_the_stream() -> None:
    model = MockModel([[TokenDelta(text="a"), Delay(60), TokenDelta(text="never")]])
    seen: list[ModelEvent] = []
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(play_into(seen, model), timeout=0.05)
    assert seen == [TokenDelta(text="a")]


async def test_a_zero_delay_streams_through() -> None:
    model = MockModel([[TokenDelta(text="a"), Delay(0), Finish()]])
    assert await play(model) == [TokenDelta(text="a"), Finish(reason="stop")]


async def test_an_exception_step_is_raised_mid_stream() -> None:
    error = RateLimited("slow down", retry_after_ms=1500)
    model = MockModel([[TokenDelta(text="partial"), error, TokenDelta(text="never")]])
    seen: list[ModelEvent] = []
    with pytest.raises(RateLimited) as info:
        await play_into(seen, model)
    assert info.value is error
    assert info.value.retry_after_ms == 1500
    assert info.value.status_code == 429
    assert seen == [TokenDelta(text="partial")]


async def test_an_exception_as_the_first_step() -> None:
    model = MockModel([[Unavailable("503", status_code=503)], text_turn("ok")])
    with pytest.raises(Unavailable, match="503"):
        await play(model)
    assert await play(model) == [TokenDelta(text="ok"), Finish(reason="stop")]


def test_mock_model_identity_and_capabilities() -> None:
    model = MockModel()
    assert isinstance(model, Model)
    assert model.provider == "mock"
    assert model.model_name == "mock-model"
    assert model.capabilities() == ModelCapabilities(
        streaming=True, tools=True, parallel_tool_calls=True, structured_output=True, reasoning=True
    )
    custom = MockModel(
        capabilities=ModelCapabilities.empty().with_vision(), provider="openai", model_name="gpt-test"
    )
    assert custom.provider == "openai"
    assert custom.model_name == "gpt-test"
    assert custom.capabilities() == ModelCapabilities(vision=True)
    assert MockModel.with_scripts([], provider="p").provider == "p"


async def test_with_script_chains() -> None:
    model = MockModel()
    assert model.with_script(text_turn("1")).with_script(text_turn("2")) is model
    assert model.remaining == 2
    assert (await play(model))[0] == TokenDelta(text="1")
    model.with_script(text_turn("3"))
    assert [(await play(model))[0], (await play(model))[0]] == [TokenDelta(text="2"), TokenDelta(text="3")]


@pytest.mark.parametrize("bad", ["not a list", b"bytes", 42])
def test_a_script_must_be_a_list_of_events(bad: Any) -> None:
    with pytest.raises(UserError, match="script 1 must be a list of ModelEvents"):
        MockModel([text_turn("ok"), bad])


# --- FunctionModel ----------------------------------------------------------------------------


async def test_function_model_with_a_sync_function() -> None:
    def echo(req: ModelRequest) -> Any:
        return text_turn(f"you said: {req.messages[-1].text}")  # type: ignore[union-attr]

    model = FunctionModel(echo)
    assert await play(model, request("hello")) == [TokenDelta(text="you said: hello"), Finish(reason="stop")]
    assert await play(model, request("again")) == [TokenDelta(text="you said: again"), Finish(reason="stop")]
    assert model.provider == "function"
    assert model.model_name == "function-model"
    assert model.capabilities().tools is True


async def test_function_model_with_an_async_function() -> None:
    async def echo(req: ModelRequest) -> Any:
        await asyncio.sleep(0)
        return [TokenDelta(text=req.messages[-1].text.upper()), Finish()]  # type: ignore[union-attr]

    assert await play(FunctionModel(echo), request("loud")) == [
        TokenDelta(text="LOUD"),
        Finish(reason="stop"),
    ]


async def test_function_model_serves_concurrent_calls() -> None:
    gate = asyncio.Event()
    all_in = asyncio.Event()
    in_flight: list[str] = []

    async def slow(req: ModelRequest) -> Any:
        text = req.messages[-1].text  # type: ignore[union-attr]
        in_flight.append(text)
        if len(in_flight) == 3:
            all_in.set()
        await gate.wait()
        return text_turn(f"reply to {text}")

    model = FunctionModel(slow)
    calls = [asyncio.ensure_future(play(model, request(f"r{i}"))) for i in range(3)]
    await asyncio.wait_for(all_in.wait(), timeout=5)
    # all three are waiting inside the function at once
    assert sorted(in_flight) == ["r0", "r1", "r2"]
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*calls), timeout=5)
    assert [r[0] for r in results] == [TokenDelta(text=f"reply to r{i}") for i in range(3)]


async def test_function_model_scripts_may_raise_and_delay() -> None:
    def failing(req: ModelRequest) -> Any:
        return [Delay(0), Transport("connection reset")]

    with pytest.raises(Transport, match="connection reset"):
        await play(FunctionModel(failing))


def test_function_model_needs_a_callable() -> None:
    with pytest.raises(UserError, match="expected a function of the ModelRequest"):
        FunctionModel("not callable")  # type: ignore[arg-type]


def test_function_model_custom_identity() -> None:
    model = FunctionModel(lambda req: [], provider="anthropic", model_name="claude-test")
    assert (model.provider, model.model_name) == ("anthropic", "claude-test")


# --- script helpers ---------------------------------------------------------------------------


def test_text_turn() -> None:
    assert text_turn("Hi") == [TokenDelta(text="Hi"), Finish(reason="stop")]
    assert text_turn("abcde", chunk_size=2) == [
        TokenDelta(text="ab"),
        TokenDelta(text="cd"),
        TokenDelta(text="e"),
        Finish(reason="stop"),
    ]
    usage = Usage(input_tokens=3, output_tokens=1)
    assert text_turn("x", usage=usage) == [TokenDelta(text="x"), usage, Finish(reason="stop")]


def test_reasoning_turn() -> None:
    assert reasoning_turn("think", "answer", signature="sig") == [
        ReasoningDelta(text="think", signature="sig"),
        TokenDelta(text="answer"),
        Finish(reason="stop"),
    ]


def test_tool_call_turns() -> None:
    assert tool_call_turn("search", {"q": "x"}) == [
        ToolCallDelta(call_id="call_1_search", name="search", args_delta='{"q": "x"}'),
        Finish(reason="tool_calls"),
    ]
    assert tool_call_turn("ping", call_id="c9")[0] == ToolCallDelta(
        call_id="c9", name="ping", args_delta="{}"
    )
    assert tool_call_turn("raw", '{"broken')[0] == ToolCallDelta(
        call_id="call_1_raw", name="raw", args_delta='{"broken'
    )
    steps = tool_calls_turn([("a", {"n": 1}), ("b", None)], call_ids=["x", "y"])
    assert steps == [
        ToolCallDelta(call_id="x", name="a", args_delta='{"n": 1}'),
        ToolCallDelta(call_id="y", name="b", args_delta="{}"),
        Finish(reason="tool_calls"),
    ]


# --- ScriptFile -------------------------------------------------------------------------------

SCRIPT_JSON = {
    "default": [[{"type": "token_delta", "text": "Hi"}, {"type": "finish", "reason": "stop"}]],
    "cases": {
        "case-1": [
            [
                {"type": "tool_call_delta", "call_id": "c1", "name": "t", "args_delta": "{}"},
                {"type": "finish"},
            ],
            [
                {"type": "token_delta", "text": "Hello"},
                {"type": "usage", "input_tokens": 5},
                {"type": "finish"},
            ],
        ]
    },
}


def test_script_file_loads_events() -> None:
    file = ScriptFile.loads(json.dumps(SCRIPT_JSON))
    assert file.default == [[TokenDelta(text="Hi"), Finish(reason="stop")]]
    assert file.cases["case-1"][1] == [
        TokenDelta(text="Hello"),
        Usage(input_tokens=5),
        Finish(reason="stop"),
    ]


def test_script_file_round_trips_through_dumps() -> None:
    file = ScriptFile.loads(json.dumps(SCRIPT_JSON))
    again = ScriptFile.loads(file.dumps())
    assert again == file
    without_cases = ScriptFile([[TokenDelta(text="x")]])
    assert "cases" not in json.loads(without_cases.dumps())
    assert ScriptFile.loads(without_cases.dumps()) == without_cases


def test_script_file_cases_fall_back_to_the_default() -> None:
    file = ScriptFile.loads(json.dumps(SCRIPT_JSON))
    assert file.scripts("case-1") is file.cases["case-1"]
    assert file.scripts("unknown-case") is file.default
    assert file.scripts() is file.default
    assert file.scripts(None) is file.default


async def test_mock_model_from_a_script_file(tmp_path: Path) -> None:
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps(SCRIPT_JSON), encoding="utf-8")
    by_case = MockModel.from_script_file(path, "case-1", model_name="scripted")
    assert by_case.remaining == 2
    assert by_case.model_name == "scripted"
    assert (await play(by_case))[0] == ToolCallDelta(call_id="c1", name="t", args_delta="{}")
    assert (await play(by_case))[0] == TokenDelta(text="Hello")
    fallback = MockModel.from_script_file(str(path), "nope")
    assert await play(fallback) == [TokenDelta(text="Hi"), Finish(reason="stop")]


def test_script_file_load_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    original = ScriptFile([[TokenDelta(text="a"), Finish()]], {"k": [[Finish(reason="length")]]})
    path.write_text(original.dumps(), encoding="utf-8")
    assert ScriptFile.load(path) == original


def test_a_missing_script_file_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(UserError) as info:
        ScriptFile.load(missing)
    assert str(missing) in str(info.value)
    assert "cannot read script file" in str(info.value)
    with pytest.raises(UserError, match=r"nope\.json"):
        MockModel.from_script_file(missing)


def test_invalid_json_in_a_script_file_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(UserError) as info:
        ScriptFile.load(path)
    assert str(info.value).startswith(f"{path}: not valid JSON")


@pytest.mark.parametrize("text", ['{"cases": {}}', "[]", '"default"', "null"])
def test_a_script_file_needs_a_default(text: str) -> None:
    with pytest.raises(
        UserError, match=r'^scripts\.json: expected an object with a "default" list of scripts'
    ):
        ScriptFile.loads(text, source="scripts.json")


def test_scripts_must_be_lists() -> None:
    with pytest.raises(UserError, match=r'^f\.json: "default": expected a list of scripts'):
        ScriptFile.loads('{"default": {"type": "finish"}}', source="f.json")
    with pytest.raises(UserError, match=r'^f\.json: "default"\[1\]: expected a list of events'):
        ScriptFile.loads('{"default": [[], {"type": "finish"}]}', source="f.json")
    with pytest.raises(UserError, match=r'^f\.json: "cases" must be an object'):
        ScriptFile.loads('{"default": [], "cases": [[]]}', source="f.json")
    with pytest.raises(UserError, match=r'^f\.json: cases\["c"\]: expected a list of scripts'):
        ScriptFile.loads('{"default": [], "cases": {"c": "x"}}', source="f.json")


def test_an_unknown_event_type_names_the_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    data = {
        "default": [
            [{"type": "finish"}],
            [{"type": "token_delta", "text": "ok"}, {"type": "tool_result", "text": "?"}],
        ]
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UserError) as info:
        ScriptFile.load(path)
    message = str(info.value)
    assert message.startswith(f'{path}: "default"[1][1]: not a model event (')
    assert "'tool_result'" in message
    assert "(:" not in message


def test_a_bad_event_in_a_case_names_the_case() -> None:
    text = json.dumps({"default": [], "cases": {"c-7": [[{"type": "token_delta"}]]}})
    with pytest.raises(UserError) as info:
        ScriptFile.loads(text, source="x.json")
    message = str(info.value)
    assert message.startswith('x.json: cases["c-7"][0][0]: not a model event (')
    assert "text" in message


# --- RetryPolicy ------------------------------------------------------------------------------


def test_retry_policy_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.base_delay, policy.multiplier, policy.max_delay, policy.jitter) == (
        4,
        0.25,
        2.0,
        30.0,
        0.5,
    )


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_attempts": 0}, "max_attempts=0"),
        ({"max_attempts": -1}, "max_attempts=-1"),
        ({"max_attempts": True}, "max_attempts=True"),
        ({"max_attempts": 2.0}, "max_attempts=2.0"),
        ({"base_delay": -0.1}, "base_delay=-0.1"),
        ({"base_delay": "1"}, "base_delay='1'"),
        ({"max_delay": -1}, "max_delay=-1"),
        ({"multiplier": 0.5}, "multiplier=0.5"),
        ({"jitter": -0.1}, "jitter=-0.1"),
        ({"jitter": 1.5}, "jitter=1.5"),
    ],
)
def test_retry_policy_validation_names_the_argument(kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises(UserError) as info:
        RetryPolicy(**kwargs)
    assert f"RetryPolicy({argument})" in str(info.value)


def test_retry_policy_accepts_its_edges() -> None:
    policy = RetryPolicy(max_attempts=1, base_delay=0, multiplier=1, max_delay=0, jitter=0)
    assert policy.delay(1, Unavailable()) == 0
    assert RetryPolicy(jitter=1).jitter == 1


def test_delay_grows_exponentially_without_jitter() -> None:
    policy = RetryPolicy(base_delay=0.25, multiplier=2, max_delay=100, jitter=0)
    assert [policy.delay(n, Unavailable()) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 4.0]
    triple = RetryPolicy(base_delay=1, multiplier=3, max_delay=100, jitter=0)
    assert [triple.delay(n, Transport()) for n in range(1, 5)] == [1, 3, 9, 27]


def test_delay_is_capped_at_max_delay() -> None:
    policy = RetryPolicy(base_delay=1, multiplier=2, max_delay=5, jitter=0)
    assert [policy.delay(n, Unavailable()) for n in range(1, 7)] == [1, 2, 4, 5, 5, 5]
    assert policy.delay(200, Unavailable()) == 5


def test_jitter_takes_a_random_share_off_the_backoff() -> None:
    policy = RetryPolicy(base_delay=2, multiplier=2, max_delay=100, jitter=0.5)
    expected_rng = random.Random(1234)
    rng = random.Random(1234)
    for retry in range(1, 5):
        backoff = 2 * 2 ** (retry - 1)
        assert policy.delay(retry, Unavailable(), rng) == pytest.approx(
            backoff - backoff * 0.5 * expected_rng.random()
        )


@pytest.mark.parametrize("jitter", [0.0, 0.25, 0.5, 1.0])
def test_jitter_stays_within_its_bounds(jitter: float) -> None:
    policy = RetryPolicy(base_delay=1, multiplier=2, max_delay=8, jitter=jitter)
    rng = random.Random(7)
    for retry in range(1, 8):
        backoff = min(8, 2 ** (retry - 1))
        samples = [policy.delay(retry, Unavailable(), rng) for _ in range(200)]
        assert all(backoff * (1 - jitter) <= s <= backoff for s in samples)
        if jitter:
            assert len(set(samples)) > 1  # it really is random


def test_rate_limited_waits_at_least_the_providers_hint() -> None:
    policy = RetryPolicy(base_delay=0.25, multiplier=2, max_delay=30, jitter=0.5)
    rng = random.Random(0)
    assert policy.delay(1, RateLimited(retry_after_ms=5000), rng) == 5.0
    assert policy.delay(3, RateLimited(retry_after_ms=2500), rng) == 2.5
    # a hint shorter than the backoff does not shorten it
    no_jitter = RetryPolicy(base_delay=4, jitter=0)
    assert no_jitter.delay(1, RateLimited(retry_after_ms=10)) == 4
    assert no_jitter.delay(1, RateLimited()) == 4
    # the hint also beats the cap
    assert RetryPolicy(max_delay=1, jitter=0).delay(5, RateLimited(retry_after_ms=3000)) == 3.0


async def test_running_out_of_scripts_fails_when_the_stream_is_read_not_when_invoked() -> None:
    from helikon import CancellationToken, ModelRequest, OtherModelError
    from helikon.testing import MockModel

    model = MockModel.with_scripts([])
    stream = model.invoke(ModelRequest(messages=()), CancellationToken())  # no error yet
    with pytest.raises(OtherModelError, match="ran out of scripts"):
        await stream.__anext__()
