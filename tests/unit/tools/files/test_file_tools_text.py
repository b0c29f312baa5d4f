"""What a model copies from Read is what Edit matches, and the file keeps its own form on write.

Read shows a file's lines without their line endings and without a UTF-8 byte-order mark; a
model copies `old_string` from that. Edit must match it whatever the file's line endings, and
Edit and Write must keep the file's BOM and line endings when they write it back. Glob's and
Grep's patterns follow the path rules of the other tools: relative, and beneath the directory
searched.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from file_tool_helpers import call, meta, text

from helikon import ToolError
from helikon.core.exceptions import Denied
from helikon.tools import EditTool, GlobTool, GrepTool, ReadTool, Sandbox, WriteTool

BOM = "\ufeff".encode()

# --- line endings ---------------------------------------------------------------------------


def test_edit_matches_lines_copied_from_read_in_a_crlf_file(root: Path, sandbox: Sandbox) -> None:
    (root / "app.py").write_bytes(b"def f():\r\n    return 1\r\n\r\ndef g():\r\n    return 2\r\n")
    shown = text(call(ReadTool(sandbox), {"file_path": "app.py", "offset": 4}))
    copied = "".join(line.split("\t", 1)[1] + "\n" for line in shown.splitlines())
    assert copied == "def g():\n    return 2\n"  # what the model sees: no carriage returns
    out = call(
        EditTool(sandbox),
        {"file_path": "app.py", "old_string": copied, "new_string": "def g():\n    x = 2\n    return x\n"},
    )
    # The file keeps its CRLF line endings, the new lines included.
    assert (root / "app.py").read_bytes() == (
        b"def f():\r\n    return 1\r\n\r\ndef g():\r\n    x = 2\r\n    return x\r\n"
    )
    assert (meta(out)["start_line"], meta(out)["end_line"]) == (4, 7)
    assert meta(out)["bytes"] == len((root / "app.py").read_bytes())


def test_edit_matches_crlf_text_in_an_lf_file_and_writes_lf(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"one\ntwo\nthree\n")
    call(EditTool(sandbox), {"file_path": "f.txt", "old_string": "one\r\ntwo", "new_string": "1\r\n2"})
    assert (root / "f.txt").read_bytes() == b"1\n2\nthree\n"


def test_edit_in_a_mixed_file_leaves_the_other_lines_as_they_were(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"a\r\nb\nc\r\nd\r\ne\n")
    call(EditTool(sandbox), {"file_path": "f.txt", "old_string": "b\nc\nd", "new_string": "B\nC"})
    # Most lines end in CRLF, so the new lines do; the untouched ones keep theirs.
    assert (root / "f.txt").read_bytes() == b"a\r\nB\r\nC\r\ne\n"


def test_edit_replace_all_in_a_crlf_file(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"x = 1\r\ny = 2\r\nx = 1\r\ny = 2\r\n")
    out = call(
        EditTool(sandbox),
        {"file_path": "f.txt", "old_string": "x = 1\ny = 2", "new_string": "z = 3", "replace_all": True},
    )
    assert (root / "f.txt").read_bytes() == b"z = 3\r\nz = 3\r\n"
    assert meta(out)["replacements"] == 2


def test_edit_of_a_line_ending_only_is_nothing_to_change(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"a\r\nb\r\n")
    with pytest.raises(ToolError, match="the same; there is nothing to change"):
        call(EditTool(sandbox), {"file_path": "f.txt", "old_string": "a\r\n", "new_string": "a\n"})


def test_write_over_a_crlf_file_keeps_its_line_endings(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"old\r\nlines\r\n")
    out = call(WriteTool(sandbox), {"file_path": "f.txt", "content": "new\nlines\nhere\n"})
    assert (root / "f.txt").read_bytes() == b"new\r\nlines\r\nhere\r\n"
    assert meta(out)["bytes"] == 18 and meta(out)["end_line"] == 3
    call(WriteTool(sandbox), {"file_path": "g.txt", "content": "a new file\r\nas given\n"})
    assert (root / "g.txt").read_bytes() == b"a new file\r\nas given\n"


# --- overlapping matches --------------------------------------------------------------------


def test_edit_counts_overlapping_matches_as_more_than_one(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("aaa\n")
    edit = EditTool(sandbox)
    with pytest.raises(ToolError, match=r"old_string occurs more than once in 'f.txt' \(the places overlap"):
        call(edit, {"file_path": "f.txt", "old_string": "aa", "new_string": "b"})
    assert (root / "f.txt").read_text() == "aaa\n"
    out = call(edit, {"file_path": "f.txt", "old_string": "aa", "new_string": "b", "replace_all": True})
    assert (root / "f.txt").read_text() == "ba\n"  # left to right, as str.replace does
    assert meta(out)["replacements"] == 1
    (root / "g.txt").write_text("ababa\n")
    with pytest.raises(ToolError, match="occurs more than once"):
        call(edit, {"file_path": "g.txt", "old_string": "aba", "new_string": "x"})


# --- the byte-order mark --------------------------------------------------------------------


def test_read_does_not_show_a_bom(root: Path, sandbox: Sandbox) -> None:
    (root / "f.py").write_bytes(BOM + b"x = 1\ny = 2\n")
    out = call(ReadTool(sandbox), {"file_path": "f.py"})
    assert text(out) == "     1\tx = 1\n     2\ty = 2"
    assert meta(out)["bytes"] == 15  # the file's size, the BOM included
    (root / "only.txt").write_bytes(BOM)
    assert text(call(ReadTool(sandbox), {"file_path": "only.txt"})) == "(only.txt is empty)"


def test_edit_keeps_the_bom_and_matches_the_first_line(root: Path, sandbox: Sandbox) -> None:
    (root / "f.py").write_bytes(BOM + b"x = 1\r\ny = 2\r\n")
    out = call(EditTool(sandbox), {"file_path": "f.py", "old_string": "x = 1\ny", "new_string": "x = 0\ny"})
    assert (root / "f.py").read_bytes() == BOM + b"x = 0\r\ny = 2\r\n"
    assert meta(out)["start_line"] == 1


def test_write_over_a_bom_file_keeps_the_bom(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(BOM + b"old\n")
    call(WriteTool(sandbox), {"file_path": "f.txt", "content": "new\n"})
    assert (root / "f.txt").read_bytes() == BOM + b"new\n"
    call(WriteTool(sandbox), {"file_path": "f.txt", "content": "\ufeffnewer\n"})  # not a second one
    assert (root / "f.txt").read_bytes() == BOM + b"newer\n"
    call(WriteTool(sandbox), {"file_path": "plain.txt", "content": "no bom\n"})
    assert (root / "plain.txt").read_bytes() == b"no bom\n"
    call(WriteTool(sandbox), {"file_path": "plain.txt", "content": "\ufeffa bom, as given\n"})
    assert (root / "plain.txt").read_bytes() == BOM + b"a bom, as given\n"


def test_grep_sees_the_first_line_without_the_bom(root: Path, sandbox: Sandbox) -> None:
    (root / "f.py").write_bytes(BOM + b"import os\n")
    assert text(call(GrepTool(sandbox), {"pattern": "^import"})) == "f.py:1:import os"


# --- patterns follow the path rules ---------------------------------------------------------


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "top.py").write_text("y = 2\n")
    return root


def test_glob_refuses_an_absolute_pattern_as_read_refuses_an_absolute_path(
    tree: Path, sandbox: Sandbox
) -> None:
    for pattern in (f"{tree}/*.py", f"{tree}/**/*.py", "/etc/*"):
        with pytest.raises(Denied, match=r"is absolute; give a pattern relative to the directory searched"):
            call(GlobTool(sandbox), {"pattern": pattern})
    with pytest.raises(Denied, match=r"is absolute; give a path relative to the sandbox root"):
        call(ReadTool(sandbox), {"file_path": f"{tree}/top.py"})


def test_glob_refuses_a_pattern_that_goes_up(tree: Path, sandbox: Sandbox) -> None:
    for pattern, path in (("../*", "."), ("../*.py", "src"), ("src/../*.py", "."), ("**/../*", ".")):
        with pytest.raises(Denied, match=r"has a '\.\.' part; a pattern names files beneath"):
            call(GlobTool(sandbox), {"pattern": pattern, "path": path})
    # To search the parent, name it as the path: the path rules decide, as for Read.
    assert text(call(GlobTool(sandbox), {"pattern": "*.py", "path": "src/.."})) == "src/../top.py"
    with pytest.raises(Denied, match="resolves outside the sandbox root"):
        call(GlobTool(sandbox), {"pattern": "*", "path": ".."})


def test_glob_drops_dot_parts_of_a_pattern(tree: Path, sandbox: Sandbox) -> None:
    assert text(call(GlobTool(sandbox), {"pattern": "././src/./*.py"})) == "src/app.py"


def test_grep_include_follows_the_same_rules(tree: Path, sandbox: Sandbox) -> None:
    with pytest.raises(Denied, match="is absolute"):
        call(GrepTool(sandbox), {"pattern": "x", "include": f"{tree}/src/*.py"})
    with pytest.raises(Denied, match=r"has a '\.\.' part"):
        call(GrepTool(sandbox), {"pattern": "x", "include": "../*.py"})
