"""Deterministic workflow agents: `SequentialAgent`, `ParallelAgent`, `LoopAgent`, `GraphAgent`.

Each is an `Agent`, so they nest: a step of a `SequentialAgent` can be a `ParallelAgent`,
a node of a `GraphAgent` a `LoopAgent`. Every one emits one outer `RunStarted` /
`RunCompleted` (usage summed over its children), an `AgentUpdated` before each child
starts, and the children's other events in arrival order; each child's final text lands
in the run's shared `state` under its key.
"""

from .graph import GraphAgent, GraphBuilder, GraphBuildError
from .loop import LoopAgent
from .parallel import ParallelAgent
from .sequential import SequentialAgent

__all__ = ["GraphAgent", "GraphBuildError", "GraphBuilder", "LoopAgent", "ParallelAgent", "SequentialAgent"]
