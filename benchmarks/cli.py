"""The `helikon` command's start-up beside google-adk's `adk` and pydantic-ai's `clai`.

The first two figures are the wall time of a whole process, from `subprocess.run` to its exit
(`time.perf_counter` around it, stdout and stderr captured, stdin `/dev/null`); the third is a
REPL's time from process start until its prompt is drawn:

1. **`--help`**: `helikon --help` vs. `adk --help`; target helikon <= 0.8x adk. `clai --help`
   beside them for context, and the floor: helikon's own command tree (src/helikon/cli/app.py,
   read from the source) built and printed by typer with nothing of helikon imported. typer
   alone costs ~27 ms of imports over click's ~11 ms, which ADK's command uses directly, so the
   floor measures what a typer command line can reach at all.
2. **one question to a scripted agent**: `helikon run "Weather in Paris?"` vs.
   `adk run --in_memory bench "Weather in Paris?"`; target helikon <= 1.0x adk. The same work on
   both sides: one question, one scripted model turn answering `"It is sunny in Paris."`, no
   network, nothing kept afterwards. helikon: a directory with an `agents.toml` whose agent `bench`
   has the `mock` provider and the script `answer.json` (one turn: the answer as one token delta,
   then finish). ADK: an agents directory whose `bench/agent.py` is `server.py`'s `ADK_AGENT`
   (an `LlmAgent` on a `BaseLlm` subclass yielding one fixed `LlmResponse`), run by ADK's own
   single-query mode (`adk run AGENT QUERY`); `--in_memory` because `helikon run` without
   `--session` stores nothing either (ADK would otherwise create a SQLite session store in `.adk/`).
   Every run is checked: helikon's stdout must be exactly the answer, ADK's must hold
   `[bench]: It is sunny in Paris.`; a contender whose run fails is reported as not measurable,
   never timed.
3. **REPL: start until the prompt is drawn**: `helikon repl` vs. `clai --model test`
   (pydantic-ai's chat REPL on its `TestModel`: no API key needed); targets helikon <= 1.0x clai
   and helikon <= 1,500 ms. Both on a pseudo-terminal (120x40, `TERM=xterm-256color`), timed from
   the start of the process until the prompt is drawn: `bench>` for helikon (the sidecar of figure
   2, agent `bench`), `clai ➤` for clai. Both are prompt_toolkit prompts, which draw the trailing
   space as a cursor move, so the match is on the text before it. The pty answers the prompt's
   cursor-position request as a terminal would; once the prompt is seen, `/quit` + Enter
   (helikon) or `/exit` + Enter (clai) is typed, and the run counts only if the process then exits
   with code 0 within 10 s and printed no traceback. helikon's run must also have printed its
   banner for a new session (`helikon repl: agent bench, session ... (new)`). A run whose prompt
   never shows is not measurable, never timed. helikon writes its sessions (and its prompt
   history) to `.helikon/` beside the sidecar; that directory is deleted before every run, outside
   the timed span, so every run creates a new `sessions.db`, as a first start in a project does.
   clai writes its prompt history to the throw-away `HOME`.

`clai` is pydantic-ai-slim's own command-line interface (`pydantic_ai._cli`, prog name `clai`,
its `cli` extra: prompt-toolkit, rich, argcomplete, pyperclip). pydantic-ai-slim 2.68.0 installs it
as the script `pai`; the separate PyPI package `clai`, which only adds the script name, pins the
whole `pydantic-ai` of an older release (2.62.0 at the newest), so it cannot sit beside the pinned
pydantic-ai-slim and `.bench-venv/bin/pai` is timed as `clai`.

Method: `--runs` timed runs of every command (default 15) after `--warmup` checked runs each
(default 2). Within a figure the contenders take turns run by run, the order reversed every other
round (A B, B A, A B...), so a drift of the machine's speed weighs on all. Reported: median and
fastest run in ms; the ratio is helikon's median over the peer's. Every command is the script in
`.bench-venv/bin/` (helikon's too, so all start the same interpreter with the same site-packages),
run directly as a user runs it. The children's environment: API keys, cloud credentials and
`HELIKON_*` dropped, tracing off (`server.py`'s `QUIET_ENV`), `PYTHONDONTWRITEBYTECODE` unset, and
`HOME` and `TMPDIR` pointing into a temporary directory (ADK's `adk run` writes its log file
to `$TMPDIR/agents_log/`; that cost is included, a user pays it).

Run: `bash benchmarks/setup_env.sh && .bench-venv/bin/python benchmarks/cli.py [--runs 15]`
(about a minute and a half).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import pty
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from processes import versions
from server import ADK_AGENT, ANSWER, INSTRUCTIONS, PROMPT, QUIET_ENV

BIN = Path(sys.executable).parent  # .bench-venv/bin: helikon, adk and pai side by side
CURSOR_REQUEST, CURSOR_ANSWER = b"\x1b[6n", b"\x1b[1;1R"  # a terminal's reply: row 1, column 1

_DROP_ENV_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OTEL_", "LOGFIRE_", "HELIKON_", "GOOGLE_", "VERTEX")
_DROP_ENV_MARKERS = ("API_KEY", "ACCESS_KEY", "SECRET", "TOKEN", "CREDENTIALS")

HELIKON_SIDECAR = f"""[agents.bench]
instructions = {json.dumps(INSTRUCTIONS)}
model = {{ provider = "mock", script = "answer.json" }}
"""
HELIKON_SCRIPT = {"default": [[{"type": "token_delta", "text": ANSWER}, {"type": "finish"}]]}


class Wrong(Exception):
    """A run that did not do the work: it is not timed."""


Check = Callable[[subprocess.CompletedProcess[str]], None]


@dataclass
class OnPty:
    """How a REPL is timed on a pseudo-terminal: what its prompt looks like and how it is left."""

    prompt: bytes  # drawn when the REPL is ready
    quit: bytes  # typed once the prompt is seen; the REPL must then exit with code 0
    banner: tuple[bytes, ...] = ()  # each must have been printed by the time the prompt is drawn
    reset: Callable[[], None] | None = None  # before every run, outside the timed span


@dataclass
class Contender:
    name: str
    label: str  # the command as a user types it
    argv: list[str]
    cwd: Path
    check: Check | None = None  # raises Wrong if the run did not do the work
    pty: OnPty | None = None  # a REPL timed until its prompt (else: a process timed to its exit)
    times: list[float] = field(default_factory=lambda: [])
    unavailable: str = ""  # why it is not measured, if it is not


@dataclass
class Figure:
    label: str
    contenders: list[Contender]  # helikon first, then the peer the target is against, then context
    target: float | None = None  # helikon / peer at most this, by medians
    limit_ms: float | None = None  # helikon's median at most this many ms


# --------------------------------------------------------------------------- the commands and their checks


def _env(work: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_DROP_ENV_PREFIXES) and not any(m in k for m in _DROP_ENV_MARKERS)
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(QUIET_ENV)
    env["HOME"] = str(work / "home")
    env["TMPDIR"] = str(work / "tmp")
    return env


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    out, err = proc.stdout.strip().splitlines()[-2:], proc.stderr.strip().splitlines()[-2:]
    return f"exit {proc.returncode}; stdout ends {' | '.join(out)!r}; stderr ends {' | '.join(err)!r}"


def help_ok(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0 or "usage:" not in proc.stdout.lower():
        raise Wrong(_tail(proc))


def helikon_answered(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0 or proc.stdout.strip() != ANSWER:
        raise Wrong(f"stdout is not the answer; {_tail(proc)}")


def adk_answered(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0 or f"[bench]: {ANSWER}" not in proc.stdout:
        raise Wrong(f"no `[bench]: {ANSWER}` in its output; {_tail(proc)}")


# The floor of `--help` for a typer command line: helikon's own command tree (cli/app.py, read
# from the source) built and printed by typer with nothing of helikon imported. Its two
# imports from helikon are replaced by stand-ins; every command and option is the same.
TYPER_FLOOR = r"""
import sys
import types

