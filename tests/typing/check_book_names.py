"""Static checks of the book's spellings (builders, accessor calls): pyright (strict) checks this file."""

from __future__ import annotations

from typing import Any, assert_type

from helikon import (
    ActionsHandle,
    CompactingSession,
    CompactingSessionBuilder,
    LlmAgent,
    LlmAgentBuilder,
    MemorySession,
    RunContext,
    SessionState,
    SwarmAgent,
    SwarmBuilder,
    TracerHandle,
)
from helikon.testing import MockModel


def checks() -> None:
    model = MockModel.with_scripts([])
    assert_type(LlmAgent.builder(), LlmAgentBuilder)
    agent = LlmAgent.builder().name("a").model(model).instructions("Be brief.").build()
    assert_type(agent, LlmAgent[Any, Any])  # a builder does not track the output type
    member = LlmAgent[int](name="m", model=model)
    assert_type(SwarmAgent.builder(), SwarmBuilder[Any])
    assert_type(SwarmAgent.builder().name("s").member(member).build(), SwarmAgent[Any])
    assert_type(CompactingSession.builder(MemorySession(), model), CompactingSessionBuilder)
    assert_type(CompactingSession.builder(MemorySession(), model).threshold(10).build(), CompactingSession)
    assert_type(TracerHandle.builder().with_tag("prod").build(), TracerHandle)
    ctx = RunContext.ephemeral(3)
    assert_type(ctx.state(), SessionState)
    assert_type(ctx.actions(), ActionsHandle)
    assert_type(ctx.tracer(), TracerHandle)
