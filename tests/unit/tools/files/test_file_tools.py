"""The confined file tools do what coding agents' users expect: Read, Write, Edit, Glob, Grep."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from file_tool_helpers import call, meta, text

from helikon import LlmAgent, RunContext, ToolEffect, ToolError, UserError
from helikon.core.exceptions import Denied
from helikon.core.items import ToolResult
from helikon.core.tools import Tool
from helikon.testing import MockModel, text_turn, tool_call_turn
from helikon.tools import EditTool, GlobTool, GrepTool, ReadTool, Sandbox, WriteTool
from helikon.tools.files import _confine, search

# --- the tools as Tools ---------------------------------------------------------------------


def test_each_tool_is_a_tool_with_its_name_effect_and_the_rules(sandbox: Sandbox) -> None:
    tools: list[Any] = [
        ReadTool(sandbox),
        WriteTool(sandbox),
        EditTool(sandbox),
        GlobTool(sandbox),
        GrepTool(sandbox),
    ]
    assert [t.name for t in tools] == ["Read", "Write", "Edit", "Glob", "Grep"]
    assert [t.effect for t in tools] == [
        ToolEffect.READ_ONLY,
        ToolEffect.WRITE,
        ToolEffect.WRITE,
        ToolEffect.READ_ONLY,
        ToolEffect.READ_ONLY,
    ]
    for t in tools:
        assert isinstance(t, Tool)
        assert str(sandbox.root) in t.description and "absolute paths" in t.description
        assert t.schema["additionalProperties"] is False
        assert t.output_schema is None
    assert ReadTool(sandbox).schema["required"] == ["file_path"]
    properties = EditTool(sandbox).schema["properties"]
    assert isinstance(properties, dict)
    assert set(properties) == {
        "file_path",
        "old_string",
        "new_string",
        "replace_all",
    }


def test_a_tool_needs_a_sandbox(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"give a helikon.tools.Sandbox, e.g. Sandbox.open\('.'\)"):
        ReadTool(str(tmp_path))  # type: ignore[arg-type]


def test_bad_arguments_are_invalid_args(sandbox: Sandbox) -> None:
    with pytest.raises(ToolError.InvalidArgs, match="offset"):
        call(ReadTool(sandbox), {"file_path": "a", "offset": 0})
    with pytest.raises(ToolError.InvalidArgs, match="content"):
        call(WriteTool(sandbox), {"file_path": "a"})


# --- Read -----------------------------------------------------------------------------------


def test_read_shows_numbered_lines_with_offset_and_limit(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = call(ReadTool(sandbox), {"file_path": "f.txt", "offset": 3, "limit": 2})
    assert text(out).splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "more follow: call Read with offset=5" in text(out)
    assert meta(out) == {
        "path": "f.txt",
        "bytes": 71,
        "start_line": 3,
        "end_line": 4,
        "total_lines": None,
        "truncated": True,
    }
    whole = call(ReadTool(sandbox), {"file_path": "f.txt"})
    assert len(text(whole).splitlines()) == 10
    assert meta(whole)["total_lines"] == 10 and meta(whole)["truncated"] is False


def test_read_handles_a_last_line_without_newline_crlf_and_long_lines(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_bytes(b"a\r\n" + b"x" * 3000 + b"\nlast")
    out = call(ReadTool(sandbox), {"file_path": "f.txt"})
    lines = text(out).splitlines()
    assert lines[0] == "     1\ta"
    assert lines[1].endswith(" [line cut]") and len(lines[1]) < 2100
    assert lines[2] == "     3\tlast"
    assert meta(out)["total_lines"] == 3


def test_read_of_the_first_lines_of_a_large_file_reads_a_range_only(root: Path, sandbox: Sandbox) -> None:
    (root / "big.txt").write_bytes((b"x" * 99 + b"\n") * 100_000)  # 10 MB, 100k lines

    def read_bytes() -> int:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
        raise AssertionError("no rchar")

    before = read_bytes()
    out = ReadTool(sandbox).run(file_path="big.txt", limit=5)
    assert read_bytes() - before < 1_000_000  # a few 64 KiB chunks, not 10 MB
    assert meta(out)["end_line"] == 5 and meta(out)["bytes"] == 10_000_000
    tail = ReadTool(sandbox).run(file_path="big.txt", offset=99_999)
    assert meta(tail) | {"bytes": 0} == {
        "path": "big.txt",
        "bytes": 0,
        "start_line": 99_999,
        "end_line": 100_000,
        "total_lines": 100_000,
        "truncated": False,
    }


def test_read_of_one_huge_line_keeps_only_what_it_shows(root: Path, sandbox: Sandbox) -> None:
    (root / "min.js").write_bytes(b"x" * 5_000_000 + b"\nnext\n")
    out = ReadTool(sandbox).run(file_path="min.js")
    first, second = text(out).splitlines()
    assert first == "     1\t" + "x" * 2000 + " [line cut]"
    assert second == "     2\tnext"


def test_read_refuses_binary_files_empty_files_and_offsets_past_the_end(root: Path, sandbox: Sandbox) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    with pytest.raises(ToolError, match=r"'img.png' is a binary file .*Read shows text files only"):
        call(ReadTool(sandbox), {"file_path": "img.png"})
    (root / "empty").write_text("")
    out = call(ReadTool(sandbox), {"file_path": "empty"})
    assert text(out) == "(empty is empty)" and meta(out)["total_lines"] == 0
    (root / "two").write_text("a\nb\n")
    with pytest.raises(ToolError, match="has 2 lines; offset=5 is past the end"):
        call(ReadTool(sandbox), {"file_path": "two", "offset": 5})


def test_read_of_a_missing_file_or_a_directory_says_what_it_is(root: Path, sandbox: Sandbox) -> None:
    with pytest.raises(ToolError, match=r"'nope.txt': no such file in the sandbox"):
        call(ReadTool(sandbox), {"file_path": "nope.txt"})
    (root / "d").mkdir()
    with pytest.raises(Denied, match="is a directory; Read works on files"):
        call(ReadTool(sandbox), {"file_path": "d"})
    with pytest.raises(ToolError, match="the path is empty"):
        call(ReadTool(sandbox), {"file_path": ""})


def test_read_follows_a_symlink_inside_the_root_where_openat2_checks_it(root: Path, sandbox: Sandbox) -> None:
    (root / "real.txt").write_text("hello\n")
    (root / "alias.txt").symlink_to("real.txt")
    assert text(call(ReadTool(sandbox), {"file_path": "alias.txt"})) == "     1\thello"


def test_without_openat2_reads_refuse_every_symlink(
    root: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_openat2(dirfd: int, path: bytes, flags: int, resolve: int) -> int:
        raise OSError(errno.ENOSYS, "forced")

    monkeypatch.setattr(_confine, "sys_openat2", no_openat2)
    (root / "real.txt").write_text("hello\n")
    (root / "alias.txt").symlink_to("real.txt")
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("in sub\n")
    assert text(call(ReadTool(sandbox), {"file_path": "sub/../real.txt"})) == "     1\thello"
    assert text(call(ReadTool(sandbox), {"file_path": "./sub//f.txt"})) == "     1\tin sub"
    with pytest.raises(Denied, match="symbolic link"):
        call(ReadTool(sandbox), {"file_path": "alias.txt"})


# --- Write ----------------------------------------------------------------------------------


def test_write_creates_parents_and_overwrites_keeping_the_mode(root: Path, sandbox: Sandbox) -> None:
    out = call(WriteTool(sandbox), {"file_path": "a/b/c.sh", "content": "echo hi\n"})
    assert (root / "a" / "b" / "c.sh").read_text() == "echo hi\n"
    assert text(out) == "Created a/b/c.sh (8 bytes)"
    assert meta(out) == {
        "path": "a/b/c.sh",
        "start_line": 1,
        "end_line": 1,
        "bytes": 8,
        "created": True,
        "truncated": False,
    }
    os.chmod(root / "a" / "b" / "c.sh", 0o750)
    again = call(WriteTool(sandbox), {"file_path": "a/b/c.sh", "content": "échō\n"})
    assert (root / "a" / "b" / "c.sh").read_text() == "échō\n"
    assert stat.S_IMODE((root / "a" / "b" / "c.sh").stat().st_mode) == 0o750
    assert meta(again)["created"] is False and meta(again)["bytes"] == len("échō\n".encode())
    lines = call(WriteTool(sandbox), {"file_path": "two.txt", "content": "one\ntwo"})  # no last newline
    assert (meta(lines)["start_line"], meta(lines)["end_line"]) == (1, 2)
    empty = call(WriteTool(sandbox), {"file_path": "empty.txt", "content": ""})
    assert (meta(empty)["start_line"], meta(empty)["end_line"], meta(empty)["bytes"]) == (0, 0, 0)
    assert sorted(os.listdir(root / "a" / "b")) == ["c.sh"]  # no temporary file left behind


def test_write_is_atomic_a_reader_sees_old_or_new(root: Path, sandbox: Sandbox) -> None:
    (root / "f").write_text("old")
    before = os.stat(root / "f").st_ino
    held = open(root / "f")  # noqa: SIM115 - the old inode stays readable whole
    try:
        call(WriteTool(sandbox), {"file_path": "f", "content": "new"})
        assert held.read() == "old"
    finally:
        held.close()
    assert (root / "f").read_text() == "new" and os.stat(root / "f").st_ino != before


def test_write_refuses_a_symlink_or_directory_at_the_name(root: Path, sandbox: Sandbox) -> None:
    (root / "t.txt").write_text("target")
    (root / "alias").symlink_to("t.txt")
    with pytest.raises(Denied, match="symbolic link"):
        call(WriteTool(sandbox), {"file_path": "alias", "content": "x"})
    (root / "d").mkdir()
    with pytest.raises(Denied, match="is a directory"):
        call(WriteTool(sandbox), {"file_path": "d", "content": "x"})
    with pytest.raises(ToolError, match="names a directory; give a file path"):
        call(WriteTool(sandbox), {"file_path": "d/..", "content": "x"})
    (root / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        call(WriteTool(sandbox), {"file_path": "file/inner.txt", "content": "x"})
    assert (root / "t.txt").read_text() == "target"


# --- Edit -----------------------------------------------------------------------------------


def test_edit_replaces_a_unique_string_and_reports_the_lines(root: Path, sandbox: Sandbox) -> None:
    (root / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = call(
        EditTool(sandbox),
        {"file_path": "app.py", "old_string": "    return 2\n", "new_string": "    x = 2\n    return x\n"},
    )
    assert (root / "app.py").read_text() == "def f():\n    return 1\n\ndef g():\n    x = 2\n    return x\n"
    assert text(out) == "Edited app.py: replaced line 5"
    assert meta(out) | {"bytes": 0} == {
        "path": "app.py",
        "start_line": 5,
        "end_line": 7,
        "replacements": 1,
        "bytes": 0,
        "truncated": False,
    }


def test_edit_refuses_no_match_and_an_ambiguous_match_with_the_count(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("a = 1\na = 1\na = 1\n")
    edit = EditTool(sandbox)
    with pytest.raises(ToolError, match=r"old_string was not found in 'f.txt'; Read the file and copy"):
        call(edit, {"file_path": "f.txt", "old_string": "b = 1", "new_string": "c"})
    with pytest.raises(ToolError, match=r"old_string occurs 3 times in 'f.txt'.*replace_all=true"):
        call(edit, {"file_path": "f.txt", "old_string": "a = 1", "new_string": "a = 2"})
    assert (root / "f.txt").read_text() == "a = 1\na = 1\na = 1\n"
    out = call(
        edit, {"file_path": "f.txt", "old_string": "a = 1", "new_string": "a = 2", "replace_all": True}
    )
    assert (root / "f.txt").read_text() == "a = 2\na = 2\na = 2\n"
    assert meta(out)["replacements"] == 3 and "3 places, the first at line 1" in text(out)


def test_edit_refuses_empty_or_identical_strings_binary_and_non_utf8(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("x")
    edit = EditTool(sandbox)
    with pytest.raises(
        ToolError, match="old_string is empty; to create a file or replace it whole, use Write"
    ):
        call(edit, {"file_path": "f.txt", "old_string": "", "new_string": "y"})
    with pytest.raises(ToolError, match="the same; there is nothing to change"):
        call(edit, {"file_path": "f.txt", "old_string": "x", "new_string": "x"})
    (root / "b.bin").write_bytes(b"x\0y")
    with pytest.raises(ToolError, match="binary file"):
        call(edit, {"file_path": "b.bin", "old_string": "x", "new_string": "z"})
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolError, match="not UTF-8 text; Edit would corrupt it"):
        call(edit, {"file_path": "latin1.txt", "old_string": "caf", "new_string": "tea"})
    with pytest.raises(ToolError, match="no such file"):
        call(edit, {"file_path": "missing.txt", "old_string": "a", "new_string": "b"})
    with pytest.raises(ToolError, match="no such directory"):
        call(edit, {"file_path": "nodir/missing.txt", "old_string": "a", "new_string": "b"})


# --- Glob -----------------------------------------------------------------------------------


@pytest.fixture
def project(root: Path, tmp_path: Path) -> Path:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "outside.py").write_text("TODO outside\n")
    for rel, body in {
        "README.md": "# todo list\nTODO: docs\n",
        "src/app.py": "import os\n\n# TODO: one\nx = 1\ny = 2\n# TODO: two\n",
        "src/util/helpers.py": "def helper():\n    return 'todo'\n",
        "src/data.bin": "TODO\0binary",
        ".git/config": "TODO in git\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body.encode())
    (root / "linked").symlink_to(tmp_path / "elsewhere")
    (root / "src" / "alias.py").symlink_to("app.py")
    return root


def test_glob_matches_by_pattern_and_never_walks_symlinks_or_git(project: Path, sandbox: Sandbox) -> None:
    glob = GlobTool(sandbox)
    assert text(call(glob, {"pattern": "**/*.py"})) == "src/app.py\nsrc/util/helpers.py"
    assert text(call(glob, {"pattern": "src/*.py"})) == "src/app.py"
    assert text(call(glob, {"pattern": "*.py", "path": "src/util"})) == "src/util/helpers.py"
    assert text(call(glob, {"pattern": "*.md"})) == "README.md"
    assert text(call(glob, {"pattern": "**/[!a]*"})).splitlines() == [
        "README.md",
        "src/data.bin",
        "src/util/helpers.py",
    ]
    out = call(glob, {"pattern": "**/*.rs"})
    assert text(out) == "(no files match '**/*.rs' under '.')"
    assert meta(out) == {
        "path": ".",
        "pattern": "**/*.rs",
        "count": 0,
        "bytes": len(text(out)),
        "truncated": False,
    }
    with pytest.raises(ToolError, match="is a file; Glob searches a directory"):
        call(glob, {"pattern": "*", "path": "README.md"})


def test_glob_stops_at_its_cap_and_says_so(
    project: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MAX_GLOB_RESULTS", 2)
    out = call(GlobTool(sandbox), {"pattern": "**/*"})
    assert text(out).splitlines()[:2] == ["README.md", "src/app.py"]
    assert "the first 2 matches" in text(out) and meta(out)["truncated"] is True and meta(out)["count"] == 2


# --- Grep -----------------------------------------------------------------------------------


def test_grep_finds_lines_with_include_globs(project: Path, sandbox: Sandbox) -> None:
    grep = GrepTool(sandbox)
    out = call(grep, {"pattern": "TODO"})
    assert text(out) == (
        "README.md:2:TODO: docs\nsrc/app.py:3:# TODO: one\nsrc/app.py:6:# TODO: two\n"
        "\n(1 binary files skipped)"
    )
    assert meta(out) | {"bytes": 0} == {
        "path": ".",
        "pattern": "TODO",
        "matches": 3,
        "files": 2,
        "bytes": 0,
        "truncated": False,
    }
    assert (
        text(call(grep, {"pattern": "todo", "include": "*.py"})) == "src/util/helpers.py:2:    return 'todo'"
    )
    by_path = call(grep, {"pattern": "todo", "include": "src/**/*.py", "ignore_case": True})
    assert text(by_path).splitlines() == [
        "src/app.py:3:# TODO: one",
        "src/app.py:6:# TODO: two",
        "src/util/helpers.py:2:    return 'todo'",
    ]
    assert text(call(grep, {"pattern": "^x", "path": "src/app.py"})) == "src/app.py:4:x = 1"


def test_grep_context_lines_and_result_cap(project: Path, sandbox: Sandbox) -> None:
    grep = GrepTool(sandbox)
    out = call(grep, {"pattern": "TODO", "path": "src", "context": 1})
    assert text(out).splitlines()[:6] == [  # the two groups touch: one group, as grep prints it
        "src/app.py-2-",
        "src/app.py:3:# TODO: one",
        "src/app.py-4-x = 1",
        "src/app.py-5-y = 2",
        "src/app.py:6:# TODO: two",
        "",
    ]
    apart = call(grep, {"pattern": "import|two", "path": "src/app.py", "context": 1})
    assert text(apart).splitlines() == [
        "src/app.py:1:import os",
        "src/app.py-2-",
        "--",
        "src/app.py-5-y = 2",
        "src/app.py:6:# TODO: two",
    ]
    files = call(grep, {"pattern": "TODO", "context": 1, "include": "*.[mp][dy]"})
    assert text(files).splitlines()[:4] == [
        "README.md-1-# todo list",
        "README.md:2:TODO: docs",
        "--",
        "src/app.py-2-",
    ]
    capped = call(grep, {"pattern": "TODO", "max_results": 2})
    assert text(capped).splitlines()[:3] == ["README.md:2:TODO: docs", "src/app.py:3:# TODO: one", ""]
    assert "stopped at max_results=2 matching lines" in text(capped)
    assert meta(capped)["truncated"] is True and meta(capped)["matches"] == 2


def test_grep_skips_hard_linked_files_and_refuses_a_bad_regex(
    root: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    (root / "a.txt").write_text("needle\n")
    os.link(root / "a.txt", root / "b.txt")
    out = call(GrepTool(sandbox), {"pattern": "needle"})
    assert text(out) == "(no lines match 'needle' under '.')\n\n(2 hard-linked files skipped)"
    with pytest.raises(ToolError, match=r"pattern '\(' is not a valid regular expression"):
        call(GrepTool(sandbox), {"pattern": "("})


# --- an agent using them --------------------------------------------------------------------


def test_an_agent_writes_reads_edits_and_searches_in_its_sandbox(root: Path, sandbox: Sandbox) -> None:
    model = MockModel.with_scripts(
        [
            tool_call_turn("Write", {"file_path": "notes/todo.md", "content": "- buy milk\n- call mum\n"}),
            tool_call_turn(
                "Edit", {"file_path": "notes/todo.md", "old_string": "milk", "new_string": "bread"}
            ),
            tool_call_turn("Read", {"file_path": "notes/todo.md"}),
            tool_call_turn("Grep", {"pattern": "mum"}),
            tool_call_turn("Glob", {"pattern": "**/*.md"}),
            tool_call_turn("Read", {"file_path": "../escape.txt"}),
            text_turn("Done."),
        ]
    )
    tools: list[Tool[None]] = [
        ReadTool(sandbox),
        WriteTool(sandbox),
        EditTool(sandbox),
        GlobTool(sandbox),
        GrepTool(sandbox),
    ]
    agent = LlmAgent(name="files", model=model, tools=tools)
    result = asyncio.run(agent.run("Keep my notes", context=RunContext.ephemeral(None)).collect())
    assert result.final_output == "Done."
    assert (root / "notes" / "todo.md").read_text() == "- buy bread\n- call mum\n"
    results = [item.text for item in result.new_items if isinstance(item, ToolResult)]
    assert results[:5] == [
        "Created notes/todo.md (22 bytes)",
        "Edited notes/todo.md: replaced line 1",
        "     1\t- buy bread\n     2\t- call mum",
        "notes/todo.md:2:- call mum",
        "notes/todo.md",
    ]
    assert "resolves outside the sandbox root" in results[5] or "leads out of the sandbox root" in results[5]
