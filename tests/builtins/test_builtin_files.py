"""`read`, `write`, `edit` on real files, and workspace confinement for every file tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.builtin_tools import tools_for
from toolnexus.types import Tool

PATCH_ADD_OUTSIDE = "*** Begin Patch\n*** Add File: {p}\n+x\n*** End Patch"


# -- read ----------------------------------------------------------------------------------------


async def test_read_whole_file_unchanged(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "a.txt").write_bytes("line 1\r\nünïcode\n\nlast".encode())
    result = await tools["read"].execute({"path": "a.txt"})
    assert result.output == "line 1\r\nünïcode\n\nlast"
    assert not result.is_error


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"offset": 2}, "b\nc\n"),  # split on "\n" keeps the empty piece after the last newline
        ({"offset": 2, "limit": 1}, "b"),
        ({"limit": 2}, "a\nb"),
        ({"offset": 0, "limit": 1}, "a"),  # offset is max(1, offset)
        ({"offset": -5, "limit": 2}, "a\nb"),
        ({"offset": 3, "limit": 10}, "c\n"),
        ({"offset": 4}, ""),
        ({"offset": 9}, ""),
        ({"limit": 0}, ""),
        ({"offset": 2.0, "limit": 2.0}, "b\nc"),
    ],
)
async def test_read_offset_limit(
    ws: Path, tools: dict[str, Tool], args: dict, expected: str
) -> None:
    (ws / "f.txt").write_text("a\nb\nc\n")
    result = await tools["read"].execute({"path": "f.txt", **args})
    assert result.output == expected


async def test_read_offset_limit_without_trailing_newline(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "f.txt").write_text("a\nb\nc")
    assert (await tools["read"].execute({"path": "f.txt", "offset": 2})).output == "b\nc"


async def test_read_errors(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "dir").mkdir()
    missing = await tools["read"].execute({"path": "missing.txt"})
    assert missing.is_error and missing.output == "read: file not found: missing.txt"
    directory = await tools["read"].execute({"path": "dir"})
    assert directory.is_error and directory.output == "read: is a directory: dir"
    empty = await tools["read"].execute({"path": ""})
    assert empty.output == "read: path is required"
    bad = await tools["read"].execute({"path": "dir", "offset": "2"})
    assert bad.output == "read: offset must be a number"


async def test_read_cap_marker(ws: Path) -> None:
    read = tools_for({"workspace": str(ws), "max_output_bytes": 1024})["read"]
    (ws / "big.txt").write_text("x" * 3000)
    result = await read.execute({"path": "big.txt"})
    assert result.output == (
        "x" * 1024 + "\n[truncated: 1.0 KB of 2.9 KB shown; use offset/limit to read more]"
    )
    (ws / "lines.txt").write_text("".join(f"{i:04}\n" for i in range(1000)))
    paged = await read.execute({"path": "lines.txt", "offset": 11, "limit": 500})
    assert paged.output.startswith("0010\n0011\n")
    assert paged.output.endswith(
        "\n[truncated: 1.0 KB of 2.4 KB shown; use offset/limit to read more]"
    )
    whole = await read.execute({"path": "lines.txt", "offset": 990})
    assert whole.output == "".join(f"{i:04}\n" for i in range(989, 1000))


async def test_read_cap_on_a_character_boundary(ws: Path) -> None:
    read = tools_for({"workspace": str(ws), "max_output_bytes": 7})["read"]
    (ws / "u.txt").write_text("€€€€")  # 3 bytes each
    result = await read.execute({"path": "u.txt"})
    assert (
        result.output == "€€\n[truncated: 6 bytes of 12 bytes shown; use offset/limit to read more]"
    )


async def test_read_file_exactly_at_the_cap_is_whole(ws: Path) -> None:
    read = tools_for({"workspace": str(ws), "max_output_bytes": 10})["read"]
    (ws / "ten.txt").write_text("0123456789")
    assert (await read.execute({"path": "ten.txt"})).output == "0123456789"


# -- write ---------------------------------------------------------------------------------------


async def test_write_creates_parents_and_counts_utf8_bytes(
    ws: Path, tools: dict[str, Tool]
) -> None:
    result = await tools["write"].execute({"path": "deep/er/n.txt", "content": "héllo\n"})
    assert result.output == "Wrote 7 bytes to deep/er/n.txt"
    assert result.metadata == {"bytes": 7}
    assert (ws / "deep/er/n.txt").read_bytes() == "héllo\n".encode()


async def test_write_overwrites_and_allows_empty_content(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "f.txt").write_text("old content")
    result = await tools["write"].execute({"path": "f.txt", "content": ""})
    assert result.output == "Wrote 0 bytes to f.txt"
    assert (ws / "f.txt").read_text() == ""


async def test_write_keeps_line_endings(ws: Path, tools: dict[str, Tool]) -> None:
    await tools["write"].execute({"path": "crlf.txt", "content": "a\r\nb\n"})
    assert (ws / "crlf.txt").read_bytes() == b"a\r\nb\n"


async def test_write_errors(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "dir").mkdir()
    assert (await tools["write"].execute({"path": "dir", "content": "x"})).output == (
        "write: is a directory: dir"
    )
    assert (await tools["write"].execute({"path": "f"})).output == "write: content is required"
    assert (await tools["write"].execute({"path": "", "content": ""})).output == (
        "write: path is required"
    )


async def test_write_without_workspace_uses_the_cwd(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = await tools_for()["write"].execute({"path": "rel.txt", "content": "x"})
    assert not result.is_error
    assert (tmp_path / "rel.txt").read_text() == "x"


# -- edit ----------------------------------------------------------------------------------------


async def test_edit_single_replacement(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "e.py").write_text("def f():\n    return 1\n")
    result = await tools["edit"].execute(
        {"path": "e.py", "oldString": "return 1", "newString": "return 2"}
    )
    assert result.output == "Edited e.py (1 replacement)"
    assert result.metadata == {"replacements": 1}
    assert (ws / "e.py").read_text() == "def f():\n    return 2\n"


async def test_edit_not_unique_leaves_the_file(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "e.txt").write_text("a a a")
    result = await tools["edit"].execute({"path": "e.txt", "oldString": "a", "newString": "b"})
    assert result.is_error
    assert result.output == "edit: oldString is not unique in e.txt (3 occurrences); use replaceAll"
    assert (ws / "e.txt").read_text() == "a a a"
    result = await tools["edit"].execute(
        {"path": "e.txt", "oldString": "a", "newString": "bb", "replaceAll": True}
    )
    assert result.output == "Edited e.txt (3 replacements)"
    assert result.metadata == {"replacements": 3}
    assert (ws / "e.txt").read_text() == "bb bb bb"


async def test_edit_errors(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "e.txt").write_text("hello")
    edit = tools["edit"]
    assert (await edit.execute({"path": "e.txt", "oldString": "", "newString": "x"})).output == (
        "edit: oldString is required"
    )
    assert (await edit.execute({"path": "e.txt", "oldString": "bye", "newString": "x"})).output == (
        "edit: oldString not found in e.txt"
    )
    assert (
        await edit.execute({"path": "nope.txt", "oldString": "a", "newString": "b"})
    ).output == ("edit: file not found: nope.txt")
    (ws / "bin.dat").write_bytes(b"\xff\xfeabc")
    result = await edit.execute({"path": "bin.dat", "oldString": "abc", "newString": "x"})
    assert result.output == "edit: not a UTF-8 text file: bin.dat"
    assert (ws / "bin.dat").read_bytes() == b"\xff\xfeabc"


async def test_edit_deletes_with_empty_new_string(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "e.txt").write_text("keep DROP keep")
    await tools["edit"].execute({"path": "e.txt", "oldString": " DROP", "newString": ""})
    assert (ws / "e.txt").read_text() == "keep keep"


# -- workspace confinement -----------------------------------------------------------------------


def escape_calls(outside: Path) -> list[tuple[str, dict, str]]:
    """(tool, args, path in the message) for every file tool and several ways out."""
    calls: list[tuple[str, dict, str]] = []
    for raw in ("../outside/secret.txt", str(outside / "secret.txt"), "link/secret.txt"):
        calls += [
            ("read", {"path": raw}, raw),
            ("write", {"path": raw, "content": "pwned"}, raw),
            ("edit", {"path": raw, "oldString": "top", "newString": "pwned"}, raw),
            ("apply_patch", {"patchText": PATCH_ADD_OUTSIDE.format(p=raw)}, raw),
        ]
    for raw in ("..", str(outside), "link"):
        calls += [
            ("grep", {"pattern": "secret", "path": raw}, raw),
            ("glob", {"pattern": "*", "path": raw}, raw),
        ]
    calls.append(("write", {"path": "filelink", "content": "pwned"}, "filelink"))
    calls.append(("read", {"path": "sub/../../outside/secret.txt"}, "sub/../../outside/secret.txt"))
    return calls


async def test_every_file_tool_refuses_paths_outside_the_workspace(
    ws: Path, tools: dict[str, Tool]
) -> None:
    outside = ws.parent / "outside"
    (ws / "sub").mkdir()
    (ws / "link").symlink_to(outside)
    (ws / "filelink").symlink_to(outside / "secret.txt")
    for name, args, raw in escape_calls(outside):
        result = await tools[name].execute(args)
        assert result.is_error, (name, args)
        assert result.output == f"{name}: path outside the workspace: {raw}"
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_dangling_symlink_out_of_the_workspace_is_refused(
    ws: Path, tools: dict[str, Tool]
) -> None:
    target = ws.parent / "outside" / "new.txt"
    (ws / "dangling").symlink_to(target)
    result = await tools["write"].execute({"path": "dangling", "content": "x"})
    assert result.output == "write: path outside the workspace: dangling"
    assert not target.exists()


async def test_paths_inside_the_workspace_are_fine(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "sub").mkdir()
    (ws / "inner").symlink_to(ws / "sub")
    assert not (await tools["write"].execute({"path": "inner/x.txt", "content": "1"})).is_error
    assert (ws / "sub" / "x.txt").read_text() == "1"
    absolute = await tools["read"].execute({"path": str(ws / "sub" / "x.txt")})
    assert absolute.output == "1"
    dotted = await tools["read"].execute({"path": "sub/../sub/./x.txt"})
    assert dotted.output == "1"


async def test_workspace_given_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    tools = tools_for({"workspace": str(tmp_path / "alias")})
    assert not (await tools["write"].execute({"path": "a.txt", "content": "x"})).is_error
    assert (real / "a.txt").read_text() == "x"
    assert (await tools["read"].execute({"path": str(tmp_path / "alias" / "a.txt")})).output == "x"


# -- defaults and unexpected failures ------------------------------------------------------------


async def test_default_cap_is_51200_bytes(ws: Path, tools: dict[str, Tool]) -> None:
    (ws / "big.txt").write_text("y" * 60000)
    result = await tools["read"].execute({"path": "big.txt"})
    assert result.output == (
        "y" * 51200 + "\n[truncated: 50.0 KB of 58.6 KB shown; use offset/limit to read more]"
    )


async def test_an_unexpected_failure_is_named_after_the_tool(
    ws: Path, tools: dict[str, Tool]
) -> None:
    (ws / "f.txt").write_text("a\n")
    result = await tools["read"].execute({"path": "f.txt", "offset": float("inf")})
    assert result.is_error
    assert result.output == "read: cannot convert float infinity to integer"
