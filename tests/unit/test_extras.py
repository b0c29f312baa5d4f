"""Every packaging extra: without it, whatever needs it raises an ImportError naming its `pip install`.

For each extra in pyproject.toml a fresh interpreter hides the extra's packages (every
distribution its requirements bring that the core dependencies do not), imports each public
helikon module that needs them and makes the calls that load them lazily (connecting to an MCP
server, a model string, a tool loaded on first access). Each must raise an `ImportError` whose
message is `pip install 'paigasus-helikon[<extra>]'` for an extra that brings the missing
module: never a bare `ModuleNotFoundError`. Which modules need an extra is read from their
imports, so a new module is checked without anyone listing it here.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import helikon

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(helikon.__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# What loads an extra's packages lazily, by the public module that does. A module that needs an
# extra but imports without it must have an entry here, one of whose uses needs that extra, or
# the test fails; a module that needs several extras lists a use for each.
_CONNECT = "from helikon.mcp.client import McpServerHandle\nasyncio.run(McpServerHandle.{}.connect())"
# Loading a sidecar with a tool checks its params (jsonschema) and compiles its Lua (lupa).
_SIDECAR = (
    "import pathlib, tempfile\n"
    "path = pathlib.Path(tempfile.mkdtemp(), 'agents.toml')\n"
    'path.write_text(\'[agents.a]\\nmodel = "openai:x"\\n[tools.t]\\ninline = "function run(a) end"\\n\')\n'
    "from helikon.cli.sidecar import load_sidecar\nload_sidecar(path)"
)
LAZY_USES: dict[str, list[str]] = {
    **{
        f"helikon.cli.{module}": [_SIDECAR]
        for module in ("sidecar", "registry", "eval_command", "run_command", "live", "serve_commands", "repl")
    },
    "helikon.evals.evaluators": [
        "from helikon.evals import JsonSchemaEvaluator\nJsonSchemaEvaluator({'type': 'object'})"
    ],
    # The evals modules that reach the report (its table needs rich) are checked through it.
    **{
        f"helikon.evals.{module}": ["from helikon.evals import EvalReport\nEvalReport.empty().render_table()"]
        for module in ("report", "compare", "sinks", "sqlite_sink", "judge")
    },
    "helikon.evals": [
        "from helikon.evals import JsonSchemaEvaluator\nJsonSchemaEvaluator({'type': 'object'})",
        "from helikon.evals import ParquetTraceSink\nasyncio.run(ParquetTraceSink('.').runs())",
    ],
    "helikon.evals.parquet_sink": [
        "from helikon.evals import ParquetTraceSink\nasyncio.run(ParquetTraceSink('.').runs())",
        "from helikon.evals import EvalReport\nEvalReport.empty().render_table()",
    ],
    "helikon.evals.run": [
        "from helikon.evals import EvalCase, EvalDataset, EvalRun\n"
        "from helikon.testing import MockModel\n"
        "agent = helikon.LlmAgent(name='a', model=MockModel.with_scripts([]))\n"
        "EvalRun.builder().dataset(EvalDataset((EvalCase.of('x'),))).agent(agent).progress(True).build().run_sync()"
    ],
    "helikon.mcp": [
        "from helikon.mcp import McpToolServer",
        "from helikon.mcp import McpAgentServer",
        "from helikon.mcp import tool_name_for",
    ],
    "helikon.mcp.client": [
        _CONNECT.format("stdio(sys.executable, ['-c', 'pass'])"),
        _CONNECT.format("streamable_http('http://127.0.0.1:9/mcp')"),
        _CONNECT.format("transport(lambda: None)"),
    ],
    "helikon.mcp.builder": [
        "from helikon.mcp.builder import McpConnectBuilder\n"
        "from helikon.mcp.client import McpServerHandle\n"
        "async def main():\n"
        "    async with McpServerHandle.stdio(sys.executable) as handle:\n"
        "        pass\n"
        "asyncio.run(main())"
    ],
}

# What reaches an extra through a name rather than an import: model strings, lazy attributes.
NAMED_USES: dict[str, list[str]] = {
    "openai": [
        "helikon.LlmAgent(name='a', model='openai:gpt-5-mini')",
        "helikon.LlmAgent(name='a', model='openai-compatible:m@http://127.0.0.1:9/v1')",
    ],
    "anthropic": ["helikon.LlmAgent(name='a', model='anthropic:claude-sonnet-4-6')"],
    "gemini": ["helikon.LlmAgent(name='a', model='gemini:gemini-2.5-flash')"],
    "bedrock": ["helikon.LlmAgent(name='a', model='bedrock:amazon.nova-lite-v1:0')"],
    "tools-web": ["from helikon.tools import WebFetchTool", "from helikon.tools import WebSearchTool"],
    "tools-microvm": ["from helikon.tools import ForkdBackend"],
}

# Extras whose packages only speed things up or serve the examples: helikon works without them.
WORKS_WITHOUT = {
    # The OpenTelemetry SDK and exporter: runs trace through the API alone (a no-op without an SDK).
    "otel": textwrap.dedent(
        """
        from helikon import LlmAgent
        from helikon.testing import MockModel, text_turn

        agent = LlmAgent(name="a", model=MockModel.with_scripts([text_turn("hi")]))
        assert agent.run_sync("go").final_output == "hi"
        """
    ),
}

# Hides the packages given in argv[1] from every import finder, as if they were not installed,
# then runs the checks in argv[2] and prints what each raised.
CHILD = textwrap.dedent(
    """
    import json, sys, traceback

    HIDDEN = tuple(json.loads(sys.argv[1]))

    class Without:
        def __init__(self, finder):
            self.finder = finder

        def find_spec(self, name, path=None, target=None):
            if any(name == root or name.startswith(root + ".") for root in HIDDEN):
                return None
            find = getattr(self.finder, "find_spec", None)
            return None if find is None else find(name, path, target)

        def __getattr__(self, name):
            return getattr(self.finder, name)

    sys.meta_path[:] = [Without(finder) for finder in sys.meta_path]

    def missing(exc):
        while exc is not None:
            if isinstance(exc, ModuleNotFoundError) and exc.name:
                return exc.name
            exc = exc.__cause__ or exc.__context__
        return None

    results = []
    for code in json.loads(sys.argv[2]):
        try:
            namespace = {"__name__": "check"}
            exec("import asyncio, sys, helikon", namespace)
            exec(compile(code, "<check>", "exec"), namespace)
        except BaseException as exc:
            results.append(
                {
                    "raised": type(exc).__name__,
                    "import_error": isinstance(exc, ImportError),
                    "message": str(exc),
                    "missing": missing(exc),
                    "trace": traceback.format_exc(),
                }
            )
        else:
            results.append(None)
    print(json.dumps(results))
    """
)


# --- what each extra brings ---------------------------------------------------------------------


def _closure(requirements: list[str]) -> set[str]:
    """The distributions `requirements` install, transitively (extras of them left out)."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in metadata.requires(name) or [])
        except metadata.PackageNotFoundError:
            continue  # a platform's optional dependency that is not installed here
    return seen


