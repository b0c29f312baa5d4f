"""`GraphAgent`: a declared DAG of agents; each node runs once all its predecessors are done."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Generic, Literal, Self, TypeVar

from ..agent import Agent
from ..context import RunConfig, RunContext
from ..events import AgentEvent, MessageOutput, RunCompleted, RunFailed, RunStarted
from ..exceptions import UserError
from ..input import AgentInput
from ..items import AssistantMessage, Item, UserMessage
from ._base import WorkflowAgent
from ._merge import (
    DEFAULT_CONFIG,
    ChildRun,
    aggregate,
    check_agent,
    preflight,
)
from .parallel import merged_json

Ctx = TypeVar("Ctx")

GraphProblem = Literal["missing_name", "empty", "duplicate_node", "unknown_node", "cycle"]


class GraphBuildError(UserError):
    """A graph that cannot run: no name, no nodes, a duplicate or unknown node, or a cycle.

    `problem` says which; `nodes` names the nodes involved (for a cycle, in cycle order).
    """

    def __init__(self, problem: GraphProblem, message: str, nodes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problem: GraphProblem = problem
        self.nodes: tuple[str, ...] = tuple(nodes)


def context_message(node: str, output: str) -> UserMessage:
    """The labelled message that carries a predecessor's output into a node's input."""
    return UserMessage.from_text(f"[{node} output]\n{output}")


class GraphAgent(WorkflowAgent[Ctx]):
    """Runs a directed acyclic graph of agents: nodes are agents, edges are dependencies.

    Scheduling is a dynamic Kahn wavefront: a node starts, in its own asyncio task, as
    soon as all of its predecessors have completed. A node's input is the graph's input
    followed by one user message per predecessor, in edge order, reading
    `"[<predecessor> output]"`, a line break, then that predecessor's final text; its final text also goes to
    `state[<node>]`. The final output comes from the sinks (nodes without successors): one
    sink's text verbatim, several as a sorted-key JSON object `{node: output}`. Failure is
    collect-all: a failed node's transitive descendants are skipped, independent nodes
    still finish, and one `RunFailed` names the failed and the skipped nodes.

    Build with `GraphAgent.builder()` or with keywords; both validate the graph (no
    duplicate or unknown node, no cycle) and raise `GraphBuildError`.

    Example:
        ```python
        from helikon import GraphAgent, LlmAgent
        from helikon.testing import MockModel, text_turn

        def scripted(name: str, text: str) -> LlmAgent[None]:
            return LlmAgent(name=name, model=MockModel.with_scripts([text_turn(text)]))

        graph = (
            GraphAgent.builder()
            .name("finance_report")
            .description("Fans spending and income analysis into a combined summary.")
            .node("spending", scripted("spending", "Spent $2,100."))
            .node("income", scripted("income", "Earned $3,000."))
            .node("summary", scripted("summary", "You saved $900."))
            .edge("spending", "summary")
            .edge("income", "summary")
            .build()
        )
        assert graph.run_sync("Report on March.").final_output == "You saved $900."
        ```
    """

    __slots__ = ("edges", "nodes", "preds", "succs")

    _kind = "GraphAgent"

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        nodes: Mapping[str, Agent[Ctx]] | Iterable[tuple[str, Agent[Ctx]]],
        edges: Iterable[tuple[str, str]] = (),
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise GraphBuildError(
                "missing_name", f"GraphAgent(name={name!r}): give the graph a non-empty name"
            )
        super().__init__(name, description)
        pairs: list[Any] = list(nodes.items()) if isinstance(nodes, Mapping) else list(nodes)  # pyright: ignore[reportUnknownArgumentType]
        if not pairs:
            raise GraphBuildError("empty", f"GraphAgent {name!r} has no nodes; add at least one")
        self.nodes: tuple[tuple[str, Agent[Ctx]], ...] = tuple(_checked_nodes(name, pairs))
        index = {node: i for i, (node, _) in enumerate(self.nodes)}
        self.edges: tuple[tuple[str, str], ...] = tuple(dict.fromkeys(_checked_edges(name, edges, index)))
        """The dependency edges `(from, to)`, duplicates dropped, in declaration order."""
        self.preds: tuple[tuple[int, ...], ...] = tuple(
            tuple(index[a] for a, b in self.edges if b == node) for node, _ in self.nodes
        )
        self.succs: tuple[tuple[int, ...], ...] = tuple(
            tuple(index[b] for a, b in self.edges if a == node) for node, _ in self.nodes
        )
        cycle = _find_cycle(self.preds, self.succs)
        if cycle:
            names = [self.nodes[i][0] for i in cycle]
            path = " -> ".join([*names, names[0]])
            raise GraphBuildError("cycle", f"GraphAgent {name!r} has a cycle: {path}", names)

    @staticmethod
    def builder() -> GraphBuilder[Any]:
        """Start building a graph: `.name()`, `.description()`, `.node()`, `.edge()`, then `.build()`."""
        return GraphBuilder()

    @property
    def sinks(self) -> tuple[str, ...]:
        """The nodes without successors, whose outputs make the graph's final output."""
        return tuple(node for (node, _), succ in zip(self.nodes, self.succs, strict=True) if not succ)

    def _node_input(self, input: AgentInput, index: int, runs: list[ChildRun]) -> AgentInput:
        preds = self.preds[index]
        if not preds:
            return input
        context: list[Item] = [context_message(runs[p].key, runs[p].text) for p in preds]
        return AgentInput((*input.messages, *context), input.history)

    async def _events(
        self, input: AgentInput, ctx: RunContext[Any], config: RunConfig | None
    ) -> AsyncIterator[AgentEvent]:
        from ._fanout import Fanout, Starts  # asyncio loads on the first run, not at `import helikon`

        yield RunStarted(agent=self.name)
        error = preflight(self._kind, self.name, ctx, config or DEFAULT_CONFIG, empty=False)
        if error is not None:
            yield RunFailed(error=error)
            return
        runs = [ChildRun(agent, node, index) for index, (node, agent) in enumerate(self.nodes)]
        waiting = [len(p) for p in self.preds]
        skipped: set[int] = set()
        failed: list[ChildRun] = []
        succs, state = self.succs, ctx.state

        def finished(run: ChildRun) -> Starts:
            if run.error is not None:
                failed.append(run)
                _descendants(run.index, succs, skipped)
                return ()
            state.set(run.key, run.text)
            ready: list[tuple[ChildRun, AgentInput]] = []
            for successor in succs[run.index]:
                waiting[successor] -= 1
                if not waiting[successor] and successor not in skipped:
                    ready.append((runs[successor], self._node_input(input, successor, runs)))
            return ready

        fan = Fanout(self._kind, self.name, ctx, config)
        first = [(run, input) for run in runs if not waiting[run.index]]
        async with aclosing(fan.run(first, finished)) as events:
            async for event in events:
                yield event
        if fan.ended:
            return
        total = fan.usage
        if failed:
            failed.sort(key=lambda r: r.key)
            names = sorted(runs[i].key for i in skipped)
            extra = f"; skipped downstream: {', '.join(map(repr, names))}" if names else ""
            error = aggregate(self._kind, self.name, "nodes", failed, len(runs), extra)
            yield RunFailed(error=error, usage=total)
            return
        sinks = {runs[i].key: runs[i].text for i, succ in enumerate(succs) if not succ}
        text = next(iter(sinks.values())) if len(sinks) == 1 else merged_json(sinks)
        yield MessageOutput(item=AssistantMessage.from_text(text, agent=self.name))
        yield RunCompleted(usage=total)


