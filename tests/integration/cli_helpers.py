"""What the `helikon` command's tests share: the command, scripted turns, a Lua tool, a pipe reader."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

HELIKON = [sys.executable, "-m", "helikon.cli"]

WORD_COUNT = """
[tools.word_count]
description = "Count words"
params = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
inline = '''
function run(args)
  local n = 0
  for _ in string.gmatch(args.text, "%S+") do n = n + 1 end
  return { words = n }
end
'''
"""
"""A sidecar's Lua tool that counts the words of `text`."""


def text(answer: str) -> list[dict[str, object]]:
    """A mock model turn answering `answer`."""
    return [{"type": "token_delta", "text": answer}, {"type": "finish"}]


def call(tool: str, args: dict[str, object]) -> list[dict[str, object]]:
    """A mock model turn calling `tool` with `args`."""
    delta: dict[str, object] = {
        "type": "tool_call_delta",
        "call_id": "c1",
        "name": tool,
        "args_delta": json.dumps(args),
    }
    return [delta, {"type": "finish", "reason": "tool_calls"}]


def script(*steps: list[dict[str, object]]) -> str:
    """A `ScriptFile`'s JSON with these turns as its defaults."""
    return json.dumps({"default": list(steps)})


def turns(*answers: str) -> str:
    """A `ScriptFile`'s JSON answering each of `answers` in turn."""
    return script(*(text(answer) for answer in answers))


class Lines:
    """A pipe's lines, read in a thread: a test waits for the next one, never for ever."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self._lines.put(line) for line in stream], daemon=True).start()

    def next(self) -> str:
        return self._lines.get(timeout=120)  # generous: only a hung process takes this long

    def until(self, prefix: str) -> str:
        while not (line := self.next()).startswith(prefix):
            pass
        return line


@contextmanager
def helikon_process(
    *args: str, cwd: Path, drop: tuple[str, ...] = ()
) -> Iterator[tuple[subprocess.Popen[str], Lines, Lines]]:
    """`helikon ARGS` in `cwd` (unbuffered, without the variables `drop`): it, its stdout, its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*HELIKON, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            yield process, Lines(process.stdout), Lines(process.stderr)
        finally:
            process.terminate()
