"""What new users trip on (issue 27): a peer's idiom fails as Python would, and says helikon's way.

`helikon.Agent(...)`, `Runner.run_sync/run/run_streamed(agent, q)`, `result.output`, a forgotten
`await`, `agent.run_stream(q)`, ... each raise the usual exception type, naming what to write
and `docs/coming-from-peers.md`. Unknown names stay plain `AttributeError`s; `isinstance`
against the protocols, explicit subclasses, copies and pickles work as before. (That the
names stay type errors is `tests/typing/check_peer_names.py`.)
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from pathlib import Path
from typing import Any

import pytest

import helikon
from helikon import Agent, LlmAgent, Runner, RunResult, RunStream
from helikon.core._internal.peer_hints import PEERS_PAGE
from helikon.runtime import AsyncioRunner
from helikon.testing import MockModel, text_turn

ROOT = Path(__file__).resolve().parents[2]


def agent() -> LlmAgent[None]:
    return LlmAgent(name="a", model=MockModel.with_scripts([text_turn("Hi!")] * 3))


def result() -> RunResult[str]:
    return agent().run_sync("Hi")


def hint_of(exc: BaseException, *parts: str) -> None:
    message = str(exc)
    for part in parts:
        assert part in message, message
    assert message.endswith(f"(see {PEERS_PAGE})"), message


def test_the_page_the_hints_name_exists() -> None:
    assert (ROOT / PEERS_PAGE).is_file()


def test_instantiating_the_agent_protocol_names_llm_agent() -> None:
    with pytest.raises(TypeError) as info:
        helikon.Agent(name="Assistant", instructions="Be brief.")  # type: ignore[abstract]
    hint_of(info.value, "Agent is a protocol and cannot be instantiated", "LlmAgent(name=..., model=...")


def test_instantiating_the_runner_protocol_names_the_calls() -> None:
    with pytest.raises(TypeError) as info:
        helikon.Runner()  # type: ignore[abstract]
    hint_of(info.value, "agent.run_sync(input)", "AsyncioRunner()")


def test_openai_agents_runner_calls_name_helikons() -> None:
    a = agent()
    with pytest.raises(AttributeError) as info:
        helikon.Runner.run_sync(a, "Hi")  # type: ignore[attr-defined]
    hint_of(info.value, "type object 'Runner' has no attribute 'run_sync'", "agent.run_sync(input)")
    with pytest.raises(TypeError) as typed:
        helikon.Runner.run(a, "Hi")  # type: ignore[call-arg]
    hint_of(typed.value, "Runner.run() is the protocol's", "await agent.run(input)")
    with pytest.raises(TypeError) as typed:
        helikon.Runner.run_streamed(a, "Hi")  # type: ignore[call-arg]
    hint_of(typed.value, "Runner.run_streamed() is the protocol's", "async for event in agent.run(input)")


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("output", "use result.final_output"),
        ("data", "use result.final_output"),
        ("new_messages", "result.new_items"),
        ("all_messages", "result.all_items"),
        ("final_output_as", ".collect(MyType)"),
    ],
)
def test_a_peers_result_attribute_names_helikons(name: str, says: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(result(), name)
    hint_of(info.value, f"'RunResult' object has no attribute {name!r}", says)


PUBLIC_RESULT_NAMES = sorted(n for n in dir(RunResult) if not n.startswith("_"))


@pytest.mark.parametrize("name", [*PUBLIC_RESULT_NAMES, "output"])
async def test_a_result_attribute_read_on_the_stream_says_await_is_missing(name: str) -> None:
    stream = agent().run("Hi")
    with pytest.raises(AttributeError) as info:
        getattr(stream, name)
    hint_of(info.value, f"'RunStream' object has no attribute {name!r}", "await it", "agent.run_sync(input)")
    assert (await stream).final_output == "Hi!"  # the stream itself is untouched


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("stream_events", "async for event in agent.run(input)"),
        ("stream_text", "text_stream()"),
        ("stream_output", "partial_output()"),
        ("get_output", "(await run).final_output"),
    ],
)
async def test_a_peers_stream_attribute_names_helikons(name: str, says: str) -> None:
    stream = agent().run("Hi")
    with pytest.raises(AttributeError) as info:
        getattr(stream, name)
    hint_of(info.value, says)
    await stream


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("run_stream", "agent.run(input) streams"),
        ("run_streamed", "agent.run(input) streams"),
        ("as_tool", "AgentAsTool(agent, name=, description=)"),
        ("tool", "@tool on a function"),
        ("tool_plain", "@tool on a function"),
        ("system_prompt", "LlmAgent(instructions=fn)"),
    ],
)
def test_a_peers_agent_attribute_names_helikons(name: str, says: str) -> None:
    with pytest.raises(AttributeError) as info:
        getattr(agent(), name)
    hint_of(info.value, f"'LlmAgent' object has no attribute {name!r}", says)


async def test_an_unknown_name_is_a_plain_attribute_error() -> None:
    stream = agent().run("Hi")
    done = await agent().run("Hi")
    for obj, owner in ((done, "RunResult"), (stream, "RunStream"), (agent(), "LlmAgent")):
        with pytest.raises(AttributeError) as info:
            obj.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
        assert str(info.value) == f"{owner!r} object has no attribute 'no_such_thing'"
        assert info.value.name == "no_such_thing" and info.value.obj is obj  # "Did you mean" works
        assert getattr(obj, "no_such_thing", 7) == 7 and not hasattr(obj, "output")
    with pytest.raises(AttributeError, match=r"^type object 'Runner' has no attribute 'nope'$"):
        Runner.nope  # type: ignore[attr-defined]  # noqa: B018
    await stream


def test_the_protocols_still_check_instances_and_keep_their_signatures() -> None:
    assert isinstance(agent(), Agent) and not isinstance(object(), Agent)
    assert isinstance(AsyncioRunner[None](), Runner) and not isinstance(agent(), Runner)
    assert list(inspect.signature(Runner.run).parameters) == ["self", "agent", "input", "context", "config"]
    assert Runner.run.__doc__ and Runner.run_streamed.__doc__


async def test_classes_that_subclass_the_protocols_are_built_and_run_as_before() -> None:
    class Echo(Agent[None, str]):
        def __init__(self, name: str) -> None:
            self._name = name

        @property
        def name(self) -> str:
            return self._name

        @property
        def description(self) -> str:
            return "echoes"

        def run(self, input: Any, *, context: Any = None, config: Any = None) -> RunStream[str]:
            return agent().run(input, context=context, config=config)

    class Plain(Runner[None]):
        pass

    echo = Echo("echo")
    assert isinstance(echo, Agent) and echo.name == "echo"
    assert (await echo.run("Hi")).final_output == "Hi!"
    assert isinstance(Plain(), Plain)  # type: ignore[abstract]


def test_a_result_still_copies_and_pickles() -> None:
    done = result()
    assert copy.copy(done) == done and dataclasses.replace(done, final_output="x").final_output == "x"
    plain = dataclasses.replace(done, agent=None)  # an agent's model need not pickle
    assert pickle.loads(pickle.dumps(plain)) == plain