class GraphBuilder(Generic[Ctx]):
    """Collects a graph's name, nodes and edges; `build()` validates them into a `GraphAgent`."""

    __slots__ = ("_description", "_edges", "_name", "_nodes")

    def __init__(self) -> None:
        self._name: str | None = None
        self._description = ""
        self._nodes: list[tuple[str, Agent[Ctx]]] = []
        self._edges: list[tuple[str, str]] = []

    def name(self, name: str) -> Self:
        """The graph's agent name (required)."""
        self._name = name
        return self

    def description(self, description: str) -> Self:
        """What the graph does."""
        self._description = description
        return self

    def node(self, name: str, agent: Agent[Ctx]) -> Self:
        """Add a node: its name is its state key and its label in successors' input."""
        self._nodes.append((name, agent))
        return self

    def edge(self, source: str, target: str) -> Self:
        """Declare that `target` runs after `source` and receives its output."""
        self._edges.append((source, target))
        return self

    def build(self) -> GraphAgent[Ctx]:
        """The validated graph.

        Raises:
            GraphBuildError: no name, no nodes, a duplicate node, an edge naming an unknown
                node, or a cycle (named in order).
        """
        if self._name is None:
            raise GraphBuildError("missing_name", "GraphAgent.builder(): call .name(...) before .build()")
        return GraphAgent(self._name, self._description, nodes=self._nodes, edges=self._edges)