@cache
def _owners() -> dict[str, frozenset[str]]:
    """Each importable dotted name -> the distributions with files under it."""
    owners: dict[str, set[str]] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or []:
            parts = file.parts
            if file.suffix not in (".py", ".so", ".pyd") or parts[0].endswith((".dist-info", ".data")):
                continue
            if parts[0] == ".." or "__pycache__" in parts:
                continue
            module = [*parts[:-1], parts[-1].split(".")[0]]
            if module[-1] == "__init__":
                module.pop()
            for depth in range(1, len(module) + 1):
                owners.setdefault(".".join(module[:depth]), set()).add(name)
    return {module: frozenset(dists) for module, dists in owners.items()}


@cache
def hidden_roots(extra: str) -> tuple[str, ...]:
    """The top-most module names only `extra`'s own distributions provide (namespace packages split)."""
    requirements = [r for r in PYPROJECT["project"]["optional-dependencies"][extra] if "paigasus" not in r]
    for requirement in requirements:
        name = Requirement(requirement).name
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"the {extra} extra's {name} is not installed here: run `uv sync --all-extras`")
    own = _closure(requirements) - _closure(PYPROJECT["project"]["dependencies"])
    owners = _owners()
    roots = {
        module
        for module, dists in owners.items()
        if dists <= own and not owners.get(module.rpartition(".")[0], frozenset({""})) <= own
    }
    return tuple(sorted(roots))


def _extra_of(message: str) -> str | None:
    found = re.search(r"pip install 'paigasus-helikon\[([a-z-]+)\]'", message)
    return found[1] if found else None


# --- which modules need it ---------------------------------------------------------------------


def _optional(handler: ast.ExceptHandler) -> bool:
    """An `except ImportError:` that goes on without the module (a fallback), not one that re-raises."""
    caught = ast.unparse(handler.type) if handler.type is not None else ""
    if "ImportError" not in caught and "ModuleNotFoundError" not in caught:
        return False
    return not any(isinstance(node, ast.Raise) for node in ast.walk(handler))


