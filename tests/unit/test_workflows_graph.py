"""GraphAgent: building, wavefront scheduling, node inputs, sinks, collect-all failure, cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from workflow_support import Gate, digest, failing, other_tasks, scripted

from helikon import (
    GraphAgent,
    GraphBuildError,
    HookDecision,
    HookEvent,
    HookRegistry,
    LlmAgent,
    LoopAgent,
    MessageOutput,
    ModelRequest,
    ParallelAgent,
    RunContext,
    RunError,
    RunFailed,
    SequentialAgent,
    UserError,
)
from helikon.testing import FunctionModel, MockModel, text_turn


def recording(name: str, text: str, seen: dict[str, list[str]]) -> LlmAgent[Any]:
    """A node that answers `text` and records the texts of the messages it was given."""

    def reply(request: ModelRequest) -> Any:
        seen[name] = [m.text for m in request.messages]  # type: ignore[union-attr]
        return text_turn(text)

    return LlmAgent(name=name, model=FunctionModel(reply))


def diamond(seen: dict[str, list[str]]) -> GraphAgent[Any]:
    return (
        GraphAgent.builder()
        .name("report")
        .description("spending + income -> summary")
        .node("spending", recording("spending", "spent 2100", seen))
        .node("income", recording("income", "earned 3000", seen))
        .node("summary", recording("summary", "saved 900", seen))
        .edge("spending", "summary")
        .edge("income", "summary")
        .build()
    )


# --- building ----------------------------------------------------------------------------------


def test_a_cycle_is_named_in_order() -> None:
    builder = GraphAgent.builder().name("g")
    for node in "abcd":
        builder.node(node, scripted(node, node))
    builder.edge("d", "a").edge("a", "b").edge("b", "c").edge("c", "a")
    with pytest.raises(GraphBuildError) as caught:
        builder.build()
    assert caught.value.problem == "cycle"
    assert "a -> b -> c -> a" in str(caught.value)
    assert sorted(caught.value.nodes) == ["a", "b", "c"]
    assert isinstance(caught.value, UserError)


def test_a_self_loop_is_a_cycle() -> None:
    with pytest.raises(GraphBuildError, match="cycle: a -> a"):
        GraphAgent("g", nodes={"a": scripted("a", "A")}, edges=[("a", "a")])


def test_unknown_duplicate_empty_and_nameless_graphs_are_refused() -> None:
    with pytest.raises(GraphBuildError, match="unknown node 'ghost'") as caught:
        GraphAgent.builder().name("g").node("a", scripted("a", "A")).edge("a", "ghost").build()
    assert caught.value.problem == "unknown_node" and caught.value.nodes == ("ghost",)
    with pytest.raises(GraphBuildError, match="two nodes are named 'a'") as caught:
        GraphAgent.builder().name("g").node("a", scripted("a", "A")).node("a", scripted("b", "B")).build()
    assert caught.value.problem == "duplicate_node"
    with pytest.raises(GraphBuildError, match="no nodes") as caught:
        GraphAgent.builder().name("g").build()
    assert caught.value.problem == "empty"
    with pytest.raises(GraphBuildError, match=r"\.name") as caught:
        GraphAgent.builder().node("a", scripted("a", "A")).build()
    assert caught.value.problem == "missing_name"
    with pytest.raises(GraphBuildError, match="non-empty name"):
        GraphAgent("", nodes={"a": scripted("a", "A")})


def test_malformed_nodes_and_edges_are_user_errors() -> None:
    with pytest.raises(UserError, match="is not an Agent"):
        GraphAgent("g", nodes={"a": "agent"})  # type: ignore[dict-item]
    with pytest.raises(UserError, match="non-empty string"):
        GraphAgent("g", nodes=[("", scripted("a", "A"))])
    with pytest.raises(UserError, match=r"\(name, agent\) pairs"):
        GraphAgent("g", nodes=[scripted("a", "A")])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"\(from, to\) pairs"):
        GraphAgent("g", nodes={"a": scripted("a", "A")}, edges=["ab"])  # type: ignore[list-item]


def test_keyword_construction_matches_the_builder_and_drops_duplicate_edges() -> None:
    graph = GraphAgent(
        "g",
        "desc",
        nodes={"a": scripted("a", "A"), "b": scripted("b", "B"), "c": scripted("c", "C")},
        edges=[("a", "c"), ("b", "c"), ("a", "c")],
    )
    assert graph.edges == (("a", "c"), ("b", "c"))
    assert graph.sinks == ("c",)
    assert (graph.name, graph.description) == ("g", "desc")


# --- running -----------------------------------------------------------------------------------


async def test_the_diamond_runs_summary_last_with_labelled_predecessor_outputs() -> None:
    seen: dict[str, list[str]] = {}
    ctx = RunContext.ephemeral(None)
    result = await diamond(seen).run("March report", context=ctx)
    events = digest(result.events)
    assert events[:3] == ["run_started:report", "agent_updated:spending", "agent_updated:income"]
    assert events.index("agent_updated:summary") > events.index("message_output:income:earned 3000")
    assert events.index("agent_updated:summary") > events.index("message_output:spending:spent 2100")
    assert events[-2:] == ["message_output:report:saved 900", "run_completed"]
    assert result.final_output == "saved 900"
    assert seen["spending"] == ["March report"]
    assert seen["summary"] == [
        "March report",
        "[spending output]\nspent 2100",
        "[income output]\nearned 3000",
    ]
    assert ctx.state.to_dict() == {"spending": "spent 2100", "income": "earned 3000", "summary": "saved 900"}
    assert result.usage.requests == 3


async def test_several_sinks_merge_into_a_sorted_key_json_object() -> None:
    graph = GraphAgent(
        "g", nodes={"root": scripted("r", "R"), "z": scripted("z", "Z"), "y": scripted("y", "Y")},
        edges=[("root", "z"), ("root", "y")],
    )  # fmt: skip
    assert (await graph.run("x")).final_output == '{"y":"Y","z":"Z"}'
    assert (await GraphAgent("one", nodes={"a": scripted("a", "only")}).run("x")).final_output == "only"


async def test_usage_is_summed_over_nodes() -> None:
    graph = GraphAgent(
        "g", nodes={"a": scripted("a", "A", tokens=2), "b": scripted("b", "B", tokens=5)}, edges=[("a", "b")]
    )
    result = await graph.run("x")
    assert (result.usage.input_tokens, result.usage.requests) == (7, 2)


async def test_a_node_starts_as_soon_as_its_own_predecessors_are_done() -> None:
    # a (blocked) -> c ;  b -> d : d must run while a still waits (no level-by-level barrier).
    gate = Gate()
    graph = GraphAgent(
        "g",
        nodes={
            "a": gate.agent("a"),
            "b": scripted("b", "B"),
            "c": scripted("c", "C"),
            "d": scripted("d", "D"),
        },
        edges=[("a", "c"), ("b", "d")],
    )
    seen: list[str] = []

    async def consume() -> None:
        async for event in graph.run("x"):
            seen.extend(digest([event]))
            if isinstance(event, MessageOutput) and event.item.agent == "d":
                assert gate.finished == []
                gate.release.set()

    await asyncio.wait_for(consume(), 5)
    assert seen.index("message_output:d:D") < seen.index("message_output:a:a") < seen.index("agent_updated:c")


async def test_a_failed_node_skips_its_descendants_while_independent_nodes_finish() -> None:
    ctx = RunContext.ephemeral(None)
    later = MockModel.with_scripts([text_turn("never")])
    graph = GraphAgent(
        "g",
        nodes={
            "bad": failing("bad"),
            "child": LlmAgent(name="child", model=later),
            "grandchild": scripted("gc", "never"),
            "free": scripted("free", "F", tokens=4),
            "after_free": scripted("af", "AF"),
        },
        edges=[("bad", "child"), ("child", "grandchild"), ("free", "after_free")],
    )
    events = [e async for e in graph.run("x", context=ctx)]
    failures = [e for e in events if isinstance(e, RunFailed)]
    assert failures == [events[-1]]
    error = failures[0].error
    assert error.kind == "model_error"
    assert "1 of 5 nodes failed: 'bad'" in error.message
    assert "skipped downstream: 'child', 'grandchild'" in error.message
    assert failures[0].usage.input_tokens == 4
    assert later.requests == []
    assert ctx.state.to_dict() == {"free": "F", "after_free": "AF"}


async def test_hooks_see_each_node_stop() -> None:
    stops: list[str] = []

    class Recorder:
        async def on_event(self, ctx: RunContext[Any], event: HookEvent) -> HookDecision:
            if event.type == "on_subagent_stop":
                stops.append(event.agent)
            return HookDecision.allow()

    ctx = RunContext.ephemeral(None).with_hooks(HookRegistry([Recorder()]))
    await diamond({}).run("x", context=ctx)
    assert sorted(stops[:2]) == ["income", "spending"] and stops[2] == "summary"


async def test_cancelling_the_outer_run_cancels_every_running_node() -> None:
    gate = Gate()
    ctx = RunContext.ephemeral(None)
    graph = GraphAgent(
        "g", nodes={"a": gate.agent("a"), "b": gate.stubborn("b"), "c": scripted("c", "never")},
        edges=[("a", "c"), ("b", "c")],
    )  # fmt: skip
    events: list[Any] = []

    async def consume() -> None:
        events.extend([e async for e in graph.run("x", context=ctx)])

    task = asyncio.create_task(consume())
    await gate.wait_started(2)
    ctx.cancel.cancel()
    await asyncio.wait_for(task, 2)
    assert sorted(gate.cancelled) == ["a", "b"]
    assert isinstance(events[-1], RunFailed) and events[-1].error.kind == "cancelled"
    assert "agent_updated:c" not in digest(events)
    assert other_tasks() == set()


async def test_abandoning_the_stream_cancels_every_running_node() -> None:
    gate = Gate()
    graph = GraphAgent("g", nodes={"a": gate.agent("a"), "b": gate.stubborn("b", chatty=True)})
    stream = graph.run("x").__aiter__()
    async for event in stream:
        if isinstance(event, MessageOutput):
            break
    await gate.wait_started(2)
    await stream.aclose()  # type: ignore[attr-defined]
    assert sorted(gate.cancelled) == ["a", "b"]
    assert other_tasks() == set()


async def test_workflows_nest_inside_graph_nodes() -> None:
    ctx = RunContext.ephemeral(None)
    fan = ParallelAgent("fan").add(scripted("p", "P")).add(scripted("q", "Q"))
    steps = SequentialAgent("steps").then(scripted("s1", "S1")).then(scripted("s2", "S2"))
    graph = GraphAgent(
        "g",
        nodes={"fan": fan, "steps": steps, "end": scripted("end", "E")},
        edges=[("fan", "end"), ("steps", "end")],
    )
    result = await graph.run("x", context=ctx)
    assert result.final_output == "E"
    assert ctx.state.get("fan") == '{"p":"P","q":"Q"}' and ctx.state.get("steps") == "S2"
    assert [e.type for e in result.events].count("run_started") == 1
    assert [e.type for e in result.events].count("run_completed") == 1


async def test_a_sequential_step_can_be_a_parallel() -> None:
    captured: list[Any] = []

    def instructions(ctx: RunContext[Any]) -> str:
        captured.append((ctx.state.get("optimist"), ctx.state.get("pessimist")))
        return "combine"

    fan = (
        ParallelAgent("lenses")
        .branch("optimist", scripted("o", "up"))
        .branch("pessimist", scripted("p", "down"))
    )
    writer = LlmAgent(
        name="writer", model=MockModel.with_scripts([text_turn("both")]), instructions=instructions
    )
    result = await SequentialAgent("pipe").then(fan).then(writer).run("x")
    events = digest(result.events)
    assert events[:4] == ["run_started:pipe", "agent_updated:lenses", "agent_updated:o", "agent_updated:p"]
    assert 'message_output:lenses:{"optimist":"up","pessimist":"down"}' in events
    assert events[-3:] == ["agent_updated:writer", "message_output:writer:both", "run_completed"]
    assert captured == [("up", "down")]
    assert result.usage.requests == 3


async def test_a_loop_node_runs_inside_a_graph() -> None:
    graph = GraphAgent("g", nodes={"loop": LoopAgent("l", "", 1).then(scripted("a", "A"))})
    with pytest.raises(RunError) as caught:
        await graph.run("x")
    assert caught.value.kind == "max_iterations_exceeded"
    assert "'loop'" in str(caught.value)