def _checked_nodes(graph: str, pairs: list[Any]) -> list[tuple[str, Agent[Any]]]:
    out: list[tuple[str, Agent[Any]]] = []
    seen: set[str] = set()
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:  # pyright: ignore[reportUnknownArgumentType]
            raise UserError(f"GraphAgent {graph!r}: nodes are (name, agent) pairs, got {pair!r}")
        node, agent = pair  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(node, str) or not node:
            raise UserError(f"GraphAgent {graph!r}: a node name must be a non-empty string, got {node!r}")
        if node in seen:
            raise GraphBuildError(
                "duplicate_node", f"GraphAgent {graph!r}: two nodes are named {node!r}", [node]
            )
        seen.add(node)
        out.append((node, check_agent(f"GraphAgent {graph!r}, node {node!r}", agent)))  # pyright: ignore[reportUnknownArgumentType]
    return out


def _checked_edges(
    graph: str, edges: Iterable[tuple[str, str]], index: dict[str, int]
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for edge in edges:
        if not isinstance(edge, tuple) or len(edge) != 2:
            raise UserError(f"GraphAgent {graph!r}: edges are (from, to) pairs, got {edge!r}")
        for end in edge:
            if end not in index:
                raise GraphBuildError(
                    "unknown_node",
                    f"GraphAgent {graph!r}: edge {edge[0]!r} -> {edge[1]!r} names an unknown node {end!r}; "
                    f"the nodes are {', '.join(map(repr, index))}",
                    [end],
                )
        out.append(edge)
    return out


def _find_cycle(preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> list[int]:
    """One cycle in edge order, from its first-declared node, or [] for a DAG (Kahn, then a walk back)."""
    waiting = [len(p) for p in preds]
    ready = [i for i, n in enumerate(waiting) if not n]
    while ready:
        for j in succs[ready.pop()]:
            waiting[j] -= 1
            if not waiting[j]:
                ready.append(j)
    left = next((i for i, n in enumerate(waiting) if n), None)
    if left is None:
        return []
    # Every node Kahn left over has a left-over predecessor: walking back must repeat a node.
    path: list[int] = []
    at: dict[int, int] = {}
    node = left
    while node not in at:
        at[node] = len(path)
        path.append(node)
        node = next(p for p in preds[node] if waiting[p])
    cycle = path[at[node] :][::-1]
    start = cycle.index(min(cycle))  # begin at the first-declared node: the same message every time
    return cycle[start:] + cycle[:start]


def _descendants(index: int, succs: Sequence[Sequence[int]], into: set[int]) -> None:
    stack = [index]
    while stack:
        for j in succs[stack.pop()]:
            if j not in into:
                into.add(j)
                stack.append(j)


__all__ = ["GraphAgent", "GraphBuildError", "GraphBuilder"]
