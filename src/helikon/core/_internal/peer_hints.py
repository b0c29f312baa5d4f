"""Errors that name helikon's way when a user writes an openai-agents or pydantic-ai idiom.

`helikon.Agent(...)`, `Runner.run_sync(agent, q)`, `result.output`, a forgotten `await`
(`agent.run(q).final_output`), `agent.run_stream(q)`: each fails as Python would, with the
same exception type, and the message says what to write instead and where the mapping is
(`docs/coming-from-peers.md`). Nothing here runs on a working path: `__getattr__` runs only
for a name the object lacks, the metaclass's `__call__` only when a class of it is called,
and a protocol's stub only when someone calls the protocol's own method.

The `__getattr__`s are defined for the interpreter only (`if not TYPE_CHECKING`), so type
checkers still report a misspelt attribute.

Example:
    ```python
    from helikon import LlmAgent
    from helikon.testing import MockModel, text_turn

    result = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("Hi")])).run_sync("Hi")
    try:
        result.output  # pydantic-ai's name
    except AttributeError as exc:
        assert "use result.final_output" in str(exc) and "coming-from-peers.md" in str(exc)
    ```
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from abc import ABCMeta as _ProtocolMeta  # what type checkers know Protocol's metaclass as
else:
    _ProtocolMeta = type(Protocol)

F = TypeVar("F", bound=Callable[..., Any])

PEERS_PAGE = "docs/coming-from-peers.md"


def hinted(message: str, hint: str | None) -> str:
    """`message`, then `hint` and where the peers' names are mapped (when there is a hint)."""
    return message if hint is None else f"{message}; {hint} (see {PEERS_PAGE})"


def no_attribute(obj: object, name: str, hints: Mapping[str, str]) -> AttributeError:
    """The `AttributeError` for `obj.name`, with the hint `hints` holds for `name`, if any."""
    message = f"{type(obj).__name__!r} object has no attribute {name!r}"
    return AttributeError(hinted(message, hints.get(name)), name=name, obj=obj)


class PeerHints(_ProtocolMeta):
    """The metaclass of the `Agent` and `Runner` protocols: calling one, or a name it lacks, hints.

    `Agent(...)` raises `TypeError` as any protocol does ("Protocols cannot be instantiated")
    and says which class to build; `Runner.run_sync` raises `AttributeError` naming the
    call to make. Instances of classes that implement the protocols (structurally, or by
    subclassing it) are untouched.
    """

    if not TYPE_CHECKING:

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if cls._is_protocol:
                hint = _CALLED.get(cls.__name__)
                raise TypeError(hinted(f"{cls.__name__} is a protocol and cannot be instantiated", hint))
            return super().__call__(*args, **kwargs)

        def __getattr__(cls, name: str) -> NoReturn:
            message = f"type object {cls.__name__!r} has no attribute {name!r}"
            raise AttributeError(
                hinted(message, _CLASS_ATTRIBUTES.get(cls.__name__, {}).get(name)), name=name
            )


