"""Workflow-agent overhead benchmark: helikon's ParallelAgent and GraphAgent vs. google-adk and langgraph.

Two workloads of instant scripted agents (each child is the framework's own model-driven
agent unit with a fake model that answers its name at once, so only framework cost is
measured):

1. ``parallel16``: a fan-out of 16 agents run concurrently, each output collected by key;
2. ``graph20``: a 20-node DAG, 4 layers of 5 agents, every node depending on every node of
   the previous layer (so a layer-by-layer barrier and a dependency wavefront coincide,
   and google-adk, which has no graph agent, can run it as a SequentialAgent of
   ParallelAgents).

Per framework: helikon ``ParallelAgent`` / ``GraphAgent`` over ``LlmAgent`` +
``FunctionModel``; google-adk ``ParallelAgent`` / ``SequentialAgent[ParallelAgent]`` over
``LlmAgent`` + a ``BaseLlm`` fake, run by ``Runner`` + ``InMemorySessionService`` with
``output_key`` per agent; langgraph ``StateGraph`` fan-out / layered graph whose nodes each
call a langchain-core fake chat model and merge ``{key: text}`` into the state. Reported:
median wall time of one complete workflow run and that time per child run.

Each framework runs in its own subprocess (the script re-invokes itself with ``--only``).

Run: ``bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/workflows.py``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, TypedDict

from loop_overhead import sequential_us  # this directory is on sys.path when run as a script

PROMPT = "Analyse this household's finances."
BRANCHES = 16
LAYERS, WIDTH = 4, 5

QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "false",
    "OTEL_SDK_DISABLED": "true",
}
_DROP_ENV_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OTEL_", "LOGFIRE_")

RunFn = Callable[[], Awaitable[dict[str, str]]]
"""One complete workflow run; returns ``{key: output}`` of every child (checked in warm-up)."""


def branch_names() -> list[str]:
    return [f"b{i:02d}" for i in range(BRANCHES)]


def layers() -> list[list[str]]:
    return [[f"n{layer}_{i}" for i in range(WIDTH)] for layer in range(LAYERS)]


def expected(names: list[str]) -> dict[str, str]:
    return {name: f"output of {name}" for name in names}


# ============================== HELIKON ==============================
def build_helikon() -> dict[str, RunFn]:
    from helikon import GraphAgent, LlmAgent, ParallelAgent, RunContext
    from helikon.testing import FunctionModel, text_turn

    def agent(name: str) -> LlmAgent[None]:
        answer = text_turn(f"output of {name}")
        return LlmAgent(name=name, model=FunctionModel(lambda request, a=answer: a))

    fan = ParallelAgent("fan", "16 branches")
    for name in branch_names():
        fan.add(agent(name))
    grid = layers()
    nodes = {name: agent(name) for layer in grid for name in layer}
    edges = [(a, b) for upper, lower in itertools.pairwise(grid) for a in upper for b in lower]
    graph = GraphAgent("grid", "4 x 5 layers", nodes=nodes, edges=edges)

    async def run(workflow: Any) -> dict[str, str]:
        ctx = RunContext.ephemeral(None)
        await workflow.run(PROMPT, context=ctx)
        return {k: str(v) for k, v in ctx.state.to_dict().items()}

    return {"parallel16": lambda: run(fan), "graph20": lambda: run(graph)}


# ============================ END HELIKON ============================


def build_google_adk() -> dict[str, RunFn]:
    import warnings
    from collections.abc import AsyncIterator

    # ADK 2 deprecates ParallelAgent/SequentialAgent for `Workflow`, which cannot yet be an
    # LlmAgent's sub-agent; they remain the documented fan-out, so they are what we measure.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=__name__)
    from google.adk.agents import LlmAgent, ParallelAgent, SequentialAgent
    from google.adk.models import BaseLlm, LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=0, candidates_token_count=0, total_token_count=0
    )

    class FakeLlm(BaseLlm):
        answer: str = ""

        async def generate_content_async(  # type: ignore[override]
            self, llm_request: Any, stream: bool = False
        ) -> AsyncIterator[LlmResponse]:
            content = types.Content(role="model", parts=[types.Part(text=self.answer)])
            yield LlmResponse(content=content, usage_metadata=usage)

    def agent(name: str) -> LlmAgent:
        model = FakeLlm(model="fake-llm", answer=f"output of {name}")
        return LlmAgent(name=name, model=model, instruction="Answer.", output_key=name)

    fan = ParallelAgent(name="fan", sub_agents=[agent(n) for n in branch_names()])
    grid = SequentialAgent(
        name="grid",
        sub_agents=[
            ParallelAgent(name=f"layer{i}", sub_agents=[agent(n) for n in layer])
            for i, layer in enumerate(layers())
        ],
    )
    sessions = InMemorySessionService()
    runners = {
        "parallel16": Runner(app_name="bench", agent=fan, session_service=sessions),
        "graph20": Runner(app_name="bench", agent=grid, session_service=sessions),
    }
    message = types.Content(role="user", parts=[types.Part(text=PROMPT)])

    async def run(runner: Runner) -> dict[str, str]:
        session = await sessions.create_session(app_name="bench", user_id="u")
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
        done = await sessions.get_session(app_name="bench", user_id="u", session_id=session.id)
        await sessions.delete_session(app_name="bench", user_id="u", session_id=session.id)
        return {k: str(v) for k, v in (done.state if done else {}).items()}

    return {key: (lambda r=runner: run(r)) for key, runner in runners.items()}


def build_langgraph(plain_nodes: bool = False) -> dict[str, RunFn]:
    """langgraph; with ``plain_nodes`` each node returns its text without a model call (the floor)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.graph import END, START, StateGraph

    class FakeChatModel(GenericFakeChatModel):
        """Stateless and natively async (the base class would push async calls onto a thread pool)."""

        answer: str = ""

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.answer))])

        async def _agenerate(
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            return self._generate(messages)

    class State(TypedDict):
        question: str
        outputs: Annotated[dict[str, str], _merge]

    def node(name: str) -> Callable[[State], Awaitable[dict[str, Any]]]:
        model = FakeChatModel(messages=iter(()), answer=f"output of {name}")

        async def call(state: State) -> dict[str, Any]:
            reply = await model.ainvoke([HumanMessage(content=state["question"])])
            return {"outputs": {name: str(reply.content)}}

        async def plain(state: State) -> dict[str, Any]:
            return {"outputs": {name: f"output of {name}"}}

        return plain if plain_nodes else call

    fan = StateGraph(State)
    for name in branch_names():
        fan.add_node(name, node(name))
        fan.add_edge(START, name)
        fan.add_edge(name, END)
    grid = StateGraph(State)
    rows = layers()
    for layer in rows:
        for name in layer:
            grid.add_node(name, node(name))
    for name in rows[0]:
        grid.add_edge(START, name)
    for upper, lower in itertools.pairwise(rows):
        for name in lower:
            grid.add_edge(list(upper), name)  # waits for every node of the layer above
    for name in rows[-1]:
        grid.add_edge(name, END)
    graphs = {"parallel16": fan.compile(), "graph20": grid.compile()}

    async def run(graph: Any) -> dict[str, str]:
        state = await graph.ainvoke({"question": PROMPT, "outputs": {}})
        return dict(state["outputs"])

    return {key: (lambda g=graph: run(g)) for key, graph in graphs.items()}


def _merge(left: dict[str, str], right: dict[str, str]) -> dict[str, str]:
    """langgraph's reducer for ``outputs`` (module level, where the state's annotations resolve)."""
    return {**left, **right}


FRAMEWORKS: dict[str, tuple[tuple[str, ...], Callable[[], dict[str, RunFn]]]] = {
    "helikon": (("paigasus-helikon",), build_helikon),
    "google-adk": (("google-adk",), build_google_adk),
    "langgraph": (("langgraph", "langchain-core"), build_langgraph),
    "langgraph-plain-nodes": (("langgraph",), lambda: build_langgraph(plain_nodes=True)),
}
WORKLOADS = {"parallel16": branch_names, "graph20": lambda: [n for layer in layers() for n in layer]}


# --------------------------------------------------------------------------- measuring


# µs of one run: the median of each block of runs, best block (robust to noisy neighbours);
# the same measure as loop_overhead.py's sequential column.
median_us = sequential_us


async def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    runs = FRAMEWORKS[name][1]()
    result: dict[str, Any] = {}
    for workload, fn in runs.items():
        want = expected(WORKLOADS[workload]())
        for _ in range(args.warmup):
            got = await fn()
            if {k: v for k, v in got.items() if k in want} != want:
                raise AssertionError(f"{name} {workload}: outputs {got!r}, expected {want!r}")
        result[workload] = await median_us(fn, args.iters, args.budget, args.blocks)
    return result


def run_child(name: str, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    try:
        out["versions"] = {d: metadata.version(d) for d in FRAMEWORKS[name][0]}
        out |= asyncio.run(measure(name, args))
    except (ImportError, metadata.PackageNotFoundError) as exc:
        out["skipped"] = f"not installed: {exc!r}"
    return out


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_ENV_PREFIXES)}
    env.update(QUIET_ENV)
    return env


