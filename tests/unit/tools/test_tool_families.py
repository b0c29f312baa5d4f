"""`helikon.tools` is its families' faces: each family exports its names, the facade exactly all of them.

(That each `__all__` is sorted is ruff's RUF022.)
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import helikon.tools

FAMILIES = [
    "helikon.tools.files",
    "helikon.tools.execution",
    "helikon.tools.execution.os_sandbox",
    "helikon.tools.execution.forkd",
    "helikon.tools.egress",
    "helikon.tools.web",
]


@pytest.mark.parametrize("name", [*FAMILIES, "helikon.tools"])
def test_each_name_a_face_lists_is_the_facades_object(name: str) -> None:
    module = importlib.import_module(name)
    for exported in module.__all__:
        assert getattr(module, exported) is getattr(helikon.tools, exported), f"{name}.{exported}"


def test_the_facade_exports_exactly_the_families_names() -> None:
    names = {name for family in FAMILIES for name in importlib.import_module(family).__all__}
    assert set(helikon.tools.__all__) == names


def test_importing_the_tools_or_a_family_loads_no_web_or_microvm_module() -> None:
    code = (
        "import sys\n"
        "import helikon.tools, helikon.tools.execution, helikon.tools.web\n"
        "loaded = [m for m in sys.modules if m.startswith(('httpx', 'httpcore', 'trafilatura'))]\n"
        "lazy = ('helikon.tools.web.', 'helikon.tools.execution.forkd')\n"
        "loaded += [m for m in sys.modules if m.startswith(lazy)]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
