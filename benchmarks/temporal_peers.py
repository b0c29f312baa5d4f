"""What the anchors of benchmarks/temporal.py share with helikon's side: the run's shape and its clock.

The anchors' workflows live in modules of their own (`temporal_peers_openai`,
`temporal_peers_pydantic`): Temporal's sandbox imports a workflow's module again for each run, with
what its plugin passes through, so each imports only its own framework.

Every side's model is scripted the same way: turn k (from 0) calls `page(k)` until
`SETTINGS["turns"]` turns, then answers "done". Each model call notes its start time in
`MODEL_CALLS` (the workers run in the benchmark's process), which is how the per-turn latency is
measured.
"""

from __future__ import annotations

MODEL_CALLS: list[float] = []
"""When each model call of the current run started (`time.perf_counter`)."""

SETTINGS: dict[str, int] = {"turns": 20, "size": 50_000}
"""The run's shape: how many tool turns, how large each tool result (bytes)."""


def page_text(n: int) -> str:
    """Page `n` of the document: `SETTINGS["size"]` bytes."""
    head = f"page {n}: "
    return head + "x" * (SETTINGS["size"] - len(head))
