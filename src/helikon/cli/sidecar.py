r"""The `agents.toml` sidecar: agents, their script tools and the eval settings, read and checked.

`load_sidecar(path)` parses the file (`tomllib`), reads every file it references
(instructions, Lua scripts, mock model scripts, JSON Schemas) relative to its directory,
and checks it whole: unknown keys, wrong types, dangling tool or handoff references,
handoff cycles, bad `params` schemas, Lua that does not compile. Every problem found is
reported at once, each naming the file, the line and the field:

    agents.toml:7: agents.triage.tools[0]: no tool 'lookup' is declared (declared: spend)

A `Sidecar` holds definitions only; `helikon.cli.registry` builds agents from them. See
docs/cli.md for the format.

Example:
    ```python
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from helikon.cli.sidecar import SidecarError, load_sidecar

    with TemporaryDirectory() as tmp:
        path = Path(tmp, "agents.toml")
        path.write_text('[agents.a]\nmodel = "openai:gpt-5-mini"\nhandoffs = ["b"]\n')
        try:
            load_sidecar(path)
        except SidecarError as exc:
            assert "agents.toml:3: agents.a.handoffs[0]: no agent 'b' is declared" in str(exc)
    ```
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..core._internal.extras import missing_extra
from ..core._internal.json_value import JsonObject
from ..core.exceptions import UserError
from .toml_lines import key_lines, line_of

PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "gemini", "bedrock", "mock")
"""What `model.provider` may name; a model string (`"ollama:llama3.2"`) reaches the others."""
EVALUATORS: tuple[str, ...] = ("exact_match", "tool_trajectory", "json_schema", "llm_judge")
"""The evaluators `[eval].evaluators` may name."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_TOP_KEYS = ("agents", "tools", "eval")
_AGENT_KEYS = ("description", "instructions", "model", "tools", "handoffs")
_MODEL_KEYS = ("provider", "id", "script")
_TOOL_KEYS = (
    "description",
    "params",
    "script",
    "inline",
    "needs_approval",
    "max_memory",
    "max_instructions",
    "timeout",
)
_EVAL_KEYS = ("evaluators", "exact_match", "tool_trajectory", "json_schema", "llm_judge")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a sidecar: where, which field, what."""

    file: Path
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file.name}:{self.line}" if self.line is not None else self.file.name
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class SidecarError(UserError):
    """A sidecar that cannot be used; `problems` lists each thing wrong, with its file and line."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """An agent's model: a model string, or `mock` with its script file."""

    provider: str
    """`openai`, `anthropic`, `gemini`, `bedrock`, `mock`, or the prefix of a model string."""
    model: str | None = None
    """The model string (`openai:gpt-5-mini`); None for `mock`."""
    script: Path | None = None
    """The mock model's script file (a `helikon.testing.ScriptFile`)."""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One `[agents.NAME]` entry."""

    name: str
    model: ModelSpec
    description: str = ""
    instructions: str = ""
    tools: tuple[str, ...] = ()
    handoffs: tuple[str, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One `[tools.NAME]` entry: a Lua script with its parameters' JSON Schema."""

    name: str
    description: str
    params: JsonObject
    source: str
    origin: str
    """Where the Lua comes from, for messages: its file, or `agents.toml [tools.NAME] inline`."""
    max_memory: int | None = None
    max_instructions: int | None = None
    timeout: float | None = None
    needs_approval: bool = False
    """Every call waits for a person's decision (the REPL asks at the prompt)."""


@dataclass(frozen=True, slots=True)
class EvalSpec:
    """The `[eval]` table: the evaluators `helikon eval run` scores with, and their settings."""

    evaluators: tuple[str, ...] = ("exact_match",)
    settings: Mapping[str, JsonObject] = field(default_factory=lambda: {})
    """Each evaluator's `[eval.NAME]` table (a `json_schema`'s `schema` is the loaded schema)."""


@dataclass(frozen=True, slots=True)
class Sidecar:
    """A checked sidecar: its agents (by name, sorted), tools and eval settings."""

    path: Path
    agents: Mapping[str, AgentSpec]
    tools: Mapping[str, ToolSpec]
    eval: EvalSpec
    files: frozenset[Path]
    """The sidecar and every file it references: what hot reload watches."""

    @property
    def default_agent(self) -> str:
        """The alphabetically first agent's name."""
        return next(iter(self.agents))


