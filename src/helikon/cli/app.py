"""The `helikon` command tree (typer): each command's work is imported only when it runs.

`--help` imports typer and this module, nothing of the SDK's run path: no pydantic-heavy
module, provider, web server or line editor (a test holds that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from ..core._internal.extras import missing_extra
from .state import STATE

try:
    import typer
except ImportError as exc:
    raise missing_extra("the helikon command needs typer", "cli") from exc

app = typer.Typer(
    name="helikon",
    help="Build and run agents: declarative agents from agents.toml, a REPL, evals, a web console.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
eval_app = typer.Typer(
    help="Run a dataset against an agent; compare and rescore recorded runs.", no_args_is_help=True
)
mcp_app = typer.Typer(help="Serve an agent over MCP.", no_args_is_help=True)
sessions_app = typer.Typer(help="The conversations the REPL and `run --session` saved.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(mcp_app, name="mcp")
app.add_typer(sessions_app, name="sessions")

AgentsOption = Annotated[
    Path, typer.Option("--agents", help="The sidecar file.", envvar="HELIKON_AGENTS", show_default=True)
]
AgentOption = Annotated[
    str | None, typer.Option("--agent", "-a", help="The agent (default: the first by name).")
]
StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help="The sessions database (default: .helikon/sessions.db beside the sidecar)."),
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"helikon {version('paigasus-helikon')}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
) -> None:
    """Build and run agents."""
    STATE.debug = debug


@app.command()
def demo(
    model: Annotated[
        str | None,
        typer.Option(help="A model string, e.g. openai:gpt-5-mini or ollama:llama3.2."),
    ] = None,
) -> None:
    """Run the Quickstart budgeting assistant (scripted without an API key)."""
    from .demo import run_demo

    raise typer.Exit(run_demo(model))


@app.command()
def run(
    question: Annotated[str, typer.Argument(help="What to ask.")],
    agents: AgentsOption = Path("agents.toml"),
    agent: AgentOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run's result as JSON.")] = False,
    session: Annotated[str | None, typer.Option(help="Continue (or start) this saved session.")] = None,
    store: StoreOption = None,
    watch: Annotated[
        bool, typer.Option(help="Run again whenever the sidecar or a file it uses changes.")
    ] = False,
) -> None:
    """Ask an agent one question: the answer on stdout (the result with --json)."""
    from .run_command import run_once, run_watching

    if watch:
        raise typer.Exit(run_watching(agents, agent, question, as_json=as_json))
    raise typer.Exit(run_once(agents, agent, question, as_json=as_json, session=session, store=store))


@app.command()
def repl(
    agents: AgentsOption = Path("agents.toml"),
    agent: AgentOption = None,
    session: Annotated[str | None, typer.Option(help="Continue (or start) this saved session.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the most recent session.")] = False,
    store: StoreOption = None,
) -> None:
    """Talk to the sidecar's agents: saved sessions, slash commands (/help), reload on every save."""
    from .repl import run_repl

    raise typer.Exit(run_repl(agents, agent, session, resume, store))


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to write the starter.")] = Path("."),
) -> None:
    """Write a runnable starter: a mock-model agent, a Lua tool and a dataset."""
    from .init_command import write_starter

    raise typer.Exit(write_starter(directory))


@app.command()
def web(
    agents: AgentsOption = Path("agents.toml"),
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port (0: any free one).")] = 8000,
    store: StoreOption = None,
) -> None:
    """Serve the sidecar's agents with the web console; reloads on every save."""
    from .serve_commands import serve_web

    raise typer.Exit(serve_web(agents, host, port, store))


@mcp_app.command("serve")
def mcp_serve(
    agent: AgentOption = None,
    agents: AgentsOption = Path("agents.toml"),
    http: Annotated[
        str | None, typer.Option(help="Serve streamable HTTP at HOST:PORT (default: stdio).")
    ] = None,
) -> None:
    """Serve an agent as an MCP tool (stdio, or streamable HTTP); reloads on every save."""
    from .serve_commands import serve_mcp

    raise typer.Exit(serve_mcp(agents, agent, http))


@eval_app.command("run")
def eval_run(
    dataset: Annotated[Path, typer.Argument(help="The cases, one JSON object per line.")],
    agent: Annotated[str, typer.Option("--agent", "-a", help="The agent to evaluate.")],
    agents: AgentsOption = Path("agents.toml"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    fail_under: Annotated[
        float | None, typer.Option(help="Fail when an evaluator's mean score is below this.")
    ] = None,
    trace: Annotated[str | None, typer.Option(help="Record the run: sqlite:PATH or parquet:DIR.")] = None,
    html: Annotated[Path | None, typer.Option(help="Write the HTML report here.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Cases run at once.")] = 1,
) -> None:
    """Run a dataset against an agent and score it; exit 1 when a case failed (or --fail-under)."""
    from .eval_command import run_eval

    raise typer.Exit(
        run_eval(
            dataset,
            agent,
            agents,
            as_json=as_json,
            fail_under=fail_under,
            trace=trace,
            html=html,
            concurrency=concurrency,
        )
    )


@eval_app.command("compare")
def eval_compare(
    report: Annotated[
        str, typer.Argument(help="The new run: a report JSON file, or sqlite:PATH#RUN / parquet:DIR#RUN.")
    ],
    baseline: Annotated[str, typer.Argument(help="The run to compare it with (same forms).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """What changed between two runs of a dataset; exit 1 when a case regressed."""
    from .eval_command import compare_runs

    raise typer.Exit(compare_runs(report, baseline, as_json=as_json))


@eval_app.command("rescore")
def eval_rescore(
    trace: Annotated[
        str, typer.Argument(help="A recorded run: sqlite:PATH#RUN, parquet:DIR#RUN or a report file.")
    ],
    agents: AgentsOption = Path("agents.toml"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score a recorded run again with the sidecar's [eval] evaluators, without running the agent."""
    from .eval_command import rescore_run

    raise typer.Exit(rescore_run(trace, agents, as_json=as_json))


@sessions_app.command("list")
def sessions_list(agents: AgentsOption = Path("agents.toml"), store: StoreOption = None) -> None:
    """The saved sessions, most recent first."""
    from .sessions_command import list_sessions

    raise typer.Exit(list_sessions(agents, store))


@sessions_app.command("show")
def sessions_show(
    session: Annotated[str, typer.Argument(help="The session's name.")],
    agents: AgentsOption = Path("agents.toml"),
    store: StoreOption = None,
) -> None:
    """A saved session's conversation."""
    from .sessions_command import show_session

    raise typer.Exit(show_session(agents, store, session))


@sessions_app.command("export")
def sessions_export(
    session: Annotated[str, typer.Argument(help="The session's name.")],
    agents: AgentsOption = Path("agents.toml"),
    store: StoreOption = None,
) -> None:
    """A saved session's events as canonical JSONL (what `EvalCase.from_session` reads)."""
    from .sessions_command import export_session

    raise typer.Exit(export_session(agents, store, session))
