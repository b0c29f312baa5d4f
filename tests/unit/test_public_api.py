"""The public surface: the facade's `__all__`, the subpackages' `__all__`, a cheap import, the version."""

import importlib
import importlib.metadata
import json
import subprocess
import sys
from collections import Counter

import pytest

import helikon
import helikon.core

HEAVY_MODULES = [
    "pydantic",
    "pydantic_core",
    "openai",
    "anthropic",
    "google.genai",
    "boto3",
    "asyncpg",
    "psycopg",
    "redis",
    "fastapi",
    "starlette",
    "uvicorn",
    "temporalio",
    "mcp",
    "pyarrow",
    "httpx",
    "aiosqlite",
    "rich",
    "typer",
    # The standard library's own heavy packages (~25 ms of `import helikon` between them):
    # loaded when a run starts, not when helikon is imported.
    "asyncio",
    "logging",
    # Smaller ones, imported where they are used (a file read, a URL check, a session's ids, a
    # timedelta timeout).
    "datetime",
    "pathlib",
    "urllib.parse",
    "uuid",
]


def test_the_facade_exports_everything_core_exports() -> None:
    missing = sorted(set(helikon.core.__all__) - set(helikon.__all__))
    assert missing == []


def test_every_facade_name_resolves_to_the_core_object() -> None:
    for name in helikon.__all__:
        value = getattr(helikon, name)
        if name in helikon.core.__all__:
            assert value is getattr(helikon.core, name), name


def test_every_core_name_resolves() -> None:
    for name in helikon.core.__all__:
        assert hasattr(helikon.core, name), name


@pytest.mark.parametrize("module", [helikon, helikon.core])
def test_all_has_no_duplicates(module: object) -> None:
    names: list[str] = module.__all__  # type: ignore[attr-defined]
    assert [name for name, count in Counter(names).items() if count > 1] == []


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from helikon import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(helikon.__all__)


def test_public_classes_and_functions_of_the_facade_are_listed() -> None:
    public = {
        name
        for name, value in vars(helikon).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "").startswith("helikon.")
        and (isinstance(value, type) or callable(value))
    }
    assert sorted(public - set(helikon.__all__)) == []


def test_the_facade_names_the_main_entry_points() -> None:
    for name in ("LlmAgent", "RunContext", "tool", "MemorySession", "OutputType", "HelikonError", "project"):
        assert name in helikon.__all__


@pytest.mark.parametrize("package", ["helikon.testing", "helikon.runtime"])
def test_subpackage_all_resolves(package: str) -> None:
    module = importlib.import_module(package)
    names: list[str] = module.__all__
    assert names, f"{package} exports nothing"
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(module, name), f"{package}.{name}"


def test_subpackages_export_their_documented_names() -> None:
    import helikon.runtime
    import helikon.testing

    assert {"MockModel", "FunctionModel", "ScriptFile", "Delay", "text_turn", "tool_call_turn"} <= set(
        helikon.testing.__all__
    )
    assert {"AsyncioRunner", "RetryingModel", "RetryPolicy"} <= set(helikon.runtime.__all__)


@pytest.mark.parametrize(
    "statement",
    [
        "import helikon",
        # what a test imports to build an agent on a scripted model (the benchmark's statement)
        "import helikon; import helikon.testing",
    ],
)
def test_import_helikon_pulls_in_no_optional_dependency(statement: str) -> None:
    script = (
        "import json, sys\n"
        f"{statement}\n"
        f"heavy = {HEAVY_MODULES!r}\n"
        "loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "print(json.dumps(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_the_import_check_would_notice_a_heavy_module() -> None:
    # the same probe, after importing pydantic on purpose, must see it
    script = (
        "import json, sys\n"
        "import helikon, pydantic\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'pydantic')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["pydantic"]


def test_version_matches_the_distribution() -> None:
    assert helikon.__version__ == importlib.metadata.version("paigasus-helikon")
    assert "__version__" in helikon.__all__
