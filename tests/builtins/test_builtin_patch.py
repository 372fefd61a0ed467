"""`apply_patch`: the grammar, each error, and all-or-nothing application on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnexus.types import Tool


def patch(*lines: str) -> str:
    return "\n".join(lines)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def apply(tools: dict[str, Tool]) -> Tool:
    return tools["apply_patch"]


async def test_add_update_delete(ws: Path, apply: Tool) -> None:
    (ws / "edit.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    (ws / "gone.txt").write_text("bye\n")
    text = patch(
        "*** Begin Patch",
        "*** Add File: new/dir/hello.txt",
        "+Hello",
        "+",
        "+world",
        "*** Update File: edit.py",
        "@@ def f():",
        " def f():",
        "-    return 1",
        "+    return 10",
        "@@ def g():",
        " def g():",
        "-    return 2",
        "+    return 20",
        "*** Delete File: gone.txt",
        "*** End Patch",
    )
    result = await apply.execute({"patchText": text})
    assert result.output == "Applied patch: 3 file operations"
    assert not result.is_error
    assert result.metadata == {"added": 1, "updated": 1, "deleted": 1}
    assert (ws / "new/dir/hello.txt").read_text() == "Hello\n\nworld"  # no newline added
    assert (ws / "edit.py").read_text() == "def f():\n    return 10\n\n\ndef g():\n    return 20\n"
    assert not (ws / "gone.txt").exists()


async def test_one_operation_is_singular(ws: Path, apply: Tool) -> None:
    result = await apply.execute(
        {"patchText": patch("*** Begin Patch", "*** Add File: a.txt", "+a", "*** End Patch")}
    )
    assert result.output == "Applied patch: 1 file operation"
    assert result.metadata == {"added": 1, "updated": 0, "deleted": 0}


async def test_leading_blank_lines_and_trimmed_markers(ws: Path, apply: Tool) -> None:
    text = (
        "\n\n   \n  *** Begin Patch  \n*** Add File:   spaced.txt  \n+x\n *** End Patch \n"
        "trailing junk"
    )
    result = await apply.execute({"patchText": text})
    assert result.output == "Applied patch: 1 file operation"
    assert (ws / "spaced.txt").read_text() == "x"


async def test_blank_lines_belong_to_the_section(ws: Path, apply: Tool) -> None:
    (ws / "f.txt").write_text("a\n\nb\n")
    text = patch(
        "*** Begin Patch",
        "",  # skipped: a header is expected here
        "*** Add File: blank.txt",
        "+first",
        "",  # an empty line of the added file
        "+last",
        "*** Update File: f.txt",
        "@@",
        " a",
        "",  # empty context line
        "-b",
        "+B",
        "*** End Patch",
    )
    result = await apply.execute({"patchText": text})
    assert not result.is_error, result.output
    assert (ws / "blank.txt").read_text() == "first\n\nlast"
    assert (ws / "f.txt").read_text() == "a\n\nB\n"


async def test_add_keeps_lines_without_plus(ws: Path, apply: Tool) -> None:
    text = patch("*** Begin Patch", "*** Add File: raw.txt", "+one", "two", "*** End Patch")
    await apply.execute({"patchText": text})
    assert (ws / "raw.txt").read_text() == "one\ntwo"


async def test_update_without_hunk_header_and_verbatim_context(ws: Path, apply: Tool) -> None:
    (ws / "f.txt").write_text("x = 1\ny = 2\n")
    text = patch(
        "*** Begin Patch", "*** Update File: f.txt", "x = 1", "-y = 2", "+y = 3", "*** End Patch"
    )
    result = await apply.execute({"patchText": text})
    assert result.output == "Applied patch: 1 file operation"
    assert (ws / "f.txt").read_text() == "x = 1\ny = 3\n"


async def test_pure_addition_hunk_appends(ws: Path, apply: Tool) -> None:
    (ws / "no-newline.txt").write_text("end")
    (ws / "newline.txt").write_text("end\n")
    text = patch(
        "*** Begin Patch",
        "*** Update File: no-newline.txt",
        "@@",
        "+more",
        "*** Update File: newline.txt",
        "@@",
        "+more",
        "*** End Patch",
    )
    await apply.execute({"patchText": text})
    assert (ws / "no-newline.txt").read_text() == "end\nmore"
    assert (ws / "newline.txt").read_text() == "end\nmore"


async def test_first_occurrence_is_replaced(ws: Path, apply: Tool) -> None:
    (ws / "f.txt").write_text("a\na\n")
    text = patch("*** Begin Patch", "*** Update File: f.txt", "-a", "+b", "*** End Patch")
    await apply.execute({"patchText": text})
    assert (ws / "f.txt").read_text() == "b\na\n"


async def test_operations_see_earlier_ones(ws: Path, apply: Tool) -> None:
    text = patch(
        "*** Begin Patch",
        "*** Add File: f.txt",
        "+v1",
        "*** Update File: f.txt",
        "-v1",
        "+v2",
        "*** End Patch",
    )
    result = await apply.execute({"patchText": text})
    assert result.metadata == {"added": 1, "updated": 1, "deleted": 0}
    assert (ws / "f.txt").read_text() == "v2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "apply_patch: patchText is required"),
        ("*** Add File: a.txt\n+x\n*** End Patch", "apply_patch: missing '*** Begin Patch'"),
        ("\n\n", "apply_patch: missing '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a.txt\n+x", "apply_patch: missing '*** End Patch'"),
        ("*** Begin Patch\nhello\n*** End Patch", "apply_patch: unexpected line: hello"),
        (
            "*** Begin Patch\n*** Move File: a\n*** End Patch",
            "apply_patch: unexpected line: *** Move File: a",
        ),
        (
            "*** Begin Patch\n*** Add File: exists.txt\n+x\n*** End Patch",
            "apply_patch: file already exists: exists.txt",
        ),
        (
            "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch",
            "apply_patch: file not found: missing.txt",
        ),
        (
            "*** Begin Patch\n*** Update File: missing.txt\n-a\n+b\n*** End Patch",
            "apply_patch: file not found: missing.txt",
        ),
        (
            "*** Begin Patch\n*** Update File: exists.txt\n-nope\n+b\n*** End Patch",
            "apply_patch: hunk does not match file contents",
        ),
        (
            "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch",
            "apply_patch: path outside the workspace: ../escape.txt",
        ),
    ],
)
async def test_errors(ws: Path, apply: Tool, text: str, message: str) -> None:
    (ws / "exists.txt").write_text("content\n")
    before = snapshot(ws)
    result = await apply.execute({"patchText": text})
    assert result.is_error
    assert result.output == message
    assert snapshot(ws) == before


async def test_a_failing_hunk_writes_nothing(ws: Path, apply: Tool) -> None:
    (ws / "keep.txt").write_text("one\ntwo\n")
    (ws / "doomed.txt").write_text("still here\n")
    (ws / "bad.txt").write_text("alpha\n")
    before = snapshot(ws)
    text = patch(
        "*** Begin Patch",
        "*** Add File: sub/created.txt",
        "+new",
        "*** Update File: keep.txt",
        "-one",
        "+ONE",
        "*** Delete File: doomed.txt",
        "*** Update File: bad.txt",
        "-beta",
        "+gamma",
        "*** End Patch",
    )
    result = await apply.execute({"patchText": text})
    assert result.output == "apply_patch: hunk does not match file contents"
    assert snapshot(ws) == before
    assert not (ws / "sub").exists()


async def test_a_late_grammar_error_writes_nothing(ws: Path, apply: Tool) -> None:
    text = patch("*** Begin Patch", "*** Add File: a.txt", "+a", "*** Add File: b.txt", "+b")
    result = await apply.execute({"patchText": text})
    assert result.output == "apply_patch: missing '*** End Patch'"
    assert snapshot(ws) == {}


async def test_end_of_file_marker_is_ignored(ws: Path, apply: Tool) -> None:
    (ws / "f.txt").write_text("a\nb")
    text = patch(
        "*** Begin Patch",
        "*** Update File: f.txt",
        " a",
        "-b",
        "+c",
        "*** End of File",
        "*** End Patch",
    )
    assert not (await apply.execute({"patchText": text})).is_error
    assert (ws / "f.txt").read_text() == "a\nc"