def protocol_stub(hint: str) -> Callable[[F], F]:
    """Make a protocol method's stub raise `TypeError(hint)` when called through the protocol.

    For `Runner.run(agent, q)`, openai-agents' way: the protocol's own method is never the
    one a runner runs, so calling it is always this mistake (or a subclass that did not
    implement it). Type checkers see the method as written.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def stub(*args: Any, **kwargs: Any) -> NoReturn:
            raise TypeError(hinted(f"{fn.__qualname__}() is the protocol's, not a runner's", hint))

        return cast(F, stub)  # its signature is fn's, through __wrapped__

    return decorate


_RUN = "run an agent with agent.run_sync(input) or await agent.run(input)"

_CALLED: Mapping[str, str] = MappingProxyType(
    {
        "Agent": (
            "openai-agents' and pydantic-ai's Agent(...) is LlmAgent(name=..., model=..., "
            "instructions=..., tools=[...]) in helikon; Agent is what every agent implements"
        ),
        "Runner": f"{_RUN}; a runner object is helikon.runtime.AsyncioRunner()",
    }
)
"""Protocol class name -> what to build instead."""

_CLASS_ATTRIBUTES: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "Runner": MappingProxyType(
            {
                "run_sync": (
                    f"openai-agents' Runner.run_sync(agent, input) is agent.run_sync(input) here; {_RUN}"
                ),
            }
        ),
    }
)
"""Protocol class name -> {missing class attribute -> what to write instead}."""

RUNNER_RUN = (
    f"openai-agents' Runner.run(agent, input) is await agent.run(input) in helikon; {_RUN}, or call "
    "a runner object: await AsyncioRunner().run(agent, input, context)"
)
RUNNER_RUN_STREAMED = (
    "openai-agents' Runner.run_streamed(agent, input) is agent.run(input) in helikon: iterate it "
    "(async for event in agent.run(input)), or call a runner object: "
    "AsyncioRunner().run_streamed(agent, input, context)"
)

_FINAL_OUTPUT = "use result.final_output"
RESULT_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "output": f"pydantic-ai's result.output is helikon's final_output: {_FINAL_OUTPUT}",
        "data": f"pydantic-ai's result.data is helikon's final_output: {_FINAL_OUTPUT}",
        "new_messages": (
            "pydantic-ai's result.new_messages() is result.new_items; to go on with the conversation: "
            "agent.run(next_input, history=result)"
        ),
        "all_messages": "pydantic-ai's result.all_messages() is result.all_items",
        "final_output_as": (
            "final_output is typed by the agent's output_type; to parse it into another type, "
            "collect the run with it: await agent.run(input).collect(MyType)"
        ),
    }
)
"""`RunResult` attribute a peer has -> helikon's."""

STREAM_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "stream_events": (
            "openai-agents' result.stream_events() is the RunStream itself: "
            "async for event in agent.run(input)"
        ),
        "stream_text": (
            "pydantic-ai's stream_text() is text_stream() here: "
            "async for text in agent.run(input).text_stream()"
        ),
        "stream_output": "pydantic-ai's stream_output() is partial_output() here",
        "get_output": "pydantic-ai's await result.get_output() is (await run).final_output here",
    }
)
"""`RunStream` attribute a peer has -> helikon's."""

FORGOTTEN_AWAIT = (
    "agent.run(...) returns the run in progress (a RunStream), not its result: await it "
    "(result = await agent.run(input)) or call agent.run_sync(input)"
)
"""The hint for a result's attribute read on a `RunStream`."""

_STREAMS = "agent.run(input) streams: async for event in agent.run(input), or agent.run(input).text_stream()"
_TOOLS = "is @tool on a function, passed as LlmAgent(tools=[...])"
AGENT_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "run_stream": f"pydantic-ai's agent.run_stream(input) is agent.run(input) in helikon; {_STREAMS}",
        "run_streamed": (
            f"openai-agents' Runner.run_streamed(agent, input) is agent.run(input) in helikon; {_STREAMS}"
        ),
        "as_tool": (
            "openai-agents' agent.as_tool(tool_name=, tool_description=) is "
            "AgentAsTool(agent, name=, description=)"
        ),
        "tool": f"pydantic-ai's @agent.tool {_TOOLS}",
        "tool_plain": f"pydantic-ai's @agent.tool_plain {_TOOLS}",
        "system_prompt": (
            "pydantic-ai's @agent.system_prompt is LlmAgent(instructions=fn), fn a (sync or async) function "
            "of the RunContext"
        ),
    }
)
"""`LlmAgent` attribute a peer's agent has -> helikon's."""


def forgotten_await(name: str) -> str:
    """The hint for `name`, a result's attribute (helikon's or a peer's), read on a `RunStream`."""
    peer = RESULT_HINTS.get(name)
    return f"{FORGOTTEN_AWAIT}; {peer}" if peer is not None else f"{FORGOTTEN_AWAIT}, then read result.{name}"


__all__ = [
    "AGENT_HINTS",
    "FORGOTTEN_AWAIT",
    "PEERS_PAGE",
    "RESULT_HINTS",
    "RUNNER_RUN",
    "RUNNER_RUN_STREAMED",
    "STREAM_HINTS",
    "PeerHints",
    "forgotten_await",
    "hinted",
    "no_attribute",
    "protocol_stub",
]
