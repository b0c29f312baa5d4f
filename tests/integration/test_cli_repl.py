"""`helikon repl` in a real terminal: tmux runs it; the test types (send-keys) and reads (capture-pane)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import WORD_COUNT, call, script, text

# tmux comes with the suite's install step (scripts/test-deps.sh): without it the tests fail.

WAIT = 90.0  # seconds: a state the REPL reaches at once on a quiet machine; generous for a loaded one


class Terminal:
    """One tmux server of our own (its own socket) running one command in a 120x50 window."""

    def __init__(self, cwd: Path) -> None:
        self.socket = f"helikon-test-{uuid.uuid4().hex[:8]}"
        self.cwd = cwd

    def tmux(self, *args: str) -> str:
        # The terminal's size is the window's: a COLUMNS or LINES of the test's own would override it.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, env=env
        )
        return done.stdout

    def start(self, *argv: str) -> None:
        command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "helikon.cli", *argv])
        # The shell stays after the REPL leaves (`; exec cat`), so the screen can still be read.
        self.tmux(
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "50",
            "-c",
            str(self.cwd),
            f"{command}; echo EXITED; exec cat",
        )

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", "0", "-l", line)
        self.tmux("send-keys", "-t", "0", "Enter")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-t", "0", "-p", "-S", "-200")

    def wait_for(self, text: str, after: str = "") -> str:
        """Wait until `text` shows on the screen (below the last `after`, when given); the screen."""
        deadline = time.monotonic() + WAIT
        while True:
            screen = self.screen()
            tail = screen[screen.rfind(after) :] if after and after in screen else ("" if after else screen)
            if text in tail:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the screen:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "script.json").write_text(
        script(
            call("word_count", {"text": "one two three"}), text("**Three** words."), text("Second answer.")
        )
    )
    (tmp_path / "agents.toml").write_text(
        '[agents.counter]\ndescription = "Counts"\nmodel = { provider = "mock", script = "script.json" }\n'
        'tools = ["word_count"]\n' + WORD_COUNT
    )
    return tmp_path


@pytest.fixture
def terminal(project: Path) -> Iterator[Terminal]:
    term = Terminal(project)
    try:
        yield term
    finally:
        term.close()


def test_a_conversation_with_tool_calls_and_the_slash_commands(terminal: Terminal) -> None:
    terminal.start("repl")
    terminal.wait_for("counter>")
    terminal.type("How many words: one two three")
    screen = terminal.wait_for("Three words.", after="> How many words")
    assert '> word_count({"text": "one two three"})' in screen and '< {"words":3}' in screen
    assert "**Three**" not in screen  # Markdown, rendered
    for command, shows in (
        ("/help", "/rewind"),
        ("/nope", "no command /nope: /help lists them"),
        ("/agents", "* counter  Counts"),
        ("/usage", "model call(s)"),
        ("/fork keep", "into keep; now in the fork"),
        ("/rewind", "rewound 1 turn(s)"),
        ("/session", "session keep: 0 events on its active branch"),
    ):
        terminal.type(command)
        terminal.wait_for(shows, after=f"> {command}")
    terminal.type("/sessions")
    screen = terminal.wait_for("* keep", after="> /sessions")
    assert "chat-" in screen.split("/sessions")[-1]  # the session it forked from is kept
    terminal.type("/quit")
    terminal.wait_for("EXITED")


def test_hot_reload_mid_session_survives_a_broken_save(terminal: Terminal, project: Path) -> None:
    terminal.start("repl")
    terminal.wait_for("counter>")
    good = (project / "agents.toml").read_text()
    (project / "agents.toml").write_text(good + "\n[agents.broken]\nmodel = 7\n")
    screen = terminal.wait_for(
        "agents.toml:18: agents.broken.model: expected a model string or a table, not a number"
    )
    assert "not reloaded, keeping the last good definitions" in screen
    terminal.type("How many words: one two three")
    terminal.wait_for("Three words.", after="> How many words")  # the last good definitions still run
    (project / "agents.toml").write_text(
        good.replace('description = "Counts"', 'description = "Counts words"')
    )
    terminal.wait_for("reloaded agents.toml: agent 'counter' changed")
    terminal.type("/agents")
    terminal.wait_for("* counter  Counts words", after="> /agents")


def test_a_restart_resumes_the_conversation(terminal: Terminal, project: Path) -> None:
    terminal.start("repl", "--session", "trip")
    terminal.wait_for("session trip (new)")
    terminal.type("How many words: one two three")
    terminal.wait_for("Three words.", after="> How many words")
    terminal.type("/quit")
    terminal.wait_for("EXITED")
    terminal.close()

    again = Terminal(project)
    try:
        again.start("repl", "--resume")
        screen = again.wait_for("session trip (continuing)")
        assert "you: How many words: one two three" in screen and "counter: **Three** words." in screen
        again.type("/session")
        again.wait_for("you: How many words", after="> /session")
    finally:
        again.close()


def test_an_approval_is_asked_at_the_prompt(terminal: Terminal, project: Path) -> None:
    sidecar = project / "agents.toml"
    sidecar.write_text(
        sidecar.read_text().replace(
            'description = "Count words"', 'description = "Count words"\nneeds_approval = true'
        )
    )
    terminal.start("repl")
    terminal.wait_for("counter>")
    terminal.type("How many words: one two three")
    terminal.wait_for("approve word_count(", after="> How many words")
    terminal.type("y")
    screen = terminal.wait_for("Three words.", after="approve word_count")
    assert '< {"words":3}' in screen
    terminal.type("Again: one two")  # the mock answers without a tool now
    terminal.wait_for("Second answer.", after="> Again")


def test_a_denied_call_reaches_the_model_and_a_left_one_waits_for_approve(
    terminal: Terminal, project: Path
) -> None:
    sidecar = project / "agents.toml"
    sidecar.write_text(
        sidecar.read_text().replace(
            'description = "Count words"', 'description = "Count words"\nneeds_approval = true'
        )
    )
    terminal.start("repl", "--session", "paused")
    terminal.wait_for("counter>")
    terminal.type("How many words: one two three")
    terminal.wait_for("approve word_count(", after="> How many words")
    terminal.tmux("send-keys", "-t", "0", "C-d")  # leave the question open
    terminal.wait_for("left paused: /approve or /deny decides it later")
    terminal.type("/deny not now")
    screen = terminal.wait_for("Three words.", after="> /deny")
    assert "! " in screen.split("/deny")[-1]  # the denial, as the tool's error result


def test_init_then_repl_works_at_once(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "helikon.cli", "init", str(tmp_path / "new")], capture_output=True, check=True
    )
    term = Terminal(tmp_path / "new")
    try:
        term.start("repl")
        term.wait_for("assistant>")
        term.type("How many words: the quick brown fox")
        screen = term.wait_for("Your text has 4 words.", after="> How many words")
        assert '> word_count({"text": "the quick brown fox"})' in screen
    finally:
        term.close()
