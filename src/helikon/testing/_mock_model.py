"""`MockModel` and `FunctionModel`: scripted models for tests, demos and evals."""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from helikon.core.cancel import CancellationToken
from helikon.core.exceptions import OtherModelError, UserError
from helikon.core.model import Model, ModelCapabilities, ModelEvent, ModelRequest

from ._scripts import Delay, Script, ScriptStep

if TYPE_CHECKING:
    from pathlib import Path

    from helikon.core.session import Session

_CAPABILITIES = ModelCapabilities(
    streaming=True, tools=True, parallel_tool_calls=True, structured_output=True, reasoning=True
)


async def _play(steps: Sequence[ScriptStep]) -> AsyncIterator[ModelEvent]:
    for step in steps:
        if isinstance(step, Delay):
            import asyncio  # here, not at module level: importing helikon.testing must not load asyncio

            await asyncio.sleep(step.seconds)
        elif isinstance(step, BaseException):
            raise step
        else:
            yield step


class MockModel(Model):
    """A model that plays one script per call, in order; running out is a `ModelError`.

    Every request it receives is kept in `requests`, for assertions. Stateful: give each
    concurrent run its own `MockModel` (or use `FunctionModel`).

    Example:
        ```python
        from helikon import LlmAgent
        from helikon.testing import MockModel, text_turn

        model = MockModel.with_scripts([text_turn("Hello!")])
        result = LlmAgent(name="greeter", model=model).run_sync("Hi")
        assert result.final_output == "Hello!" and len(model.requests) == 1
        ```
    """

    def __init__(
        self,
        scripts: Sequence[Script] = (),
        *,
        capabilities: ModelCapabilities = _CAPABILITIES,
        provider: str = "mock",
        model_name: str = "mock-model",
    ) -> None:
        for index, script in enumerate(scripts):
            if isinstance(script, str | bytes) or not isinstance(script, Sequence):
                raise UserError(f"MockModel(scripts=...): script {index} must be a list of ModelEvents")
        self._scripts: deque[Script] = deque(scripts)
        self._capabilities = capabilities
        self._provider = provider
        self._model_name = model_name
        self.requests: list[ModelRequest] = []

    @classmethod
    def with_scripts(cls, scripts: Sequence[Script], **kwargs: Any) -> MockModel:
        """A model that plays `scripts`, one per call."""
        return cls(scripts, **kwargs)

    @classmethod
    def from_script_file(cls, path: str | Path, case_id: str | None = None, **kwargs: Any) -> MockModel:
        """A model playing a `ScriptFile`'s scripts for `case_id` (or its defaults)."""
        from ._script_file import ScriptFile

        return cls(ScriptFile.load(path).scripts(case_id), **kwargs)

    @classmethod
    async def from_session(cls, session: Session, *, upto_seq: int | None = None, **kwargs: Any) -> MockModel:
        """A model answering as the model of `session`'s recorded conversation did, call by call.

        A conversation seen in production becomes a deterministic test: each recorded model
        answer (its text, its tool calls) is one script, in order (see `scripts_from_session`).
        """
        from ._session_scripts import scripts_from_session

        return cls(await scripts_from_session(session, upto_seq=upto_seq), **kwargs)

    def with_script(self, script: Script) -> MockModel:
        """Queue one more script; returns self for chaining."""
        self._scripts.append(script)
        return self

    @property
    def remaining(self) -> int:
        """How many scripts are left."""
        return len(self._scripts)

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str:
        return self._model_name

    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if not self._scripts:
            # Raised when the stream is read, as a real adapter's request would fail.
            error = OtherModelError(
                f"MockModel ran out of scripts after {len(self.requests) - 1} call(s); add one per model call"
            )
            return _play((error,))
        return _play(self._scripts.popleft())


ScriptFunction = Callable[[ModelRequest], Script | Awaitable[Script]]


class FunctionModel(Model):
    """A model whose every call is answered by `fn(request)` (sync or async), returning a script.

    Stateless, so one instance can serve many concurrent runs.

    Example:
        ```python
        from helikon import LlmAgent, ModelRequest
        from helikon.testing import FunctionModel, text_turn

        def echo(request: ModelRequest):
            return text_turn(f"you said: {request.messages[-1].text}")

        agent = LlmAgent(name="echo", model=FunctionModel(echo))
        assert agent.run_sync("hi").final_output == "you said: hi"
        ```
    """

    def __init__(
        self,
        fn: ScriptFunction,
        *,
        capabilities: ModelCapabilities = _CAPABILITIES,
        provider: str = "function",
        model_name: str = "function-model",
    ) -> None:
        if not callable(fn):
            raise UserError(f"FunctionModel(fn={fn!r}): expected a function of the ModelRequest")
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self._capabilities = capabilities
        self._provider = provider
        self._model_name = model_name

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str:
        return self._model_name

    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    def invoke(self, request: ModelRequest, cancel: CancellationToken) -> AsyncIterator[ModelEvent]:
        if self._is_async:
            return self._invoke_async(request)
        return _play(self._fn(request))  # pyright: ignore[reportArgumentType]

    async def _invoke_async(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        script: Any = await self._fn(request)  # pyright: ignore[reportGeneralTypeIssues, reportUnknownVariableType]
        async for event in _play(script):  # pyright: ignore[reportUnknownArgumentType]
            yield event
