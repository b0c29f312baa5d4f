r"""Agents from a sidecar: which can run here, and a fresh `LlmAgent` for each that can.

An agent whose provider needs a key that is not set, or an extra that is not installed,
is disabled on its own, with the reason and the variable to set; every other agent still
works (so does an agent handing off only to working ones). `agent(name)` builds a fresh
`LlmAgent` from the current definitions: the REPL builds one per turn, an eval one per
case. A mock model follows its script across the turns of one `Registry` (a reload
starts it again); `agent(name, case_id=...)` gives a case its own scripts.

Example:
    ```python
    import json
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from helikon.cli.registry import Registry

    with TemporaryDirectory() as tmp:
        script = {"default": [[{"type": "token_delta", "text": "Hi!"}, {"type": "finish"}]]}
        Path(tmp, "hi.json").write_text(json.dumps(script))
        Path(tmp, "agents.toml").write_text(
            '[agents.greeter]\nmodel = { provider = "mock", script = "hi.json" }\n'
            '[agents.writer]\nmodel = { provider = "openai", id = "gpt-5-mini" }\n'
        )
        registry = Registry.load(Path(tmp, "agents.toml"), env={})
        assert registry.names() == ["greeter"]
        assert "OPENAI_API_KEY" in registry.disabled["writer"]
        assert registry.agent("greeter").run_sync("Hello").final_output == "Hi!"
    ```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exceptions import UserError
from ..core.model import Model
from .sidecar import AgentSpec, Sidecar, ToolSpec, load_sidecar

# Which variables a provider reads its credentials from (any one of them will do).
_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "bedrock": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE"),
}


@dataclass(slots=True)
class Registry:
    """A sidecar's agents, ready to build; `disabled` says why the others are not."""

    sidecar: Sidecar
    disabled: Mapping[str, str]
    """Each agent that cannot run here -> why, and what to set or install."""
    _models: dict[str, Model] = field(default_factory=lambda: {})

    @classmethod
    def load(cls, path: str | Path, env: Mapping[str, str] | None = None) -> Registry:
        """Load and check the sidecar at `path` (raises `SidecarError`); `env` defaults to `os.environ`."""
        return cls.of(load_sidecar(path), env)

    @classmethod
    def of(cls, sidecar: Sidecar, env: Mapping[str, str] | None = None) -> Registry:
        """The registry of an already loaded sidecar."""
        environ = os.environ if env is None else env
        disabled: dict[str, str] = {}
        for spec in sidecar.agents.values():
            why = _unavailable(spec, environ)
            if why is not None:
                disabled[spec.name] = why
        changed = True
        while changed:  # an agent handing off to a disabled one cannot run either
            changed = False
            for spec in sidecar.agents.values():
                blocked = [t for t in spec.handoffs if t in disabled]
                if spec.name not in disabled and blocked:
                    disabled[spec.name] = f"it hands off to {blocked[0]!r}, which is disabled"
                    changed = True
        return cls(sidecar, disabled)

    def names(self) -> list[str]:
        """The agents that can run, sorted."""
        return [name for name in self.sidecar.agents if name not in self.disabled]

    def default(self) -> str:
        """The alphabetically first agent that can run.

        Raises:
            UserError: Every agent is disabled (the message says why each is).
        """
        names = self.names()
        if not names:
            raise UserError(f"no agent in {self.sidecar.path.name} can run here: {self.why_disabled()}")
        return names[0]

    def why_disabled(self) -> str:
        """One line per disabled agent: its name and why."""
        return "; ".join(f"{name}: {why}" for name, why in self.disabled.items())

    def agent(self, name: str, *, case_id: str | None = None) -> Any:
        """A fresh `LlmAgent` for `name` from the current definitions (see the module).

        Raises:
            UserError: No such agent, or it is disabled (the message says why).
        """
        spec = self.sidecar.agents.get(name)
        if spec is None:
            known = ", ".join(self.sidecar.agents)
            raise UserError(f"no agent {name!r} in {self.sidecar.path.name} (agents: {known})")
        if name in self.disabled:
            raise UserError(f"agent {name!r} is disabled: {self.disabled[name]}")
        from .. import LlmAgent

        return LlmAgent(
            name=spec.name,
            model=self._model(spec, case_id),
            instructions=spec.instructions or None,
            description=spec.description,
            tools=[_tool(self.sidecar.tools[t]) for t in spec.tools],
            handoffs=[self.agent(target, case_id=case_id) for target in spec.handoffs],
        )

    def _model(self, spec: AgentSpec, case_id: str | None) -> Model:
        if case_id is None and spec.name in self._models:
            return self._models[spec.name]
        if spec.model.provider == "mock":
            from ..testing import MockModel, ScriptFile

            assert spec.model.script is not None  # a checked sidecar's mock has its script
            model: Model = MockModel.with_scripts(ScriptFile.load(spec.model.script).scripts(case_id))
        else:
            from .. import resolve_model

            assert spec.model.model is not None
            model = resolve_model(spec.model.model)
        if case_id is None:
            self._models[spec.name] = model
        return model


def _unavailable(spec: AgentSpec, env: Mapping[str, str]) -> str | None:
    """Why `spec`'s model cannot run here (a key not set, an extra not installed), or None."""
    if spec.model.provider == "mock" or spec.model.model is None:
        return None
    keys = _KEYS.get(spec.model.provider, ())
    if keys and not any(env.get(key) for key in keys):
        return f"its model {spec.model.model} needs {' or '.join(keys)}: set it to use this agent"
    from .. import LazyModel

    try:
        LazyModel(spec.model.model)
    except ImportError as exc:
        return str(exc)
    return None


def _tool(spec: ToolSpec) -> Any:
    from .lua_tool import LuaLimits, LuaTool

    defaults = LuaLimits()
    limits = LuaLimits(
        max_memory=spec.max_memory or defaults.max_memory,
        max_instructions=spec.max_instructions or defaults.max_instructions,
        timeout=spec.timeout or defaults.timeout,
    )
    return LuaTool(
        name=spec.name,
        description=spec.description,
        schema=spec.params,
        source=spec.source,
        origin=spec.origin,
        limits=limits,
        needs_approval=spec.needs_approval,
    )


__all__ = ["Registry"]
