"""Read and Grep see lines exactly as a plain reading of the file does, wherever chunks and matches fall.

Read reads its file in 64 KiB chunks (counting, not decoding, the chunks before the range);
Grep searches each file's whole text for the next line that may match and then that line on
its own. These tests hold both to a plain-Python reading of the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from file_tool_helpers import call, meta, text

from helikon.tools import GrepTool, ReadTool, Sandbox
from helikon.tools.files import read


def numbered(data: bytes, offset: int, limit: int) -> list[str]:
    """What Read shows of `data`, done by hand: split at newlines, then decode, strip, cut, number."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    shown: list[str] = []
    for number, raw in enumerate(lines[offset - 1 : offset - 1 + limit], offset):
        line = raw.decode("utf-8", errors="replace").removesuffix("\r")
        if len(line) > read.MAX_LINE_CHARS:
            line = line[: read.MAX_LINE_CHARS] + " [line cut]"
        shown.append(f"{number:>6}\t{line}")
    return shown


def mixed_file() -> bytes:
    """About 300 KB: short, empty, CRLF, non-ASCII and over-long lines, some across chunk edges."""
    parts: list[bytes] = []
    for i in range(1, 6000):
        if i % 997 == 0:
            parts.append(b"long " + "é".encode() * 3000 + b"\n")  # 6 KB, 3005 characters
        elif i % 7 == 0:
            parts.append(b"\n")
        elif i % 5 == 0:
            parts.append(f"crlf {i}\r\n".encode())
        else:
            parts.append(f"line {i} {'ü' * (i % 13)} {'x' * (i % 40)}\n".encode())
    parts.append(b"the last line has no newline")
    return b"".join(parts)


