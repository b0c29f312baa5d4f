"""The flat `helikon.core.*` paths of before the re-housing still import, as the moved modules themselves."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import helikon.core
from helikon.core._moved import MOVED

CORE = Path(helikon.core.__file__).parent


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_imports_the_module_it_is_now(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_no_old_path_is_still_a_file(old: str) -> None:
    leaf = old.removeprefix("helikon.core.")
    assert not (CORE / f"{leaf}.py").exists(), f"{old} moved to {MOVED[old]}: delete the old file"


def test_old_paths_work_in_a_fresh_interpreter_in_every_import_form() -> None:
    code = (
        "from helikon.core import codec\n"
        "from helikon.core.permissions import authorize\n"
        "import helikon.core.shell as shell\n"
        "from helikon.core._shell_lex import *\n"
        "import helikon.core.session.codec as now, helikon.core.governance.shell as shell_now\n"
        "import helikon.core.governance.permissions as p\n"
        "assert codec is now and shell is shell_now and authorize is p.authorize\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_unknown_name_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("helikon.core.no_such_module")