def load_sidecar(path: str | Path) -> Sidecar:
    """Read and check the sidecar at `path` (see the module).

    Raises:
        SidecarError: The file is missing, not TOML, or wrong in any way; every problem is listed.
    """
    path = Path(path).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SidecarError(
            [Problem(path, None, "", "no such file: give --agents PATH, or create one with `helikon init`")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SidecarError([Problem(path, None, "", f"cannot read it ({exc})")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        line = int(match.group(1)) if match else None
        raise SidecarError([Problem(path, line, "", f"not valid TOML: {message}")]) from None
    reader = _Reader(path, text)
    sidecar = reader.sidecar(data)
    if reader.problems:
        raise SidecarError(sorted(reader.problems, key=lambda problem: problem.line or 0))
    return sidecar


class _Reader:
    """Reads the parsed TOML into specs, collecting every problem with its line."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.base = path.parent
        self.lines = key_lines(text)
        self.problems: list[Problem] = []
        self.files: set[Path] = {path}

    def problem(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(Problem(self.path, line_of(self.lines, where), _field(where), message))

    def sidecar(self, data: dict[str, Any]) -> Sidecar:
        self.known_keys((), data, _TOP_KEYS)
        agents_data = self.table(("agents",), data.get("agents", {}))
        tools_data = self.table(("tools",), data.get("tools", {}))
        if not agents_data and not any(p.field == "agents" for p in self.problems):
            self.problems.append(
                Problem(self.path, None, "", "declares no agents: add an [agents.NAME] table")
            )
        tools: dict[str, ToolSpec] = dict(self.named(("tools",), tools_data, self.tool))
        agents: dict[str, AgentSpec] = dict(self.named(("agents",), agents_data, self.agent))
        for agent in agents.values():
            self.references(agent, agents, tools)
        self.cycles(agents)
        spec = self.eval_spec(data.get("eval"))
        return Sidecar(self.path, dict(sorted(agents.items())), tools, spec, frozenset(self.files))

    # --- shapes -----------------------------------------------------------------------------

    def table(self, where: tuple[str | int, ...], value: object) -> dict[str, Any]:
        if isinstance(value, dict):
            return cast(dict[str, Any], value)
        self.problem(where, f"expected a table, not {_shown(value)}")
        return {}

    def known_keys(self, where: tuple[str | int, ...], data: Mapping[str, Any], known: Sequence[str]) -> None:
        for key in data:
            if key not in known:
                self.problem((*where, key), f"unknown key (known here: {', '.join(known)})")

    def string(self, where: tuple[str | int, ...], value: object) -> str:
        if isinstance(value, str):
            return value
        self.problem(where, f"expected a string, not {_shown(value)}")
        return ""

    def names(self, where: tuple[str | int, ...], value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.problem(where, f"expected a list of names, not {_shown(value)}")
            return ()
        items = cast(list[object], value)
        return tuple(self.string((*where, i), item) for i, item in enumerate(items))

    def named(self, where: tuple[str, ...], data: dict[str, Any], read: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for name, value in data.items():
            if not _NAME.match(name):
                self.problem((*where, name), "a name is 1-64 letters, digits, '_' or '-'")
                continue
            spec = read(name, self.table((*where, name), value))
            if spec is not None:
                out.append((name, spec))
        return out

    def file(self, where: tuple[str | int, ...], value: object) -> tuple[Path, str] | None:
        """A file named relative to the sidecar: its path and text."""
        name = self.string(where, value)
        if not name:
            return None
        path = (self.base / name).absolute()
        self.files.add(path)
        try:
            return path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = "no such file" if isinstance(exc, FileNotFoundError) else f"cannot read it ({exc})"
            self.problem(where, f"{name}: {reason} (paths are relative to {self.base})")
            return None

    # --- agents -----------------------------------------------------------------------------

    def agent(self, name: str, data: dict[str, Any]) -> AgentSpec | None:
        where = ("agents", name)
        self.known_keys(where, data, _AGENT_KEYS)
        if "model" not in data:
            self.problem(where, 'no model: add model = "openai:gpt-5-mini" or model = { provider = ... }')
            return None
        model = self.model((*where, "model"), data["model"])
        instructions = ""
        if "instructions" in data:
            instructions = self.instructions((*where, "instructions"), data["instructions"])
        return AgentSpec(
            name=name,
            model=model,
            description=self.string((*where, "description"), data.get("description", "")),
            instructions=instructions,
            tools=self.names((*where, "tools"), data.get("tools", [])),
            handoffs=self.names((*where, "handoffs"), data.get("handoffs", [])),
            line=line_of(self.lines, where),
        )

    def instructions(self, where: tuple[str | int, ...], value: object) -> str:
        if isinstance(value, dict):
            table = cast(dict[str, Any], value)
            self.known_keys(where, table, ("file",))
            if "file" not in table:
                self.problem(where, 'give the text, or { file = "instructions.md" }')
                return ""
            loaded = self.file((*where, "file"), table["file"])
            return loaded[1] if loaded is not None else ""
        return self.string(where, value)

    def model(self, where: tuple[str | int, ...], value: object) -> ModelSpec:
        if isinstance(value, str):
            self.model_string(where, value)
            return ModelSpec(value.partition(":")[0], model=value)
        if not isinstance(value, dict):
            self.problem(where, f"expected a model string or a table, not {_shown(value)}")
            return ModelSpec("")
        table = cast(dict[str, Any], value)
        self.known_keys(where, table, _MODEL_KEYS)
        provider = self.string((*where, "provider"), table.get("provider", ""))
        if provider not in PROVIDERS:
            self.problem(
                (*where, "provider"), f"{provider!r}: one of {', '.join(PROVIDERS)} (or a model string)"
            )
            return ModelSpec(provider)
        if provider == "mock":
            if "id" in table:
                self.problem((*where, "id"), "a mock model has no id: give its script")
            if "script" not in table:
                self.problem(
                    where, 'a mock model needs script = "<file>.json" (a helikon.testing ScriptFile)'
                )
                return ModelSpec("mock")
            loaded = self.file((*where, "script"), table["script"])
            if loaded is not None:
                self.mock_script((*where, "script"), *loaded)
            return ModelSpec("mock", script=loaded[0] if loaded else None)
        if "script" in table:
            self.problem((*where, "script"), "only a mock model has a script")
        model_id = self.string((*where, "id"), table.get("id", ""))
        if not model_id:
            self.problem(where, f'give the model\'s id, e.g. {{ provider = "{provider}", id = "..." }}')
        else:
            self.model_string(where, f"{provider}:{model_id}")
        return ModelSpec(provider, model=f"{provider}:{model_id}")

    def model_string(self, where: tuple[str | int, ...], spec: str) -> None:
        """A typo or an unknown prefix is the file's problem; a missing extra only disables the agent."""
        from .. import LazyModel

        try:
            LazyModel(spec)
        except UserError as exc:
            self.problem(where, str(exc))
        except ImportError:
            pass

    def mock_script(self, where: tuple[str | int, ...], path: Path, text: str) -> None:
        from ..testing import ScriptFile

        try:
            ScriptFile.loads(text, source=str(path.name))
        except UserError as exc:
            self.problem(where, str(exc))

    # --- tools ------------------------------------------------------------------------------

    def tool(self, name: str, data: dict[str, Any]) -> ToolSpec | None:
        where = ("tools", name)
        self.known_keys(where, data, _TOOL_KEYS)
        params = self.params((*where, "params"), data.get("params", {"type": "object", "properties": {}}))
        if ("script" in data) == ("inline" in data):
            self.problem(where, "give exactly one of script = \"<file>.lua\" and inline = '''<lua>'''")
            return None
        if "script" in data:
            loaded = self.file((*where, "script"), data["script"])
            if loaded is None:
                return None
            source, origin = loaded[1], os.path.relpath(loaded[0], self.base)
        else:
            source = self.string((*where, "inline"), data["inline"])
            origin = f"{self.path.name} [tools.{name}] inline"
        self.lua((*where, "script" if "script" in data else "inline"), source, origin)
        return ToolSpec(
            name=name,
            description=self.string((*where, "description"), data.get("description", "")),
            params=params,
            source=source,
            origin=origin,
            max_memory=self.positive((*where, "max_memory"), data.get("max_memory"), int),
            max_instructions=self.positive((*where, "max_instructions"), data.get("max_instructions"), int),
            timeout=self.positive((*where, "timeout"), data.get("timeout"), float),
            needs_approval=self.boolean((*where, "needs_approval"), data.get("needs_approval", False)),
        )

    def boolean(self, where: tuple[str | int, ...], value: object) -> bool:
        if isinstance(value, bool):
            return value
        self.problem(where, f"expected true or false, not {_shown(value)}")
        return False

    def params(self, where: tuple[str | int, ...], value: object) -> JsonObject:
        try:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError
        except ImportError as exc:
            raise missing_extra("checking a tool's params needs jsonschema", "cli") from exc

        schema = self.table(where, value)
        if schema.get("type") != "object":
            self.problem(where, 'the arguments are an object: give type = "object" and its properties')
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            inner = [str(part) for part in exc.path]
            self.problem((*where, *inner), f"not a valid JSON Schema: {exc.message}")
        return cast(JsonObject, schema)

    def lua(self, where: tuple[str | int, ...], source: str, origin: str) -> None:
        from .lua_tool import check_lua

        try:
            check_lua(source, origin)
        except UserError as exc:
            self.problem(where, str(exc))

    def positive(self, where: tuple[str | int, ...], value: object, kind: type[Any]) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            self.problem(where, f"expected a positive number, not {_shown(value)}")
            return None
        if kind is int and not isinstance(value, int):
            self.problem(where, f"expected a whole number, not {value!r}")
            return None
        return kind(value)

    # --- references -------------------------------------------------------------------------

    def references(
        self, agent: AgentSpec, agents: Mapping[str, AgentSpec], tools: Mapping[str, ToolSpec]
    ) -> None:
        where = ("agents", agent.name)
        for i, tool in enumerate(agent.tools):
            if tool and tool not in tools:
                self.problem((*where, "tools", i), f"no tool {tool!r} is declared ({_declared(tools)})")
        for i, target in enumerate(agent.handoffs):
            if target == agent.name:
                self.problem((*where, "handoffs", i), "an agent cannot hand off to itself")
            elif target and target not in agents:
                self.problem(
                    (*where, "handoffs", i), f"no agent {target!r} is declared ({_declared(agents)})"
                )

    def cycles(self, agents: Mapping[str, AgentSpec]) -> None:
        """Report each handoff cycle once, at the agent of the cycle that sorts first."""
        reported: set[frozenset[str]] = set()
        for start in sorted(agents):
            path = _cycle_from(start, agents)
            if path is None or frozenset(path) in reported or min(path) != start:
                continue
            reported.add(frozenset(path))
            chain = " -> ".join([*path, path[0]])
            self.problem(
                ("agents", start, "handoffs"),
                f"handoff cycle detected ({chain}): declare one-way handoff chains",
            )

    # --- eval -------------------------------------------------------------------------------

    def eval_spec(self, value: object) -> EvalSpec:
        if value is None:
            return EvalSpec()
        where = ("eval",)
        data = self.table(where, value)
        self.known_keys(where, data, _EVAL_KEYS)
        names = self.names((*where, "evaluators"), data.get("evaluators", ["exact_match"]))
        settings: dict[str, JsonObject] = {}
        for i, name in enumerate(names):
            if name not in EVALUATORS:
                self.problem((*where, "evaluators", i), f"{name!r}: one of {', '.join(EVALUATORS)}")
        for name in EVALUATORS:
            if name in data:
                settings[name] = cast(JsonObject, self.table((*where, name), data[name]))
        self.known_keys((*where, "exact_match"), settings.get("exact_match", {}), ("strip", "case_sensitive"))
        trajectory = settings.get("tool_trajectory", {})
        self.known_keys((*where, "tool_trajectory"), trajectory, ("order", "match"))
        if trajectory.get("order", "exact") not in ("exact", "in_order", "any_order"):
            self.problem((*where, "tool_trajectory", "order"), "one of exact, in_order, any_order")
        if "json_schema" in names:
            self.json_schema_settings(settings)
        if "llm_judge" in names:
            self.judge_settings(settings)
        return EvalSpec(names, settings)

    def json_schema_settings(self, settings: dict[str, JsonObject]) -> None:
        where = ("eval", "json_schema")
        table = settings.get("json_schema")
        if table is None or "schema" not in table:
            self.problem(where, 'json_schema needs [eval.json_schema] with schema = "<file>.json"')
            return
        self.known_keys(where, table, ("schema",))
        loaded = self.file((*where, "schema"), table["schema"])
        if loaded is None:
            return
        import json

        try:
            settings["json_schema"] = {"schema": json.loads(loaded[1])}
        except ValueError as exc:
            self.problem((*where, "schema"), f"{loaded[0].name}: not valid JSON ({exc})")

    def judge_settings(self, settings: dict[str, JsonObject]) -> None:
        where = ("eval", "llm_judge")
        table = settings.get("llm_judge")
        if table is None:
            self.problem(where, "llm_judge needs [eval.llm_judge] with model, rubric and threshold")
            return
        self.known_keys(where, table, ("model", "rubric", "threshold"))
        for key in ("model", "rubric"):
            if key not in table:
                self.problem(where, f"llm_judge needs {key}")
        if "model" in table:
            spec = self.model((*where, "model"), table["model"])
            settings["llm_judge"] = {**table, "model": spec.model}
            if spec.provider == "mock":
                self.problem((*where, "model"), "the judge needs a live model, not mock")


def _cycle_from(start: str, agents: Mapping[str, AgentSpec]) -> list[str] | None:
    """The handoff cycle through `start`, if one leads back to it (depth first)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, path = stack.pop()
        for target in agents[name].handoffs if name in agents else ():
            if target == start and len(path) > 1:
                return path
            if target in agents and target not in seen and target != start:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def _field(where: Sequence[str | int]) -> str:
    out = ""
    for part in where:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _shown(value: object) -> str:
    kinds: dict[type, str] = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
    }
    return kinds.get(type(value), "a table" if isinstance(value, dict) else type(value).__name__)


def _declared(names: Mapping[str, object]) -> str:
    return f"declared: {', '.join(sorted(names))}" if names else "none is declared"


__all__ = [
    "EVALUATORS",
    "PROVIDERS",
    "AgentSpec",
    "EvalSpec",
    "ModelSpec",
    "Problem",
    "Sidecar",
    "SidecarError",
    "ToolSpec",
    "load_sidecar",
]