def run_parent(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    passthrough = [f"--{k}={getattr(args, k)}" for k in ("iters", "warmup", "blocks", "budget")]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or list(FRAMEWORKS):
            out = Path(tmp) / f"{name}.json"
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--only", name, "--child-out", str(out), *passthrough]
            proc = subprocess.run(cmd, env=_clean_env(), check=False)
            if proc.returncode or not out.exists():
                results.append({"name": name, "skipped": f"child process failed (exit {proc.returncode})"})
                continue
            results.append(json.loads(out.read_text()))
    return results


def _fmt(us: float) -> str:
    return f"{us:,.0f} µs" if us < 10_000 else f"{us / 1000:,.1f} ms"


def report(results: list[dict[str, Any]]) -> str:
    done = [r for r in results if "parallel16" in r]
    sizes = {w: len(f()) for w, f in WORKLOADS.items()}
    header = ["framework", "parallel16 / run", "per child", "graph20 / run", "per child"]
    header += ["parallel16 ÷ helikon", "graph20 ÷ helikon"]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    ref = next((r for r in done if r["name"] == "helikon"), None)
    for r in done:
        cells = [r["name"]]
        for w in WORKLOADS:
            cells += [_fmt(r[w]), _fmt(r[w] / sizes[w])]
        for w in WORKLOADS:
            cells.append(f"{r[w] / ref[w]:.2f}x" if ref else "-")
        lines.append("| " + " | ".join(cells) + " |")
    peers = [r for r in done if r["name"] != "helikon"]
    if ref and peers:
        for w in WORKLOADS:
            fastest = min(peers, key=lambda r: r[w])
            ratio = ref[w] / fastest[w]
            lines.append(
                f"\n{w}: helikon takes {ratio:.2f}x the time of the faster peer ({fastest['name']}); "
                f"target <= 0.50x: {'met' if ratio <= 0.5 else 'NOT met'}"
            )
    lines += [f"\nskipped {r['name']}: {r['skipped']}" for r in results if "skipped" in r]
    versions = {k: v for r in results for k, v in r.get("versions", {}).items()}
    lines.append("\nversions: " + ", ".join(f"{k}=={v}" for k, v in sorted(versions.items())))
    lines.append(f"python {sys.version.split()[0]}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--only", action="append", choices=list(FRAMEWORKS), help="measure only NAME (repeatable)")
    p.add_argument("--quick", action="store_true", help="few iterations: a smoke run, numbers are rough")
    p.add_argument("--iters", type=int, help="timed runs per workload (default 300; quick 20)")
    p.add_argument("--warmup", type=int, help="checked warm-up runs per workload (default 10; quick 2)")
    p.add_argument("--blocks", type=int, help="blocks the timed runs are split into (default 6; quick 2)")
    p.add_argument(
        "--budget", type=float, help="seconds per workload, cuts blocks short (default 8; quick 1)"
    )
    p.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for key, (full, quick) in {
        "iters": (300, 20),
        "warmup": (10, 2),
        "blocks": (6, 2),
        "budget": (8.0, 1.0),
    }.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_out is not None:
        args.child_out.write_text(json.dumps(run_child(args.only[0], args)))
        return 0
    print(report(run_parent(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
