"""Every ```python example in the docs, the README and the public docstrings runs and passes.

Each block is executed top to bottom in a fresh module namespace, inside a plain sync
test (no running event loop), so a block that needs one calls `asyncio.run` itself. A
block that raises, or that trips a warning (warnings are errors), fails its test.

Blocks run without any provider credential in the environment. A block written as a user
writes it against a real provider (a key from the environment, the SDK's own client) is
fenced ```` ```python replay=<provider> ````: it runs with placeholder credentials and the
SDK's base-URL variable pointed at a real HTTP server on 127.0.0.1 that answers with that
provider's recorded traffic (`PROVIDER_REPLAYS`), and it must reach that server.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
import tomllib
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import helikon
from providers.cassettes import ReplayServer, load

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

_OPEN = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)(?:[ \t]+(?P<info>[^`]*?))?[ \t]*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its source and where it starts (1-based).

    `replay` is the provider named by a `replay=<provider>` after the language.
    """

    lang: str
    source: str
    line: int
    replay: str | None = None


def _replay_of(info: str | None, line: int) -> str | None:
    if not info:
        return None
    key, _, value = info.partition("=")
    if key != "replay" or value not in PROVIDER_REPLAYS:
        raise ValueError(
            f"line {line}: unknown fence option {info!r}; the one option is replay=<provider>, "
            f"one of {sorted(PROVIDER_REPLAYS)}"
        )
    return value


def fenced_blocks(text: str) -> Iterator[Block]:
    """The fenced blocks of a Markdown text, dedented, with the line of their first code line."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPEN.match(lines[index])
        if opening is None:
            index += 1
            continue
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"unclosed ``` fence opened on line {index + 1}")
        body = textwrap.dedent("\n".join(lines[start:end]))
        yield Block(opening["lang"], body + "\n", start + 1, _replay_of(opening["info"], index + 1))
        index = end + 1


def python_blocks(text: str) -> list[Block]:
    return [b for b in fenced_blocks(text) if b.lang == "python"]


# --- collection: Markdown pages ---------------------------------------------------------------


def _doc_params() -> list[object]:
    params: list[object] = []
    for path in DOC_FILES:
        relative = path.relative_to(ROOT).as_posix()
        blocks = python_blocks(path.read_text(encoding="utf-8"))
        params.extend(pytest.param(relative, b, id=f"{relative}:{b.line}") for b in blocks)
    return params


# --- collection: docstrings of the package ----------------------------------------------------


def _modules() -> Iterator[types.ModuleType]:
    # Every extra is installed for the test suite, so every module must import: an
    # ImportError here fails collection loudly rather than hiding examples.
    yield helikon
    for info in pkgutil.walk_packages(helikon.__path__, prefix="helikon."):
        yield importlib.import_module(info.name)


def _documented(module: types.ModuleType) -> Iterator[tuple[str, object]]:
    """The module and every class, function, method and property defined in it."""
    yield module.__name__, module
    for name, obj in sorted(vars(module).items()):
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            yield f"{module.__name__}.{name}", obj
            members: dict[str, Any] = dict(vars(obj))
            for attr, member in sorted(members.items()):
                target: Any = getattr(member, "__func__", member)  # unwrap static/class methods
                if isinstance(target, property) or inspect.isfunction(target):
                    yield f"{module.__name__}.{name}.{attr}", target
        elif inspect.isfunction(obj):
            yield f"{module.__name__}.{name}", obj


def _docstring_params() -> list[object]:
    params: list[object] = []
    seen: set[int] = set()
    for module in _modules():
        for qualname, obj in _documented(module):
            doc = obj.__doc__ if isinstance(obj.__doc__, str) else None
            if not doc or id(obj) in seen:
                continue
            seen.add(id(obj))
            blocks = python_blocks(inspect.cleandoc(doc))
            for number, block in enumerate(blocks, 1):
                suffix = f"#{number}" if len(blocks) > 1 else ""
                params.append(pytest.param(qualname, block, id=qualname + suffix))
    return params


# --- provider replays ------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderReplay:
    """How a `replay=<provider>` block reaches recorded traffic instead of the provider."""

    cassettes: tuple[str, ...]
    """Recordings the server answers with (relative to the shared cassettes folder)."""
    credentials: dict[str, str]
    """Placeholder values for the variables the block's code reads its credentials from."""
    base_url: str
    """The SDK's variable for its endpoint; set to the server's URL plus `path`."""
    path: str = ""
    extra: dict[str, str] = field(default_factory=lambda: {})