source = open(sys.argv[1], encoding="utf-8").read()
source = source.replace(
    "from ..core._internal.extras import missing_extra",
    "def missing_extra(needs, extra): return ImportError(needs)",
)
source = source.replace("from .state import STATE", "class _State: debug = False\nSTATE = _State()")
module = types.ModuleType("floor_app")
exec(compile(source, "floor_app", "exec"), module.__dict__)
import typer

typer.main.get_command(module.app).main(args=sys.argv[2:], prog_name="helikon", standalone_mode=False)
"""
APP_SOURCE = Path(__file__).resolve().parents[1] / "src" / "helikon" / "cli" / "app.py"


def prepare(work: Path) -> tuple[Path, Path]:
    """The helikon project directory and ADK's agents directory, both answering ANSWER."""
    for sub in ("home", "tmp"):
        (work / sub).mkdir()
    project = work / "helikon"
    project.mkdir()
    (project / "agents.toml").write_text(HELIKON_SIDECAR)
    (project / "answer.json").write_text(json.dumps(HELIKON_SCRIPT))
    agents = work / "adk"
    (agents / "bench").mkdir(parents=True)
    (agents / "bench" / "__init__.py").write_text("from . import agent\n")
    (agents / "bench" / "agent.py").write_text(ADK_AGENT)
    (work / "typer_floor.py").write_text(TYPER_FLOOR)
    return project, agents


