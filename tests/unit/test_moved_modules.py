"""Old paths (flat `helikon.core.*` and `helikon.tools.*`, a renamed module) import as the modules now."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import helikon
from helikon.core._internal.moved import MOVED as CORE_MOVED
from helikon.core._internal.moved import MovedModules
from helikon.sessions._moved import MOVED as SESSIONS_MOVED
from helikon.tools._moved import MOVED as TOOLS_MOVED

SRC = Path(helikon.__file__).parent.parent
MOVED = {**CORE_MOVED, **TOOLS_MOVED, **SESSIONS_MOVED}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_imports_the_module_it_is_now(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_no_old_path_is_still_a_file(old: str) -> None:
    path = SRC.joinpath(*old.split("."))
    assert not path.with_suffix(".py").exists(), f"{old} moved to {MOVED[old]}: delete the old file"
    assert not path.is_dir(), f"{old} moved to {MOVED[old]}: a package of that name hides the move"


def test_old_paths_work_in_a_fresh_interpreter_in_every_import_form() -> None:
    code = (
        "from helikon.core import codec\n"
        "from helikon.core.permissions import authorize\n"
        "import helikon.core.shell as shell\n"
        "from helikon.core._shell_lex import *\n"
        "import helikon.core.session.codec as now, helikon.core.governance.shell as shell_now\n"
        "import helikon.core.governance.permissions as p\n"
        "assert codec is now and shell is shell_now and authorize is p.authorize\n"
        "from helikon.sessions.lazy import LazySession, open_session\n"
        "import helikon.sessions\n"
        "assert open_session is helikon.sessions.open_session\n"
        "assert LazySession is helikon.sessions.LazySession\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_old_tool_paths_work_in_a_fresh_interpreter_in_every_import_form() -> None:
    code = (
        "from helikon.tools import bash\n"
        "from helikon.tools.os_sandbox import OsSandboxBackend\n"
        "import helikon.tools.web_fetch as web_fetch\n"
        "from helikon.tools.egress_policy import *\n"
        # `execution` was a module and is the family's package now, with every name the module had.
        "from helikon.tools.execution import DEFAULT_ENV_ALLOWLIST, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT\n"
        "from helikon.tools.execution import ExecOutput, ExecRequest, ExecutionBackend, ResourceLimits\n"
        "import helikon.tools.execution.bash as bash_now, helikon.tools.web.fetch as fetch_now\n"
        "import helikon.tools.execution.os_sandbox.backend as o\n"
        "assert bash is bash_now and web_fetch is fetch_now and OsSandboxBackend is o.OsSandboxBackend\n"
        "import helikon.tools\n"
        "assert EgressPolicy is helikon.tools.EgressPolicy and ExecRequest is helikon.tools.ExecRequest\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_tables_are_one_mechanism_installed_once() -> None:
    import helikon.sessions
    import helikon.tools  # noqa: F401  (each installs its table)

    finders = [finder for finder in sys.meta_path if isinstance(finder, MovedModules)]
    tables = [CORE_MOVED, TOOLS_MOVED, SESSIONS_MOVED]
    assert sorted(id(finder.moves) for finder in finders) == sorted(map(id, tables))


@pytest.mark.parametrize(
    "name", ["helikon.core.no_such_module", "helikon.tools.no_such_module", "helikon.sessions.no_such_module"]
)
def test_an_unknown_name_is_still_an_import_error(name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)