PROVIDER_REPLAYS: dict[str, ProviderReplay] = {
    "openai": ProviderReplay(
        (
            "openai_chat/test_openai_moderation_stream.yaml",
            "openai_responses/test_responses_basic_streaming.yaml",
        ),
        {"OPENAI_API_KEY": "sk-replayed"},
        "OPENAI_BASE_URL",
        "/v1",
    ),
    "anthropic": ProviderReplay(
        ("anthropic/test_stream_events_thinking.yaml",),
        {"ANTHROPIC_API_KEY": "sk-ant-replayed"},
        "ANTHROPIC_BASE_URL",
    ),
    "gemini": ProviderReplay(
        ("gemini/test_google_model_stream.yaml",),
        {"GEMINI_API_KEY": "replayed", "GOOGLE_CLOUD_PROJECT": "replayed-project"},
        "GOOGLE_GEMINI_BASE_URL",
    ),
    "bedrock": ProviderReplay(
        ("bedrock/test_bedrock_model_stream.yaml",),
        {"AWS_ACCESS_KEY_ID": "replayed", "AWS_SECRET_ACCESS_KEY": "replayed", "AWS_REGION": "us-east-1"},
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    ),
}

# Whatever the developer's shell holds, a block sees none of these: the docs are run as a
# newcomer without keys would run them, and no real credential ever reaches a test server.
_PROVIDER_ENVIRONMENT = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OLLAMA_BASE_URL",
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
)  # fmt: skip


def _without_provider_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in _PROVIDER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    # No ~/.aws profile either: the credential chain finds only what a block is given.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))