def _import_calls(node: ast.AST) -> list[str]:
    """`importlib.import_module("x")` with a literal absolute name, as bedrock.py imports botocore."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return []
    name = node.args[0].value
    called = ast.unparse(node.func)
    if called not in ("importlib.import_module", "import_module") or not isinstance(name, str):
        return []
    return [] if name.startswith(".") else [name]


def _imports(tree: ast.Module, module: str, is_package: bool) -> tuple[set[str], set[str]]:
    """What `tree` imports when it is imported, and what it imports anywhere.

    Imports under TYPE_CHECKING and in a `try` that falls back without the module are left out.
    """
    eager: set[str] = set()
    anywhere: set[str] = set()

    def add(names: list[str], in_function: bool) -> None:
        anywhere.update(names)
        if not in_function:
            eager.update(names)

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, ast.Try) and any(_optional(h) for h in node.handlers):
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, in_function)
            return
        if isinstance(node, ast.Import):
            add([alias.name for alias in node.names], in_function)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            add([base, *(f"{base}.{alias.name}" for alias in node.names)], in_function)
        else:
            add(_import_calls(node), in_function)
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, in_function=False)
    return eager, anywhere


@cache
def _source_imports() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each helikon module -> (what importing it imports, what it imports anywhere)."""
    imports: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for path in (SRC / "helikon").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        eager, anywhere = _imports(ast.parse(path.read_text()), module, is_package)
        imports[module] = (frozenset(eager), frozenset(anywhere))
    return imports


def needing(extra: str) -> list[str]:
    """The public helikon modules that need `extra`'s packages.

    A module needs them when it, or a helikon module importing it imports, imports them
    (at import or inside a function). A helikon module imported inside a function is a use
    (`USES`), not followed here: every module would reach every other that way.
    """
    imports = _source_imports()
    roots = hidden_roots(extra)

    def hidden(name: str) -> bool:
        return any(name == root or name.startswith(root + ".") for root in roots)

    def reaches(module: str, seen: set[str]) -> bool:
        seen.add(module)
        eager, anywhere = imports[module]
        if any(hidden(name) for name in anywhere):
            return True
        for name in eager:
            while name and name not in imports:
                name = name.rpartition(".")[0]
            if name and name not in seen and reaches(name, seen):
                return True
        return False

    public = [m for m in imports if not any(part.startswith("_") for part in m.split("."))]
    return sorted(m for m in public if reaches(m, set()))


# --- the test ----------------------------------------------------------------------------------

EXTRAS = sorted(set(PYPROJECT["project"]["optional-dependencies"]) - {"all"})


def _run(extra: str, checks: list[str]) -> list[dict[str, Any] | None]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(hidden_roots(extra)), json.dumps(checks)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_extra_is_checked() -> None:
    for extra in EXTRAS:
        checked = extra in WORKS_WITHOUT or needing(extra) or extra in NAMED_USES
        assert checked or not hidden_roots(extra), f"nothing checks the {extra} extra"
    assert set(NAMED_USES) | set(WORKS_WITHOUT) <= set(EXTRAS)


@pytest.mark.parametrize("extra", [e for e in EXTRAS if e not in WORKS_WITHOUT and hidden_roots(e)])
def test_without_the_extra_what_needs_it_names_the_pip_install(extra: str) -> None:
    modules = needing(extra)
    imports = [f"import {m}" for m in modules]
    uses = [*(use for m in modules for use in LAZY_USES.get(m, [])), *NAMED_USES.get(extra, [])]
    results = _run(extra, [*imports, *uses])
    raised = {check for check, result in zip([*imports, *uses], results, strict=True) if result is not None}
    roots = {e: hidden_roots(e) for e in EXTRAS}
    for check, result in zip([*imports, *uses], results, strict=True):
        if result is None:
            # A module may need several extras, each for its own uses: one of them must need this one.
            module = check.removeprefix("import ")
            if check not in imports:
                assert check not in NAMED_USES.get(extra, []), f"{check!r} ran without the {extra} extra"
                continue
            assert module in LAZY_USES, f"{module} imports without the {extra} extra: give it LAZY_USES"
            assert raised & set(LAZY_USES[module]), f"no use of {module} needs the {extra} extra"
            continue
        named = _extra_of(result["message"])
        assert result["import_error"] and named is not None, (
            f"without the {extra} extra, {check!r} raised {result['raised']}: {result['message']}, "
            f"not an ImportError naming the extra to install\n{result['trace']}"
        )
        missing = result["missing"]
        brings = missing is None and named == extra
        brings = brings or any(missing == r or str(missing).startswith(r + ".") for r in roots[named])
        assert brings, f"{check!r}: {result['message']!r} names {named}, which does not bring {missing}"


@pytest.mark.parametrize("extra", sorted(WORKS_WITHOUT))
def test_an_extra_that_only_speeds_things_up_is_not_needed(extra: str) -> None:
    assert hidden_roots(extra)
    assert _run(extra, [WORKS_WITHOUT[extra]]) == [None]