def build_figures(project: Path, agents: Path) -> list[Figure]:
    helikon, adk, clai = str(BIN / "helikon"), str(BIN / "adk"), str(BIN / "pai")
    helikon_repl = OnPty(
        prompt=b"bench>",
        quit=b"/quit\r",
        banner=(b"helikon repl: agent bench, session ", b" (new); /help lists the commands"),
        reset=lambda: shutil.rmtree(project / ".helikon", ignore_errors=True),
    )
    return [
        Figure(
            "--help",
            [
                Contender("helikon", "helikon --help", [helikon, "--help"], project, help_ok),
                Contender("adk", "adk --help", [adk, "--help"], agents, help_ok),
                Contender("clai", "clai --help (the script pai)", [clai, "--help"], project, help_ok),
                Contender(
                    "typer floor",
                    "typer floor: same commands, no helikon",
                    [sys.executable, str(project.parent / "typer_floor.py"), str(APP_SOURCE), "--help"],
                    project,
                    help_ok,
                ),
            ],
            target=0.8,
        ),
        Figure(
            "run: one question, mock model",
            [
                Contender(
                    "helikon", f"helikon run {PROMPT!r}", [helikon, "run", PROMPT], project, helikon_answered
                ),
                Contender(
                    "adk",
                    f"adk run --in_memory bench {PROMPT!r}",
                    [adk, "run", "--in_memory", "bench", PROMPT],
                    agents,
                    adk_answered,
                ),
            ],
            target=1.0,
        ),
        Figure(
            "REPL: start to prompt, on a pty",
            [
                Contender(
                    "helikon",
                    "helikon repl (a new .helikon/ each run)",
                    [helikon, "repl"],
                    project,
                    pty=helikon_repl,
                ),
                Contender(
                    "clai",
                    "clai --model test (pai)",
                    [clai, "--model", "test"],
                    project,
                    pty=OnPty(prompt="clai ➤".encode(), quit=b"/exit\r"),
                ),
            ],
            target=1.0,
            limit_ms=1500,
        ),
    ]


# --------------------------------------------------------------------------- timing


def time_run(contender: Contender, env: dict[str, str]) -> float:
    """Seconds from start to exit of one checked run of the contender's command (or to its prompt)."""
    if contender.pty is not None:
        return time_to_prompt(contender.argv, contender.cwd, env, contender.pty)
    began = time.perf_counter()
    proc = subprocess.run(
        contender.argv,
        cwd=contender.cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - began
    if contender.check is not None:
        contender.check(proc)
    return elapsed


def time_to_prompt(argv: list[str], cwd: Path, env: dict[str, str], repl: OnPty) -> float:
    """Seconds from start until a REPL on a pseudo-terminal draws its prompt; then it is left, checked."""
    if repl.reset is not None:
        repl.reset()
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    began = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**env, "TERM": "xterm-256color"},
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    screen, ready, before_prompt, exited = b"", 0.0, b"", True
    try:
        while proc.poll() is None and time.perf_counter() - began < 60:
            if not select.select([controller], [], [], 0.5)[0]:
                continue
            with contextlib.suppress(OSError):  # EIO: the REPL closed the terminal
                chunk = os.read(controller, 65536)
                screen += chunk
                if CURSOR_REQUEST in chunk:
                    os.write(controller, CURSOR_ANSWER)
                if not ready and repl.prompt in screen:
                    ready = time.perf_counter() - began
                    before_prompt = screen[: screen.index(repl.prompt)]
                    os.write(controller, repl.quit)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            exited = False
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(controller)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode(errors="replace"))  # no CSI codes
    last = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])
    if not ready:
        raise Wrong(f"prompt never drawn (exit {proc.returncode}): {last}")
    if not exited:
        raise Wrong(f"prompt drawn, but still running 10 s after {repl.quit!r}: {last}")
    traceback = "Traceback (most recent call last)" in text
    if proc.returncode != 0 or traceback:
        how = f"exit {proc.returncode}{', a traceback' if traceback else ''}"
        raise Wrong(f"prompt drawn, but {how} after {repl.quit!r}: {last}")
    missing = [b.decode() for b in repl.banner if b not in before_prompt]
    if missing:
        raise Wrong(f"prompt drawn without {' / '.join(map(repr, missing))} before it: {last}")
    return ready