def check_doc_block(
    block: Block, filename: str, line: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Run `block` as a newcomer would: no credentials; a `replay=` block against its recordings."""
    _without_provider_credentials(monkeypatch, tmp_path)
    if block.replay is None:
        check_block_runs(block, filename, line)
        return
    replay = PROVIDER_REPLAYS[block.replay]
    interactions = [i for cassette in replay.cassettes for i in load(cassette)]
    with ReplayServer(interactions) as server:
        for name, value in replay.credentials.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv(replay.base_url, server.url + replay.path)
        with warnings.catch_warnings():
            # google-genai subclasses aiohttp's ClientSession whenever aiohttp is installed (the
            # bedrock extra brings it), and aiohttp warns about that: the SDK's, not the block's.
            warnings.filterwarnings("ignore", "Inheritance class AiohttpClientSession", DeprecationWarning)
            check_block_runs(block, filename, line)
    assert server.received, f"{filename}:{line}: a replay={block.replay} block made no call to the provider"
    assert not server.unanswered, f"{filename}:{line}: no recording answers {server.unanswered}"


# --- execution --------------------------------------------------------------------------------


def check_block_runs(block: Block, filename: str, line: int) -> None:
    """Execute `block` in a fresh module, so classes, pydantic models and dataclasses work."""
    name = f"_helikon_doc_example_{abs(hash((filename, line)))}"
    module = types.ModuleType(name)
    module.__file__ = filename
    # Pad with blank lines so a traceback points at the right line of the source file.
    code = compile("\n" * (line - 1) + block.source, filename, "exec")
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    finally:
        del sys.modules[name]


@pytest.mark.parametrize(("path", "block"), _doc_params())
def test_docs_example_runs(path: str, block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # an example that writes a file (`sqlite:///chat.db`) writes it here
    check_doc_block(block, str(ROOT / path), block.line, monkeypatch, tmp_path)


@pytest.mark.parametrize(("qualname", "block"), _docstring_params())
def test_docstring_example_runs(
    qualname: str, block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    check_doc_block(block, f"<docstring of {qualname}>", 1, monkeypatch, tmp_path)


# --- the collectors themselves ----------------------------------------------------------------


def test_every_docs_page_has_a_python_example() -> None:
    pages = [p for p in DOC_FILES if p.parent.name == "docs"]
    assert pages, "docs/ has no Markdown pages"
    missing = [p.name for p in pages if not python_blocks(p.read_text(encoding="utf-8"))]
    assert not missing, f"pages without a ```python example: {missing}"


def test_the_readme_links_only_existing_pages() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = re.findall(r"\]\((docs/[^)#]+\.md)\)", text)
    assert linked
    assert [link for link in linked if not (ROOT / link).exists()] == []


def _section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def test_every_docs_page_is_listed_in_the_readme_and_the_index() -> None:
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    readme = _section((ROOT / "README.md").read_text(encoding="utf-8"), "## Documentation")
    in_readme = set(re.findall(r"\]\(docs/([^)#]+\.md)(?:#[^)]*)?\)", readme))
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    in_index = set(re.findall(r"\]\(([^)#/]+\.md)(?:#[^)]*)?\)", index))
    assert sorted(pages - in_readme) == [], "pages missing from the README's Documentation list"
    assert sorted(pages - in_index - {"index.md"}) == [], "pages missing from docs/index.md"


def test_only_python_blocks_are_collected() -> None:
    text = "```bash\nexit 1\n```\n\n  ```python\n  x = 1\n  ```\n```text\nnot code\n```\n"
    assert python_blocks(text) == [Block("python", "x = 1\n", 6)]


def test_a_fence_names_the_provider_it_replays() -> None:
    text = "```python replay=anthropic\nx = 1\n```\n"
    assert python_blocks(text) == [Block("python", "x = 1\n", 2, "anthropic")]
    with pytest.raises(ValueError, match="line 1: unknown fence option 'replay=acme'"):
        python_blocks("```python replay=acme\nx = 1\n```\n")


def test_a_failing_block_fails() -> None:
    with pytest.raises(AssertionError):
        check_block_runs(Block("python", "assert 1 == 2\n", 1), "<test>", 1)


def test_blocks_run_without_the_developers_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-real-key")
    monkeypatch.setenv("AWS_PROFILE", "prod")
    source = "import os\nassert not {'OPENAI_API_KEY', 'AWS_PROFILE'} & set(os.environ)\n"
    check_doc_block(Block("python", source, 1), "<test>", 1, monkeypatch, tmp_path)


def test_a_replay_block_must_call_the_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "from helikon.providers.openai import OpenAIModel\n\nOpenAIModel.chat('gpt-5')\n"
    with pytest.raises(AssertionError, match="a replay=openai block made no call to the provider"):
        check_doc_block(Block("python", source, 1, "openai"), "<test>", 1, monkeypatch, tmp_path)


def test_a_replay_block_runs_against_the_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "import os\n"
        "from helikon import LlmAgent\n"
        "assert os.environ['OPENAI_API_KEY'] == 'sk-replayed'\n"
        "agent = LlmAgent(name='geo', model='openai:gpt-5')\n"
        "assert agent.run_sync('What is the capital of France?').final_output == 'Paris.'\n"
    )
    check_doc_block(Block("python", source, 1, "openai"), "<test>", 1, monkeypatch, tmp_path)


_PRIVATE_IMPORT = re.compile(r"^\s*(?:from|import)\s+helikon(?:\.\w+)*\._\w+", re.MULTILINE)


@pytest.mark.parametrize(("path", "block"), _doc_params())
def test_docs_examples_import_only_public_modules(path: str, block: Block) -> None:
    # A page teaches what users may rely on: nothing from a `_private` module.
    assert _PRIVATE_IMPORT.search(block.source) is None, f"{path}:{block.line}"


# --- what the pages say -----------------------------------------------------------------------


def _docstrings() -> Iterator[tuple[str, str]]:
    seen: set[int] = set()
    for module in _modules():
        for qualname, obj in _documented(module):
            doc = obj.__doc__ if isinstance(obj.__doc__, str) else None
            if doc and id(obj) not in seen:
                seen.add(id(obj))
                yield qualname, inspect.cleandoc(doc)


_HELIKON_CODE = re.compile(r"^\s*(?:from\s+helikon\b[\w.]*\s+import\s|import\s+helikon\b)", re.MULTILINE)
# A pytest module for users' own suites: pytest runs it there, it cannot run as a script.
_NOT_A_SCRIPT = {"helikon.testing.session_conformance"}


def test_no_helikon_code_hides_in_an_untested_block() -> None:
    texts = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in DOC_FILES]
    texts += [(name, doc) for name, doc in _docstrings() if name not in _NOT_A_SCRIPT]
    untested = [
        f"{where}:{block.line} ({block.lang or 'no language'})"
        for where, text in texts
        for block in fenced_blocks(text)
        if block.lang != "python" and _HELIKON_CODE.search(block.source)
    ]
    assert untested == [], "code a reader copies must be a ```python block, which the tests run"


_THE_BOOK = re.compile(r"\bthe book\b|\bbook's\b|\bbook-style\b", re.IGNORECASE)


def test_the_pages_speak_of_helikon_not_of_the_book() -> None:
    # "The book" was the spec helikon was built from; a reader has never seen it.
    pages = [*DOC_FILES, ROOT / "CHANGELOG.md"]
    said = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if _THE_BOOK.search(line)
    ]
    assert said == []


def _strings(path: Path) -> Iterator[ast.Constant]:
    """Every string literal of a module: its docstrings, messages and f-string pieces."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node


def test_docstrings_and_messages_speak_of_helikon_not_of_the_book() -> None:
    paths = sorted((ROOT / "src" / "helikon").rglob("*.py"))
    said = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in paths
        for node in _strings(path)
        if _THE_BOOK.search(str(node.value))
    ]
    assert said == []


_FROM_THE_INDEX = re.compile(r"(?:pip install|uv add|uv pip install)\s+['\"]?paigasus-helikon\b")


def test_no_page_installs_from_the_package_index() -> None:
    # paigasus-helikon is not on PyPI: a page shows the checkout or a built wheel.
    said = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in DOC_FILES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if _FROM_THE_INDEX.search(line)
    ]
    assert said == []


def test_the_wheel_getting_started_installs_is_the_one_uv_build_writes() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    named = set(re.findall(r"paigasus_helikon-[^\s'\"\]\[]+\.whl", text))
    assert named == {f"paigasus_helikon-{version}-py3-none-any.whl"}
