"""`helikon run`, `eval`, `sessions`, `init`: exit codes, output, and errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import HELIKON, helikon_process, turns

from helikon.cli import main
from helikon.core.session.codec import decode_event
from helikon.core.session.memory import MemoryStore
from helikon.evals import EvalCase


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "hi.json").write_text(turns("Hi there!", "Again!"))
    (tmp_path / "agents.toml").write_text(
        '[agents.greeter]\ndescription = "Says hi"\nmodel = { provider = "mock", script = "hi.json" }\n'
        '[agents.writer]\nmodel = { provider = "openai", id = "gpt-5-mini" }\n'
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "input": "hello", "expected": "Hi there!"}'
        '\n{"id": "b", "input": "yo", "expected": "Hi there!"}\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HELIKON_SESSIONS", raising=False)
    return tmp_path


def test_run_prints_the_answer_and_json_gives_the_result(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "hello"]) == 0
    assert capsys.readouterr().out == "Hi there!\n"
    assert main(["run", "--json", "--agent", "greeter", "hello"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["agent"], result["status"], result["output"]) == ("greeter", "succeeded", "Hi there!")


def test_a_disabled_agent_is_a_clear_error_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--agent", "writer", "hello"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "helikon: agent 'writer' is disabled: its model openai:gpt-5-mini needs OPENAI_API_KEY: "
        "set it to use this agent\n"
    )


def test_a_failed_run_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "hi.json").write_text(json.dumps({"default": []}))  # the mock has nothing to say
    assert main(["run", "hello"]) == 1
    assert capsys.readouterr().err.startswith("helikon: the run failed: ")


def test_errors_have_no_traceback_unless_debug(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "agents.toml").write_text('[agents.a]\nmodel = "gpt-5"\n')
    assert main(["run", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("helikon: agents.toml:2: agents.a.model: model='gpt-5'") and "Traceback" not in err
    done = subprocess.run([*HELIKON, "--debug", "run", "hello"], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "Traceback (most recent call last)" in done.stderr
    assert "SidecarError" in done.stderr


def test_a_saved_session_continues_lists_shows_and_exports(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--session", "trip", "hello"]) == 0
    assert main(["run", "--session", "trip", "and again"]) == 0
    assert capsys.readouterr().out == "Hi there!\nHi there!\n"  # each run starts the mock's script again
    assert (project / ".helikon" / "sessions.db").exists()
    assert main(["sessions", "list"]) == 0
    assert capsys.readouterr().out.startswith("trip\t")
    assert main(["sessions", "show", "trip"]) == 0
    assert capsys.readouterr().out == "you: hello\ngreeter: Hi there!\nyou: and again\ngreeter: Hi there!\n"
    assert main(["sessions", "export", "trip"]) == 0
    events = [decode_event(line) for line in capsys.readouterr().out.splitlines()]
    assert [e.type for e in events].count("user_message") == 2

    async def case() -> EvalCase:  # the export is what from_session reads
        session = await MemoryStore().open("exported")
        await session.append(events)
        return await EvalCase.from_session(session)

    import asyncio

    exported = asyncio.run(case())
    assert [(t.input, t.expected) for t in exported.turns] == [
        ("hello", "Hi there!"),
        ("and again", "Hi there!"),
    ]
    assert main(["sessions", "show", "nope"]) == 2
    assert "no saved session 'nope'" in capsys.readouterr().err


def test_eval_run_exit_codes_trace_compare_and_rescore(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each case gets a fresh mock: both answer "Hi there!", so both pass.
    assert (
        main(
            [
                "eval",
                "run",
                "cases.jsonl",
                "--agent",
                "greeter",
                "--trace",
                "sqlite:trace.db",
                "--html",
                "r.html",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "exact_match: mean 1.00, 2 passed" in out and (project / "r.html").read_text().startswith(
        "<!doctype"
    )
    (project / "cases.jsonl").write_text('{"id": "a", "input": "hello", "expected": "Bye"}\n')
    assert main(["eval", "run", "cases.jsonl", "--agent", "greeter", "--trace", "sqlite:trace.db"]) == 1
    assert "1 of 1 case(s) failed" in capsys.readouterr().err
    assert main(["eval", "compare", "sqlite:trace.db", "sqlite:trace.db#" + _first_run(project)]) == 1
    compared = capsys.readouterr().out
    assert "regressed a" in compared and "1 removed" in compared
    assert main(["eval", "rescore", "sqlite:trace.db", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["evaluators"] == ["exact_match"]
    (project / "cases.jsonl").write_text('{"id": "a", "input": "hello", "expected": "Hi there!"}\n')
    assert main(["eval", "run", "cases.jsonl", "--agent", "greeter", "--fail-under", "1.5", "--json"]) == 1
    assert main(["eval", "run", "missing.jsonl", "--agent", "greeter"]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["eval", "run", "cases.jsonl", "--agent", "writer"]) == 2


def _first_run(project: Path) -> str:
    import asyncio

    from helikon.evals import SqliteTraceSink

    return asyncio.run(SqliteTraceSink(project / "trace.db").runs())[0]


def test_init_writes_a_starter_where_run_and_eval_work_at_once(tmp_path: Path) -> None:
    target = tmp_path / "new"
    done = subprocess.run([*HELIKON, "init", str(target)], capture_output=True, text=True, check=True)
    assert "helikon repl" in done.stdout and (target / ".gitignore").read_text() == ".helikon/\n"
    ran = subprocess.run(
        [*HELIKON, "run", "How many words: the quick brown fox"],
        cwd=target,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (0, "Your text has 4 words.\n"), ran.stderr
    scored = subprocess.run(
        [*HELIKON, "eval", "run", "dataset.jsonl", "--agent", "assistant"],
        cwd=target,
        capture_output=True,
        text=True,
        check=False,
    )
    assert scored.returncode == 0, scored.stdout + scored.stderr
    assert "2 passed" in scored.stdout
    again = subprocess.run([*HELIKON, "init", str(target)], capture_output=True, text=True, check=False)
    assert again.returncode == 1 and "nothing was written" in again.stderr


def test_run_watch_runs_again_on_a_save_and_survives_a_broken_one(project: Path) -> None:
    with helikon_process("run", "--watch", "hello", cwd=project) as (_, out, err):
        assert out.next() == "Hi there!\n"
        assert err.next().startswith("-- watching 2 file(s)")
        (project / "agents.toml").write_text('[agents.greeter]\nmodel = "gpt-5"\n')
        assert err.next().startswith("helikon: agents.toml:2: agents.greeter.model:")
        assert err.next().startswith("-- watching 1 file(s)")
        (project / "hi.json").write_text(turns("Fixed!"))
        (project / "agents.toml").write_text(
            '[agents.greeter]\nmodel = { provider = "mock", script = "hi.json" }\n'
        )
        assert out.next() == "Fixed!\n"


def test_help_imports_nothing_heavy() -> None:
    probe = (
        "import sys\nfrom helikon.cli import main\nmain(['--help'])\n"
        "heavy = [m for m in ('prompt_toolkit', 'uvicorn', 'starlette', 'pydantic', 'openai', 'anthropic',"
        " 'google.genai', 'aiobotocore', 'lupa', 'watchfiles"
        "', 'jsonschema', 'helikon.evals', 'helikon.server')"
        " if m in sys.modules]\nprint(heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "Usage: helikon" in done.stdout and done.stderr.strip() == "[]"


def test_shell_completion_comes_from_typer() -> None:
    done = subprocess.run(
        [*HELIKON, "--show-completion", "bash"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
    )
    assert done.returncode == 0 and "_HELIKON_COMPLETE" in done.stdout, done.stderr
    completed = subprocess.run(
        [*HELIKON],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "_HELIKON_COMPLETE": "complete_bash",
            "COMP_WORDS": "helikon ev",
            "COMP_CWORD": "1",
        },
    )
    assert "eval" in completed.stdout.split()