def test_read_shows_every_range_as_a_plain_reading_does(root: Path, sandbox: Sandbox) -> None:
    data = mixed_file()
    (root / "f.txt").write_bytes(data)
    total = data.count(b"\n") + 1
    # The lines that hold each chunk boundary, their neighbours, and the file's ends.
    edges = [data.count(b"\n", 0, k * read.CHUNK) + 1 for k in range(1, len(data) // read.CHUNK + 1)]
    starts = sorted({1, 2, total - 1, total, *edges, *(e - 1 for e in edges), *(e + 1 for e in edges)})
    tool = ReadTool(sandbox)
    for offset in starts:
        for limit in (1, 3, 2000):
            out = tool.run(file_path="f.txt", offset=offset, limit=limit)
            expected = numbered(data, offset, limit)
            more = offset + limit - 1 < total
            assert text(out).split("\n\n(showing")[0].split("\n") == expected, (offset, limit)
            assert meta(out) == {
                "path": "f.txt",
                "bytes": len(data),
                "start_line": offset,
                "end_line": offset + len(expected) - 1,
                "total_lines": None if more else total,
                "truncated": more,
            }, (offset, limit)


def test_read_paged_to_the_end_is_the_whole_file(root: Path, sandbox: Sandbox) -> None:
    data = mixed_file()
    (root / "f.txt").write_bytes(data)
    total = data.count(b"\n") + 1
    whole = call(ReadTool(sandbox), {"file_path": "f.txt", "limit": total})
    assert text(whole).split("\n") == numbered(data, 1, total)
    assert meta(whole)["truncated"] is False and meta(whole)["total_lines"] == total
    pages: list[str] = []
    offset = 1
    while True:
        out = call(ReadTool(sandbox), {"file_path": "f.txt", "offset": offset, "limit": 777})
        pages += text(out).split("\n\n(showing")[0].split("\n")
        if not meta(out)["truncated"]:
            break
        offset = meta(out)["end_line"] + 1
    assert pages == text(whole).split("\n")


def test_read_of_a_range_that_ends_at_the_last_line_says_there_is_no_more(
    root: Path, sandbox: Sandbox
) -> None:
    (root / "nl.txt").write_text("a\nb\nc\n")
    (root / "no-nl.txt").write_text("a\nb\nc")
    for name in ("nl.txt", "no-nl.txt"):
        exact = call(ReadTool(sandbox), {"file_path": name, "offset": 2, "limit": 2})
        assert text(exact) == "     2\tb\n     3\tc"
        assert meta(exact)["truncated"] is False and meta(exact)["total_lines"] == 3
        short = call(ReadTool(sandbox), {"file_path": name, "offset": 2, "limit": 1})
        assert text(short).startswith("     2\tb\n\n(showing lines 2-2; more follow")
        assert meta(short)["truncated"] is True and meta(short)["total_lines"] is None


def grep(sandbox: Sandbox, pattern: str, **args: Any) -> str:
    return text(call(GrepTool(sandbox), {"pattern": pattern, **args}))


def test_grep_matches_within_a_line_never_across_lines(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("one\ntwo\none two\nfour\n")
    # Over the whole text 'one\ntwo' matches first; it spans two lines, so neither line counts.
    assert grep(sandbox, r"one\stwo") == "f.txt:3:one two"
    assert grep(sandbox, r"o[^x]*r") == "f.txt:4:four"  # '[^x]' would cross newlines
    assert grep(sandbox, r"\n") == r"(no lines match '\\n' under '.')"


def test_grep_anchors_and_empty_matches_count_each_line_once(root: Path, sandbox: Sandbox) -> None:
    (root / "nl.txt").write_text("x\n\ny\n")
    (root / "no-nl.txt").write_text("x\n\ny")
    (root / "empty.txt").write_text("")
    assert grep(sandbox, "^").splitlines() == [
        "nl.txt:1:x",
        "nl.txt:2:",
        "nl.txt:3:y",
        "no-nl.txt:1:x",
        "no-nl.txt:2:",
        "no-nl.txt:3:y",
    ]
    assert grep(sandbox, "^$").splitlines() == ["nl.txt:2:", "no-nl.txt:2:"]
    assert grep(sandbox, "y$", path="no-nl.txt") == "no-nl.txt:3:y"
    # A line is searched with its end as the text's end: '\Z' is each line's end; '\A' the file's start.
    (root / "two.txt").write_text("ab\nab\n")
    assert grep(sandbox, r"\Aab", path="two.txt") == "two.txt:1:ab"
    assert grep(sandbox, r"^ab$", path="two.txt") == "two.txt:1:ab\ntwo.txt:2:ab"
    assert grep(sandbox, r"ab\Z", path="two.txt") == "two.txt:1:ab\ntwo.txt:2:ab"


def test_grep_patterns_that_look_past_the_line_end_see_the_line_end(root: Path, sandbox: Sandbox) -> None:
    # Over the whole text the 'x' of line 1 is followed by a newline; within line 1, by nothing.
    (root / "f.txt").write_text("x\nxa\nx y\n")
    assert grep(sandbox, r"x(?!\s)").splitlines() == ["f.txt:1:x", "f.txt:2:xa"]
    assert grep(sandbox, r"x(?=\s)") == "f.txt:3:x y"
    assert grep(sandbox, r"(?-m:x$)") == "f.txt:1:x"


def test_grep_of_a_pattern_that_matches_across_lines_still_checks_every_line(
    root: Path, sandbox: Sandbox
) -> None:
    # 'a[^z]*b' first matches from line 1 to line 2; after that Grep goes line by line.
    (root / "f.txt").write_text("a\nb\nab\nb\na b\n" + "a\n" * 50 + "b\n")
    assert grep(sandbox, r"a[^z]*b").splitlines() == ["f.txt:3:ab", "f.txt:5:a b"]


def test_grep_context_after_the_last_line_adds_no_line(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("a\nb\nneedle\n")
    assert grep(sandbox, "needle", context=2).splitlines() == ["f.txt-1-a", "f.txt-2-b", "f.txt:3:needle"]


def test_grep_stops_at_the_cap_inside_one_file(root: Path, sandbox: Sandbox) -> None:
    (root / "f.txt").write_text("".join(f"hit {i}\n" for i in range(1, 11)))
    out = call(GrepTool(sandbox), {"pattern": "hit", "max_results": 3})
    assert text(out).splitlines()[:3] == ["f.txt:1:hit 1", "f.txt:2:hit 2", "f.txt:3:hit 3"]
    assert meta(out)["matches"] == 3 and meta(out)["truncated"] is True
    room = call(GrepTool(sandbox), {"pattern": "hit", "max_results": 11})
    assert meta(room)["matches"] == 10 and meta(room)["truncated"] is False


def test_grep_reads_a_file_that_does_not_count_its_size(root: Path) -> None:
    # procfs reports 0 bytes for /proc/self/status: Grep reads on past what fstat said.
    assert Path("/proc/self/status").stat().st_size == 0
    with Sandbox.open("/proc/self") as sandbox:
        assert grep(sandbox, "^Name:", path="status").startswith("status:1:Name:\t")
