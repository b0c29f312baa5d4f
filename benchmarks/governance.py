"""What the permission pipeline costs per tool call: default guards and 50 rules.

Run with the project venv (no peers needed: none of them ships a rule-based permission
pipeline; openai-agents' tool guardrails and LangGraph interrupts run arbitrary user code,
so there is nothing equivalent to time against):

    uv run python benchmarks/governance.py            # ~20 s
    uv run python benchmarks/governance.py --json out.json

Each figure is one full `helikon.core.governance.permissions.authorize` decision, as the driver makes
it for every tool call (parse the call once, 25 deny rules, the default guards plus 5 user
guards, 20 allow rules, the mode, no policy), timed over many calls; the median of
`--repeats` blocks is reported (the rows take turns, block by block, so a change in the
machine's load reaches all of them). A second table puts the pipeline in context: one whole
agent run with one tool call (the `loop_overhead.py` agent) with the default guards and
redaction on, with the guards off, and with both off, each context derived per run the way
docs/governance.md shows (`RunContext.ephemeral(None).without_default_guards()...`): the off
rows must cost no more than the default (issue 28).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from helikon import CancellationToken, LlmAgent, RunContext, ToolEffect, tool
from helikon.core.governance.permissions import authorize
from helikon.core.governance.rules import AllowRule, DenyRule, GuardRule
from helikon.testing import FunctionModel, text_turn, tool_call_turn

TARGET_US = 100.0  # CONTRIBUTING.md: a model call takes hundreds of milliseconds
BASH_TARGET_US = 50.0  # issue 28: compound and nested Bash decisions
DEFAULT_RUN = "guards + redaction on (default)"
GUARDS_OFF_RUN = "guards + redaction off"

# Every call is made unique with its own number ({n}), so the shell parser's and the path
# globs' caches never answer: each decision parses and matches from scratch.
CALLS: list[tuple[str, str, dict[str, Any], ToolEffect]] = [
    (
        "bash compound",
        "Bash",
        {"command": "cd src && git status --short && timeout 60 pytest -q tests/ 2>&1 | tail -n {n}"},
        ToolEffect.SIDE_EFFECT,
    ),
    (
        "bash nested",
        "Bash",
        {"command": "bash -c 'find . -name \"*{n}.pyc\" -exec rm {} +' && echo done"},
        ToolEffect.SIDE_EFFECT,
    ),
    ("bash denied", "Bash", {"command": "ls -la {n}; sudo rm -rf /"}, ToolEffect.SIDE_EFFECT),
    ("write", "Write", {"path": "src/app/models/user{n}.py", "content": "x = 1\n"}, ToolEffect.WRITE),
    ("read", "Read", {"path": "./docs/../README{n}.md"}, ToolEffect.READ_ONLY),
    ("plain tool", "get_weather", {"city": "Paris {n}"}, ToolEffect.READ_ONLY),
]


def numbered(args: dict[str, Any], n: int) -> dict[str, Any]:
    return {k: v.replace("{n}", str(n)) if isinstance(v, str) else v for k, v in args.items()}


def fifty_rules() -> RunContext[None]:
    """25 deny rules, 20 allow rules and 5 guard rules of every form."""
    programs = ["curl", "wget", "nc", "ssh", "scp", "dd", "mkfs", "shutdown", "reboot", "kill"]
    deny = [DenyRule.bash_command(p) for p in programs]
    deny += [DenyRule.tool(f"Forbidden{i}") for i in range(5)]
    deny += [DenyRule.read(g) for g in (".env", "*.pem", "secrets/**", "id_rsa*", "*.key")]
    deny += [DenyRule.edit(g) for g in ("dist/**", "build/**", "*.lock", "vendor/**", ".github/**")]
    allow = [AllowRule.bash_command(p) for p in ("git", "ls", "cat", "grep", "pytest", "echo", "cd", "tail")]
    allow += [AllowRule.tool(t) for t in ("WebSearch", "get_weather", "Glob", "Grep")]
    allow += [AllowRule.read(g) for g in ("src/**", "docs/**", "tests/**", "*.md")]
    allow += [AllowRule.edit(g) for g in ("src/**", "tests/**", "docs/**", "*.md")]
    guards = [
        GuardRule.ask(DenyRule.bash_command(p), f"{p} changes the system") for p in ("apt", "pip", "npm")
    ]
    guards += [GuardRule.deny(DenyRule.edit(g), "protected") for g in ("pyproject.toml", "uv.lock")]
    assert len(deny) + len(allow) + len(guards) == 50
    return RunContext.ephemeral(None).with_deny_rules(deny).with_allow_rules(allow).with_guard_rules(guards)


async def time_decisions(repeats: int, per_block: int) -> dict[str, dict[str, Any]]:
    ctx = fifty_rules()
    verdicts = {
        label: await authorize(ctx, name, numbered(args, 0), effect) for label, name, args, effect in CALLS
    }
    blocks: dict[str, list[float]] = {label: [] for label, *_ in CALLS}
    n = 0
    for _ in range(repeats):  # round robin, so a change in the machine's load hits every row
        for label, name, template, effect in CALLS:
            calls = [numbered(template, n + i) for i in range(per_block)]
            n += per_block
            start = time.perf_counter()
            for args in calls:
                await authorize(ctx, name, args, effect)
            blocks[label].append((time.perf_counter() - start) / per_block * 1e6)
    return {
        label: {
            "median_us": statistics.median(blocks[label]),
            "min_us": min(blocks[label]),
            "allowed": verdicts[label].allowed,
            "step": verdicts[label].step,
        }
        for label, *_ in CALLS
    }


async def time_runs(repeats: int, per_block: int) -> dict[str, float]:
    @tool
    async def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return "sunny"

    def script(request: Any) -> Any:
        if request.messages[-1].type == "tool_result":
            return text_turn("It is sunny in Paris.")
        return tool_call_turn("get_weather", {"city": "Paris"}, call_id="call_1")

    agent = LlmAgent(name="bench", model=FunctionModel(script), tools=[get_weather])
    governed = fifty_rules()  # built once; each run derives its context (rules stay grouped)
    # The off rows derive their context per run, as docs/governance.md shows.
    contexts = {
        DEFAULT_RUN: lambda: RunContext.ephemeral(None),
        "guards off": lambda: RunContext.ephemeral(None).without_default_guards(),
        GUARDS_OFF_RUN: lambda: (
            RunContext.ephemeral(None).without_default_guards().without_output_redaction()
        ),
        "default + 50 rules": lambda: governed.with_cancel(CancellationToken()),
    }
    for make in contexts.values():
        for _ in range(200):
            await agent.run("Weather in Paris?", context=make())
    blocks: dict[str, list[float]] = {label: [] for label in contexts}
    for _ in range(repeats):  # round robin, so a change in the machine's load hits every row
        for label, make in contexts.items():
            start = time.perf_counter()
            for _ in range(per_block):
                await agent.run("Weather in Paris?", context=make())
            blocks[label].append((time.perf_counter() - start) / per_block * 1e6)
    return {label: statistics.median(values) for label, values in blocks.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--per-block", type=int, default=2000)
    parser.add_argument("--json", help="write the raw figures here")
    args = parser.parse_args()
    decisions = asyncio.run(time_decisions(args.repeats, args.per_block))
    runs = asyncio.run(time_runs(args.repeats, max(args.per_block // 10, 50)))

    # The target is judged on the median block; the fastest block is shown beside it because
    # on a shared machine a loaded minute slows every row alike (by up to ~1.7x here).
    print("One permission decision (default guards + 50 rules), median per call; target <= 100 µs:")
    print(f"{'call':<16} {'verdict':<20} {'µs/call':>8} {'fastest':>8}  target")
    for label, row in decisions.items():
        verdict = f"{'allow' if row['allowed'] else 'deny'} ({row['step']})"
        met = "MET" if row["median_us"] <= TARGET_US else "NOT MET"
        print(f"{label:<16} {verdict:<20} {row['median_us']:>8.1f} {row['min_us']:>8.1f}  {met}")
    for label in ("bash compound", "bash nested"):
        met = "MET" if decisions[label]["median_us"] <= BASH_TARGET_US else "NOT MET"
        print(f"{label}: median <= {BASH_TARGET_US:.0f} µs (issue 28) {met}")
    print()
    print("One agent run with one tool call (median per run; each context derived per run):")
    base = runs[DEFAULT_RUN]
    for label, value in runs.items():
        print(f"{label:<34} {value:>7.1f} µs  ({value - base:+.1f} µs against the default)")
    met = "MET" if runs[GUARDS_OFF_RUN] <= base else "NOT MET"
    print(f"guards + redaction off no slower than the default: {met}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"decisions": decisions, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