def measure(contenders: list[Contender], once: Callable[[Contender], float], runs: int, warmup: int) -> None:
    """Checked warm-up runs of each, then `runs` timed rounds taking turns (A B, B A, ...)."""
    for contender in contenders:
        try:
            for _ in range(warmup):
                once(contender)
        except (Wrong, subprocess.TimeoutExpired) as exc:
            contender.unavailable = str(exc)
    for round_ in range(runs):
        live = [c for c in contenders if not c.unavailable]
        for contender in reversed(live) if round_ % 2 else live:
            try:
                contender.times.append(once(contender))
            except (Wrong, subprocess.TimeoutExpired) as exc:
                contender.unavailable = f"round {round_ + 1}: {exc}"


# --------------------------------------------------------------------------- the report


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def print_figure(figure: Figure) -> None:
    print(f"\n{figure.label}")
    ratios = len(figure.contenders) > 1
    print(f"{'command':<47}{'median ms':>11}{'min ms':>9}{'helikon / it' if ratios else '':>14}".rstrip())
    ours = figure.contenders[0]
    for contender in figure.contenders:
        if contender.unavailable or not contender.times:
            print(f"{contender.label:<47}not measurable: {contender.unavailable or 'no run'}")
            continue
        ratio = ""
        if ours.times and not ours.unavailable and contender is not ours:
            ratio = f"{statistics.median(ours.times) / statistics.median(contender.times):.2f}x"
        median, fastest = statistics.median(contender.times), min(contender.times)
        print(f"{contender.label:<47}{_ms(median):>11}{_ms(fastest):>9}{ratio:>14}".rstrip())


def print_summary(figures: list[Figure]) -> None:
    print("\nSummary (median ms; ratio = helikon / peer)")
    print(f"{'figure':<34}{'helikon':>9}{'peer':>9}  {'peer name':<10}{'ratio':>7}  target")
    for figure in figures:
        ours, peer = figure.contenders[0], figure.contenders[1]
        if ours.unavailable or not ours.times:
            print(f"{figure.label:<34}not measurable: helikon: {ours.unavailable or 'no run'}")
            continue
        a = statistics.median(ours.times)
        verdicts = []
        if peer.unavailable or not peer.times:
            b_text, ratio_text = "-", "-"
            if figure.target is not None:
                why = peer.unavailable or "no run"
                verdicts.append(f"<= {figure.target}x not measurable ({peer.name}: {why})")
        else:
            ratio = a / statistics.median(peer.times)
            b_text, ratio_text = _ms(statistics.median(peer.times)), f"{ratio:.2f}x"
            if figure.target is not None:
                verdicts.append(f"<= {figure.target}x {'met' if ratio <= figure.target else 'NOT MET'}")
        if figure.limit_ms is not None:
            met = "met" if a * 1000 <= figure.limit_ms else "NOT MET"
            verdicts.append(f"<= {figure.limit_ms:,.0f} ms {met}")
        verdict = "; ".join(verdicts) or "(context)"
        print(f"{figure.label:<34}{_ms(a):>9}{b_text:>9}  {peer.name:<10}{ratio_text:>7}  {verdict}")


def _versions() -> str:
    return versions(
        ("paigasus-helikon", "google-adk", "pydantic-ai-slim", "typer", "click", "prompt-toolkit")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each command (default 15)")
    parser.add_argument(
        "--warmup", type=int, default=2, help="checked runs of each before timing (default 2)"
    )
    args = parser.parse_args()
    missing = [name for name in ("helikon", "adk", "pai") if not (BIN / name).exists()]
    if missing:
        raise SystemExit(f"{', '.join(missing)} not in {BIN}: run with .bench-venv/bin/python")
    print("helikon's command vs. google-adk's `adk` and pydantic-ai's `clai`: start-up times")
    print(f"{os.cpu_count()} cores; python {platform.python_version()}; {_versions()}")
    print(f"{args.runs} timed runs of each command, turn about, after {args.warmup} checked warm-up runs")
    with tempfile.TemporaryDirectory(prefix="helikon-cli-bench-") as tmp:
        work = Path(tmp)
        project, agents = prepare(work)
        env = _env(work)
        figures = build_figures(project, agents)
        for figure in figures:
            measure(figure.contenders, lambda c: time_run(c, env), args.runs, args.warmup)
            print_figure(figure)
        print_summary(figures)
    broken = [f.label for f in figures if f.contenders[0].unavailable or not f.contenders[0].times]
    if broken:
        raise SystemExit(f"helikon could not be measured: {', '.join(broken)} (see above)")


if __name__ == "__main__":
    main()
